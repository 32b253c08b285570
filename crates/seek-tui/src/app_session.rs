//! The app's side of sessions: showing a resumed session's transcript (with the lines the live
//! UI adds around its events: `you ran: …`, `attached …`), and what the app knows of the session
//! it saves to, for the `continue with: seek -c` hint printed on exit.
//!
//! A child of `app`; like `app` it must not draw, read the clock or send anything. It reads the
//! disk only to tell whether a session file exists, when asked at exit.

use std::time::{Duration, Instant};

use super::App;
use crate::agent::{Event, USER_ROUND};
use crate::render::viewport::Viewport;

/// What the app knows of the session it saves to, for the hint printed on exit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionSeen {
    Started(std::path::PathBuf),
    Resumed,
}

impl SessionSeen {
    /// Whether `seek -c` would find it: a continued session, or a started one whose file exists.
    pub fn saved(&self) -> bool {
        match self {
            SessionSeen::Started(path) => path.exists(),
            SessionSeen::Resumed => true,
        }
    }
}

impl App {
    /// Shows a resumed session: its transcript replaces the screen's. Its events keep the time
    /// between them, the newest placed at `now` (what is shown depends only on the durations,
    /// so the wall clock is not needed).
    pub(super) fn replay(
        &mut self,
        id: &str,
        turns: usize,
        warnings: &[String],
        replay: &[(u64, Event)],
        now: Instant,
    ) {
        let newest_ms = replay.iter().map(|(at_ms, _)| *at_ms).max().unwrap_or(0);
        self.transcript.archive(now);
        self.viewport = Viewport::default();
        self.focus = None;
        for (at_ms, event) in replay {
            let ago = Duration::from_millis(newest_ms.saturating_sub(*at_ms));
            let at = now.checked_sub(ago).unwrap_or(now);
            // The lines the live UI adds around these events, as it added them then.
            match event {
                Event::BlockStarted {
                    round: USER_ROUND,
                    code,
                    ..
                } => self.transcript.notice(super::popups::you_ran(code)),
                Event::Attached { files } => self.transcript.notice(super::popups::attached(files)),
                _ => {}
            }
            self.transcript.apply(event, at);
        }
        for warning in warnings {
            self.transcript.error(format!("warning: {warning}"));
        }
        self.transcript.notice(format!(
            "continuing session {id} ({turns} tasks): the model remembers them"
        ));
    }
}

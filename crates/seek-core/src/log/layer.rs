//! The `tracing` layer that writes seek.log: one line per event of seek's own crates, in the
//! format `<UTC timestamp> <LEVEL> <message> [field=value …]`, masked and terminal-safe.
//!
//! Owns turning an event into a line and handing it to the background writer; it must not
//! decide what is logged (call sites do, with `tracing::warn!` and its siblings) nor block.

use std::fmt::{self, Write as _};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer};

use crate::files::{FileWrite, in_background_unreported};
use crate::secrets::Masker;

/// The field that marks a panic's report (`tracing::error!(panic = true, …)`): written as the
/// level `PANIC`, the field itself left out.
pub const PANIC_FIELD: &str = "panic";

/// Writes each event it is given to the log file.
pub struct FileLayer {
    pub path: PathBuf,
    pub masker: Arc<Masker>,
}

impl<S: Subscriber> Layer<S> for FileLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let mut text = Text::default();
        event.record(&mut text);
        let level = if text.panic {
            "PANIC"
        } else {
            level_name(*event.metadata().level())
        };
        // A failing log write is dropped: reporting it would log again.
        in_background_unreported(FileWrite::Append {
            path: self.path.clone(),
            text: super::line(SystemTime::now(), level, &text.message, &self.masker),
        });
    }
}

fn level_name(level: Level) -> &'static str {
    match level {
        Level::ERROR => "ERROR",
        Level::WARN => "WARN",
        Level::INFO => "INFO",
        Level::DEBUG => "DEBUG",
        Level::TRACE => "TRACE",
    }
}

/// An event's message, then its other fields as ` name=value`.
#[derive(Default)]
struct Text {
    message: String,
    panic: bool,
}

impl Visit for Text {
    fn record_bool(&mut self, field: &Field, value: bool) {
        if field.name() == PANIC_FIELD {
            self.panic = value;
        } else {
            self.record_debug(field, &value);
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.message, "{value:?}");
        } else {
            let _ = write!(self.message, " {}={value:?}", field.name());
        }
    }
}

//! Reading the terminal's input on a thread of its own (crossterm's reader blocks), with a way
//! to pause it so that a program run in the foreground (the user's editor) gets every key.
//!
//! Owns the reader thread. It waits in `poll` with a timeout rather than a bare `read`, so it
//! can notice a pause within a quarter second; that costs four wake-ups a second when idle.

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use crossterm::event::Event as TermEvent;
use tokio::sync::mpsc;

const POLL: Duration = Duration::from_millis(250);

#[derive(Default)]
struct State {
    pause_wanted: bool,
    paused: bool,
}

/// The handle that pauses and resumes the reader.
#[derive(Clone)]
pub struct InputControl {
    shared: Arc<(Mutex<State>, Condvar)>,
}

impl InputControl {
    /// Stops reading and waits until the reader has stopped (bounded).
    pub fn pause(&self) {
        let (lock, changed) = &*self.shared;
        let Ok(mut state) = lock.lock() else { return };
        state.pause_wanted = true;
        while !state.paused {
            match changed.wait_timeout(state, POLL * 4) {
                Ok((next, timeout)) => {
                    state = next;
                    if timeout.timed_out() {
                        return;
                    }
                }
                Err(_) => return,
            }
        }
    }

    pub fn resume(&self) {
        let (lock, changed) = &*self.shared;
        if let Ok(mut state) = lock.lock() {
            state.pause_wanted = false;
            changed.notify_all();
        }
    }
}

/// Starts the reader; events (or the error that ended it) arrive on the receiver.
pub fn spawn() -> (
    mpsc::UnboundedReceiver<std::io::Result<TermEvent>>,
    InputControl,
) {
    let (tx, rx) = mpsc::unbounded_channel();
    let control = InputControl {
        shared: Arc::new((Mutex::new(State::default()), Condvar::new())),
    };
    let shared = Arc::clone(&control.shared);
    std::thread::spawn(move || {
        loop {
            {
                let (lock, changed) = &*shared;
                let Ok(mut state) = lock.lock() else { return };
                if state.pause_wanted {
                    state.paused = true;
                    changed.notify_all();
                    while state.pause_wanted {
                        state = match changed.wait(state) {
                            Ok(state) => state,
                            Err(_) => return,
                        };
                    }
                    state.paused = false;
                }
            }
            let event = match crossterm::event::poll(POLL) {
                Ok(false) => continue,
                Ok(true) => crossterm::event::read(),
                Err(e) => Err(e),
            };
            let failed = event.is_err();
            if tx.send(event).is_err() || failed {
                return;
            }
        }
    });
    (rx, control)
}

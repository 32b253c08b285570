//! The real `seek` binary in a real pseudo-terminal, with a vt100 parser reading its screen.
//! Waits are on the screen's content (a condition variable signalled per read), bounded so a
//! bug fails the test instead of hanging it; no sleeps.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{Child, CommandBuilder, MasterPty, PtySize, native_pty_system};

use crate::support::Sandbox;

/// How long any one wait may take before the test fails (generous for a loaded CI machine).
const BOUND: Duration = Duration::from_secs(60);

struct Shared {
    parser: vt100::Parser,
    /// Every byte seek wrote, for the plain text printed after the screen is given back.
    raw: Vec<u8>,
    closed: bool,
}

pub struct Tui {
    shared: Arc<(Mutex<Shared>, Condvar)>,
    writer: Box<dyn Write + Send>,
    child: Box<dyn Child + Send + Sync>,
    _master: Box<dyn MasterPty + Send>,
}

impl Tui {
    /// Starts `seek ARGS` in a `cols`×`rows` terminal inside the sandbox.
    pub fn start(sandbox: &Sandbox, args: &[&str], cols: u16, rows: u16) -> Tui {
        Self::start_with_env(sandbox, args, cols, rows, &[])
    }

    pub fn start_with_env(
        sandbox: &Sandbox,
        args: &[&str],
        cols: u16,
        rows: u16,
        env: &[(&str, &Path)],
    ) -> Tui {
        let pair = native_pty_system()
            .openpty(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .expect("open a pty");
        let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_seek"));
        cmd.env_clear();
        cmd.env("PATH", std::env::var_os("PATH").unwrap_or_default());
        cmd.env("HOME", sandbox.path("home"));
        cmd.env("XDG_CONFIG_HOME", sandbox.path("config"));
        cmd.env("XDG_DATA_HOME", sandbox.path("data"));
        cmd.env("XDG_CACHE_HOME", sandbox.path("cache"));
        cmd.env("TERM", "xterm-256color");
        // The scripted replies are the coder's (see `Sandbox::seek`); `extra_env` may override.
        cmd.env("SEEK_AGENT", "coder");
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.cwd(sandbox.path("cwd"));
        cmd.args(args);
        let child = pair
            .slave
            .spawn_command(cmd)
            .expect("spawn seek in the pty");
        // Its own session and group: no sweep of a block run in this process may take it.
        if let Some(pid) = child.process_id() {
            crate::support::hold_apart(pid);
        }
        drop(pair.slave);
        let mut reader = pair.master.try_clone_reader().expect("pty reader");
        let writer = pair.master.take_writer().expect("pty writer");
        let shared = Arc::new((
            Mutex::new(Shared {
                parser: vt100::Parser::new(
                    std::num::NonZero::new(rows).expect("rows > 0"),
                    std::num::NonZero::new(cols).expect("cols > 0"),
                    0,
                ),
                raw: Vec::new(),
                closed: false,
            }),
            Condvar::new(),
        ));
        let feed = Arc::clone(&shared);
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            loop {
                let n = reader.read(&mut buf).unwrap_or(0);
                let (lock, ready) = &*feed;
                let mut s = lock.lock().unwrap_or_else(|e| e.into_inner());
                if n == 0 {
                    s.closed = true;
                    ready.notify_all();
                    return;
                }
                s.parser.process(&buf[..n]);
                s.raw.extend_from_slice(&buf[..n]);
                ready.notify_all();
            }
        });
        Tui {
            shared,
            writer,
            child,
            _master: pair.master,
        }
    }

    /// Types bytes as the terminal would send them.
    pub fn send(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).expect("write to the pty");
        self.writer.flush().expect("flush the pty");
    }

    pub fn type_text(&mut self, text: &str) {
        self.send(text.as_bytes());
    }

    /// The screen's text, rows joined by newlines.
    pub fn screen(&self) -> String {
        let s = self.shared.0.lock().unwrap_or_else(|e| e.into_inner());
        s.parser.screen().contents()
    }

    /// Waits until `check` holds for the screen; fails with the screen shown after `BOUND`.
    pub fn wait_for(&self, what: &str, check: impl Fn(&str) -> bool) -> String {
        self.wait_for_within(BOUND, what, check)
    }

    /// Waits until `check` holds for the screen; fails with the screen shown after `bound`
    /// (for tests whose point is how soon seek reacts).
    pub fn wait_for_within(
        &self,
        bound: Duration,
        what: &str,
        check: impl Fn(&str) -> bool,
    ) -> String {
        let deadline = Instant::now() + bound;
        let (lock, ready) = &*self.shared;
        let mut s = lock.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            let screen = s.parser.screen().contents();
            if check(&screen) {
                return screen;
            }
            let now = Instant::now();
            if now >= deadline || s.closed {
                panic!(
                    "waited {bound:?} for {what}{}; the screen:\n{screen}",
                    if s.closed {
                        " but seek closed the terminal"
                    } else {
                        ""
                    }
                );
            }
            s = ready
                .wait_timeout(s, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Waits until the screen shows `text`.
    pub fn wait_for_text(&self, text: &str) -> String {
        self.wait_for(&format!("{text:?}"), |s| s.contains(text))
    }

    /// Waits for seek to exit (its end of the terminal closes) and returns its exit code and
    /// everything it wrote.
    pub fn wait_exit(&mut self) -> (u32, String) {
        self.wait_exit_within(BOUND)
    }

    /// `wait_exit`, failing if seek is still running after `bound`.
    pub fn wait_exit_within(&mut self, bound: Duration) -> (u32, String) {
        let deadline = Instant::now() + bound;
        let raw = {
            let (lock, ready) = &*self.shared;
            let mut s = lock.lock().unwrap_or_else(|e| e.into_inner());
            while !s.closed {
                let now = Instant::now();
                assert!(
                    now < deadline,
                    "seek did not exit:\n{}",
                    s.parser.screen().contents()
                );
                s = ready
                    .wait_timeout(s, deadline - now)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
            String::from_utf8_lossy(&s.raw).into_owned()
        };
        let status = self.child.wait().expect("wait for seek");
        (status.exit_code(), raw)
    }

    /// Resizes the terminal (seek gets SIGWINCH). The parser takes the new size first, so
    /// whatever seek draws after the signal lands on a screen of that size.
    pub fn resize(&self, cols: u16, rows: u16) {
        {
            let mut s = self.shared.0.lock().unwrap_or_else(|e| e.into_inner());
            s.parser.screen_mut().set_size(
                std::num::NonZero::new(rows).expect("rows > 0"),
                std::num::NonZero::new(cols).expect("cols > 0"),
            );
        }
        self._master
            .resize(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .expect("resize the pty");
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.process_id()
    }
}

impl Drop for Tui {
    fn drop(&mut self) {
        let _ = self.child.kill();
        if let Some(pid) = self.child.process_id() {
            crate::support::release(pid);
        }
    }
}

/// Key bytes as a terminal sends them.
pub mod keys {
    pub const ENTER: &[u8] = b"\r";
    pub const ESC: &[u8] = b"\x1b";
    pub const TAB: &[u8] = b"\t";
    pub const CTRL_C: &[u8] = b"\x03";
    pub const CTRL_D: &[u8] = b"\x04";
    pub const CTRL_J: &[u8] = b"\n";
    pub const CTRL_O: &[u8] = b"\x0f";
    pub const CTRL_R: &[u8] = b"\x12";
    pub const CTRL_T: &[u8] = b"\x14";
    pub const UP: &[u8] = b"\x1b[A";
    pub const PAGE_UP: &[u8] = b"\x1b[5~";
    pub const END: &[u8] = b"\x1b[F";
    /// The mouse wheel, as SGR mouse reports at column 10, row 10.
    pub const WHEEL_UP: &[u8] = b"\x1b[<64;10;10M";
    pub const WHEEL_DOWN: &[u8] = b"\x1b[<65;10;10M";
}

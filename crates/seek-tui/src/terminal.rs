//! Taking over the terminal and giving it back: raw mode, the alternate screen, mouse reports,
//! focus reports, bracketed paste and the keyboard protocol that tells Shift+Enter from Enter; restored on
//! every way out (normal exit, error, panic on the UI thread, signals handled by the loop).
//!
//! Owns the terminal modes only; it must not draw or read input.

use std::io::{Stdout, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Once, OnceLock};
use std::thread::ThreadId;

use crossterm::event::{
    DisableBracketedPaste, DisableFocusChange, DisableMouseCapture, EnableBracketedPaste,
    EnableFocusChange, EnableMouseCapture, KeyboardEnhancementFlags, PopKeyboardEnhancementFlags,
    PushKeyboardEnhancementFlags,
};
use crossterm::terminal::{EnterAlternateScreen, LeaveAlternateScreen};
use crossterm::{cursor, execute, terminal};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

static ACTIVE: AtomicBool = AtomicBool::new(false);
static UI_THREAD: OnceLock<ThreadId> = OnceLock::new();
static HOOK: Once = Once::new();

pub(crate) type Screen = Terminal<CrosstermBackend<Stdout>>;

/// Restores the terminal when dropped.
pub(crate) struct Guard {
    _private: (),
}

impl Drop for Guard {
    fn drop(&mut self) {
        restore();
    }
}

/// Switches the terminal to the UI's modes. The guard gives it back.
pub(crate) fn enter() -> std::io::Result<(Screen, Guard)> {
    install_panic_hook();
    let _ = UI_THREAD.set(std::thread::current().id());
    terminal::enable_raw_mode()?;
    ACTIVE.store(true, Ordering::SeqCst);
    let guard = Guard { _private: () };
    let mut stdout = std::io::stdout();
    execute!(
        stdout,
        EnterAlternateScreen,
        EnableMouseCapture,
        EnableBracketedPaste,
        // Focus reports say when a finished task is worth a notification.
        EnableFocusChange,
        // Terminals without the protocol ignore it; with it, Shift+Enter is its own key.
        PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES),
    )?;
    let screen = Terminal::new(CrosstermBackend::new(std::io::stdout()))?;
    Ok((screen, guard))
}

/// Takes the terminal again after `restore` (the editor ran in it); the next frame redraws all.
pub fn resume(screen: &mut Screen) -> std::io::Result<()> {
    terminal::enable_raw_mode()?;
    ACTIVE.store(true, Ordering::SeqCst);
    execute!(
        std::io::stdout(),
        EnterAlternateScreen,
        EnableMouseCapture,
        EnableBracketedPaste,
        EnableFocusChange,
        PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES),
    )?;
    // Not `Terminal::clear`, which asks the terminal where the cursor is: clear the screen
    // here and drop both of ratatui's buffers, so the next frame draws every cell.
    execute!(
        std::io::stdout(),
        crossterm::terminal::Clear(crossterm::terminal::ClearType::All)
    )?;
    screen.swap_buffers();
    screen.swap_buffers();
    Ok(())
}

/// Gives the terminal back (idempotent).
pub(crate) fn restore() {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return;
    }
    let mut stdout = std::io::stdout();
    let _ = execute!(
        stdout,
        PopKeyboardEnhancementFlags,
        DisableBracketedPaste,
        DisableFocusChange,
        DisableMouseCapture,
        LeaveAlternateScreen,
        cursor::Show,
    );
    let _ = terminal::disable_raw_mode();
    let _ = stdout.flush();
}

/// A panic on the UI thread restores the terminal before the message prints; a panic elsewhere
/// (an agent task, which the runtime turns into an error event) goes to the log only, so it
/// cannot scribble over the screen.
fn install_panic_hook() {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            tracing::error!(panic = true, "{info}");
            let on_ui = UI_THREAD.get() == Some(&std::thread::current().id());
            if on_ui || !ACTIVE.load(Ordering::SeqCst) {
                restore();
                previous(info);
            }
        }));
    });
}

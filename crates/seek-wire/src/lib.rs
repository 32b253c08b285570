//! seek's bottom floor: plain data and pure functions that every other layer shares.
//!
//! Owns the `Command`/`Event` stream and its records (`wire`), the built-in tools' identities
//! (`tool_kind`), the fenced-block protocol (`protocol`: fences, `:path`, `block:N`, `<think>`,
//! feedback text) and terminal-safe text (`terminal_safe`). It depends on nothing of seek's and
//! does no I/O: it must not know how a tool runs, how a model is asked, or what draws the screen.

pub mod protocol;
pub mod terminal_safe;
pub mod tool_kind;
pub mod wire;

//! The terminal UI: a ratatui screen over the same agent events the headless mode consumes.

pub mod render;
pub mod transcript;

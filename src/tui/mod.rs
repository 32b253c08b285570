//! The terminal UI. Work in progress: so far the transcript model the views will draw (pure,
//! built from agent events). `seek` without `-p` still says the UI is not available.

pub mod transcript;

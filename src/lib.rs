//! seek: a terminal agent shell. A model answers in prose with fenced code blocks; seek runs them.
//!
//! The library holds every part so tests and benchmarks reach them; `main.rs` is a thin edge.

pub mod cli;
pub mod config;
pub mod exec;
pub mod protocol;
pub mod tools;

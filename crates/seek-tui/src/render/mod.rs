//! Everything that turns state into terminal cells: text hygiene and wrapping, markdown,
//! highlighting, the look of each transcript item, the scrollable transcript window and the
//! whole screen.
//!
//! Pure functions of state and time; nothing here reads input or does I/O (the syntax set
//! loads from memory).

pub(crate) mod cells;
pub mod clip;
pub mod header;
pub(crate) mod highlight;
pub mod markdown;
pub mod plan;
pub mod screen;
pub mod text;
pub mod viewport;
pub mod web;

#[cfg(test)]
mod snapshots;

#[cfg(test)]
mod robustness;

#[cfg(test)]
mod every_size;

#[cfg(test)]
mod snapshots_output;

#[cfg(test)]
mod snapshots_plan;

#[cfg(test)]
mod snapshots_web;

//! The code-block protocol: how a model's prose reply becomes tool blocks and back.
//!
//! Pure functions, no I/O: fence scanning (batch and incremental), tag matching and aliases,
//! `:path` save suffixes, `block:N` placeholders, `<think>` reasoning split and feedback text.
//! Conventions are AgenticSeek's; its parser's flaws are fixed (see `docs/protocol.md`).

mod feedback;
mod fence;
mod placeholder;
mod scanner;
mod tags;
mod think;

pub use feedback::{FAILURE_PREFIX, SUCCESS_PREFIX, feedback};
pub use placeholder::{expand_placeholders, placeholder, placeholder_index};
pub use scanner::{Block, BlockScanner, Parsed, ScanEvent, parse};
pub use tags::{ToolTags, canonical_tag};
pub use think::{ReasoningSplit, ThinkDelta, ThinkSplitter, split_reasoning};

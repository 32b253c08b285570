//! The code-block protocol: how a model's prose reply becomes tool blocks and back.
//!
//! Pure functions, no I/O: fence scanning, tag matching and aliases, `:path` save suffixes,
//! `block:N` placeholders, `<think>` reasoning split (batch and incremental) and feedback text.
//! Conventions are AgenticSeek's; its parser's flaws are fixed (see `docs/protocol.md`).
//!
//! ```
//! use seek_wire::protocol::{ToolTags, parse, split_reasoning};
//!
//! let reply = "<think>use python</think>I'll count.\n```python:count.py\nprint(1 + 1)\n```\nDone.";
//! let split = split_reasoning(reply);
//! assert_eq!(split.reasoning.as_deref(), Some("use python"));
//!
//! let parsed = parse(&split.answer, &ToolTags::new(["python", "bash"]));
//! assert_eq!(parsed.blocks[0].code, "print(1 + 1)\n");
//! assert_eq!(parsed.blocks[0].save_path.as_deref(), Some("count.py"));
//! assert_eq!(parsed.placeholder_text(), "I'll count.\nblock:0\nDone.");
//! ```

mod feedback;
mod fence;
mod placeholder;
mod scanner;
mod tags;
mod think;

pub use feedback::{FAILURE_PREFIX, SUCCESS_PREFIX, feedback};
pub use fence::{looks_like_path, split_info};
pub use placeholder::{expand_placeholders, placeholder, placeholder_index};
pub use scanner::{Block, Parsed, first_block_end, parse, parse_at_most};
pub use tags::{ToolTags, canonical_tag};
pub use think::{ReasoningSplit, ThinkDelta, ThinkSplitter, split_reasoning};

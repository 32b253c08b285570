//! The fenced-block scanner.
//!
//! Owns the line-by-line state machine that turns a reply into tool blocks with their spans.
//! Every line is examined once, so parsing costs O(size). It must not execute anything or touch
//! I/O.

use std::ops::Range;

use super::fence::{
    continuation_prefix, is_closing_fence, opening_fence, split_info, strip_container,
    without_line_ending,
};
use super::placeholder;
use super::tags::ToolTags;

/// One tool block of a reply.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Block {
    /// Position among this reply's tool blocks, from 0 (the `N` of `block:N`).
    pub index: usize,
    /// Canonical tool tag (`python` for ```` ```py ````).
    pub tag: String,
    /// The info string as written, trimmed.
    pub info: String,
    /// The `:path` suffix of this block, trimmed.
    pub save_path: Option<String>,
    /// The content, de-indented, each line ending in `\n`.
    pub code: String,
    /// Whether the closing fence arrived.
    pub closed: bool,
    /// Byte range in the reply: from the start of the opening fence's line to the end of the
    /// closing fence (excluding its line ending), or to the end of the text when unclosed.
    pub span: Range<usize>,
}

impl Block {
    /// The text after the tag's `:` when it does not look like a path (`print('hello')` in
    /// ```` ```python:print('hello') ````): ignored, the block is not saved under it.
    pub fn ignored_suffix(&self) -> Option<&str> {
        split_info(&self.info).ignored_suffix
    }
}

/// A whole reply, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    pub text: String,
    pub blocks: Vec<Block>,
    /// Tool blocks past the block limit (`parse_at_most`): counted, not kept; their text stays in
    /// the reply as it was written (no placeholder), so nothing runs them.
    pub over_limit: usize,
}

impl Parsed {
    /// The reply with each tool block replaced by a line `block:N`.
    pub fn placeholder_text(&self) -> String {
        let mut out = String::with_capacity(self.text.len());
        let mut at = 0;
        for block in &self.blocks {
            out.push_str(&self.text[at..block.span.start]);
            out.push_str(&placeholder::placeholder(block.index));
            at = block.span.end;
        }
        out.push_str(&self.text[at..]);
        out
    }

    /// The original text of one block (fences included).
    pub fn raw(&self, block: &Block) -> &str {
        &self.text[block.span.clone()]
    }

    /// Whether the last tool block is still open (the model is still writing it, or never closed it).
    pub fn unclosed(&self) -> Option<&Block> {
        self.blocks.last().filter(|b| !b.closed)
    }
}

/// Parses a whole reply.
pub fn parse(text: &str, tags: &ToolTags) -> Parsed {
    parse_at_most(text, tags, usize::MAX)
}

/// Where a growing reply can be cut once its first tool block is complete: the byte offset just
/// past the line ending of that block's closing fence, or `None` while no tool block has closed.
/// Only whole lines count (a fence line is complete once its line ending arrived), so a
/// streamed reply can be checked after each delta holding a newline.
pub fn first_block_end(text: &str, tags: &ToolTags) -> Option<usize> {
    let whole_lines = text.rfind('\n').map_or("", |i| &text[..=i]);
    let parsed = parse_at_most(whole_lines, tags, 1);
    let block = parsed.blocks.first().filter(|b| b.closed)?;
    let rest = &whole_lines[block.span.end..];
    let ending = if rest.starts_with("\r\n") {
        2
    } else {
        usize::from(rest.starts_with('\n'))
    };
    Some(block.span.end + ending)
}

/// Parses a whole reply keeping at most `max_blocks` tool blocks: later ones are skipped like
/// ordinary markdown fences (so a fence inside one is not taken for a block) and counted in
/// `Parsed::over_limit`.
pub fn parse_at_most(text: &str, tags: &ToolTags, max_blocks: usize) -> Parsed {
    let mut scanner = Scanner {
        tags,
        open: None,
        blocks: Vec::new(),
        block_limit: max_blocks,
        over_limit: 0,
    };
    let mut start = 0;
    // The last line may have no line ending.
    for line in text.split_inclusive('\n') {
        scanner.examine_line(line, start);
        start += line.len();
    }
    if let Some(OpenFence { block: Some(i), .. }) = scanner.open {
        scanner.blocks[i].span.end = text.len();
    }
    Parsed {
        text: text.to_owned(),
        blocks: scanner.blocks,
        over_limit: scanner.over_limit,
    }
}

#[derive(Debug, Clone)]
struct OpenFence {
    prefix: String,
    continuation: String,
    fence_char: u8,
    fence_len: usize,
    /// Index into `blocks` when the fence is a tool block; `None` for ordinary markdown fences,
    /// whose content is skipped (a tool fence inside an example is not run).
    block: Option<usize>,
}

/// The scanner's state between lines.
struct Scanner<'a> {
    tags: &'a ToolTags,
    open: Option<OpenFence>,
    blocks: Vec<Block>,
    /// Tool blocks kept at most; later ones are only counted.
    block_limit: usize,
    over_limit: usize,
}

impl Scanner<'_> {
    /// Examines `line` (with its line ending, if any), which starts at byte `start` of the reply.
    fn examine_line(&mut self, line: &str, start: usize) {
        let bare = without_line_ending(line);
        let end = start + bare.len();
        match &self.open {
            None => {
                let Some(fence) = opening_fence(bare) else {
                    return;
                };
                let info = split_info(fence.info);
                let at_limit = self.blocks.len() >= self.block_limit;
                let tag = match self.tags.resolve(info.tag) {
                    Some(_) if at_limit => {
                        self.over_limit += 1;
                        None
                    }
                    tag => tag,
                };
                let block = tag.map(|tag| {
                    let index = self.blocks.len();
                    self.blocks.push(Block {
                        index,
                        tag: tag.to_owned(),
                        info: fence.info.to_owned(),
                        save_path: info.save_path.map(str::to_owned),
                        code: String::new(),
                        closed: false,
                        span: start..end,
                    });
                    index
                });
                self.open = Some(OpenFence {
                    prefix: fence.prefix.to_owned(),
                    continuation: continuation_prefix(fence.prefix),
                    fence_char: fence.fence_char,
                    fence_len: fence.fence_len,
                    block,
                });
            }
            Some(open) => {
                if is_closing_fence(
                    bare,
                    &open.prefix,
                    &open.continuation,
                    open.fence_char,
                    open.fence_len,
                ) {
                    if let Some(i) = open.block {
                        let block = &mut self.blocks[i];
                        block.closed = true;
                        block.span.end = end;
                    }
                    self.open = None;
                } else if let Some(i) = open.block {
                    let content = strip_container(line, &open.prefix, &open.continuation);
                    let block = &mut self.blocks[i];
                    // Normalise CRLF so a block written on Windows runs in bash.
                    block.code.push_str(without_line_ending(content));
                    block.code.push('\n');
                    block.span.end = end;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tags() -> ToolTags {
        ToolTags::new(["bash", "python"])
    }

    #[test]
    fn blocks_past_the_limit_are_counted_and_left_as_text() {
        let reply = "a\n```bash\none\n```\n```python\ntwo\n```\n```bash\n```python\nthree\n```\n```bash\nfour\n```\n";
        let parsed = parse_at_most(reply, &tags(), 2);
        assert_eq!(parsed.blocks.len(), 2);
        assert_eq!(parsed.blocks[1].code, "two\n");
        // The third fence's content (an inner fence line) is skipped like any other fence's,
        // and the fourth block is counted too.
        assert_eq!(parsed.over_limit, 2);
        assert_eq!(
            parsed.placeholder_text(),
            "a\nblock:0\nblock:1\n```bash\n```python\nthree\n```\n```bash\nfour\n```\n"
        );
        assert_eq!(parse(reply, &tags()).over_limit, 0);
        assert_eq!(parse(reply, &tags()).blocks.len(), 4);
    }

    #[test]
    fn a_reply_is_cut_after_the_line_that_closes_its_first_tool_block() {
        let tags = tags();
        let reply = "Run:\n```bash\necho hi\n```\nmore ```python\n";
        let end = first_block_end(reply, &tags).expect("closed");
        assert_eq!(&reply[..end], "Run:\n```bash\necho hi\n```\n");
        // A closing fence whose line has not ended yet may still be ```` ```python ````.
        assert_eq!(first_block_end("```bash\necho hi\n```", &tags), None);
        assert_eq!(first_block_end("```bash\necho hi\n", &tags), None, "open");
        // Other fences are prose; the first tool block after them counts.
        let mixed = "```text\nnot a tool\n```\n```python\nprint(1)\n```\r\nrest";
        let end = first_block_end(mixed, &tags).expect("python closed");
        assert!(
            mixed[..end].ends_with("print(1)\n```\r\n"),
            "{:?}",
            &mixed[..end]
        );
        assert_eq!(first_block_end("no code here\n", &tags), None);
    }
}

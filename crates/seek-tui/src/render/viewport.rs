//! The scrollable transcript window: which rows of which items are visible, a cache of each
//! item's rows per width, and scrolling (follow the end, or stay where the user scrolled to).
//!
//! Drawing costs what is visible: rows are rendered per item once per (item stamp, width) and
//! only items that reach the screen are rendered at all. It must not change the transcript.

use std::time::Instant;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;

use super::{cells, markdown};
use crate::transcript::{Item, Transcript};

/// Where the window is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scroll {
    /// The last row stays at the bottom as output arrives.
    #[default]
    Follow,
    /// Row `row` of item `item` is the top row; new output does not move the view.
    At { item: usize, row: usize },
}

struct Cached {
    stamp: u64,
    width: u16,
    /// For live items: the moment rendered (they change with time).
    at: Option<Instant>,
    lines: Vec<Line<'static>>,
}

/// The answer being streamed, rendered a piece at a time: text up to the last blank line
/// outside a code fence, or up to a run of complete lines inside one, is committed (rendered
/// once); only the tail is rendered per frame, so a long answer costs what its last piece costs.
struct LiveAnswer {
    /// The streamed answer's id (`Transcript::streaming_answer_id`).
    id: u64,
    width: u16,
    /// Bytes of the text scanned for boundaries.
    scanned: usize,
    /// The opening line of the fence the scan is inside, if any.
    fence: Option<String>,
    /// Code lines scanned since the last commit inside a fence.
    code_lines: usize,
    /// End of the committed text, and the fence it ends inside (its tail continues that code).
    committed: usize,
    committed_fence: Option<String>,
    /// Rows of the committed text; `lines` continues with the tail's rows.
    committed_rows: usize,
    lines: Vec<Line<'static>>,
}

/// Code lines committed at a time inside an open fence.
const CODE_COMMIT_LINES: usize = 32;

impl LiveAnswer {
    fn new(id: u64, width: u16) -> Self {
        Self {
            id,
            width,
            scanned: 0,
            fence: None,
            code_lines: 0,
            committed: 0,
            committed_fence: None,
            committed_rows: 0,
            lines: Vec::new(),
        }
    }

    fn update(&mut self, text: &str) {
        let mut boundary: Option<(usize, Option<String>)> = None;
        while let Some(newline) = text[self.scanned..].find('\n') {
            let line = &text[self.scanned..self.scanned + newline];
            let trimmed = line.trim_start();
            let fence_line = trimmed.starts_with("```") || trimmed.starts_with("~~~");
            self.scanned += newline + 1;
            match (&self.fence, fence_line) {
                (None, true) => {
                    self.fence = Some(line.to_owned());
                    self.code_lines = 0;
                }
                (Some(_), true) => self.fence = None,
                (Some(opener), false) => {
                    self.code_lines += 1;
                    if self.code_lines >= CODE_COMMIT_LINES {
                        self.code_lines = 0;
                        boundary = Some((self.scanned, Some(opener.clone())));
                    }
                }
                (None, false) => {
                    if line.trim().is_empty() {
                        boundary = Some((self.scanned, None));
                    }
                }
            }
        }
        if let Some((end, fence)) = boundary {
            self.lines.truncate(self.committed_rows);
            self.append(&text[self.committed..end]);
            self.committed = end;
            self.committed_fence = fence;
            self.committed_rows = self.lines.len();
        }
        self.lines.truncate(self.committed_rows);
        self.append(&text[self.committed..]);
    }

    /// Renders a piece starting at `committed` and adds its rows.
    fn append(&mut self, piece: &str) {
        let width = usize::from(self.width).max(8);
        let continues_code = self.committed_fence.is_some();
        let rows = match &self.committed_fence {
            // A piece that starts inside a code block is rendered as the rest of that block.
            Some(opener) => markdown::render(&format!("{opener}\n{piece}"), width, " ", false),
            None => markdown::render(piece, width, " ", false),
        };
        if rows.is_empty() {
            return;
        }
        if !self.lines.is_empty() && !continues_code {
            self.lines.push(Line::default());
        }
        self.lines.extend(rows);
    }
}

/// The transcript window's state between frames.
#[derive(Default)]
pub struct Viewport {
    cache: Vec<Option<Cached>>,
    live_answer: Option<LiveAnswer>,
    pub scroll: Scroll,
    /// The size of the last drawn window.
    pub area: Rect,
    /// The top row of the last frame, and the items that had rows on screen.
    shown_top: (usize, usize),
    shown_items: std::ops::Range<usize>,
    /// How many item renders the last frame needed (for tests and benchmarks).
    pub renders_last_frame: usize,
}

impl Viewport {
    /// Rows of item `index` at `width`, from the cache when the item has not changed.
    fn rows(&mut self, t: &Transcript, index: usize, width: u16, now: Instant) -> &[Line<'static>] {
        if self.cache.len() < t.items().len() {
            self.cache.resize_with(t.items().len(), || None);
        }
        let live = t.is_live(index);
        if let Some(id) = t.streaming_answer_id(index)
            && let Some(Item::Answer(text)) = t.items().get(index)
        {
            // Offsets into the text stay valid only for the same answer, which only grows.
            let reuse = self
                .live_answer
                .as_ref()
                .is_some_and(|l| l.id == id && l.width == width && l.scanned <= text.len());
            if !reuse {
                self.live_answer = Some(LiveAnswer::new(id, width));
            }
            self.renders_last_frame += 1;
            return match &mut self.live_answer {
                Some(answer) => {
                    answer.update(text);
                    &answer.lines
                }
                None => &[],
            };
        }
        let stamp = t.stamp(index);
        let fresh = matches!(&self.cache[index], Some(c) if c.stamp == stamp && c.width == width
            && (!live || c.at == Some(now)));
        if !fresh {
            self.renders_last_frame += 1;
            let lines = cells::render(&t.items()[index], index, usize::from(width), now, live);
            self.cache[index] = Some(Cached {
                stamp,
                width,
                at: live.then_some(now),
                lines,
            });
        }
        match &self.cache[index] {
            Some(c) => &c.lines,
            None => &[],
        }
    }

    fn height(&mut self, t: &Transcript, index: usize, width: u16, now: Instant) -> usize {
        self.rows(t, index, width, now).len()
    }

    /// The top row for `Follow`: walk up from the last item until the window is full.
    fn bottom_top(
        &mut self,
        t: &Transcript,
        width: u16,
        height: usize,
        now: Instant,
    ) -> (usize, usize) {
        let mut needed = height;
        let mut index = t.items().len();
        while index > 0 {
            index -= 1;
            let h = self.height(t, index, width, now);
            if h >= needed {
                return (index, h - needed);
            }
            needed -= h;
        }
        (0, 0)
    }

    /// The top row this frame will use, turning to `Follow` if the anchor is past the end or
    /// too near it to fill the window.
    fn top(&mut self, t: &Transcript, width: u16, height: usize, now: Instant) -> (usize, usize) {
        let bottom = self.bottom_top(t, width, height, now);
        match self.scroll {
            Scroll::Follow => bottom,
            Scroll::At { item, row } => {
                if (item, row) >= bottom {
                    self.scroll = Scroll::Follow;
                    bottom
                } else {
                    (item, row)
                }
            }
        }
    }

    /// Draws the window into `area` of `buf`; `focus` gets a `›` on its first row.
    pub fn draw(
        &mut self,
        t: &Transcript,
        area: Rect,
        buf: &mut Buffer,
        now: Instant,
        focus: Option<usize>,
    ) {
        let area = super::clip::inside(area, buf);
        self.area = area;
        self.renders_last_frame = 0;
        if area.height == 0 || area.width == 0 {
            return;
        }
        let height = usize::from(area.height);
        let (mut item, mut row) = self.top(t, area.width, height, now);
        self.shown_top = (item, row);
        let first_item = item;
        let mut y = 0usize;
        while y < height && item < t.items().len() {
            let rows = self.rows(t, item, area.width, now);
            for line in rows.iter().skip(row) {
                if y >= height {
                    break;
                }
                super::clip::line(buf, area, y, line);
                y += 1;
            }
            row = 0;
            item += 1;
        }
        self.shown_items = first_item..item;
        if let Some(focused) = focus {
            self.mark_focus(t, focused, area, buf, now);
        }
    }

    /// Puts the focus marker on the focused item's first row, if that row is on screen.
    fn mark_focus(
        &mut self,
        t: &Transcript,
        focused: usize,
        area: Rect,
        buf: &mut Buffer,
        now: Instant,
    ) {
        let (top_item, top_row) = self.shown_top;
        if focused < top_item
            || !self.shown_items.contains(&focused)
            || (focused == top_item && top_row > 0)
        {
            return;
        }
        let mut y = 0usize;
        for index in top_item..focused {
            let h = self.height(t, index, area.width, now);
            y += if index == top_item {
                h.saturating_sub(top_row)
            } else {
                h
            };
        }
        if y < usize::from(area.height) {
            let style = Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD);
            super::clip::string(buf, area, 0, y, "›", style);
        }
    }

    /// Whether the first row of `index` was on screen in the last frame.
    pub(crate) fn shows_start_of(&self, index: usize) -> bool {
        let (top_item, top_row) = self.shown_top;
        self.shown_items.contains(&index) && !(index == top_item && top_row > 0)
    }

    /// Scrolls so that item `index` starts at the top (or the end shows, if it is near it).
    pub(crate) fn reveal(&mut self, index: usize) {
        if !self.shows_start_of(index) {
            self.scroll = Scroll::At {
                item: index,
                row: 0,
            };
        }
    }

    /// Moves the window up by `rows`.
    pub fn scroll_up(&mut self, t: &Transcript, rows: usize, now: Instant) {
        let (width, height) = (self.area.width, usize::from(self.area.height));
        if width == 0 {
            return;
        }
        let (mut item, mut row) = self.top(t, width, height, now);
        let mut left = rows;
        while left > 0 {
            if row >= left {
                row -= left;
                break;
            }
            left -= row;
            if item == 0 {
                row = 0;
                break;
            }
            item -= 1;
            row = self.height(t, item, width, now);
        }
        self.scroll = Scroll::At { item, row };
    }

    /// Moves the window down by `rows`; reaching the end resumes following.
    pub fn scroll_down(&mut self, t: &Transcript, rows: usize, now: Instant) {
        let Scroll::At { mut item, mut row } = self.scroll else {
            return;
        };
        let width = self.area.width;
        row += rows;
        while item < t.items().len() {
            let h = self.height(t, item, width, now);
            if row < h {
                break;
            }
            row -= h;
            item += 1;
        }
        self.scroll = if item >= t.items().len() {
            Scroll::Follow
        } else {
            Scroll::At { item, row }
        };
    }

    pub fn to_top(&mut self) {
        self.scroll = Scroll::At { item: 0, row: 0 };
    }

    pub(crate) fn scroll_to_end(&mut self) {
        self.scroll = Scroll::Follow;
    }

    pub fn following(&self) -> bool {
        self.scroll == Scroll::Follow
    }
}

#[cfg(test)]
mod tests {
    use super::super::text::plain;
    use super::*;
    use crate::agent::Event;
    use crate::config::AgentName;

    fn rows(lines: &[Line<'_>]) -> Vec<String> {
        lines.iter().map(plain).collect()
    }

    #[test]
    fn a_streamed_answer_renders_as_the_whole_would() {
        let mut text = String::from("Intro *para*.\n\nSecond para with `code`.\n\n```python\n");
        for i in 0..100 {
            text.push_str(&format!("x{i} = {i}\n"));
        }
        text.push_str("```\n\n- one\n- two\n\nDone.\n");
        let mut live = LiveAnswer::new(0, 60);
        let mut end = 0;
        while end < text.len() {
            end = (end + 7).min(text.len());
            while !text.is_char_boundary(end) {
                end += 1;
            }
            live.update(&text[..end]);
        }
        assert!(live.committed > 0, "pieces were committed");
        assert_eq!(
            rows(&live.lines),
            rows(&markdown::render(&text, 60, " ", false))
        );
    }

    fn tall_transcript(turns: usize) -> Transcript {
        let mut t = Transcript::default();
        let now = Instant::now();
        for turn in 0..turns {
            t.apply(
                &Event::TurnStarted {
                    turn: turn as u64,
                    prompt: format!("prompt {turn}"),
                    agent: AgentName::Casual,
                },
                now,
            );
            t.apply(
                &Event::AnswerComplete {
                    round: 1,
                    answer: format!("answer {turn}\nsecond line\nthird line"),
                    reasoning: None,
                    blocks: 0,
                    finish: crate::agent::AnswerFinish::Stop,
                },
                now,
            );
        }
        t
    }

    fn draw(v: &mut Viewport, t: &Transcript, now: Instant) -> Vec<String> {
        let area = Rect::new(0, 0, 40, 10);
        let mut buf = Buffer::empty(area);
        v.draw(t, area, &mut buf, now, None);
        (0..area.height)
            .map(|y| {
                (0..area.width)
                    .map(|x| buf[(x, y)].symbol().to_owned())
                    .collect::<String>()
                    .trim_end()
                    .to_owned()
            })
            .collect()
    }

    #[test]
    fn drawing_renders_only_what_is_visible_and_caches_it() {
        let t = tall_transcript(5_000);
        let mut v = Viewport::default();
        let now = Instant::now();
        let screen = draw(&mut v, &t, now);
        assert_eq!(screen.last().map(String::as_str), Some(" third line"));
        assert!(
            v.renders_last_frame <= 4,
            "only the last items: {}",
            v.renders_last_frame
        );
        draw(&mut v, &t, now);
        assert_eq!(
            v.renders_last_frame, 0,
            "an unchanged frame renders nothing"
        );
    }

    #[test]
    fn scrolling_up_holds_the_view_and_scrolling_down_resumes_following() {
        let mut t = tall_transcript(50);
        let mut v = Viewport::default();
        let now = Instant::now();
        let bottom = draw(&mut v, &t, now);
        v.scroll_up(&t, 8, now);
        let up = draw(&mut v, &t, now);
        assert_ne!(up, bottom);
        assert!(!v.following());
        t.apply(
            &Event::TurnStarted {
                turn: 99,
                prompt: "new".into(),
                agent: AgentName::Casual,
            },
            now,
        );
        assert_eq!(
            draw(&mut v, &t, now),
            up,
            "new output does not move a scrolled view"
        );
        v.scroll_down(&t, 100, now);
        assert!(v.following());
        let screen = draw(&mut v, &t, now);
        assert!(screen.iter().any(|l| l.contains("you  new")), "{screen:?}");
        v.to_top();
        assert_eq!(draw(&mut v, &t, now)[0], " you  prompt 0");
    }
}

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

use super::cells;
use crate::tui::transcript::Transcript;

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

/// The transcript window's state between frames.
#[derive(Default)]
pub struct Viewport {
    cache: Vec<Option<Cached>>,
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

    /// Drops cached rows past the end (after `/clear`).
    pub fn forget_beyond(&mut self, len: usize) {
        self.cache.truncate(len);
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
                let top = area.y + y as u16;
                buf.set_line(area.x, top, line, area.width);
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
            y += if index == top_item { h - top_row } else { h };
        }
        if y < usize::from(area.height) {
            let style = Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD);
            buf.set_string(area.x, area.y + y as u16, "›", style);
        }
    }

    /// Whether the first row of `index` was on screen in the last frame.
    pub fn shows_start_of(&self, index: usize) -> bool {
        let (top_item, top_row) = self.shown_top;
        self.shown_items.contains(&index) && !(index == top_item && top_row > 0)
    }

    /// Scrolls so that item `index` starts at the top (or the end shows, if it is near it).
    pub fn reveal(&mut self, index: usize) {
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

    pub fn to_end(&mut self) {
        self.scroll = Scroll::Follow;
    }

    pub fn following(&self) -> bool {
        self.scroll == Scroll::Follow
    }
}

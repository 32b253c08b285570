//! How much of a page the model is given: what the context window leaves once the step's other
//! parts are counted, the start of the page kept, cut at a line or word boundary.
//!
//! Pure: it must not know where the text came from.

use crate::agent::budget;

/// Below this, a page is still given this much (a tiny window gets a useless step otherwise;
/// the request is then trimmed by the usual budget).
const MIN_PAGE_BYTES: usize = 600;
/// Room kept for the step's fixed wording, the links and forms.
const PROMPT_OVERHEAD_TOKENS: u64 = 700;

/// The bytes of page text a step may carry: the window's prompt budget less the system prompt,
/// the request, the notes and the wording.
pub(crate) fn page_budget(window: u64, max_tokens: u64, fixed_parts: &[&str]) -> usize {
    let fixed: u64 = fixed_parts.iter().map(|p| budget::estimate_text(p)).sum();
    let left = budget::prompt_budget(window, max_tokens)
        .saturating_sub(fixed)
        .saturating_sub(PROMPT_OVERHEAD_TOKENS);
    // The estimate is three bytes a token (`budget::estimate_text`).
    usize::try_from(left.saturating_mul(3))
        .unwrap_or(usize::MAX)
        .max(MIN_PAGE_BYTES)
}

/// `text` cut to at most `limit` bytes, keeping its start; `true` when cut.
pub(crate) fn cut_to(text: &str, limit: usize) -> (String, bool) {
    if text.len() <= limit {
        return (text.to_owned(), false);
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let head = &text[..end];
    // Prefer a line, then a word, in the last fifth.
    let floor = end - end / 5;
    let cut = head
        .rfind('\n')
        .filter(|&i| i >= floor)
        .or_else(|| head.rfind(' ').filter(|&i| i >= floor))
        .unwrap_or(end);
    (head[..cut].trim_end().to_owned(), true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_text_is_whole() {
        assert_eq!(cut_to("abc", 10), ("abc".to_owned(), false));
    }

    #[test]
    fn a_long_text_keeps_its_start_at_a_line() {
        let text = format!("{}\n{}", "a".repeat(90), "b".repeat(50));
        let (cut, was_cut) = cut_to(&text, 100);
        assert!(was_cut);
        assert_eq!(cut, "a".repeat(90));
    }

    #[test]
    fn cuts_never_split_a_character() {
        let text = "é".repeat(100);
        for limit in 1..60 {
            let (cut, _) = cut_to(&text, limit);
            assert!(cut.len() <= limit.max(2));
        }
    }

    #[test]
    fn the_budget_follows_the_window() {
        let small = page_budget(2048, 512, &["system", "request"]);
        let big = page_budget(32_768, 1024, &["system", "request"]);
        assert!(small >= MIN_PAGE_BYTES && big > small * 10, "{small} {big}");
    }
}

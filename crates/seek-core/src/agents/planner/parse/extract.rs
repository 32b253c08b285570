//! Where a plan may sit in a reply: fenced blocks (```json, ```json5, ```JSON, or an untagged
//! fence that holds a plan key), else bare JSON (what a server constrained to the schema sends,
//! or a model that forgot the fence), and the task headings written above it.
//!
//! Pure; it reads text and must not interpret the plan.

/// Bare JSON starts tried in one reply: prose full of braces cannot make parsing slow.
const MAX_BARE_STARTS: usize = 32;
/// The most bytes read from one bare start: a plan of 12 steps is far smaller, and a long reply
/// full of braces is not read 32 times over.
const MAX_BARE_BYTES: usize = 64 * 1024;
/// The longest heading kept as a step's title, in characters.
const MAX_TITLE_CHARS: usize = 200;

/// A piece of the reply that may hold the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Candidate<'a> {
    pub text: &'a str,
    /// Byte offset in the reply where the piece (its fence line, for a block) starts: the
    /// headings are read above it.
    pub starts_at: usize,
    /// The piece is meant as JSON (a json fence, or a reply that is JSON from its first
    /// character), so its syntax error is worth telling the model.
    pub meant_as_json: bool,
}

/// One fenced block.
struct Fence<'a> {
    info: &'a str,
    body: &'a str,
    starts_at: usize,
}

/// The candidates in the order they are tried: json fences, untagged fences that hold a plan
/// key, then bare `{` or `[` starts outside any fence (at most `MAX_BARE_STARTS`).
pub(super) fn candidates(reply: &str) -> Vec<Candidate<'_>> {
    let fences = fences(reply);
    let mut found = Vec::new();
    for fence in &fences {
        let tag = fence.info.split_whitespace().next().unwrap_or("");
        let tag = tag.split(':').next().unwrap_or("").to_ascii_lowercase();
        if matches!(tag.as_str(), "json" | "json5" | "jsonc") {
            found.push(Candidate {
                text: fence.body,
                starts_at: fence.starts_at,
                meant_as_json: true,
            });
        }
    }
    for fence in &fences {
        if fence.info.is_empty() && holds_plan_key(fence.body) {
            found.push(Candidate {
                text: fence.body,
                starts_at: fence.starts_at,
                meant_as_json: true,
            });
        }
    }
    let whole_is_json = reply.trim_start().starts_with(['{', '[']);
    let bare = reply
        .char_indices()
        .filter(|&(_, c)| c == '{' || c == '[')
        .map(|(at, _)| at)
        .take(MAX_BARE_STARTS);
    for (n, at) in bare.enumerate() {
        let mut end = (at + MAX_BARE_BYTES).min(reply.len());
        while !reply.is_char_boundary(end) {
            end -= 1;
        }
        found.push(Candidate {
            text: &reply[at..end],
            starts_at: at,
            meant_as_json: n == 0 && whole_is_json,
        });
    }
    found
}

/// Whether an untagged block looks like a plan: a `"plan"`, `"steps"` or `"tasks"` key.
fn holds_plan_key(body: &str) -> bool {
    let lower = body.to_lowercase();
    ["plan", "steps", "tasks"].iter().any(|key| {
        ['"', '\'', '“']
            .iter()
            .any(|q| lower.contains(&format!("{q}{key}")))
    }) || body.trim_start().starts_with("[{")
}

/// Every fenced block: a line starting (after indentation) with ``` opens one, with its info
/// string; a line that is only ``` closes it; a block never closed runs to the end (a reply cut
/// short).
fn fences(reply: &str) -> Vec<Fence<'_>> {
    let mut found = Vec::new();
    let mut open: Option<(usize, &str, usize)> = None; // (fence line start, info, body start)
    let mut at = 0;
    for line in reply.split_inclusive('\n') {
        let trimmed = line.trim();
        let next = at + line.len();
        match open {
            None => {
                if let Some(info) = trimmed.strip_prefix("```") {
                    // A longer fence (````json) is a fence too.
                    open = Some((at, info.trim_start_matches('`').trim(), next));
                }
            }
            Some((starts_at, info, body_start)) => {
                if trimmed.chars().all(|c| c == '`') && trimmed.len() >= 3 {
                    found.push(Fence {
                        info,
                        body: &reply[body_start..at],
                        starts_at,
                    });
                    open = None;
                }
            }
        }
        at = next;
    }
    if let Some((starts_at, info, body_start)) = open {
        found.push(Fence {
            info,
            body: &reply[body_start.min(reply.len())..],
            starts_at,
        });
    }
    found
}

/// The task headings above `until` (AgenticSeek's `get_task_names`: lines with `##`, or lines
/// starting with a digit), outside fenced blocks, cleaned of their `#`s and bounded.
pub(super) fn headings(reply: &str, until: usize) -> Vec<String> {
    let above = reply.get(..until).unwrap_or(reply);
    let mut in_fence = false;
    let mut found = Vec::new();
    for line in above.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence || trimmed.is_empty() {
            continue;
        }
        if trimmed.starts_with("##") || trimmed.starts_with(|c: char| c.is_ascii_digit()) {
            let title = trimmed.trim_start_matches('#').trim();
            let title = title.replace("**", "");
            let title = title.trim();
            if !title.is_empty() {
                found.push(title.chars().take(MAX_TITLE_CHARS).collect());
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(reply: &str) -> Vec<&str> {
        candidates(reply).iter().map(|c| c.text).collect()
    }

    #[test]
    fn json_fences_of_any_case_come_first_then_plan_like_untagged_ones_then_bare_starts() {
        let reply =
            "Plan:\n```\n{\"plan\": []}\n```\n```JSON\n{\"a\": 1}\n```\n```json5\n[]\n```\n";
        let found = texts(reply);
        assert_eq!(found[0], "{\"a\": 1}\n");
        assert_eq!(found[1], "[]\n");
        assert_eq!(found[2], "{\"plan\": []}\n");
        assert!(found[3].starts_with("{\"plan\""), "bare starts follow");
    }

    #[test]
    fn an_untagged_fence_without_a_plan_key_and_other_languages_are_not_plans() {
        let reply = "```\nls -la\n```\n```python\nprint({'plan': 1})\n```\n";
        let fenced: Vec<_> = candidates(reply)
            .into_iter()
            .filter(|c| c.meant_as_json)
            .collect();
        assert!(fenced.is_empty(), "{fenced:?}");
    }

    #[test]
    fn a_longer_fence_is_read() {
        let found = texts("````json\n{\"plan\": []}\n````\n");
        assert_eq!(found[0], "{\"plan\": []}\n");
    }

    #[test]
    fn an_unclosed_fence_runs_to_the_end() {
        let found = texts("```json\n{\"plan\": [");
        assert_eq!(found[0], "{\"plan\": [");
    }

    #[test]
    fn bare_starts_are_bounded() {
        let reply = "{".repeat(10_000);
        assert_eq!(candidates(&reply).len(), MAX_BARE_STARTS);
    }

    #[test]
    fn headings_are_read_above_the_plan_outside_fences() {
        let reply = "## Task 1: find it\n```bash\n2 not a heading\n```\n2. **Task 2: use it**\nprose\n```json\n{\n1\n}\n```";
        let until = reply.find("```json").unwrap_or(reply.len());
        assert_eq!(
            headings(reply, until),
            vec!["Task 1: find it".to_owned(), "2. Task 2: use it".to_owned()]
        );
        assert_eq!(
            headings(reply, reply.len() + 5).len(),
            2,
            "a bad bound reads all"
        );
    }
}

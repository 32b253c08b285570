//! Copying to the terminal's clipboard with OSC 52 (Ctrl+Y): what to copy from the transcript,
//! and the escape sequence that carries it.
//!
//! Owns the choice of text (a pane's code or output, thoughts, an answer, all without the
//! screen's gutters) and its encoding. The text travels base64-encoded, so nothing in it can
//! end the sequence or start another: a block's output cannot write escapes through a copy.
//! It must not write to the terminal itself (the event loop does).

use crate::transcript::Item;

/// Bytes copied at most: terminals drop (or choke on) bigger OSC 52 payloads.
pub(crate) const MOST: usize = 64 * 1024;

/// What Ctrl+Y copies, and how the notice names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Copy {
    pub text: String,
    /// `the bash code`, `the python output`, `the answer`.
    pub what: String,
    /// Only the first `MOST` bytes were kept.
    pub cut: bool,
}

/// Which part of a pane the next Ctrl+Y on it copies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    Code,
    Output,
}

/// The text of `item` to copy (`part` for panes), `None` when it has none.
pub(crate) fn of_item(item: &Item, part: Part) -> Option<Copy> {
    let (text, what) = match item {
        Item::Pane(pane) => {
            let tool = if pane.tool.is_empty() {
                "block"
            } else {
                &pane.tool
            };
            match part {
                // The code as it ran, without the line end that would run it when pasted.
                Part::Code => (
                    pane.code.trim_end_matches('\n').to_owned(),
                    format!("the {tool} code"),
                ),
                Part::Output => (pane.output.clone(), format!("the {tool} output")),
            }
        }
        Item::Reasoning(r) => (r.text.clone(), "the thoughts".to_owned()),
        Item::Answer(text) => (text.clone(), "the answer".to_owned()),
        Item::User(text) => (text.clone(), "your prompt".to_owned()),
        Item::Question(text) => (text.clone(), "the question".to_owned()),
        Item::Error(text) | Item::Notice(text) | Item::Rule(text) => {
            (text.clone(), "the message".to_owned())
        }
        Item::Plan(plan) => (plan_text(plan), "the plan".to_owned()),
        Item::Routed(route) => (
            format!(
                "→ {} · {:.2} · {}",
                route.summary(),
                route.confidence,
                route.reason
            ),
            "the message".to_owned(),
        ),
        Item::Step(header) => (header.task.clone(), "the step's task".to_owned()),
        Item::Web(pane) => {
            let (text, what) = pane.copy_text();
            (text, what.to_owned())
        }
    };
    // Whatever is copied may be pasted into a shell: no escape sequence from the model, a block
    // or a file reaches the clipboard (an `ESC [ 201 ~` would end a bracketed paste early and
    // run the rest as typed). Line ends and tabs stay.
    let text = crate::terminal_safe::terminal_safe(&text).into_owned();
    if text.trim().is_empty() {
        return None;
    }
    Some(bounded(text, what))
}

fn bounded(mut text: String, what: String) -> Copy {
    let cut = text.len() > MOST;
    if cut {
        let end = (0..=MOST)
            .rev()
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(0);
        text.truncate(end);
    }
    Copy { text, what, cut }
}

/// The OSC 52 sequence that puts `text` on the clipboard: `ESC ] 52 ; c ; BASE64 BEL`.
pub(crate) fn osc52(text: &str) -> String {
    format!("\x1b]52;c;{}\x07", base64(text.as_bytes()))
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding (RFC 4648).
pub fn base64(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18u32, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> shift & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The plan as a checklist, one step a line: `[x] 1 coder: task`.
fn plan_text(plan: &crate::plan_pane::PlanPane) -> String {
    use crate::wire::StepStatus;
    plan.steps
        .iter()
        .map(|step| {
            let mark = match step.status {
                StepStatus::Done => "[x]",
                StepStatus::Failed => "[!]",
                StepStatus::Skipped => "[-]",
                StepStatus::Pending | StepStatus::Running => "[ ]",
            };
            format!("{mark} {} {}: {}", step.id, step.agent, step.task)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_rfc_vectors() {
        for (plain, encoded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(plain.as_bytes()), encoded);
        }
    }

    #[test]
    fn the_sequence_carries_escapes_only_as_base64() {
        let hostile = "x\x07\x1b]52;c;evil\x07\x1b[2J";
        let sequence = osc52(hostile);
        let payload = &sequence["\x1b]52;c;".len()..sequence.len() - 1];
        assert!(
            payload
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"+/=".contains(&b)),
            "{sequence:?}"
        );
        assert!(sequence.ends_with('\x07') && sequence.matches('\x1b').count() == 1);
    }

    #[test]
    fn no_escape_from_the_model_reaches_the_clipboard() {
        // Pasted into a shell, `ESC [ 201 ~` would end a bracketed paste and run the rest.
        let hostile = "ls\x1b[201~rm -rf ~\n\tindented\n";
        let copy = of_item(&Item::Answer(hostile.into()), Part::Code).expect("text");
        assert!(!copy.text.contains('\x1b'), "{:?}", copy.text);
        assert!(
            copy.text.contains("\n\tindented"),
            "line ends and tabs stay"
        );
    }

    #[test]
    fn a_big_copy_is_cut_on_a_character_boundary() {
        let copy = of_item(&Item::Answer("é".repeat(MOST)), Part::Code).expect("text");
        assert!(copy.cut && copy.text.len() <= MOST && copy.text.len() > MOST - 2);
        assert_eq!(of_item(&Item::Answer("  \n".into()), Part::Code), None);
    }
}

//! Properties of the protocol layer on arbitrary text: no panics, exact rebuilds from
//! placeholders, and incremental parsing equal to batch parsing wherever the text is cut.

use std::borrow::Cow;

use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use seek::protocol::{
    BlockScanner, ScanEvent, ThinkDelta, ThinkSplitter, ToolTags, expand_placeholders, parse,
    placeholder_index, split_reasoning,
};

fn tags() -> ToolTags {
    ToolTags::new(["python", "bash", "c", "go", "java", "file_finder"])
}

/// Text built from markdown-ish pieces so fences, tags and containers actually occur.
fn replyish() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("```".to_owned()),
        Just("~~~".to_owned()),
        Just("````".to_owned()),
        Just("python".to_owned()),
        Just("py:a.py".to_owned()),
        Just("bash".to_owned()),
        Just("javascript".to_owned()),
        Just("\n".to_owned()),
        Just("\r\n".to_owned()),
        Just("    ".to_owned()),
        Just("- ".to_owned()),
        Just("1. ".to_owned()),
        Just("> ".to_owned()),
        Just("<think>".to_owned()),
        Just("</think>".to_owned()),
        Just("block:0".to_owned()),
        "[a-z é`:~]{0,6}",
        any::<String>(),
    ];
    prop::collection::vec(piece, 0..40).prop_map(|v| v.concat())
}

fn rebuild_from_placeholders(text: &str) -> Option<String> {
    let parsed = parse(text, &tags());
    let placeholders = parsed.placeholder_text();
    let out = expand_placeholders(&placeholders, |i| {
        parsed
            .blocks
            .get(i)
            .map(|b| Cow::Owned(parsed.raw(b).to_owned()))
    });
    Some(out.into_owned())
}

proptest! {
    // A fixed seed keeps the suite deterministic; widen `cases` locally to search harder.
    #![proptest_config(ProptestConfig {
        cases: 512,
        rng_seed: RngSeed::Fixed(0x5eed_5eed),
        failure_persistence: None,
        .. ProptestConfig::default()
    })]

    #[test]
    fn parsing_never_panics_and_spans_are_sane(text in replyish()) {
        let parsed = parse(&text, &tags());
        let mut previous_end = 0;
        for (i, block) in parsed.blocks.iter().enumerate() {
            prop_assert_eq!(block.index, i);
            prop_assert!(block.span.start >= previous_end && block.span.start <= block.span.end);
            prop_assert!(text.is_char_boundary(block.span.start) && text.is_char_boundary(block.span.end));
            previous_end = block.span.end;
        }
        let _ = split_reasoning(&text);
    }

    #[test]
    fn placeholders_and_blocks_rebuild_the_original(text in replyish()) {
        // A line the model wrote that is itself a placeholder would be ambiguous in the string
        // form; everything else must rebuild byte for byte.
        prop_assume!(!text.lines().any(|l| placeholder_index(l).is_some()));
        prop_assert_eq!(rebuild_from_placeholders(&text), Some(text.clone()));
    }

    #[test]
    fn incremental_equals_batch(text in replyish(), cuts in prop::collection::vec(0usize..200, 0..12)) {
        let batch = parse(&text, &tags());
        let mut scanner = BlockScanner::new(tags());
        let mut at = 0;
        let mut closed_events = Vec::new();
        for cut in cuts {
            let mut end = (at + cut).min(text.len());
            while !text.is_char_boundary(end) { end += 1; }
            for event in scanner.push(&text[at..end]) {
                if let ScanEvent::Closed(i) = event {
                    closed_events.push(i);
                    // The block is complete the moment its closing line arrived.
                    prop_assert_eq!(&scanner.blocks()[i], &batch.blocks[i]);
                }
            }
            at = end;
        }
        for event in scanner.push(&text[at..]) {
            if let ScanEvent::Closed(i) = event {
                closed_events.push(i);
            }
        }
        prop_assert_eq!(scanner.finish(), batch.clone());
        // Every closed block but one closed by the final line without a newline was announced.
        let announced_all = batch.blocks.iter().filter(|b| b.closed).all(|b| {
            closed_events.contains(&b.index) || !text[b.span.end..].contains('\n')
        });
        prop_assert!(announced_all);
    }

    #[test]
    fn streamed_reasoning_equals_batch(text in replyish(), cut in 0usize..400) {
        let whole = split_reasoning(&text);
        let mut cut = cut.min(text.len());
        while !text.is_char_boundary(cut) { cut -= 1; }
        let mut splitter = ThinkSplitter::default();
        let (mut reasoning, mut answer) = (String::new(), String::new());
        let deltas = [splitter.push(&text[..cut]), splitter.push(&text[cut..]), splitter.finish()];
        for delta in deltas.into_iter().flatten() {
            match delta {
                ThinkDelta::Reasoning(r) => reasoning.push_str(&r),
                ThinkDelta::Answer(a) => answer.push_str(&a),
                ThinkDelta::AnswerWasReasoning => reasoning.insert_str(0, &std::mem::take(&mut answer)),
            }
        }
        prop_assert_eq!(answer.trim(), whole.answer.as_str());
        prop_assert_eq!(whole.reasoning.unwrap_or_default(), reasoning.trim());
    }
}

#[test]
fn a_block_closes_when_its_closing_line_arrives() {
    let mut scanner = BlockScanner::new(tags());
    assert_eq!(scanner.push("Run:\n```bash\n"), [ScanEvent::Opened(0)]);
    assert_eq!(scanner.push("echo hi\n``"), []);
    assert_eq!(
        scanner.blocks()[0].code,
        "echo hi\n",
        "complete lines are visible while open"
    );
    assert_eq!(
        scanner.push("`"),
        [],
        "a ``` without its line end could still become ```py"
    );
    assert_eq!(scanner.push("\nmore text"), [ScanEvent::Closed(0)]);
    assert!(scanner.blocks()[0].closed);
}

#[test]
fn a_closing_fence_at_the_very_end_closes_on_finish() {
    let mut scanner = BlockScanner::new(tags());
    scanner.push("```bash\nls\n```");
    let parsed = scanner.finish();
    assert!(parsed.blocks[0].closed);
    assert_eq!(parsed.placeholder_text(), "block:0");
}

#[test]
fn one_megabyte_in_four_byte_pieces() {
    let unit = "Some prose.\n```python:x.py\nprint('```')\n```\n";
    let text = unit.repeat(1_000_000 / unit.len());
    let mut scanner = BlockScanner::new(tags());
    let mut closed = 0;
    for piece in text.as_bytes().chunks(4) {
        let piece = std::str::from_utf8(piece).expect("ASCII text");
        closed += scanner
            .push(piece)
            .iter()
            .filter(|e| matches!(e, ScanEvent::Closed(_)))
            .count();
    }
    let parsed = scanner.finish();
    assert_eq!(closed, parsed.blocks.len());
    assert_eq!(parsed, parse(&text, &tags()));
}

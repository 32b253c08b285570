//! Properties of the protocol layer on arbitrary text: no panics, exact rebuilds from
//! placeholders, and streamed reasoning equal to batch reasoning wherever the text is cut.

use std::borrow::Cow;

use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use seek::protocol::{
    ThinkDelta, ThinkSplitter, ToolTags, expand_placeholders, parse, placeholder_index,
    split_reasoning,
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
fn a_closing_fence_at_the_very_end_closes_the_block() {
    let parsed = parse("```bash\nls\n```", &tags());
    assert!(parsed.blocks[0].closed);
    assert_eq!(parsed.placeholder_text(), "block:0");
}

#[test]
fn an_unclosed_block_spans_to_the_end() {
    let text = "Run:\n```bash\necho hi\n``";
    let parsed = parse(text, &tags());
    assert!(!parsed.blocks[0].closed);
    assert_eq!(parsed.blocks[0].code, "echo hi\n``\n");
    assert_eq!(parsed.blocks[0].span, 5..text.len());
}

//! Rendering results: each kind of part, structured content said once, the empty result, and
//! cutting to the limit on character boundaries.

use proptest::prelude::*;
use serde_json::json;

use super::*;

fn output(parts: Vec<Part>, structured: Option<Value>) -> CallOutput {
    CallOutput {
        is_error: false,
        parts,
        structured,
    }
}

fn text(t: &str) -> Part {
    Part::Text(t.into())
}

#[test]
fn text_parts_are_joined_by_newlines() {
    let rendered = render(&output(vec![text("one"), text("two\nthree")], None), 1000);
    assert_eq!(rendered, "one\ntwo\nthree");
}

#[test]
fn structured_content_is_shown_unless_a_text_part_says_it() {
    // mcp-server-time sends its result both as JSON text and as structured content.
    let value =
        json!({"timezone": "UTC", "datetime": "2026-12-01T19:00:00+00:00", "is_dst": false});
    let pretty = serde_json::to_string_pretty(&value).unwrap();
    let both = render(&output(vec![text(&pretty)], Some(value.clone())), 1000);
    assert_eq!(both, pretty);
    let alone = render(&output(vec![], Some(value.clone())), 1000);
    assert_eq!(alone, value.to_string());
    let beside_prose = render(
        &output(vec![text("The time:")], Some(json!({"t": 1}))),
        1000,
    );
    assert_eq!(beside_prose, "The time:\n{\"t\":1}");
}

#[test]
fn structured_content_whose_values_the_text_holds_is_sent_once() {
    // server-filesystem's read_text_file: the file as text, and `{"content": <the file>}`.
    let file = "line one\n\"quoted\" line two\n".repeat(500);
    let rendered = render(
        &output(vec![text(&file)], Some(json!({"content": file.clone()}))),
        1_000_000,
    );
    assert_eq!(rendered, file, "the file once, not twice");
    // The values in words: everything's get-structured-content (a weather report).
    let weather = json!({"temperature": 22.5, "conditions": "Partly cloudy", "humidity": 65});
    let said = "Weather: Partly cloudy, 22.5 °C, humidity 65 %";
    assert_eq!(
        render(&output(vec![text(said)], Some(weather.clone())), 1000),
        said
    );
    // One value missing from the text: the structure is added, whole.
    let unsaid = "Weather: Partly cloudy, 22.5 °C";
    assert_eq!(
        render(&output(vec![text(unsaid)], Some(weather.clone())), 1000),
        format!("{unsaid}\n{weather}")
    );
}

#[test]
fn a_number_counts_as_said_only_as_a_number_of_its_own() {
    let sum = Some(json!({"sum": 5}));
    assert_eq!(
        render(&output(vec![text("The sum is 5.")], sum.clone()), 100),
        "The sum is 5."
    );
    for text_only in ["The sum is 15", "The sum is 5.5", "version 1.5", "55"] {
        assert_eq!(
            render(&output(vec![text(text_only)], sum.clone()), 100),
            format!("{text_only}\n{{\"sum\":5}}"),
            "{text_only}"
        );
    }
    let flags = Some(json!({"ok": true, "note": null}));
    assert_eq!(
        render(&output(vec![text("OK: True")], flags.clone()), 100),
        "OK: True"
    );
    assert!(
        render(&output(vec![text("fine")], flags), 100).ends_with("{\"note\":null,\"ok\":true}")
    );
}

#[test]
fn a_structure_too_large_to_compare_is_kept() {
    let values: Vec<Value> = (0..70_000).map(|i| json!(format!("v{i}"))).collect();
    let text_part = "v1 ".repeat(1000);
    let rendered = render(
        &output(vec![text(&text_part)], Some(Value::Array(values))),
        10_000_000,
    );
    assert!(
        rendered.len() > text_part.len() + 70_000,
        "kept: {}",
        rendered.len()
    );
}

#[test]
fn media_and_resources_are_one_line_each() {
    let parts = vec![
        Part::Image {
            mime_type: "image/png".into(),
            bytes: 1229,
        },
        Part::Audio {
            mime_type: "audio/wav".into(),
            bytes: 300,
        },
        Part::ResourceLink {
            uri: "test://static/resource/1".into(),
            name: Some("Resource 1".into()),
            mime_type: Some("text/plain".into()),
        },
        Part::ResourceLink {
            uri: "file:///a".into(),
            name: None,
            mime_type: None,
        },
        Part::Resource {
            uri: "test://text".into(),
            mime_type: Some("text/plain".into()),
            text: Some("the text\nof it".into()),
            blob_bytes: None,
        },
        Part::Resource {
            uri: "test://blob".into(),
            mime_type: None,
            text: None,
            blob_bytes: Some(3 * 1024 * 1024 + 500_000),
        },
    ];
    assert_eq!(
        render(&output(parts, None), 10_000),
        "[image: image/png, 1.2 KB]\n\
         [audio: audio/wav, 300 bytes]\n\
         [resource: test://static/resource/1 — Resource 1 (text/plain)]\n\
         [resource: file:///a]\n\
         [resource: test://text (text/plain)]\nthe text\nof it\n\
         [resource: test://blob, 3.5 MB]"
    );
}

#[test]
fn an_empty_result_says_so() {
    assert_eq!(render(&output(vec![], None), 100), "(no content)");
    assert_eq!(
        render(&output(vec![text(""), text("  \n")], None), 100),
        "(no content)"
    );
}

#[test]
fn server_text_cannot_drive_the_terminal_or_break_a_summary_line() {
    let parts = vec![
        text("red \u{1b}[31mtext\u{1b}]0;title\u{7} end\r\n"),
        Part::ResourceLink {
            uri: "a\nb\u{1b}[2J".into(),
            name: Some("n\r\nm".into()),
            mime_type: None,
        },
    ];
    let rendered = render(&output(parts, None), 1000);
    assert_eq!(rendered, "red text end\n\n[resource: a b\\u{1b}[2J — n m]");
}

#[test]
fn a_large_result_keeps_its_head_and_tail_within_the_limit() {
    let lines: Vec<String> = (0..10_000).map(|i| format!("line {i:05}")).collect();
    let big = lines.join("\n");
    let rendered = render(&output(vec![text(&big)], None), 4_000);
    assert!(rendered.len() <= 4_000, "{}", rendered.len());
    assert!(rendered.starts_with("line 00000\n"));
    assert!(rendered.ends_with("line 09999"));
    assert!(rendered.contains("bytes of the result cut …]\n"));
    // Cut at line starts: every kept line is whole.
    for line in rendered.lines().filter(|l| !l.starts_with("[…")) {
        assert_eq!(line.len(), 10, "{line:?}");
    }
    let cut: usize = rendered
        .lines()
        .find_map(|l| l.strip_prefix("[… ")?.split(' ').next()?.parse().ok())
        .unwrap();
    assert_eq!(
        cut + rendered.len()
            - rendered
                .lines()
                .find(|l| l.starts_with("[…"))
                .unwrap()
                .len()
            - 1,
        big.len()
    );
}

#[test]
fn cutting_never_splits_a_character() {
    let wide = "é漢🙂".repeat(2_000);
    for limit in [0, 1, 2, 5, 50, 63, 64, 65, 100, 1_001, 5_000] {
        let rendered = render(&output(vec![text(&wide)], None), limit);
        assert!(rendered.len() <= limit, "{limit}: {}", rendered.len());
        assert!(!rendered.contains('\u{fffd}'));
    }
}

#[test]
fn sizes_read_naturally() {
    assert_eq!(size(0), "0 bytes");
    assert_eq!(size(1023), "1023 bytes");
    assert_eq!(size(1024), "1.0 KB");
    assert_eq!(size(5 * 1024 * 1024), "5.0 MB");
}

fn part() -> impl Strategy<Value = Part> {
    prop_oneof![
        "\\PC{0,300}|[\\x00-\\x1f\\x7f-\\u{a0}é漢🙂a\\n]{0,300}".prop_map(Part::Text),
        ("\\PC{0,20}", any::<usize>())
            .prop_map(|(mime_type, bytes)| Part::Image { mime_type, bytes }),
        ("\\PC{0,20}", any::<usize>())
            .prop_map(|(mime_type, bytes)| Part::Audio { mime_type, bytes }),
        (
            "\\PC{0,40}",
            proptest::option::of("\\PC{0,20}"),
            proptest::option::of("\\PC{0,10}")
        )
            .prop_map(|(uri, name, mime_type)| Part::ResourceLink {
                uri,
                name,
                mime_type
            }),
        (
            "\\PC{0,40}",
            proptest::option::of("\\PC{0,300}"),
            proptest::option::of(any::<usize>())
        )
            .prop_map(|(uri, text, blob_bytes)| Part::Resource {
                uri,
                mime_type: None,
                text,
                blob_bytes
            }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn render_never_panics_and_never_passes_its_limit(
        parts in proptest::collection::vec(part(), 0..6),
        structured in proptest::option::of("\\PC{0,50}".prop_map(Value::String)),
        is_error: bool,
        limit in 0usize..2_000,
    ) {
        let rendered = render(&CallOutput { is_error, parts, structured }, limit);
        prop_assert!(rendered.len() <= limit, "{} > {limit}", rendered.len());
        prop_assert!(!rendered.chars().any(|c| c.is_control() && c != '\n' && c != '\t'));
    }
}

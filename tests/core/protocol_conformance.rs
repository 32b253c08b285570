//! Conformance of the block parser with AgenticSeek's test suite (reference §5.1) and its probed
//! edge cases (§1.3, §3.1). Where seek deviates on purpose, the test asserts seek's behaviour and
//! says why.
//!
//! One deliberate difference runs through all of them: AgenticSeek's blocks start right after the
//! tag, so they begin with the fence line's `\n`. seek's `code` is the lines between the fences,
//! so `"```python\nx\n```"` gives `"x\n"`, not `"\nx\n"`: the leading newline was an artefact of
//! slicing, and a `#!` line must be the first line for a script to run.

use seek::protocol::{Block, ToolTags, parse, split_reasoning};

fn python() -> ToolTags {
    ToolTags::new(["python"])
}

fn codes(text: &str, tags: &ToolTags) -> Vec<String> {
    parse(text, tags)
        .blocks
        .into_iter()
        .map(|b| b.code)
        .collect()
}

fn only_block(text: &str) -> Block {
    let mut blocks = parse(text, &python()).blocks;
    assert_eq!(blocks.len(), 1, "{text:?}");
    blocks.remove(0)
}

// §5.1 test_load_exec_block_single_block
#[test]
fn single_block() {
    let text = "Here's some Python code:\n```python\nprint(\"Hello, World!\")\nx = 42\n```\nThat's the code.";
    let block = only_block(text);
    assert_eq!(block.code, "print(\"Hello, World!\")\nx = 42\n");
    assert_eq!(block.save_path, None);
    assert!(block.closed);
}

// §5.1 test_load_exec_block_multiple_blocks
#[test]
fn multiple_blocks() {
    let text = "First block:\n```python\nimport os\nprint(\"First block\")\n```\n\nSecond block:\n```python\nimport sys\nprint(\"Second block\")\n```\n\nDone.";
    assert_eq!(
        codes(text, &python()),
        [
            "import os\nprint(\"First block\")\n",
            "import sys\nprint(\"Second block\")\n"
        ]
    );
}

// §5.1 test_load_exec_block_with_save_path: a `save_path:` line inside the block is code.
#[test]
fn save_path_line_inside_the_block_is_code() {
    let block = only_block(
        "```python\nsave_path: test_file.py\nimport os\nprint(\"Hello with save path\")\n```",
    );
    assert_eq!(
        block.code,
        "save_path: test_file.py\nimport os\nprint(\"Hello with save path\")\n"
    );
    assert_eq!(block.save_path, None);
}

// §5.1 test_load_exec_block_with_indentation
#[test]
fn indented_fence_is_de_indented() {
    let text = "    Here's indented code:\n    ```python\n    def hello():\n        print(\"Hello\")\n        return True\n    ```\n    End of code.";
    assert_eq!(
        only_block(text).code,
        "def hello():\n    print(\"Hello\")\n    return True\n"
    );
}

// §5.1 test_load_exec_block_no_blocks
#[test]
fn no_blocks() {
    let text = "This is just regular text with no code blocks.\nThere are no python blocks here.\nJust plain text.";
    assert!(parse(text, &python()).blocks.is_empty());
}

// §5.1 test_load_exec_block_wrong_tag
#[test]
fn wrong_tag_stays_markdown() {
    let parsed = parse(
        "```javascript\nconsole.log(\"This is JavaScript, not Python\");\n```",
        &python(),
    );
    assert!(parsed.blocks.is_empty());
    assert_eq!(parsed.placeholder_text(), parsed.text, "untouched markdown");
}

// §5.1 test_load_exec_block_incomplete_block. Deviation: AgenticSeek silently drops it (`[]`);
// seek reports it unclosed so the loop can tell the model and the UI can show it streaming.
#[test]
fn incomplete_block_is_reported_unclosed() {
    let parsed = parse(
        "```python\nprint(\"This block has no closing tag\")\nx = 42",
        &python(),
    );
    assert_eq!(parsed.blocks.len(), 1);
    let block = &parsed.blocks[0];
    assert!(!block.closed);
    assert_eq!(
        block.code,
        "print(\"This block has no closing tag\")\nx = 42\n"
    );
    assert_eq!(parsed.unclosed().map(|b| b.index), Some(0));
}

// §5.1 test_load_exec_block_empty_block (AgenticSeek: `'\n'`, the fence line's newline).
#[test]
fn empty_block() {
    let block = only_block("```python\n```");
    assert_eq!(block.code, "");
    assert!(block.closed);
}

// §5.1 test_load_exec_block_mixed_content
#[test]
fn mixed_content() {
    let text = "Setup:\n```python\nimport os\nimport sys\n```\nA helper:\n```python\ndef process_data(data):\n    return data.upper()\n```\nAnd use it:\n```python\nresult = process_data(\"hello world\")\nprint(result)\n```\nThat's all.";
    assert_eq!(
        codes(text, &python()),
        [
            "import os\nimport sys\n",
            "def process_data(data):\n    return data.upper()\n",
            "result = process_data(\"hello world\")\nprint(result)\n",
        ]
    );
}

// §5.1 test_load_exec_block_with_special_characters
#[test]
fn special_characters() {
    let body = "text = \"Hello \"world\" with 'quotes'\"\nregex = r\"^\\d+$\"\npath = \"C:\\Users\\test\\file.txt\"\n";
    assert_eq!(only_block(&format!("```python\n{body}```")).code, body);
}

// §5.1 test_load_exec_block_tag_undefined has no counterpart: seek has no "undefined" tag state;
// an agent with no tools simply owns no tags.
#[test]
fn no_tools_means_no_blocks() {
    assert!(
        parse("```python\nprint(1)\n```", &ToolTags::default())
            .blocks
            .is_empty()
    );
}

// §1.3 [probed]: prefix matching. seek matches the whole tag word.
#[test]
fn tags_match_exactly() {
    let coder = ToolTags::new(["bash", "python", "c", "go", "java", "file_finder"]);
    for fence in ["javascript", "cpp", "css", "csv", "gofmt"] {
        let text = format!("```{fence}\nsomething\n```");
        assert!(
            parse(&text, &coder).blocks.is_empty(),
            "{fence} must not run"
        );
    }
    // python3 and golang are aliases: the suffix never leaks into the code.
    let parsed = parse(
        "```python3\nprint(1)\n```\n```golang\npackage main\n```",
        &coder,
    );
    let got: Vec<_> = parsed
        .blocks
        .iter()
        .map(|b| (b.tag.as_str(), b.code.as_str()))
        .collect();
    assert_eq!(got, [("python", "print(1)\n"), ("go", "package main\n")]);
}

// §1.3 [probed]: matching was case-sensitive. seek's is case-insensitive.
#[test]
fn tags_are_case_insensitive() {
    assert_eq!(only_block("```Python\nprint(1)\n```").tag, "python");
}

// §1.3 [probed]: a triple backtick inside the code ended the block early.
#[test]
fn backticks_inside_code_do_not_close() {
    let block = only_block("```python\nprint('```')\nprint(2)\n```");
    assert_eq!(block.code, "print('```')\nprint(2)\n");
}

// §1.3 [probed]: an inline fence became the block `" print(1)"`. In seek it is inline code.
#[test]
fn inline_fence_is_not_a_block() {
    let parsed = parse("text ```python print(1)``` more\nafter", &python());
    assert!(parsed.blocks.is_empty());
    let parsed = parse("```python print(1)```\nafter", &python());
    assert!(parsed.blocks.is_empty());
}

// §1.3 [probed]: save paths.
#[test]
fn save_paths_are_trimmed_and_whole() {
    assert_eq!(
        only_block("```python: sub/dir/tmp.py\nx\n```")
            .save_path
            .as_deref(),
        Some("sub/dir/tmp.py")
    );
    // AgenticSeek: save_path "C". The path is everything after the tag's colon.
    assert_eq!(
        only_block("```python:C:\\x\\y.py\nx\n```")
            .save_path
            .as_deref(),
        Some("C:\\x\\y.py")
    );
    let finder = ToolTags::new(["file_finder"]);
    let parsed = parse("```file_finder:read\ntoto.py\n```", &finder);
    assert_eq!(parsed.blocks[0].save_path.as_deref(), Some("read"));
    assert_eq!(parsed.blocks[0].code, "toto.py\n");
}

// §1.3 [probed]: one save path was shared by every block and the last block won. In seek the
// suffix belongs to its own block.
#[test]
fn save_path_belongs_to_its_block() {
    let text = "```python\nprint(1)\n```\n```python:a.py\nprint(2)\n```\n```python\nprint(3)\n```";
    let parsed = parse(text, &python());
    let got: Vec<_> = parsed
        .blocks
        .iter()
        .map(|b| (b.save_path.as_deref(), b.code.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            (None, "print(1)\n"),
            (Some("a.py"), "print(2)\n"),
            (None, "print(3)\n")
        ]
    );
}

// §1.3: "leading whitespace" was whatever preceded the fence (`Run: `). seek follows markdown:
// only indentation, list markers and block quotes are containers, so `Run: ```python` is prose.
#[test]
fn text_before_a_fence_is_not_a_container() {
    assert!(
        parse("Run: ```python\nprint(1)\n```", &python())
            .blocks
            .is_empty()
    );
}

#[test]
fn list_items_and_block_quotes() {
    let list = "Steps:\n1. ```python\n   if True:\n       print(1)\n   ```\n2. done";
    assert_eq!(only_block(list).code, "if True:\n    print(1)\n");
    let quote = "> ```python\n> x = 1\n>\n> print(x)\n> ```";
    assert_eq!(only_block(quote).code, "x = 1\n\nprint(x)\n");
}

#[test]
fn tool_fences_inside_markdown_examples_do_not_run() {
    let text = "Example:\n````markdown\n```python\nprint('not me')\n```\n````\n```python\nprint('me')\n```";
    assert_eq!(codes(text, &python()), ["print('me')\n"]);
}

#[test]
fn longer_and_tilde_fences() {
    assert_eq!(only_block("````python\n```\nx\n````").code, "```\nx\n");
    assert_eq!(only_block("~~~python\nx\n```\n~~~").code, "x\n```\n");
}

#[test]
fn crlf_replies() {
    let block = only_block("```python\r\nprint(1)\r\n```\r\n");
    assert_eq!(block.code, "print(1)\n");
    assert!(block.closed);
}

// §3.1 remove_blocks [probed]: placeholders count tool blocks of this answer from 0.
#[test]
fn placeholders() {
    let tags = ToolTags::new(["python", "bash"]);
    let text = "I will run:\n```python\nprint(1)\n```\nthen\n```bash\nls\n```\nend";
    assert_eq!(
        parse(text, &tags).placeholder_text(),
        "I will run:\nblock:0\nthen\nblock:1\nend"
    );
    // Non-tool fences stay as markdown and are not counted.
    let text = "```html\n<p>\n```\n```python\nx\n```\n";
    assert_eq!(
        parse(text, &tags).placeholder_text(),
        "```html\n<p>\n```\nblock:0\n"
    );
    // AgenticSeek swallowed the rest of the text after an inline fence.
    let text = "text ```python print(1)``` more\nafter";
    assert_eq!(parse(text, &tags).placeholder_text(), text);
}

// §3.1 [probed]: reasoning extraction returned garbage without tags.
#[test]
fn reasoning_split_conformance() {
    assert_eq!(split_reasoning("no tags here at all").reasoning, None);
    assert_eq!(split_reasoning("short").reasoning, None);
    let split = split_reasoning("<think>unterminated");
    assert_eq!(split.reasoning.as_deref(), Some("unterminated"));
    assert!(split.still_thinking);
    // Reasoning never stays in the answer, even with a code block after it.
    let split = split_reasoning("<think>use python</think>\n```python\nprint(1)\n```");
    assert_eq!(split.answer, "```python\nprint(1)\n```");
}

//! Reading blocks as calls (the forms small models write) and resolving names against real
//! tool lists.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::test_tools::{both, everything, object, time, tool};
use super::*;
use crate::mcp::ToolInfo;

fn call(code: &str) -> CallRequest {
    parse_call(code).unwrap_or_else(|e| panic!("{code:?}: {e}"))
}

fn refused(code: &str) -> String {
    match parse_call(code) {
        Ok(request) => panic!("{code:?} was read as {request:?}"),
        Err(CallParseError(text)) => text,
    }
}

#[test]
fn the_issue_s_example_is_a_call_with_string_arguments() {
    let request = call("time.get_current_time\ntimezone: UTC\n");
    assert_eq!(request.name, "time.get_current_time");
    assert_eq!(Value::Object(request.arguments), json!({"timezone": "UTC"}));
    assert!(request.from_lines);
}

#[test]
fn key_value_lines_are_typed_when_they_are_json() {
    let request = call(
        "everything.x\n\nn: 3\nf: 2.5\nyes: true\nnothing: null\nlist: [1,2]\nmap: {\"a\":1}\nquoted: \"3\"\nplain: hello world  \nkey = value\nsingle: 'it'\ntick: `x`\nempty:\ntime: 14:30\nurl = http://h:80/a=b\n",
    );
    assert_eq!(
        Value::Object(request.arguments),
        json!({
            "n": 3, "f": 2.5, "yes": true, "nothing": null, "list": [1, 2], "map": {"a": 1},
            "quoted": "3", "plain": "hello world", "key": "value", "single": "it", "tick": "x",
            "empty": "", "time": "14:30", "url": "http://h:80/a=b"
        })
    );
}

#[test]
fn numbers_not_in_json_spelling_stay_text_as_written() {
    let request = call("t\na: 1e3\nb: 007\nc: -0\nd: 1.50");
    assert_eq!(
        Value::Object(request.arguments),
        json!({"a": "1e3", "b": "007", "c": "-0", "d": "1.50"})
    );
}

#[test]
fn the_name_line_tolerates_what_small_models_write() {
    for first in [
        "time.get_current_time",
        "`time.get_current_time`",
        "\"time.get_current_time\"",
        "'time.get_current_time'",
        "time.get_current_time:",
        "time.get_current_time()",
        "time.get_current_time():",
        "tool: time.get_current_time",
        "Tool = \"time.get_current_time\"",
        "name: `time.get_current_time`",
        "tool_name: time.get_current_time",
        "- time.get_current_time",
        "  time.get_current_time  ",
        "time.get_current_time — Get current time in a specific timezone",
    ] {
        let request = call(&format!("{first}\ntimezone: UTC"));
        assert_eq!(request.name, "time.get_current_time", "{first:?}");
        assert_eq!(
            Value::Object(request.arguments),
            json!({"timezone": "UTC"}),
            "{first:?}"
        );
    }
}

#[test]
fn a_server_line_then_a_tool_line_name_the_tool() {
    let request = call("server: time\ntool: \"get_current_time\"\ntimezone: UTC");
    assert_eq!(request.name, "time.get_current_time");
    assert_eq!(Value::Object(request.arguments), json!({"timezone": "UTC"}));
    let no_arguments = call("server = everything\nname: get-env");
    assert_eq!(no_arguments.name, "everything.get-env");
    assert!(no_arguments.arguments.is_empty());
    assert!(refused("server: time\ntimezone: UTC").contains("looks like an argument"));
}

#[test]
fn names_keep_the_characters_tool_names_hold() {
    for name in [
        "everything.get-sum",
        "a/b.c_d-e",
        "server:tool",
        "fs::read",
        "mcp__time__now",
    ] {
        assert_eq!(call(name).name, name);
    }
    // `tool:` alone names a tool called `tool`.
    assert_eq!(call("tool:").name, "tool");
    // A hidden character as the prompt shows it is part of the name; a brace after it is not.
    assert_eq!(call("evil.\\u{202e}gnp.exe").name, "evil.\\u{202e}gnp.exe");
    let request = call("evil.\\u{200b}x {\"a\": 1}");
    assert_eq!(request.name, "evil.\\u{200b}x");
    assert_eq!(request.arguments.get("a"), Some(&json!(1)));
}

#[test]
fn arguments_may_follow_the_name_on_its_line() {
    let json_after = call("everything.get-sum {\"a\": 1, \"b\": 2}");
    assert_eq!(Value::Object(json_after.arguments), json!({"a": 1, "b": 2}));
    assert!(!json_after.from_lines);
    let spanning = call("everything.get-sum {\"a\": 1,\n \"b\": 2}");
    assert_eq!(Value::Object(spanning.arguments), json!({"a": 1, "b": 2}));
    let line_after = call("time.get_current_time timezone: UTC");
    assert_eq!(
        Value::Object(line_after.arguments),
        json!({"timezone": "UTC"})
    );
}

#[test]
fn arguments_in_parentheses_are_read_as_pairs() {
    let request = call("everything.get-sum(a=1, b=2)");
    assert_eq!(Value::Object(request.arguments), json!({"a": 1, "b": 2}));
    assert!(request.from_lines);
    let quoted = call("everything.echo(message=\"a, b\")");
    assert_eq!(Value::Object(quoted.arguments), json!({"message": "a, b"}));
    let json_inside = call("everything.echo({\"message\": \"hi\"})");
    assert_eq!(
        Value::Object(json_inside.arguments),
        json!({"message": "hi"})
    );
    assert!(refused("x(a=1)\nb: 2").contains("given twice"));
    assert!(refused("x(a=1").contains("parenthesis"));
}

#[test]
fn a_json_object_of_arguments_may_span_lines_and_end_with_a_comma() {
    let request = call("everything.get-sum\n{\n  \"a\": 1,\n  \"b\": [2, 3,],\n}\n");
    assert_eq!(
        Value::Object(request.arguments),
        json!({"a": 1, "b": [2, 3]})
    );
    assert!(!request.from_lines);
    // A comma inside a string is kept.
    let request = call("e.echo\n{\"message\": \"a,}\",}");
    assert_eq!(Value::Object(request.arguments), json!({"message": "a,}"}));
}

#[test]
fn json_lines_without_braces_are_key_value_lines() {
    let request = call("time.convert_time\n\"source_timezone\": \"UTC\",\n\"time\": \"14:30\",\n");
    assert_eq!(
        Value::Object(request.arguments),
        json!({"source_timezone": "UTC", "time": "14:30"})
    );
}

#[test]
fn a_whole_json_call_is_read_in_its_common_shapes() {
    let shapes = [
        r#"{"tool": "time.get_current_time", "arguments": {"timezone": "UTC"}}"#,
        r#"{"name": "time.get_current_time", "args": {"timezone": "UTC"}}"#,
        r#"{"tool": "time.get_current_time", "params": {"timezone": "UTC"},}"#,
        r#"{"tool": "time.get_current_time", "inputSchema": {"timezone": "UTC"}}"#,
        r#"{"server": "time", "tool": "get_current_time", "input": {"timezone": "UTC"}}"#,
        r#"{"tool": "time.get_current_time", "timezone": "UTC"}"#,
        r#"{"function": {"name": "time.get_current_time", "arguments": "{\"timezone\": \"UTC\"}"}}"#,
        r#"{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "time.get_current_time", "arguments": {"timezone": "UTC"}}}"#,
        r#"{"type": "tool_use", "name": "time.get_current_time", "input": {"timezone": "UTC"}}"#,
    ];
    for shape in shapes {
        let request = call(shape);
        assert_eq!(request.name, "time.get_current_time", "{shape}");
        assert_eq!(
            Value::Object(request.arguments),
            json!({"timezone": "UTC"}),
            "{shape}"
        );
        assert!(!request.from_lines);
    }
    let no_arguments = call(r#"{"tool": "everything.get-env"}"#);
    assert!(no_arguments.arguments.is_empty());
    let null_arguments = call(r#"{"tool": "everything.get-env", "arguments": null}"#);
    assert!(null_arguments.arguments.is_empty());
}

#[test]
fn a_whole_json_call_without_a_tool_or_with_bad_arguments_is_refused() {
    assert!(refused(r#"{"timezone": "UTC"}"#).contains("names no tool"));
    assert!(refused(r#"{"tool": "x", "arguments": [1]}"#).contains("must be a JSON object"));
    assert!(refused(r#"{"tool": "", "arguments": {}}"#).contains("not a tool's name"));
    assert!(refused("{\"tool\": \"x\",").contains("not valid JSON"));
}

#[test]
fn errors_say_what_is_wrong_and_show_both_forms() {
    let empty = refused("  \n\n ");
    assert!(
        empty.contains("empty") && empty.contains("`key: value`"),
        "{empty}"
    );

    let neither = refused("time.get_current_time\ntimezone: UTC\nthis is prose");
    assert!(neither.contains("`this is prose`"), "{neither}");
    assert!(
        neither.contains("`key: value`") && neither.contains("JSON object"),
        "{neither}"
    );

    let twice = refused("t\ntimezone: UTC\ntimezone: CET");
    assert!(twice.contains("`timezone` is given twice"), "{twice}");

    let argument_first = refused("timezone: UTC");
    assert!(
        argument_first.contains("looks like an argument"),
        "{argument_first}"
    );

    let not_object = refused("t\n[1, 2]");
    assert!(not_object.contains("neither"), "{not_object}");
    let bad_json = refused("t\n{\"a\": }");
    assert!(bad_json.contains("not valid JSON"), "{bad_json}");

    let long = refused(&"x".repeat(300));
    assert!(long.contains("300 bytes"), "{long}");
    assert!(long.len() < 300, "{}", long.len());
}

#[test]
fn an_error_never_echoes_control_characters() {
    let text = refused("time.x\nnot\u{1b}[31m an argument");
    assert!(
        !text.chars().any(|c| c.is_control() && c != '\n'),
        "{text:?}"
    );
}

#[test]
fn resolve_finds_a_qualified_name_exactly() {
    let tools = both();
    let request = call("time.get_current_time");
    assert_eq!(
        resolve(&request, &tools).map(ToolInfo::qualified),
        Ok("time.get_current_time".into())
    );
    for name in [
        "everything/get-sum",
        "everything:get-sum",
        "everything::get-sum",
        "everything__get-sum",
        "mcp__everything__get-sum",
    ] {
        let found = resolve(&call(name), &tools).map(ToolInfo::qualified);
        assert_eq!(found, Ok("everything.get-sum".into()), "{name}");
    }
}

#[test]
fn resolve_finds_a_bare_name_one_server_has() {
    let tools = both();
    assert_eq!(
        resolve(&call("convert_time"), &tools).map(|t| t.server.as_str()),
        Ok("time")
    );
    assert_eq!(
        resolve(&call("echo"), &tools).map(|t| t.server.as_str()),
        Ok("everything")
    );
}

#[test]
fn resolve_ignores_case_only_when_that_finds_one() {
    let tools = both();
    assert_eq!(
        resolve(&call("Time.Get_Current_Time"), &tools).map(ToolInfo::qualified),
        Ok("time.get_current_time".into())
    );
    let twins = vec![
        tool("a", "Run", json!({"type": "object"})),
        tool("a", "run", json!({"type": "object"})),
    ];
    assert_eq!(
        resolve(&call("run"), &twins).map(|t| t.name.as_str()),
        Ok("run")
    );
    let error = resolve(&call("RUN"), &twins).unwrap_err();
    assert!(error.contains("a.Run, a.run"), "{error}");
}

#[test]
fn a_name_with_hidden_characters_is_called_as_it_is_shown() {
    let tools = vec![
        tool("evil", "\u{202e}gnp.exe", json!({"type": "object"})),
        tool("evil", "read\u{200b}_file", json!({"type": "object"})),
        tool("evil", "read_file", json!({"type": "object"})),
    ];
    // Its real name and its escaped one lead to it; the look-alike stays apart.
    for written in [
        "evil.\u{202e}gnp.exe",
        "evil.\\u{202e}gnp.exe",
        "\\u{202e}gnp.exe",
    ] {
        let found = resolve(&call(written), &tools).map(|t| t.name.as_str());
        assert_eq!(found, Ok("\u{202e}gnp.exe"), "{written}");
    }
    let found = resolve(&call("evil.read\\u{200b}_file"), &tools).map(|t| t.name.as_str());
    assert_eq!(found, Ok("read\u{200b}_file"));
    let found = resolve(&call("evil.read_file"), &tools).map(|t| t.name.as_str());
    assert_eq!(found, Ok("read_file"));
    // An error lists them escaped.
    let error = resolve(&call("evil.nothing"), &tools).unwrap_err();
    assert!(error.contains("\\u{202e}gnp.exe"), "{error}");
    assert!(
        !error.chars().any(crate::terminal_safe::is_invisible),
        "{error:?}"
    );
}

#[test]
fn a_name_several_servers_have_is_ambiguous() {
    let tools = vec![
        tool("a", "x", json!({"type": "object"})),
        tool("b", "x", json!({"type": "object"})),
    ];
    let error = resolve(&call("x"), &tools).unwrap_err();
    assert!(error.contains("several servers: a.x, b.x"), "{error}");
    assert_eq!(
        resolve(&call("b.x"), &tools).map(|t| t.server.as_str()),
        Ok("b")
    );
}

#[test]
fn a_tool_name_with_dots_resolves_against_the_server_that_has_it() {
    let tools = vec![
        tool("fs", "read.file", json!({"type": "object"})),
        tool("fs.read", "file", json!({"type": "object"})),
        tool("git", "log", json!({"type": "object"})),
    ];
    // Both read `fs.read.file`: the block must say which.
    let error = resolve(&call("fs.read.file"), &tools).unwrap_err();
    assert!(error.contains("fs.read.file, fs.read.file"), "{error}");
    assert_eq!(
        resolve(&call("fs/read.file"), &tools).map(|t| t.server.as_str()),
        Ok("fs")
    );
    assert_eq!(
        resolve(&call("read.file"), &tools).map(|t| t.server.as_str()),
        Ok("fs")
    );
}

#[test]
fn an_unknown_tool_of_a_known_server_lists_that_server_s_tools() {
    let error = resolve(&call("time.get_time"), &both()).unwrap_err();
    assert!(
        error.contains("The MCP server `time` has no tool `get_time`"),
        "{error}"
    );
    assert!(
        error.contains("Did you mean `time.get_current_time`?"),
        "{error}"
    );
    assert!(
        error.contains("Its tools: get_current_time, convert_time."),
        "{error}"
    );
}

#[test]
fn an_unknown_tool_gets_the_closest_names_and_how_to_call_one() {
    let tools = both();
    let error = resolve(&call("get_curent_time"), &tools).unwrap_err();
    assert!(
        error.starts_with(
            "There is no MCP tool `get_curent_time`. Did you mean: time.get_current_time"
        ),
        "{error}"
    );
    assert!(error.contains("`server.tool`"), "{error}");

    let sum = resolve(&call("sum"), &tools).unwrap_err();
    assert!(sum.contains("everything.get-sum"), "{sum}");

    let few = resolve(&call("weather"), &time()).unwrap_err();
    assert!(
        few.contains("The tools are: time.get_current_time, time.convert_time."),
        "{few}"
    );

    let many = resolve(&call("zzz"), &both()).unwrap_err();
    assert!(many.contains("… and 3 more"), "{many}");

    let none = resolve(&call("x"), &[]).unwrap_err();
    assert!(none.contains("no MCP server is ready"), "{none}");
}

#[test]
fn the_everything_fixture_resolves_every_tool_by_both_names() {
    let tools = everything();
    assert!(tools.len() >= 10, "{}", tools.len());
    for listed in &tools {
        let by_qualified = resolve(&call(&listed.qualified()), &tools);
        assert_eq!(by_qualified, Ok(listed));
        assert_eq!(resolve(&call(&listed.name), &tools), Ok(listed));
    }
}

#[test]
fn fixture_helpers_read_objects() {
    assert_eq!(object(json!({"a": 1})).len(), 1);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn parse_call_never_panics_and_keeps_names_short(code in "\\PC{0,400}") {
        if let Ok(request) = parse_call(&code) {
            prop_assert!(!request.name.is_empty());
            prop_assert!(request.name.len() <= MAX_NAME_BYTES);
        }
    }

    #[test]
    fn parse_call_never_panics_on_call_like_text(
        name in "[a-z_./:`'\"()-]{0,20}",
        lines in proptest::collection::vec("[a-z\"' ]{0,6}[:=]?[ \\[\\]{}0-9a-z,.\"'`-]{0,12}", 0..6),
    ) {
        let code = format!("{name}\n{}", lines.join("\n"));
        let _ = parse_call(&code);
        let _ = parse_call(&format!("{{\"tool\": \"{name}\", \"arguments\": {{{}}}}}", lines.join(",")));
    }

    #[test]
    fn resolve_never_panics(name in "\\PC{0,60}") {
        let tools = both();
        let request = CallRequest { name, arguments: Default::default(), from_lines: true };
        if let Err(error) = resolve(&request, &tools) {
            prop_assert!(error.len() < 2_000, "{}", error.len());
        }
    }
}

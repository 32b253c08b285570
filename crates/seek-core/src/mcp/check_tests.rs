//! Checking and describing arguments, against real schemas (mcp-server-time, server-everything)
//! and hostile ones.

use proptest::prelude::*;
use serde_json::{Map, Value, json};

use super::*;
use crate::mcp::call::test_tools::{everything, object, schema_of, time};

fn args(value: Value) -> Map<String, Value> {
    object(value)
}

/// Checks `given` against `schema`; the arguments as they end up, or the error.
fn checked(schema: &Map<String, Value>, given: Value, from_lines: bool) -> Result<Value, String> {
    let mut arguments = args(given);
    check_arguments(schema, &mut arguments, from_lines).map(|()| Value::Object(arguments))
}

#[test]
fn the_brief_s_example_lists_every_problem_then_the_expected_arguments() {
    let schema = object(json!({
        "type": "object",
        "properties": {
            "timezone": {"type": "string", "description": "IANA timezone name"},
            "count": {"type": "integer"}
        },
        "required": ["timezone"]
    }));
    let error = checked(&schema, json!({"tz": "UTC", "count": "abc"}), true).unwrap_err();
    assert_eq!(
        error,
        "The arguments do not fit the tool's input schema:\n\
         - missing `timezone` (string)\n\
         - `count` should be an integer, got \"abc\"\n\
         - `tz` is not one of the tool's arguments — did you mean `timezone`?\n\
         Expected arguments:\n\
         timezone: string (required) — IANA timezone name\n\
         count: integer",
    );
}

#[test]
fn real_schemas_accept_good_calls_unchanged() {
    let time = time();
    let good = json!({"timezone": "Europe/London"});
    assert_eq!(
        checked(schema_of(&time, "get_current_time"), good.clone(), true),
        Ok(good)
    );
    let convert =
        json!({"source_timezone": "UTC", "time": "14:30", "target_timezone": "Asia/Tokyo"});
    assert_eq!(
        checked(schema_of(&time, "convert_time"), convert.clone(), false),
        Ok(convert)
    );
    let everything = everything();
    assert_eq!(
        checked(schema_of(&everything, "get-env"), json!({}), false),
        Ok(json!({}))
    );
}

#[test]
fn get_sum_wants_numbers() {
    let everything = everything();
    let schema = schema_of(&everything, "get-sum");
    assert_eq!(
        checked(schema, json!({"a": 1, "b": 2.5}), true),
        Ok(json!({"a": 1, "b": 2.5}))
    );
    // From lines, `1e3` stays text until a number is wanted.
    assert_eq!(
        checked(schema, json!({"a": "1e3", "b": " 2 "}), true),
        Ok(json!({"a": 1000.0, "b": 2}))
    );
    // JSON arguments are taken as the model typed them.
    let error = checked(schema, json!({"a": "1", "b": 2}), false).unwrap_err();
    assert!(
        error.contains("- `a` should be a number, got \"1\""),
        "{error}"
    );
    let error = checked(schema, json!({"a": "one"}), true).unwrap_err();
    assert!(
        error.contains("`a` should be a number, got \"one\""),
        "{error}"
    );
    assert!(error.contains("missing `b` (number)"), "{error}");
    assert!(error.ends_with("Expected arguments:\na: number (required) — First number\nb: number (required) — Second number"), "{error}");
}

#[test]
fn a_string_wanted_gets_the_text_written_from_lines_only() {
    let everything = everything();
    let echo = schema_of(&everything, "echo");
    assert_eq!(
        checked(echo, json!({"message": 42}), true),
        Ok(json!({"message": "42"}))
    );
    assert_eq!(
        checked(echo, json!({"message": 2.5}), true),
        Ok(json!({"message": "2.5"}))
    );
    assert_eq!(
        checked(echo, json!({"message": true}), true),
        Ok(json!({"message": "true"}))
    );
    assert_eq!(
        checked(echo, json!({"message": null}), true),
        Ok(json!({"message": "null"}))
    );
    let error = checked(echo, json!({"message": 42}), false).unwrap_err();
    assert!(
        error.contains("`message` should be a string, got 42"),
        "{error}"
    );
}

#[test]
fn enums_accept_their_values_and_lines_in_another_case() {
    let everything = everything();
    let annotated = schema_of(&everything, "get-annotated-message");
    let ok = json!({"messageType": "error", "includeImage": true});
    assert_eq!(checked(annotated, ok.clone(), false), Ok(ok));
    let error = checked(annotated, json!({"messageType": "warn"}), true).unwrap_err();
    assert!(
        error.contains(
            "`messageType` should be one of \"error\", \"success\", \"debug\", got \"warn\""
        ),
        "{error}"
    );
    let reference = schema_of(&everything, "get-resource-reference");
    assert_eq!(
        checked(
            reference,
            json!({"resourceType": "blob", "resourceId": "2"}),
            true
        ),
        Ok(json!({"resourceType": "Blob", "resourceId": 2}))
    );
    assert!(checked(reference, json!({"resourceType": "blob"}), false).is_err());
    let includes = checked(
        annotated,
        json!({"messageType": "debug", "includeImage": "True"}),
        true,
    );
    assert_eq!(
        includes,
        Ok(json!({"messageType": "debug", "includeImage": true}))
    );
}

#[test]
fn an_enum_of_numbers_reads_the_number_written() {
    let schema = object(json!({"properties": {"level": {"enum": [1, 2, 3]}}}));
    assert_eq!(
        checked(&schema, json!({"level": "2"}), true),
        Ok(json!({"level": 2}))
    );
    assert!(
        checked(&schema, json!({"level": 4}), true)
            .unwrap_err()
            .contains("one of 1, 2, 3, got 4")
    );
    let constant = object(json!({"properties": {"v": {"const": "x"}}}));
    assert!(
        checked(&constant, json!({"v": "y"}), true)
            .unwrap_err()
            .contains("`v` should be \"x\", got \"y\"")
    );
}

#[test]
fn integers_written_as_whole_floats_become_integers() {
    let schema = object(json!({"properties": {"n": {"type": "integer"}}}));
    assert_eq!(
        checked(&schema, json!({"n": 3.0}), false),
        Ok(json!({"n": 3}))
    );
    assert_eq!(
        checked(&schema, json!({"n": "3.0"}), true),
        Ok(json!({"n": 3}))
    );
    assert!(
        checked(&schema, json!({"n": 3.5}), true)
            .unwrap_err()
            .contains("`n` should be an integer, got 3.5")
    );
    assert!(checked(&schema, json!({"n": 1e300}), false).is_ok());
}

#[test]
fn an_array_wanted_splits_a_plain_string_at_commas() {
    let schema = object(json!({"properties": {
        "tags": {"type": "array", "items": {"type": "string"}},
        "ids": {"type": "array", "items": {"type": "integer"}}
    }}));
    assert_eq!(
        checked(&schema, json!({"tags": "a, b ,c", "ids": "1, 2"}), true),
        Ok(json!({"tags": ["a", "b", "c"], "ids": [1, 2]}))
    );
    assert_eq!(
        checked(&schema, json!({"ids": 7}), true),
        Ok(json!({"ids": [7]}))
    );
    let error = checked(&schema, json!({"ids": [1, "x"]}), true).unwrap_err();
    assert!(
        error.contains("`ids[1]` should be an integer, got \"x\""),
        "{error}"
    );
    assert!(checked(&schema, json!({"tags": "a, b"}), false).is_err());
}

#[test]
fn unions_and_nullable_types_accept_each_member() {
    let schema = object(json!({"properties": {
        "a": {"type": ["string", "null"]},
        "b": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": null},
        "c": {"anyOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "null"}]},
        "d": {"oneOf": [{"$ref": "#/$defs/X"}, {"type": "string"}]}
    }}));
    assert_eq!(
        checked(
            &schema,
            json!({"a": null, "b": null, "c": null, "d": 5}),
            true
        ),
        Ok(json!({"a": null, "b": null, "c": null, "d": 5}))
    );
    assert_eq!(
        checked(&schema, json!({"a": 3, "b": "4", "c": "1,2"}), true),
        Ok(json!({"a": "3", "b": 4, "c": [1, 2]}))
    );
    let error = checked(&schema, json!({"b": "x"}), true).unwrap_err();
    assert!(
        error.contains("`b` should be an integer or null, got \"x\""),
        "{error}"
    );
}

#[test]
fn nested_objects_are_checked_with_paths() {
    let schema = object(json!({"properties": {
        "point": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}, "required": ["x", "y"], "additionalProperties": false}
    }, "required": ["point"]}));
    let error = checked(&schema, json!({"point": {"x": "a", "z": 1}}), false).unwrap_err();
    assert!(error.contains("- missing `point.y` (number)"), "{error}");
    assert!(
        error.contains("- `point.x` should be a number, got \"a\""),
        "{error}"
    );
    assert!(
        error.contains("- unknown argument `point.z` — did you mean `point.y`?")
            || error.contains("- unknown argument `point.z`"),
        "{error}"
    );
    assert!(
        error.contains("point: object {x: number, y: number} (required)"),
        "{error}"
    );
}

#[test]
fn unknown_arguments_are_refused_only_when_the_schema_refuses_others() {
    let closed =
        object(json!({"properties": {"a": {"type": "string"}}, "additionalProperties": false}));
    assert!(
        checked(&closed, json!({"b": "x"}), true)
            .unwrap_err()
            .contains("unknown argument `b`")
    );
    // `additionalProperties` absent or true: JSON Schema lets others through, and so does seek,
    // with a note naming each (and the closest listed name).
    for open in [
        object(json!({"properties": {"alpha": {"type": "string"}}})),
        object(json!({"properties": {"alpha": {}}, "additionalProperties": true})),
    ] {
        let mut arguments = object(json!({"alpa": "x", "zzz": 1}));
        let notes = check_arguments_noting(&open, &mut arguments, true).expect("let through");
        assert_eq!(
            arguments,
            object(json!({"alpa": "x", "zzz": 1})),
            "sent as given"
        );
        assert_eq!(
            notes,
            [
                "`alpa` is not one of the tool's arguments — did you mean `alpha`?",
                "`zzz` is not one of the tool's arguments"
            ]
        );
    }
    let patterned = object(json!({"properties": {"a": {}}, "patternProperties": {"^x": {}}}));
    let mut arguments = object(json!({"x1": 1}));
    assert_eq!(
        check_arguments_noting(&patterned, &mut arguments, true),
        Ok(vec![])
    );
    let schema_for_others =
        object(json!({"properties": {"a": {}}, "additionalProperties": {"type": "string"}}));
    assert!(checked(&schema_for_others, json!({"b": "x"}), true).is_ok());
    let silent = object(json!({"type": "object"}));
    assert!(checked(&silent, json!({"anything": 1}), true).is_ok());
}

#[test]
fn arguments_wrapped_in_an_arguments_key_are_unwrapped() {
    let time = time();
    let schema = schema_of(&time, "get_current_time");
    assert_eq!(
        checked(schema, json!({"arguments": {"timezone": "UTC"}}), true),
        Ok(json!({"timezone": "UTC"}))
    );
    // `arguments:` written above indented lines, YAML-style.
    let request =
        crate::mcp::call::parse_call("time.get_current_time\narguments:\n  timezone: UTC").unwrap();
    let mut arguments = request.arguments;
    assert_eq!(check_arguments(schema, &mut arguments, true), Ok(()));
    assert_eq!(Value::Object(arguments), json!({"timezone": "UTC"}));
    // Not when the tool has an argument of that name.
    let own = object(json!({"properties": {"input": {"type": "object"}}, "required": ["input"]}));
    assert_eq!(
        checked(&own, json!({"input": {"a": 1}}), false),
        Ok(json!({"input": {"a": 1}}))
    );
}

#[test]
fn defaults_are_not_filled_in() {
    let everything = everything();
    let links = schema_of(&everything, "get-resource-links");
    assert_eq!(checked(links, json!({}), false), Ok(json!({})));
}

#[test]
fn describe_and_signature_of_real_tools() {
    let time = time();
    assert_eq!(
        signature(schema_of(&time, "get_current_time")),
        "timezone: string"
    );
    assert_eq!(
        signature(schema_of(&time, "convert_time")),
        "source_timezone: string, time: string, target_timezone: string"
    );
    assert_eq!(
        describe_arguments(schema_of(&time, "convert_time")),
        "source_timezone: string (required) — Source IANA timezone name (e.g., 'America/New_York', 'Europe/London'). Use 'Etc/UTC' as local timezone if no source…\n\
         time: string (required) — Time to convert in 24-hour format (HH:MM)\n\
         target_timezone: string (required) — Target IANA timezone name (e.g., 'Asia/Tokyo', 'America/San_Francisco'). Use 'Etc/UTC' as local timezone if no target…"
    );
    let everything = everything();
    assert_eq!(
        signature(schema_of(&everything, "get-sum")),
        "a: number, b: number"
    );
    assert_eq!(
        signature(schema_of(&everything, "get-resource-reference")),
        "resourceId?: number, resourceType?: \"Text\" | \"Blob\""
    );
    assert_eq!(signature(schema_of(&everything, "get-env")), "");
    assert_eq!(
        describe_arguments(schema_of(&everything, "get-env")),
        "(no arguments)"
    );
    assert_eq!(
        describe_arguments(schema_of(&everything, "get-resource-links")),
        "count: number (default 3) — Number of resource links to return (1-10)"
    );
    assert_eq!(
        describe_arguments(schema_of(&everything, "get-annotated-message")),
        "messageType: \"error\" | \"success\" | \"debug\" (required) — Type of message to demonstrate different annotation patterns\n\
         includeImage: boolean (default false) — Whether to include an example image"
    );
}

#[test]
fn server_text_in_descriptions_cannot_break_lines() {
    let schema = object(json!({"properties": {
        "a\nb": {"type": "string", "description": "line one\n- fake: line\u{1b}[2J\u{202e}"}
    }, "required": ["a\nb"]}));
    let described = describe_arguments(&schema);
    assert_eq!(
        described,
        "a b: string (required) — line one - fake: line\\u{1b}[2J\\u{202e}"
    );
    assert_eq!(signature(&schema), "a b: string");
}

#[test]
fn many_arguments_and_long_enums_are_summarised() {
    let properties: Map<String, Value> = (0..100)
        .map(|i| (format!("arg{i:03}"), json!({"type": "string"})))
        .collect();
    let schema = object(json!({"properties": properties}));
    let described = describe_arguments(&schema);
    assert_eq!(described.lines().count(), 41);
    assert!(
        described.ends_with("… and 60 more arguments"),
        "{described}"
    );
    let line = signature(&schema);
    assert!(line.len() <= 240 && line.ends_with(", …"), "{line}");
    let long_enum = object(
        json!({"properties": {"c": {"type": "string", "enum": (0..50).collect::<Vec<_>>()}}}),
    );
    assert_eq!(signature(&long_enum), "c?: string, one of 50 values");
}

#[test]
fn hostile_schemas_cost_little_and_let_through_what_is_not_understood() {
    // Nesting deeper than the checker follows.
    let mut deep = json!({"type": "string"});
    let mut value = json!("x");
    for _ in 0..100 {
        deep = json!({"type": "object", "properties": {"n": deep}, "required": ["n"]});
        value = json!({"n": value});
    }
    let schema = object(json!({"properties": {"n": deep}}));
    assert!(checked(&schema, json!({"n": value}), true).is_ok());
    let _ = describe_arguments(&schema);
    let _ = signature(&schema);
    // A reference loop is never followed.
    let looped = object(
        json!({"$defs": {"a": {"$ref": "#/$defs/a"}}, "properties": {"x": {"$ref": "#/$defs/a"}}}),
    );
    assert!(checked(&looped, json!({"x": 1}), true).is_ok());
    assert_eq!(signature(&looped), "x?: object");
    // A huge enum and many items.
    let huge = object(
        json!({"properties": {"e": {"enum": (0..100_000).collect::<Vec<_>>()}, "l": {"type": "array", "items": {"type": "integer"}}}}),
    );
    let started = std::time::Instant::now();
    let many: Vec<i64> = (0..200_000).collect();
    assert!(checked(&huge, json!({"e": 99_999, "l": many}), true).is_ok());
    assert!(started.elapsed().as_secs() < 5);
    // Many properties, all required, and many unknown arguments.
    let names: Vec<String> = (0..50_000).map(|i| format!("property_{i}")).collect();
    let properties: Map<String, Value> = names
        .iter()
        .map(|n| (n.clone(), json!({"type": "string"})))
        .collect();
    let wide = object(json!({"properties": properties, "required": names}));
    let unknown: Map<String, Value> = (0..50_000)
        .map(|i| (format!("prop_{i}"), json!(i)))
        .collect();
    let started = std::time::Instant::now();
    let error = checked(&wide, Value::Object(unknown), true).unwrap_err();
    assert!(started.elapsed().as_secs() < 5, "{:?}", started.elapsed());
    assert!(error.len() < 20_000, "{}", error.len());
    assert!(signature(&wide).len() <= 240);
    // Unknown types and non-object schemas.
    let odd = object(
        json!({"properties": {"a": {"type": "thing"}, "b": true, "c": 3}, "required": [1, "a"]}),
    );
    assert!(checked(&odd, json!({"a": 1, "b": 2, "c": 3}), true).is_ok());
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|f| json!(f)),
        "\\PC{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map(
                "[a-z]{0,3}|type|items|enum|anyOf|properties|required|const",
                inner,
                0..4
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn schema_like() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        prop_oneof![
            "string", "number", "integer", "boolean", "array", "object", "null", "x"
        ]
        .prop_map(|t| json!({"type": t})),
        json_value().prop_map(|v| json!({"enum": [v]})),
        json_value().prop_map(|v| json!({"const": v})),
        Just(json!({"$ref": "#"})),
        Just(json!(true)),
    ];
    leaf.prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            inner
                .clone()
                .prop_map(|items| json!({"type": "array", "items": items})),
            proptest::collection::btree_map("[a-c]", inner.clone(), 0..3).prop_map(|p| {
                let required: Vec<&String> = p.keys().collect();
                json!({"type": "object", "properties": p, "required": required})
            }),
            proptest::collection::vec(inner, 0..3).prop_map(|b| json!({"anyOf": b})),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn check_never_panics_and_its_errors_are_bounded(
        schema in schema_like(),
        arguments in proptest::collection::btree_map("[a-c]", json_value(), 0..4),
        from_lines: bool,
    ) {
        let schema = json!({"type": "object", "properties": {"a": schema.clone(), "b": schema}, "required": ["a"]});
        let schema = object(schema);
        let mut arguments: Map<String, Value> = arguments.into_iter().collect();
        if let Err(error) = check_arguments(&schema, &mut arguments, from_lines) {
            prop_assert!(error.len() < 20_000, "{}", error.len());
            prop_assert!(error.contains("Expected arguments:"));
        }
        let signature = signature(&schema);
        prop_assert!(signature.len() <= 240, "{}", signature.len());
        prop_assert!(!describe_arguments(&schema).is_empty());
    }

    #[test]
    fn one_line_has_no_line_breaks_or_controls_and_keeps_its_bound(text in "\\PC{0,200}|[\\x00-\\x1f\\u{202e} a]{0,50}", max in 0usize..50) {
        let line = one_line(&text, max);
        prop_assert!(line.chars().count() <= max.max(1));
        prop_assert!(!line.chars().any(|c| c.is_control()));
    }
}

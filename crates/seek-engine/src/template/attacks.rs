//! Hostile chat templates: each way a template can grow memory without end or nest deeper than
//! the stack holds ends in an error naming the file, and a child process running each one stays
//! far below the gigabytes they reached unbounded.

use std::path::Path;

use super::*;
use crate::chat::{Message, Role};

/// `{% set %}` written out `times` times (a `{% set %}` inside a loop does not outlive its
/// iteration, so doubling is written out, or kept in a namespace).
fn unrolled(start: &str, step: &str, end: &str, times: usize) -> String {
    format!("{start}{}{end}", step.repeat(times))
}

/// (name, template) of every attack; each must end in a bound's error.
fn cases() -> Vec<(&'static str, String)> {
    let mut cases: Vec<(&'static str, String)> = vec![
        (
            "doubling_concat",
            unrolled("{% set s = 'x' %}", "{% set s = s ~ s %}", "{{ s }}", 64),
        ),
        (
            "doubling_add",
            unrolled(
                "{% set s = 'xy' %}",
                "{% set s = s + s %}",
                "{{ s|length }}",
                64,
            ),
        ),
        (
            "doubling_capture",
            unrolled(
                "{% set s = 'x' %}",
                "{% set s %}{{ s }}{{ s }}{% endset %}",
                "{{ s }}",
                64,
            ),
        ),
        (
            "doubling_list",
            unrolled(
                "{% set l = [1] %}",
                "{% set l = l + l %}",
                "{{ l|length }}",
                64,
            ),
        ),
    ];
    // As deep as minijinja's parser allows: a constant, built without any check running.
    cases.push((
        "deep_literal",
        format!("{{{{ {}1{}|tojson }}}}", "[".repeat(70), "]".repeat(70)),
    ));
    // Nesting grown by recursion, from a constant already 55 deep.
    cases.push((
        "deep_by_recursion",
        format!(
            "{{% macro f(x, n) %}}{{% if n %}}{{{{ f([x], n - 1) }}}}{{% else %}}{{{{ x|tojson }}}}{{% endif %}}{{% endmacro %}}{{{{ f({}1{}, 20) }}}}",
            "[".repeat(55),
            "]".repeat(55)
        ),
    ));
    cases.extend(CASES.iter().map(|(n, s)| (*n, (*s).to_owned())));
    cases
}

/// (name, template) of the attacks written as they are.
const CASES: &[(&str, &str)] = &[
    (
        "doubling_namespace",
        "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
    ),
    ("repeat_string", "{{ 'x' * 100000000 }}"),
    (
        "repeat_list",
        "{% set s = 'x' * 1000000 %}{{ ([s] * 100000)|join }}",
    ),
    ("join_separator", "{{ range(100000)|join('x' * 100000) }}"),
    (
        "replace",
        "{{ ('x' * 1000000)|replace('x', 'y' * 100000) }}",
    ),
    (
        "replace_method",
        "{{ ('x' * 1000000).replace('', 'y' * 100000) }}",
    ),
    ("indent", "{{ ('\\n' * 100000)|indent(100000) }}"),
    ("format", "{{ '%999999999s'|format('x') }}"),
    ("format_method", "{{ '{:>999999999}'.format('x') }}"),
    ("batch_fill", "{{ [1]|batch(1000000000, 'x')|list|length }}"),
    ("slice_count", "{{ [1]|slice(1000000000)|list|length }}"),
    (
        "upper_of_shared",
        "{% set s = 'x' * 10000000 %}{{ (s ~ s ~ s ~ s ~ s ~ s ~ s)|upper }}",
    ),
    (
        "range_join_loop",
        "{% for i in range(100000) %}{{ range(100000)|join(',') }}{% endfor %}",
    ),
    (
        "string_of_shared",
        "{% set s = 'x' * 1000000 %}{% set l = [s, s, s, s, s, s, s, s] %}{% for i in range(20) %}{% set l = [l, l] %}{% endfor %}{{ l|string }}",
    ),
    (
        "deep_tojson",
        "{% set ns = namespace(x=[]) %}{% for i in range(100000) %}{% set ns.x = [ns.x] %}{% endfor %}{{ ns.x|tojson }}",
    ),
    (
        "deep_map",
        "{% set ns = namespace(x={}) %}{% for i in range(100000) %}{% set ns.x = {'a': ns.x} %}{% endfor %}{{ ns.x }}",
    ),
    (
        "deep_batch",
        "{% set ns = namespace(x=[1]) %}{% for i in range(100000) %}{% set ns.x = ns.x|batch(1)|list %}{% endfor %}{{ ns.x|tojson }}",
    ),
    (
        "deep_namespace_chain",
        "{% set head = namespace(a=none) %}{% set ns = namespace(cur=head) %}{% for i in range(100000) %}{% set n = namespace(a=none) %}{% set ns.cur.a = n %}{% set ns.cur = n %}{% endfor %}{{ head == head }}",
    ),
    (
        "namespace_cycle",
        "{% set ns = namespace(a=none) %}{% set ns.a = ns %}{{ ns|tojson }}",
    ),
    (
        "recursive_macro",
        "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
    ),
    (
        "recursive_macro_growing",
        "{% macro f(s) %}{{ f(s ~ s) }}{% endmacro %}{{ f('x') }}",
    ),
    (
        "recursive_loop",
        "{% for x in [1] recursive %}{{ loop([1]) }}{% endfor %}",
    ),
];

fn case(name: &str) -> String {
    cases()
        .into_iter()
        .find(|(n, _)| *n == name)
        .map(|(_, source)| source)
        .unwrap_or_else(|| panic!("no case {name}"))
}

/// Renders `source` as the template of `hostile.gguf`; the error it must end in.
fn refused(source: &str) -> EngineError {
    let t = ChatTemplate::new(source, Path::new("hostile.gguf"), "", "", false).expect("parses");
    t.render(&[Message::new(Role::User, "hi")], true)
        .expect_err("a bound stops it")
}

/// Asserts `name` ends in a bound's error naming the file and the bound.
fn assert_bounded(name: &str, bound: &str) {
    let err = refused(&case(name));
    assert!(
        matches!(err, EngineError::TemplateLimit { .. }),
        "{name}: {err:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains("hostile.gguf") && text.contains(bound),
        "{name}: {text}"
    );
}

const MEMORY: &str = "MiB of values and output";
const DEPTH: &str = "levels deep";

#[test]
fn doubling_a_string_in_a_set_loop_is_stopped() {
    for name in [
        "doubling_concat",
        "doubling_add",
        "doubling_capture",
        "doubling_namespace",
    ] {
        assert_bounded(name, MEMORY);
    }
}

#[test]
fn doubling_a_list_is_stopped() {
    assert_bounded("doubling_list", MEMORY);
}

#[test]
fn string_and_list_repetition_is_stopped() {
    assert_bounded("repeat_string", MEMORY);
    assert_bounded("repeat_list", MEMORY);
}

#[test]
fn growing_filters_and_methods_are_stopped_before_they_allocate() {
    for name in [
        "join_separator",
        "replace",
        "replace_method",
        "indent",
        "format",
        "format_method",
        "batch_fill",
        "slice_count",
        "upper_of_shared",
        "string_of_shared",
    ] {
        assert_bounded(name, MEMORY);
    }
}

#[test]
fn a_huge_range_in_a_loop_is_stopped() {
    assert_bounded("range_join_loop", MEMORY);
}

#[test]
fn deeply_nested_values_are_stopped_before_tojson_recurses() {
    for name in [
        "deep_tojson",
        "deep_map",
        "deep_batch",
        "deep_literal",
        "deep_by_recursion",
    ] {
        assert_bounded(name, DEPTH);
    }
}

#[test]
fn namespaces_cannot_be_chained_or_hold_themselves() {
    assert_bounded("deep_namespace_chain", "namespaces holding namespaces");
    assert_bounded("namespace_cycle", "namespaces holding namespaces");
}

#[test]
fn recursive_macros_and_loops_stop_at_the_recursion_limit() {
    assert_bounded("recursive_macro", "nested calls");
    assert_bounded("recursive_loop", "nested calls");
    // Growing arguments on the way down: memory or the recursion limit, whichever comes first.
    let err = refused(&case("recursive_macro_growing"));
    assert!(matches!(err, EngineError::TemplateLimit { .. }), "{err:?}");
}

#[test]
fn a_literal_nested_beyond_the_parser_limit_is_refused_at_load() {
    let source = format!("{{{{ {}1{} }}}}", "[".repeat(5000), "]".repeat(5000));
    let err = ChatTemplate::new(&source, Path::new("hostile.gguf"), "", "", false)
        .expect_err("too deep to parse");
    assert!(matches!(err, EngineError::Template { .. }), "{err:?}");
    assert!(err.to_string().contains("hostile.gguf"), "{err}");
}

#[test]
fn names_reserved_for_the_checks_are_refused_at_load() {
    let err = ChatTemplate::new(
        "{% set __seek_check = 1 %}",
        Path::new("hostile.gguf"),
        "",
        "",
        false,
    )
    .expect_err("reserved");
    assert!(err.to_string().contains("reserves"), "{err}");
}

#[test]
fn debug_is_not_available() {
    let err = refused("{{ debug() }}");
    assert!(matches!(err, EngineError::Template { .. }), "{err:?}");
}

/// The environment variable that makes `attack_child` run one case.
const CHILD_VAR: &str = "SEEK_TEMPLATE_ATTACK_CASE";

/// Run by `every_attack_stays_far_below_a_gigabyte` in a child process: renders one case and
/// prints its error and the process's peak resident memory. Does nothing otherwise.
#[test]
fn attack_child() {
    let Ok(name) = std::env::var(CHILD_VAR) else {
        return;
    };
    let err = refused(&case(&name));
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let peak = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .unwrap_or("")
        .trim();
    println!("ATTACK-ERROR: {err}");
    println!("ATTACK-PEAK: {peak}");
}

/// Resident memory a child may reach: the test binary itself, the 64 MiB budget, what a step
/// may hold beside it, and room for the allocator. The attacks reached 3–5 GB unbounded.
#[cfg(target_os = "linux")]
const PEAK_LIMIT_KB: u64 = 192 * 1024;

#[cfg(target_os = "linux")]
#[test]
fn every_attack_stays_far_below_a_gigabyte() {
    let exe = std::env::current_exe().expect("the test binary");
    let mut peaks = Vec::new();
    for (name, _) in cases() {
        let out = std::process::Command::new(&exe)
            .args([
                "--exact",
                "template::attacks::attack_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_VAR, name)
            .output()
            .expect("the child runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{name}: the child failed ({:?}): {stdout}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            stdout.contains("ATTACK-ERROR: the chat template of hostile.gguf"),
            "{name}: {stdout}"
        );
        let peak: u64 = stdout
            .lines()
            .find_map(|l| l.strip_prefix("ATTACK-PEAK:"))
            .and_then(|p| p.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or_else(|| panic!("{name}: no peak in {stdout}"));
        peaks.push((name, peak));
    }
    let over: Vec<_> = peaks.iter().filter(|(_, p)| *p > PEAK_LIMIT_KB).collect();
    assert!(
        over.is_empty(),
        "over {PEAK_LIMIT_KB} kB: {over:?} (all: {peaks:?})"
    );
    eprintln!("peak resident memory per attack (kB): {peaks:?}");
}

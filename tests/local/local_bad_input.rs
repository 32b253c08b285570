//! The built-in engine against bad model files and names, through the real binary: a cut-short
//! download, a foreign architecture, text or nothing named `.gguf`, a directory, an unknown
//! name, GGUF headers whose metadata lies, and chat templates that grow without end. Each must
//! end the task with exit code 3 (the model failed; a model file is only opened when the first
//! reply needs it) and a message on stderr naming the file and what to do: never a panic, never
//! an abort, never a multi-GB allocation (seek runs with its address space bounded to 2 GiB),
//! and the session is kept.
//!
//! The files are made by `support/gguf.rs` from a tiny model the engine loads (checked first),
//! each with one thing wrong. The real SmolLM2 file (`SEEK_TEST_GGUF`, else the dev copy) is
//! only needed for the truncation case.

use crate::gguf;
use crate::support;

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::Duration;

use gguf::{Gguf, Meta, tiny_llama, types};
use support::{Sandbox, run_within, stderr, stdout};

/// The address space seek may use: far above what a refused file needs (the tiny model loads
/// in a few MiB), far below what a length taken on trust would ask for.
const ADDRESS_SPACE: u64 = 2 << 30;
const BOUND: Duration = Duration::from_secs(120);

/// `seek -p … --json` on `model`, with no provider named (a `.gguf` path means the built-in
/// engine) unless `provider` says one, its address space bounded.
fn seek_on(sb: &Sandbox, model: &str, provider: Option<&str>) -> Output {
    let mut cmd = sb.seek();
    cmd.env("SEEK_CACHE_DIR", sb.path("cache"))
        .args(["--model", model, "--approval", "never", "--json"])
        .arg("--work-dir")
        .arg(sb.path("work"))
        .args(["-p", "say hi"]);
    if let Some(provider) = provider {
        cmd.args(["--provider", provider]);
    }
    bound_memory(&mut cmd);
    run_within(&mut cmd, BOUND)
}

fn bound_memory(cmd: &mut Command) {
    use nix::sys::resource::{Resource, setrlimit};
    // SAFETY: between fork and exec only setrlimit runs, which is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            setrlimit(Resource::RLIMIT_AS, ADDRESS_SPACE, ADDRESS_SPACE)
                .map_err(std::io::Error::from)
        });
    }
}

/// Writes `bytes` as `cwd/NAME` and returns the path.
fn model_file(sb: &Sandbox, name: &str, bytes: &[u8]) -> PathBuf {
    let path = sb.path("cwd").join(name);
    std::fs::write(&path, bytes).expect("write the test model");
    path
}

fn session_files(sb: &Sandbox) -> Vec<PathBuf> {
    std::fs::read_dir(sb.path("data/seek/sessions"))
        .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default()
}

/// The task ended as a model failure whose message (the JSON `error` event and the `done`
/// line) names `path` and says each of `says`; no panic; no session file (the model never
/// answered).
fn assert_refused(sb: &Sandbox, out: &Output, path: &str, says: &[&str]) {
    let err = stderr(out);
    assert_eq!(
        out.status.code(),
        Some(3),
        "exit code (a signal means an abort): {:?}\n{err}\n{}",
        out.status,
        stdout(out)
    );
    assert!(
        !err.contains("panicked") && !err.contains("RUST_BACKTRACE"),
        "a panic: {err}"
    );
    let events: Vec<serde_json::Value> = stdout(out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    assert!(
        events.iter().all(|e| e["type"].is_string()),
        "every event has a type: {events:?}"
    );
    let error = events
        .iter()
        .find(|e| e["type"] == "error")
        .unwrap_or_else(|| panic!("an error event: {events:?}"));
    let message = error["message"].as_str().expect("a message");
    assert!(
        message.contains(path),
        "the message names {path}: {message}"
    );
    for text in says {
        assert!(
            message.contains(text),
            "the message says {text:?}: {message}"
        );
    }
    let done = events.last().expect("events");
    assert_eq!(done["type"], "done", "{events:?}");
    assert_eq!(done["outcome"], "model_error", "{done}");
    assert_eq!(done["message"].as_str(), Some(message), "{done}");
    let sessions = session_files(sb);
    assert!(
        sessions.is_empty(),
        "a start that never reached the model leaves no session: {sessions:?}"
    );
}

/// Writes `g` as `cwd/NAME`, runs seek on it and checks the refusal says `says`.
fn refused(g: &Gguf, name: &str, says: &[&str]) {
    let sb = Sandbox::new();
    let path = model_file(&sb, name, &g.to_bytes());
    let out = seek_on(&sb, name, None);
    assert_refused(&sb, &out, &path.display().to_string(), says);
}

/// A metadata value of type `type_id` followed by `bytes` as they are.
fn raw(type_id: u32, bytes: Vec<u8>) -> Meta {
    Meta::Raw { type_id, bytes }
}

#[test]
fn the_tiny_model_loads_so_each_case_fails_for_its_own_reason() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("tiny.gguf");
    std::fs::write(&path, tiny_llama().to_bytes()).expect("write");
    let engine = seek::local::engine::Engine::load(&path, 1).expect("the tiny model loads");
    assert_eq!(engine.info().architecture, "llama");
    assert_eq!(engine.info().context_length, gguf::TINY_CONTEXT as usize);
}

#[test]
fn the_parameter_count_is_the_tensors_elements_and_a_damaged_file_has_none() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("two.gguf");
    let mut g = Gguf::new();
    g.set("general.architecture", Meta::Str("llama".into()))
        .tensor_f32("token_embd.weight", &[8, 3], 0.0)
        .tensor_f32("output_norm.weight", &[8], 1.0);
    std::fs::write(&path, g.to_bytes()).expect("write");
    assert_eq!(seek::local::gguf::parameter_count(&path), Some(32));
    std::fs::write(&path, b"GGUF then nothing of a model").expect("write");
    assert_eq!(seek::local::gguf::parameter_count(&path), None);
}

#[test]
fn a_truncated_file_is_refused() {
    let real = std::env::var_os("SEEK_TEST_GGUF")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .map(|h| PathBuf::from(h).join(".cache/seek-dev/SmolLM2-135M-Instruct.Q4_1.gguf"))
        })
        .expect("SEEK_TEST_GGUF or HOME");
    let bytes = std::fs::read(&real)
        .unwrap_or_else(|e| panic!("the real model at {} ({e})", real.display()));
    let sb = Sandbox::new();
    let path = model_file(&sb, "half.gguf", &bytes[..bytes.len() / 2]);
    let out = seek_on(&sb, "half.gguf", None);
    assert_refused(
        &sb,
        &out,
        &path.display().to_string(),
        &["cut short", "download it again"],
    );
}

#[test]
fn an_unsupported_architecture_is_named() {
    let mut g = tiny_llama();
    g.set("general.architecture", Meta::Str("mamba".into()));
    refused(
        &g,
        "mamba.gguf",
        &[
            "\"mamba\"",
            "does not run",
            "llama, qwen2",
            "--provider ollama",
        ],
    );
}

#[test]
fn a_text_file_named_gguf_is_refused() {
    let sb = Sandbox::new();
    let path = model_file(&sb, "notes.gguf", b"These are my notes, not a model.\n");
    let out = seek_on(&sb, "notes.gguf", None);
    assert_refused(
        &sb,
        &out,
        &path.display().to_string(),
        &["not a usable GGUF model file", "magic"],
    );
}

#[test]
fn an_empty_file_is_refused() {
    let sb = Sandbox::new();
    let path = model_file(&sb, "empty.gguf", b"");
    let out = seek_on(&sb, "empty.gguf", None);
    assert_refused(
        &sb,
        &out,
        &path.display().to_string(),
        &["not a usable GGUF"],
    );
}

#[test]
fn a_directory_named_gguf_is_refused() {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.path("cwd/x.gguf")).expect("mkdir");
    let out = seek_on(&sb, "./x.gguf", None);
    // The message shows the path joined to the working directory, without its `./`.
    let shown = sb.path("cwd").join("x.gguf");
    assert_refused(&sb, &out, &shown.display().to_string(), &["directory"]);
}

#[test]
fn an_unknown_name_lists_the_catalog() {
    let sb = Sandbox::new();
    let out = seek_on(&sb, "qwen9-giant", Some("local"));
    assert_refused(
        &sb,
        &out,
        "qwen9-giant",
        &[
            "no model named",
            &seek::local::catalog::names(),
            "path of a .gguf file",
        ],
    );
}

#[test]
fn zero_heads_are_refused() {
    let mut g = tiny_llama();
    g.set("llama.attention.head_count", Meta::U32(0));
    refused(&g, "heads.gguf", &["head count"]);
}

#[test]
fn an_absurd_block_count_is_refused_before_anything_is_sized_by_it() {
    let mut g = tiny_llama();
    g.set("llama.block_count", Meta::U64(1 << 40));
    refused(&g, "blocks.gguf", &["block_count"]);
}

#[test]
fn an_absurd_context_length_is_refused() {
    let mut g = tiny_llama();
    g.set("llama.context_length", Meta::U64(1 << 40));
    refused(&g, "context.gguf", &["context window"]);
}

#[test]
fn a_string_length_of_two_to_the_sixty_is_refused() {
    let mut g = tiny_llama();
    g.set(
        "general.name",
        raw(types::STRING, (1u64 << 60).to_le_bytes().into()),
    );
    refused(&g, "string.gguf", &["1152921504606846976 bytes"]);
}

#[test]
fn an_array_length_of_two_to_the_sixty_is_refused() {
    let mut bytes = types::U8.to_le_bytes().to_vec();
    bytes.extend_from_slice(&(1u64 << 60).to_le_bytes());
    let mut g = tiny_llama();
    g.set("general.tags", raw(types::ARRAY, bytes));
    refused(&g, "array.gguf", &["1152921504606846976 elements"]);
}

/// An array whose length fits the file, but whose elements candle keeps as 32-byte values:
/// 48 MiB of bytes would ask for 2 GiB.
#[test]
fn an_array_that_fits_the_file_but_not_memory_is_refused() {
    let len: u64 = 48 << 20;
    let mut bytes = types::U8.to_le_bytes().to_vec();
    bytes.extend_from_slice(&len.to_le_bytes());
    bytes.resize(bytes.len() + len as usize, 7);
    let mut g = tiny_llama();
    g.set("general.tags", raw(types::ARRAY, bytes));
    refused(&g, "wide.gguf", &["50331648 elements"]);
}

#[test]
fn a_zero_alignment_is_refused_without_a_division_by_zero() {
    let mut g = tiny_llama();
    g.set("general.alignment", Meta::U32(0));
    refused(&g, "align.gguf", &["general.alignment is 0"]);
}

#[test]
fn a_tensor_past_the_end_is_refused() {
    let mut g = tiny_llama();
    g.tensor_mut("blk.0.ffn_down.weight").offset = Some(1 << 20);
    refused(&g, "offset.gguf", &["cut short", "blk.0.ffn_down.weight"]);
}

#[test]
fn a_tensor_whose_shape_overflows_is_refused() {
    let mut g = tiny_llama();
    g.tensor_mut("blk.0.ffn_up.weight").dims = vec![1 << 32, 1 << 32, 1 << 32];
    refused(&g, "dims.gguf", &["more elements than memory can hold"]);
}

/// Hundreds of layers whose big tensors all point at the same bytes: each fits the file, but
/// loading would copy those bytes once per tensor, gigabytes from a file of 8 MiB.
#[test]
fn tensors_sharing_their_bytes_are_refused() {
    let layers = 200u64;
    let ffn = 1u64 << 18;
    let mut g = tiny_llama();
    g.set("llama.block_count", Meta::U32(layers as u32));
    g.tensor_mut("blk.0.ffn_gate.weight").dims = vec![gguf::TINY_WIDTH, ffn];
    g.tensor_mut("blk.0.ffn_gate.weight").data = vec![0; (gguf::TINY_WIDTH * ffn * 4) as usize];
    let shared = g.tensors.clone();
    for layer in 1..layers {
        for t in shared.iter().filter(|t| t.name.starts_with("blk.0.")) {
            let mut copy = t.clone();
            copy.name = t.name.replace("blk.0.", &format!("blk.{layer}."));
            if t.name.contains("ffn_") {
                copy.dims = vec![gguf::TINY_WIDTH, ffn];
                copy.offset = Some(offset_of(&g, "blk.0.ffn_gate.weight"));
                copy.data = Vec::new();
            }
            g.tensors.push(copy);
        }
    }
    refused(&g, "shared.gguf", &["overlap"]);
}

/// Where the writer places `name`'s data (tensors are laid out in order, aligned).
fn offset_of(g: &Gguf, name: &str) -> u64 {
    let mut next = 0u64;
    for t in &g.tensors {
        let at = next.div_ceil(g.alignment) * g.alignment;
        if t.name == name {
            return at;
        }
        next = at + t.data.len() as u64;
    }
    panic!("no tensor {name}")
}

#[test]
fn a_tokenizer_without_merges_is_refused() {
    let mut g = tiny_llama();
    g.remove("tokenizer.ggml.merges");
    refused(&g, "merges.gguf", &["tokenizer", "tokenizer.ggml.merges"]);
}

#[test]
fn a_model_path_that_does_not_exist_says_where_it_looked() {
    let sb = Sandbox::new();
    let out = seek_on(&sb, "missing.gguf", None);
    assert_refused(
        &sb,
        &out,
        &sb.path("cwd/missing.gguf").display().to_string(),
        &["no such file", "smollm2-135m"],
    );
}

#[test]
fn a_layer_tensor_of_the_wrong_shape_is_refused() {
    let mut g = tiny_llama();
    let q = g.tensor_mut("blk.0.attn_q.weight");
    q.dims = vec![gguf::TINY_WIDTH, 4];
    q.data.truncate((gguf::TINY_WIDTH * 4 * 4) as usize);
    refused(&g, "shape.gguf", &["blk.0.attn_q.weight"]);
}

#[test]
fn a_norm_of_the_wrong_length_is_refused() {
    let mut g = tiny_llama();
    let norm = g.tensor_mut("blk.0.attn_norm.weight");
    norm.dims = vec![3];
    norm.data.truncate(3 * 4);
    refused(&g, "norm.gguf", &["blk.0.attn_norm.weight"]);
}

#[test]
fn a_token_id_past_the_embedding_is_refused() {
    let mut g = tiny_llama();
    g.set("tokenizer.ggml.eos_token_id", Meta::U32(1 << 30));
    refused(&g, "eos.gguf", &["1073741824"]);
}

/// A chat template that doubles a string 64 times (18 EB unbounded) and one that nests a list
/// 100 000 deep before `tojson`: each ends the task with the template's bound named, exit 3, no
/// abort — within the 2 GiB address space, though the first reached 3–5 GB before the bound.
#[test]
fn a_chat_template_that_grows_without_end_is_stopped_by_its_bounds() {
    let doubling = format!(
        "{{% set s = 'x' %}}{}{{{{ s }}}}",
        "{% set s = s ~ s %}".repeat(64)
    );
    let nesting = "{% set ns = namespace(x=[]) %}{% for i in range(100000) %}\
        {% set ns.x = [ns.x] %}{% endfor %}{{ ns.x|tojson }}"
        .to_owned();
    for (name, template, bound) in [
        ("doubling.gguf", doubling, "MiB of values and output"),
        ("nesting.gguf", nesting, "levels deep"),
    ] {
        let mut g = tiny_llama();
        g.set("tokenizer.chat_template", Meta::Str(template));
        refused(
            &g,
            name,
            &["the chat template of", bound, "use a different model file"],
        );
    }
}

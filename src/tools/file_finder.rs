//! The `file_finder` tool: find files in the work dir by name, and read them.
//!
//! Block syntax (AgenticSeek's, with exact keys): `name=…` (required, repeatable) and
//! `action=read|info` lines; a bare line is taken as a name, and ```` ```file_finder:read ````
//! sets the action. Owns the search (skipping `.git`, `target`, `node_modules`), the ranking, the
//! confinement to the work dir and the capped, binary-aware reading. It runs no process.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::{BoxFuture, OutputSink, Tool, ToolContext, ToolOutcome};
use crate::config::ToolConfig;
use crate::protocol::Block;

const SKIPPED_DIRS: &[&str] = &[".git", "target", "node_modules"];
const MAX_LISTED: usize = 20;
/// Entries visited at most, so a huge tree cannot stall a turn.
const MAX_VISITED: usize = 200_000;

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

/// One file that matched.
#[derive(Debug, Clone)]
struct Found {
    path: PathBuf,
    rank: u8,
    /// Where a symlink points when that is outside the work dir.
    escapes_to: Option<PathBuf>,
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

fn search(root: &Path, wanted: &str) -> (Vec<Found>, bool) {
    let mut found = Vec::new();
    let mut stack = vec![root.to_owned()];
    let mut visited = 0;
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            visited += 1;
            if visited > MAX_VISITED {
                return (found, true);
            }
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let name = entry.file_name().to_string_lossy().into_owned();
            if kind.is_dir() {
                if !SKIPPED_DIRS.contains(&name.as_str()) {
                    stack.push(path);
                }
                continue;
            }
            let relative = path
                .strip_prefix(root)
                .unwrap_or(&path)
                .to_string_lossy()
                .into_owned();
            let Some(rank) = rank(&name, &relative, wanted) else {
                continue;
            };
            let escapes_to = if kind.is_symlink() {
                match std::fs::canonicalize(&path) {
                    Ok(target) if target.starts_with(root) => {
                        if target.is_dir() {
                            continue;
                        }
                        None
                    }
                    Ok(target) => Some(target),
                    Err(_) => continue, // a dangling link is not a file
                }
            } else {
                None
            };
            found.push(Found {
                path,
                rank,
                escapes_to,
            });
        }
    }
    found.sort_by(|a, b| {
        (a.rank, a.path.components().count(), &a.path).cmp(&(
            b.rank,
            b.path.components().count(),
            &b.path,
        ))
    });
    (found, false)
}

fn describe(found: &Found) -> String {
    let name = found
        .path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    match &found.escapes_to {
        Some(target) => format!(
            "File: {name}, at {} is a link to {}, outside the work dir (refused)",
            found.path.display(),
            target.display()
        ),
        None => {
            let size = std::fs::metadata(&found.path).map_or(0, |m| m.len());
            format!(
                "File: {name}, found at {} ({size} bytes)",
                found.path.display()
            )
        }
    }
}

/// The file's text, capped; or why it is not shown.
fn read_capped(path: &Path, cap: u64) -> Result<String, String> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read it: {e}"))?;
    let size = file.metadata().map_or(0, |m| m.len());
    let mut bytes = Vec::new();
    file.take(cap)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read it: {e}"))?;
    let sample = &bytes[..bytes.len().min(8192)];
    let text = match std::str::from_utf8(&bytes) {
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

fn find_files(request: &Request, root: &Path, cap: u64) -> (bool, String) {
    let mut out = String::new();
    let mut all_ok = true;
    for wanted in &request.names {
        let (found, stopped_early) = search(root, wanted);
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
            let _ = writeln!(out, "{}", describe(item));
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
            if best.escapes_to.is_some() {
                all_ok = false;
                let _ = writeln!(out, "Not read: it leads outside the work dir.");
                continue;
            }
            match read_capped(&best.path, cap) {
                Ok(text) => {
                    let _ = write!(out, "Content of {}:\n{text}", best.path.display());
                }
                Err(why) => {
                    all_ok = false;
                    let _ = writeln!(out, "Not read: {why}");
                }
            }
        }
    }
    (all_ok, out)
}

pub struct FileFinder {
    settings: ToolConfig,
}

impl FileFinder {
    pub fn new(settings: ToolConfig) -> Self {
        Self { settings }
    }
}

impl Tool for FileFinder {
    fn tag(&self) -> &'static str {
        "file_finder"
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
            let searched =
                tokio::task::spawn_blocking(move || find_files(&request, &root, cap)).await;
            let (ok, text) =
                searched.unwrap_or_else(|e| (false, format!("the search failed: {e}\n")));
            on_output(&text);
            let mut outcome = if ok {
                ToolOutcome::ok_without_process(text)
            } else {
                ToolOutcome::failed_without_process(text)
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

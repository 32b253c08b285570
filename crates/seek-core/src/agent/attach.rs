//! `@path` attachments: the files a user names in a task's prompt, read (bounded) into the
//! message the model gets, each as a fenced block headed by its path.
//!
//! Owns finding the `@` mentions in the user's own words (never in the context handed along
//! with them, such as piped stdin, nor in model output, pages or tool results), deciding
//! which name an existing regular file (relative to the work dir, absolute, or `~/…`), reading
//! them without ever waiting on a FIFO, a device or a terminal, and the bounds. A mention that
//! names nothing (an email, a decorator, `@everyone`) is left as typed. It must not send
//! anything or emit events: the turn does that with what this returns.

use std::io::Read;
use std::path::{Path, PathBuf};

use std::sync::Arc;

use super::budget;
use super::context::TurnContext;
use super::task::Task;
use crate::secrets::Masker;
use crate::wire::Attachment;

/// Bytes attached per task at most, over all its files (a quarter of the context budget when
/// that is smaller, see `bound_bytes`).
pub(crate) const MAX_ATTACHED_BYTES: usize = 32 * 1024;
/// Files attached per task at most: more mentions are left as typed, so a prompt of ten
/// thousand `@` words costs no more than this many file checks.
pub(crate) const MAX_FILES: usize = 16;
/// How long reading a prompt's files may hold up the task's start (a hung network mount):
/// after it the task starts without them.
pub(crate) const READ_LIMIT: std::time::Duration = std::time::Duration::from_secs(5);
/// Mentions looked at per prompt at most (each costs a `stat`).
const MAX_MENTIONS: usize = 64;
/// A file is binary when its first bytes hold a NUL.
const BINARY_PROBE: usize = 8 * 1024;
/// Punctuation that may close a sentence after a path (`see @notes.md.`) and is tried without.
const TRAILING_PUNCTUATION: &[char] = &['.', ',', ';', ':', '!', '?', ')', ']', '}', '"', '\''];

/// The prompt with its attachments, ready for the model.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Attached {
    /// The user message: the prompt as typed, then each file's block.
    pub message: String,
    /// The files attached, for the `Attached` event.
    pub files: Vec<Attachment>,
    /// Files named but not attached, each with why (binary, not a regular file, over the
    /// bound): shown to the user; the model is told in `message`.
    pub refused: Vec<String>,
}

/// Where relative and `~/` names lead.
#[derive(Debug, Clone)]
pub(crate) struct Roots<'a> {
    pub work_dir: &'a Path,
    pub home: Option<&'a Path>,
}

/// The attachment bound for a context window: `MAX_ATTACHED_BYTES`, or a quarter of the
/// prompt budget (at the estimator's three bytes a token) when smaller.
pub(crate) fn bound_bytes(prompt_budget_tokens: u64) -> usize {
    let quarter = prompt_budget_tokens.saturating_mul(3) / 4;
    usize::try_from(quarter)
        .unwrap_or(usize::MAX)
        .min(MAX_ATTACHED_BYTES)
}

/// The task of the user's `words` and the `context` handed along with them: the `@path` files
/// the words name read off the async threads, bounded in time (after `READ_LIMIT` the task goes
/// without them, and says so). The context reaches the model but is never read for mentions.
pub(super) async fn task(
    ctx: &TurnContext,
    masker: &Arc<Masker>,
    words: String,
    context: Option<String>,
) -> Task {
    if mentions(&words).is_empty() {
        return Task::with_context(words, context.as_deref());
    }
    let config = &ctx.config;
    let window = ctx
        .context_window
        .get()
        .copied()
        .unwrap_or(config.model_settings.context_window.value);
    let bound = bound_bytes(budget::prompt_budget(
        window,
        config.model_settings.max_tokens.value,
    ));
    let work_dir = config.work_dir.value.clone();
    let masker = Arc::clone(masker);
    let (typed, handed) = (words.clone(), context.clone());
    let reading = tokio::task::spawn_blocking(move || {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let roots = Roots {
            work_dir: &work_dir,
            home: home.as_deref(),
        };
        attach(&typed, handed.as_deref(), &roots, bound, &masker)
    });
    let plain = Task::with_context(words, context.as_deref());
    let failed = |why: String| Task {
        refused: vec![why],
        ..plain.clone()
    };
    match tokio::time::timeout(READ_LIMIT, reading).await {
        Ok(Ok(attached)) => Task {
            message: attached.message,
            attached: attached.files,
            refused: attached.refused,
            ..plain
        },
        Ok(Err(e)) => failed(format!("reading the attached files failed: {e}")),
        Err(_) => failed(format!(
            "the attached files could not be read within {} s: nothing was attached",
            READ_LIMIT.as_secs()
        )),
    }
}

/// Expands the `@path` mentions of the user's `words`; the message is the words, the `context`
/// (never searched for mentions), then the files. Reads files: call it off the async threads.
pub fn attach(
    words: &str,
    context: Option<&str>,
    roots: &Roots<'_>,
    bound: usize,
    masker: &Masker,
) -> Attached {
    let mut attached = Attached {
        message: super::task::joined(words, context),
        ..Attached::default()
    };
    let mut blocks = Vec::new();
    let mut seen: Vec<PathBuf> = Vec::new();
    let mut left = bound;
    let work_dir = std::fs::canonicalize(roots.work_dir).ok();
    for written in mentions(words).into_iter().take(MAX_MENTIONS) {
        let Some((written, path, meta)) = resolve(&written, roots) else {
            continue;
        };
        let real = std::fs::canonicalize(&path).ok();
        if leads_out_by_a_link(&written, real.as_deref(), work_dir.as_deref()) {
            attached.refused.push(format!(
                "{written}: a link to a file outside the work dir, not attached (name that file by its own path to attach it)"
            ));
            continue;
        }
        // The same file named twice (or through a link) is attached once.
        let identity = real.unwrap_or_else(|| path.clone());
        if seen.contains(&identity) {
            continue;
        }
        seen.push(identity);
        if !meta.is_file() {
            let what = if meta.is_dir() {
                "a directory"
            } else {
                "not a regular file"
            };
            attached
                .refused
                .push(format!("{written}: {what}, not attached"));
            continue;
        }
        if attached.files.len() >= MAX_FILES || left == 0 {
            attached.refused.push(format!(
                "{written}: not attached, the task's attachments are at their bound ({MAX_FILES} files, {bound} bytes)"
            ));
            continue;
        }
        match read_bounded(&path, left) {
            // The name was swapped for a link out of the work dir between the check above and
            // the open (a process left running could do it): what was opened decides.
            Ok(read)
                if leads_out_by_a_link(&written, read.opened.as_deref(), work_dir.as_deref()) =>
            {
                attached.refused.push(format!(
                    "{written}: a link to a file outside the work dir, not attached (name that file by its own path to attach it)"
                ));
            }
            Ok(read) if read.binary => {
                attached
                    .refused
                    .push(format!("{written}: a binary file, not attached"));
            }
            Ok(read) => {
                left -= read.bytes.len();
                let text = String::from_utf8_lossy(&read.bytes);
                let text = masker.mask(&text).into_owned();
                blocks.push(file_block(&written, &text, &read));
                attached.files.push(Attachment {
                    path: written,
                    bytes: read.bytes.len() as u64,
                    truncated: read.truncated,
                });
            }
            Err(e) => attached
                .refused
                .push(format!("{written}: cannot be read ({e}), not attached")),
        }
    }
    for block in blocks {
        attached.message.push_str("\n\n");
        attached.message.push_str(&block);
    }
    if !attached.refused.is_empty() {
        attached.message.push_str("\n\n(");
        attached.message.push_str(&attached.refused.join("; "));
        attached.message.push(')');
    }
    attached
}

/// The words of `prompt` written as `@name` (or `@"name with spaces"`), as written after the
/// `@`. An `@` inside a word (`me@example.com`) starts none.
pub fn mentions(prompt: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut previous: Option<char> = None;
    let mut chars = prompt.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let starts =
            c == '@' && previous.is_none_or(|p| p.is_whitespace() || "([{\"'`".contains(p));
        previous = Some(c);
        if !starts {
            continue;
        }
        let rest = &prompt[i + 1..];
        let word = match rest.strip_prefix('"') {
            Some(quoted) => match quoted.find(['"', '\n']) {
                Some(end) if quoted[end..].starts_with('"') => &quoted[..end],
                _ => continue,
            },
            None => rest.split(char::is_whitespace).next().unwrap_or(""),
        };
        if !word.is_empty() {
            found.push(word.to_owned());
        }
        // Skip what was taken (the closing quote of a quoted name included).
        let taken = word.len() + usize::from(rest.starts_with('"')) * 2;
        while chars.peek().is_some_and(|&(j, _)| j <= i + taken) {
            if let Some((_, skipped)) = chars.next() {
                previous = Some(skipped);
            }
        }
    }
    found
}

/// The path `written` names, if anything exists there: as written, or without the sentence
/// punctuation after it. Returns the name as it matched, the path, and what is there (a
/// symlink is followed, so a link counts only as what it points to).
fn resolve(written: &str, roots: &Roots<'_>) -> Option<(String, PathBuf, std::fs::Metadata)> {
    let mut candidates = vec![written];
    let trimmed = written.trim_end_matches(TRAILING_PUNCTUATION);
    if trimmed != written && !trimmed.is_empty() {
        candidates.push(trimmed);
    }
    candidates.into_iter().find_map(|name| {
        let path = full_path(name, roots)?;
        let meta = std::fs::metadata(&path).ok()?;
        Some((name.to_owned(), path, meta))
    })
}

/// Whether `written`, a name inside the work dir as typed (relative, no `..`), really leads
/// out of it through a link: a file of a cloned repository named like any other can point at
/// `~/.ssh/id_ed25519`, and the user who names it means the repository's file, not that one.
/// A name the user wrote as absolute, `~/…` or with `..` goes where it says.
fn leads_out_by_a_link(written: &str, real: Option<&Path>, work_dir: Option<&Path>) -> bool {
    use std::path::Component;
    let path = Path::new(written);
    let typed_inside = !written.starts_with("~/")
        && path
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    typed_inside
        && match (real, work_dir) {
            (Some(real), Some(work_dir)) => !real.starts_with(work_dir),
            // What cannot be resolved cannot be shown to stay inside.
            _ => true,
        }
}

fn full_path(name: &str, roots: &Roots<'_>) -> Option<PathBuf> {
    if let Some(rest) = name.strip_prefix("~/") {
        return roots.home.map(|home| home.join(rest));
    }
    let path = Path::new(name);
    Some(if path.is_absolute() {
        path.to_owned()
    } else {
        roots.work_dir.join(path)
    })
}

/// A file's first bytes.
#[derive(Debug)]
struct Bounded {
    bytes: Vec<u8>,
    /// The file holds more than was read.
    truncated: bool,
    /// The file's size as the system says (0 for most of /proc).
    size: u64,
    binary: bool,
    /// Where the opened file really is (`/proc/self/fd/N`), for checking what was read rather
    /// than what the name led to a moment before.
    opened: Option<PathBuf>,
}

/// Reads at most `limit` bytes of the regular file at `path`. The file is opened without
/// blocking (a FIFO swapped in after the check cannot hold the open) and checked again once
/// open, so only a regular file is ever read.
fn read_bounded(path: &Path, limit: usize) -> std::io::Result<Bounded> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    let opened = {
        use std::os::fd::AsRawFd;
        std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).ok()
    };
    let mut bytes = Vec::with_capacity(limit.min(64 * 1024) + 1);
    file.take(limit as u64 + 1).read_to_end(&mut bytes)?;
    let truncated = bytes.len() > limit;
    bytes.truncate(limit);
    if truncated {
        // A character cut in two at the bound is left out whole.
        if let Err(e) = std::str::from_utf8(&bytes)
            && e.error_len().is_none()
        {
            bytes.truncate(e.valid_up_to());
        }
    }
    let binary = bytes[..bytes.len().min(BINARY_PROBE)].contains(&0);
    Ok(Bounded {
        bytes,
        truncated,
        size: meta.len(),
        binary,
        opened,
    })
}

/// One file as the model sees it: a line naming it, then its text fenced by more backticks
/// than any run inside it.
fn file_block(written: &str, text: &str, read: &Bounded) -> String {
    let size = if read.truncated && read.size > read.bytes.len() as u64 {
        format!(
            ", only its first {} of {} bytes",
            read.bytes.len(),
            read.size
        )
    } else if read.truncated {
        format!(", only its first {} bytes", read.bytes.len())
    } else {
        String::new()
    };
    let fence = super::shell::fence_for(text);
    let newline = if text.ends_with('\n') || text.is_empty() {
        ""
    } else {
        "\n"
    };
    format!("Attached file `{written}`{size}:\n{fence}\n{text}{newline}{fence}")
}

#[cfg(test)]
mod tests;

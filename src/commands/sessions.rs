//! `seek sessions`: the saved sessions of this work dir (or `--all`), `rm ID…` and
//! `prune --older-than AGE [--dry-run]`.
//!
//! Prompts and folders come from the session files: shown through `terminal_safe`, never obeyed
//! by the terminal.

use std::io::Write;

use seek_core::config::Config;
use seek_core::session;
use seek_wire::terminal_safe::terminal_safe;
use seek_wire::wire::Exit;

use crate::cli::SessionsAction;

/// `seek sessions`: list (this work dir's, or `--all`), `rm` or `prune`.
pub fn run(config: &Config, all: bool, action: Option<&SessionsAction>) -> anyhow::Result<Exit> {
    match action {
        None => list_sessions(config, all),
        Some(SessionsAction::Rm { ids }) => remove_sessions(config, ids),
        Some(SessionsAction::Prune {
            older_than,
            dry_run,
        }) => prune_sessions(config, *older_than, *dry_run),
    }
}

fn list_sessions(config: &Config, all: bool) -> anyhow::Result<Exit> {
    let listing = match session::list(&config.data_dir) {
        Ok(listing) => listing,
        Err(err) => {
            eprintln!("seek: {}", terminal_safe(&err.to_string()));
            return Ok(Exit::Usage);
        }
    };
    if let Some(warning) = listing.warning() {
        eprintln!("seek: warning: {}", terminal_safe(&warning));
    }
    // The work dir as a session's header has it: canonical (listing creates nothing).
    let work_dir = std::fs::canonicalize(&config.work_dir.value)
        .unwrap_or_else(|_| config.work_dir.value.clone())
        .display()
        .to_string();
    let sessions = if all {
        listing.sessions
    } else {
        listing.only_in(&work_dir).sessions
    };
    let mut out = std::io::stdout().lock();
    if sessions.is_empty() {
        let message = if all {
            format!(
                "no sessions yet in {}",
                session::dir(&config.data_dir).display()
            )
        } else {
            format!("no saved sessions in {work_dir} yet; `seek sessions --all` lists every one")
        };
        writeln!(out, "{}", terminal_safe(&message))?;
        return Ok(Exit::Success);
    }
    let home = config
        .home
        .as_ref()
        .and_then(|h| std::fs::canonicalize(h).ok());
    writeln!(out, "{}", session::Summary::TITLES)?;
    for s in sessions {
        // Prompts and folders come from the files: shown, never obeyed by the terminal.
        writeln!(out, "{}", terminal_safe(&s.line(home.as_deref())))?;
    }
    Ok(Exit::Success)
}

/// One removed session, as `rm` and `prune` say it.
fn removed_line(summary: &session::Summary) -> String {
    terminal_safe(&format!(
        "{}  {}  {}",
        summary.id,
        seek_core::log::utc_minutes(summary.last_activity_ms),
        summary.prompt_head()
    ))
    .into_owned()
}

fn remove_sessions(config: &Config, ids: &[String]) -> anyhow::Result<Exit> {
    let mut out = std::io::stdout().lock();
    let mut exit = Exit::Success;
    for id in ids {
        match session::remove(&config.data_dir, id) {
            Ok(removed) => writeln!(out, "removed {}", removed_line(&removed))?,
            Err(err) => {
                eprintln!("seek: {}", terminal_safe(&err.to_string()));
                exit = Exit::Usage;
            }
        }
    }
    Ok(exit)
}

fn prune_sessions(
    config: &Config,
    older_than: std::time::Duration,
    dry_run: bool,
) -> anyhow::Result<Exit> {
    let age_ms = u64::try_from(older_than.as_millis()).unwrap_or(u64::MAX);
    let cutoff = session::now_ms().saturating_sub(age_ms);
    let pruned = match session::prune(&config.data_dir, cutoff, dry_run) {
        Ok(pruned) => pruned,
        Err(err) => {
            eprintln!("seek: {}", terminal_safe(&err.to_string()));
            return Ok(Exit::Usage);
        }
    };
    let mut out = std::io::stdout().lock();
    let verb = if dry_run { "would remove" } else { "removed" };
    for removed in &pruned.removed {
        writeln!(out, "{verb} {}", removed_line(removed))?;
    }
    for (id, why) in &pruned.kept {
        eprintln!("seek: kept {}: {}", terminal_safe(id), terminal_safe(why));
    }
    let count = pruned.removed.len();
    let noun = if count == 1 { "session" } else { "sessions" };
    writeln!(
        out,
        "{verb} {count} {noun} last active more than {} ago",
        humane_age(older_than)
    )?;
    Ok(Exit::Success)
}

/// `30 days`, `12 hours`, `90 minutes`: the age as given.
fn humane_age(age: std::time::Duration) -> String {
    let minutes = age.as_secs() / 60;
    let (n, unit) = if minutes.is_multiple_of(1440) {
        (minutes / 1440, "day")
    } else if minutes.is_multiple_of(60) {
        (minutes / 60, "hour")
    } else {
        (minutes, "minute")
    };
    format!("{n} {unit}{}", if n == 1 { "" } else { "s" })
}

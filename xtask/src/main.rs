//! check-ladder: seek-core's modules keep to their floors and its files import no circle.
//!
//! Reads `scripts/ladder` (seek-core's top-level modules, bottom floor first) and
//! `scripts/ladder-allowed` (known violations, each with its reason), then every `use` and
//! `crate::`/`super::`/`self::`/child-module path in crates/seek-core/src. Fails, naming file,
//! line and edge, when a module names a module on a higher floor, when files reach each other in
//! a circle, or when an allowed violation no longer occurs (so every fix shows in the list). It
//! must not build or change the code it reads.

mod graph;
mod lex;
mod read;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use graph::Edge;

const CRATE_ROOT: &str = "crates/seek-core/src";
const FLOORS: &str = "scripts/ladder";
const ALLOWED: &str = "scripts/ladder-allowed";

/// One line of the allow-list: a module pair (`config -> agents`) or a file pair
/// (`agent/turn.rs -> agent/mod.rs`, paths under the crate's src/).
struct Allowed {
    line: usize,
    from: String,
    to: String,
    used: bool,
}

fn main() -> ExitCode {
    let root = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| ".".to_string()));
    match run(&root) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(message) => {
            eprintln!("check-ladder: {message}");
            ExitCode::from(2)
        }
    }
}

/// Ok(true) when the crate keeps its ladder.
fn run(root: &Path) -> Result<bool, String> {
    let src = root.join(CRATE_ROOT);
    let krate = read::read_crate(&src.join("lib.rs"))?;
    let floors = read_floors(&root.join(FLOORS))?;
    let mut allowed = read_allowed(&root.join(ALLOWED))?;
    let relative = |file: &Path| {
        file.strip_prefix(&src)
            .unwrap_or(file)
            .display()
            .to_string()
    };
    let shown = |file: &Path| {
        file.strip_prefix(root)
            .unwrap_or(file)
            .display()
            .to_string()
    };
    let mut ok = true;

    let top_level: BTreeSet<&String> = krate
        .modules
        .keys()
        .filter(|path| path.len() == 1)
        .map(|path| &path[0])
        .collect();
    for module in &top_level {
        if floor_of(&floors, module).is_none() {
            eprintln!("check-ladder: {module} is on no floor: add it to {FLOORS}");
            ok = false;
        }
    }

    let edges = graph::edges(&krate);
    for edge in &edges {
        let from_module = module_of_file(&krate, &edge.from_file);
        let (Some(from), Some(to)) = (from_module, edge.to_module.first()) else {
            continue;
        };
        let (Some(from_floor), Some(to_floor)) = (floor_of(&floors, &from), floor_of(&floors, to))
        else {
            continue;
        };
        if to_floor <= from_floor {
            continue;
        }
        if let Some(entry) = allowed.iter_mut().find(|a| a.from == from && &a.to == to) {
            entry.used = true;
            continue;
        }
        eprintln!(
            "check-ladder: {}:{}: {from} -> {to} ({}): {to} is on floor {}, above {from}'s floor {}",
            shown(&edge.from_file),
            edge.line,
            edge.written,
            to_floor + 1,
            from_floor + 1
        );
        ok = false;
    }

    let mut kept: Vec<&Edge> = Vec::new();
    for edge in edges.iter().filter(|edge| !is_downward(&krate, edge)) {
        let (from, to) = (relative(&edge.from_file), relative(&edge.to_file));
        if let Some(entry) = allowed.iter_mut().find(|a| a.from == from && a.to == to) {
            entry.used = true;
        } else {
            kept.push(edge);
        }
    }
    for circle in graph::circles(&kept) {
        let names: Vec<String> = circle.iter().map(|f| relative(f)).collect();
        eprintln!("check-ladder: file circle: {}", names.join(", "));
        let mut shown_pairs = BTreeSet::new();
        for edge in kept
            .iter()
            .filter(|e| circle.contains(&e.from_file) && circle.contains(&e.to_file))
        {
            if shown_pairs.insert((&edge.from_file, &edge.to_file)) {
                eprintln!(
                    "  {}:{}: {} -> {} ({})",
                    shown(&edge.from_file),
                    edge.line,
                    relative(&edge.from_file),
                    relative(&edge.to_file),
                    edge.written
                );
            }
        }
        ok = false;
    }

    for entry in allowed.iter().filter(|a| !a.used) {
        eprintln!(
            "check-ladder: {ALLOWED}:{}: {} -> {} no longer occurs: remove the line",
            entry.line, entry.from, entry.to
        );
        ok = false;
    }
    if ok {
        let count = allowed.len();
        println!(
            "check-ladder: seek-core keeps its floors and has no file circle beyond {ALLOWED} ({count} known)"
        );
    } else {
        eprintln!(
            "check-ladder: a module may name only modules on its floor or below ({FLOORS}), and no files may reach each other; \
             move the item down, or name the violation in {ALLOWED} with the reason"
        );
    }
    Ok(ok)
}

/// Whether `edge` goes from a module's own file into one of its descendants' files: a parent
/// declares its children and re-exports them, and they may name the parent's items (`super::`),
/// so the two directions between a parent and its children are not a circle. Siblings, cousins
/// and modules elsewhere are.
fn is_downward(krate: &read::Crate, edge: &Edge) -> bool {
    module_path_of_file(krate, &edge.from_file)
        .is_some_and(|from| edge.to_module.len() > from.len() && edge.to_module.starts_with(&from))
}

/// The module a file is the root of (its shortest module path: inline modules are longer).
fn module_path_of_file(krate: &read::Crate, file: &Path) -> Option<Vec<String>> {
    krate
        .modules
        .iter()
        .filter(|(_, module)| module.file == file)
        .map(|(path, _)| path.clone())
        .min_by_key(Vec::len)
}

/// The top-level module a file belongs to (None for the crate root).
fn module_of_file(krate: &read::Crate, file: &Path) -> Option<String> {
    krate
        .modules
        .iter()
        .filter(|(_, module)| module.file == file)
        .find_map(|(path, _)| path.first().cloned())
}

fn floor_of(floors: &[Vec<String>], module: &str) -> Option<usize> {
    floors
        .iter()
        .position(|floor| floor.iter().any(|m| m == module))
}

/// Lines without their `#` comments, numbered from 1, blank ones left out.
fn meaningful_lines(path: &Path) -> Result<Vec<(usize, String, String)>, String> {
    let text = std::fs::read_to_string(path).map_err(|err| format!("{}: {err}", path.display()))?;
    Ok(text
        .lines()
        .enumerate()
        .filter_map(|(i, line)| {
            let (body, comment) = line.split_once('#').unwrap_or((line, ""));
            let body = body.trim();
            (!body.is_empty()).then(|| (i + 1, body.to_string(), comment.trim().to_string()))
        })
        .collect())
}

fn read_floors(path: &Path) -> Result<Vec<Vec<String>>, String> {
    Ok(meaningful_lines(path)?
        .into_iter()
        .map(|(_, body, _)| body.split_whitespace().map(str::to_string).collect())
        .collect())
}

fn read_allowed(path: &Path) -> Result<Vec<Allowed>, String> {
    meaningful_lines(path)?
        .into_iter()
        .map(|(line, body, reason)| {
            let (from, to) = body
                .split_once("->")
                .ok_or_else(|| format!("{ALLOWED}:{line}: write `FROM -> TO  # reason`"))?;
            if reason.is_empty() {
                return Err(format!("{ALLOWED}:{line}: give the reason after `#`"));
            }
            Ok(Allowed {
                line,
                from: from.trim().to_string(),
                to: to.trim().to_string(),
                used: false,
            })
        })
        .collect()
}

//! Paths to file edges: resolves each path named in a crate to the file that defines the item
//! (through `use` re-exports and globs, at module granularity: an item of an inline module is its
//! file's), and finds the file circles (strongly connected components of more than one file).
//! It must not judge floors or read the allow-list: `main.rs` does.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use crate::read::{Crate, Named};

/// One file naming an item of another file.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Edge {
    pub from_file: PathBuf,
    pub line: usize,
    /// The module the named item lives in.
    pub to_module: Vec<String>,
    pub to_file: PathBuf,
    /// The path as written, `::`-joined.
    pub written: String,
}

/// How many re-exports a path may go through before it is taken where it stands.
const MAX_HOPS: usize = 16;

/// Every edge between two different files of `krate`.
pub fn edges(krate: &Crate) -> Vec<Edge> {
    let mut out = Vec::new();
    for named in &krate.named {
        let Some(from_file) = krate.modules.get(&named.from).map(|m| m.file.clone()) else {
            continue;
        };
        let Some(to_module) = resolve(krate, named, MAX_HOPS) else {
            continue;
        };
        let Some(to_file) = krate.modules.get(&to_module).map(|m| m.file.clone()) else {
            continue;
        };
        if to_file != from_file {
            out.push(Edge {
                from_file,
                line: named.line,
                to_module,
                to_file,
                written: named.segments.join("::"),
            });
        }
    }
    out
}

/// The module a path names an item of, or None for a path outside the crate.
fn resolve(krate: &Crate, named: &Named, hops: usize) -> Option<Vec<String>> {
    let absolute = absolute(krate, &named.from, &named.segments)?;
    locate(krate, &absolute, hops)
}

/// The path from the crate root, or None when it does not start in the crate.
fn absolute(krate: &Crate, from: &[String], segments: &[String]) -> Option<Vec<String>> {
    let first = segments.first()?;
    let mut base: Vec<String> = from.to_vec();
    let rest: &[String] = match first.as_str() {
        "crate" => {
            base.clear();
            &segments[1..]
        }
        "super" => {
            let supers = segments.iter().take_while(|s| *s == "super").count();
            for _ in 0..supers {
                base.pop()?;
            }
            &segments[supers..]
        }
        "self" => &segments[1..],
        name => {
            let module = krate.modules.get(from)?;
            if !module.children.iter().any(|child| child == name) {
                return None;
            }
            segments
        }
    };
    base.extend(rest.iter().cloned());
    Some(base)
}

/// The module defining the item at `absolute` (or the module it names), following re-exports.
fn locate(krate: &Crate, absolute: &[String], hops: usize) -> Option<Vec<String>> {
    let split = (0..=absolute.len())
        .rev()
        .find(|k| krate.modules.contains_key(&absolute[..*k]))?;
    let module_path = absolute[..split].to_vec();
    let Some(name) = absolute.get(split) else {
        return Some(module_path);
    };
    let module = krate.modules.get(&module_path)?;
    if module.defines.iter().any(|defined| defined == name) || hops == 0 {
        return Some(module_path);
    }
    if let Some(reexport) = module
        .uses
        .iter()
        .find(|u| u.binds.as_deref() == Some(name))
    {
        // Named through a `use`: the item is where that use points (None: outside the crate).
        let mut target = absolute_of_use(krate, reexport)?;
        target.extend(absolute[split + 1..].iter().cloned());
        return locate(krate, &target, hops - 1);
    }
    for glob in module
        .uses
        .iter()
        .filter(|u| u.binds.as_deref() == Some("*"))
    {
        let Some(glob_module) = absolute_of_use(krate, glob) else {
            continue;
        };
        if !krate.modules.contains_key(&glob_module) {
            continue;
        }
        let mut target = glob_module;
        target.extend(absolute[split..].iter().cloned());
        if let Some(found) = locate(krate, &target, hops - 1)
            && defines_or_is(krate, &found, name)
        {
            return Some(found);
        }
    }
    Some(module_path)
}

fn absolute_of_use(krate: &Crate, named: &Named) -> Option<Vec<String>> {
    absolute(krate, &named.from, &named.segments)
}

/// Whether `module` defines `name` or is the module `name` itself.
fn defines_or_is(krate: &Crate, module: &[String], name: &str) -> bool {
    module.last().is_some_and(|last| last == name)
        || krate
            .modules
            .get(module)
            .is_some_and(|m| m.defines.iter().any(|d| d == name))
}

/// The file circles: each set of two files or more that reach each other, sorted.
pub fn circles(edges: &[&Edge]) -> Vec<BTreeSet<PathBuf>> {
    let mut next: BTreeMap<&PathBuf, BTreeSet<&PathBuf>> = BTreeMap::new();
    for edge in edges {
        next.entry(&edge.from_file)
            .or_default()
            .insert(&edge.to_file);
        next.entry(&edge.to_file).or_default();
    }
    // Tarjan's algorithm, iterative so a deep graph cannot overflow the stack.
    let nodes: Vec<&PathBuf> = next.keys().copied().collect();
    let index_of: BTreeMap<&PathBuf, usize> =
        nodes.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let successors: Vec<Vec<usize>> = nodes
        .iter()
        .map(|n| next[n].iter().map(|s| index_of[s]).collect())
        .collect();
    let mut index = vec![usize::MAX; nodes.len()];
    let mut low = vec![0; nodes.len()];
    let mut on_stack = vec![false; nodes.len()];
    let mut stack = Vec::new();
    let mut counter = 0;
    let mut found = Vec::new();
    for start in 0..nodes.len() {
        if index[start] != usize::MAX {
            continue;
        }
        let mut work = vec![(start, 0usize)];
        while let Some(&mut (node, ref mut child)) = work.last_mut() {
            if *child == 0 && index[node] == usize::MAX {
                index[node] = counter;
                low[node] = counter;
                counter += 1;
                stack.push(node);
                on_stack[node] = true;
            }
            if let Some(&succ) = successors[node].get(*child) {
                *child += 1;
                if index[succ] == usize::MAX {
                    work.push((succ, 0));
                } else if on_stack[succ] {
                    low[node] = low[node].min(index[succ]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[node]);
            }
            if low[node] == index[node] {
                let mut component = BTreeSet::new();
                while let Some(member) = stack.pop() {
                    on_stack[member] = false;
                    component.insert(nodes[member].clone());
                    if member == node {
                        break;
                    }
                }
                if component.len() > 1 {
                    found.push(component);
                }
            }
        }
    }
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// A crate written to a fresh directory under the system's temp dir.
    fn krate(name: &str, files: &[(&str, &str)]) -> (PathBuf, Crate) {
        let dir = std::env::temp_dir().join(format!("check-ladder-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (path, text) in files {
            let file = dir.join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, text).unwrap();
        }
        let read = crate::read::read_crate(&dir.join("lib.rs")).unwrap();
        (dir, read)
    }

    fn pairs(dir: &Path, edges: &[Edge]) -> Vec<(String, String)> {
        let name = |f: &PathBuf| f.strip_prefix(dir).unwrap().display().to_string();
        let mut found: Vec<_> = edges
            .iter()
            .map(|e| (name(&e.from_file), name(&e.to_file)))
            .collect();
        found.sort();
        found
    }

    #[test]
    fn re_exports_lead_to_the_defining_file_and_siblings_close_a_circle() {
        let (dir, read) = krate(
            "circle",
            &[
                ("lib.rs", "pub mod a;\npub use seek_wire::wire;\n"),
                ("a/mod.rs", "mod b;\nmod c;\npub use b::Thing;\n"),
                (
                    "a/b.rs",
                    "pub struct Thing;\nfn f() { super::c::g(); crate::wire::x(); }\n",
                ),
                ("a/c.rs", "use super::{Thing as T};\npub fn g() {}\n"),
            ],
        );
        let found = edges(&read);
        assert_eq!(
            pairs(&dir, &found),
            [
                ("a/b.rs".to_string(), "a/c.rs".to_string()),
                ("a/c.rs".to_string(), "a/b.rs".to_string()),
                ("a/mod.rs".to_string(), "a/b.rs".to_string()),
            ]
        );
        let all: Vec<&Edge> = found.iter().collect();
        assert_eq!(circles(&all).len(), 1);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn path_attributes_and_inline_modules_are_followed_and_test_modules_left_out() {
        let (dir, read) = krate(
            "path",
            &[
                ("lib.rs", "pub mod a;\npub mod q;\npub mod z;\n"),
                (
                    "a.rs",
                    "#[path = \"a_impl.rs\"]\nmod imp;\nmod inner { use super::super::z::Z; }\n\
                     #[cfg(test)]\n#[path = \"a_tests.rs\"]\nmod tests;\n\
                     #[cfg(test)]\npub(crate) mod more { use crate::q::Q; }\nfn f() {}\n",
                ),
                ("a_impl.rs", "use crate::z::*;\n"),
                ("a_tests.rs", "use crate::q::*;\n"),
                ("q.rs", "pub struct Q;\n"),
                ("z.rs", "pub struct Z;\n"),
            ],
        );
        assert_eq!(
            pairs(&dir, &edges(&read)),
            [
                ("a.rs".to_string(), "z.rs".to_string()),
                ("a_impl.rs".to_string(), "z.rs".to_string()),
            ]
        );
        let _ = std::fs::remove_dir_all(dir);
    }
}

//! One crate's sources read into modules and the paths they name: walks the `mod` declarations
//! from `lib.rs` (following `#[path]`), and for each file lists its inline modules, the items it
//! defines, its `use` declarations (expanded to one path each) and the `crate::`/`super::`/
//! `self::`/child-module paths in its code. It resolves nothing: `graph.rs` turns paths into
//! file edges.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::lex::{self, Kind, Token};

/// A path as written, from the module it is written in.
#[derive(Debug, Clone)]
pub struct Named {
    /// The module the path is written in (inline modules included), from the crate root.
    pub from: Vec<String>,
    pub segments: Vec<String>,
    pub line: usize,
    /// The name a `use` binds (its alias or last segment); `*` for a glob.
    pub binds: Option<String>,
}

#[derive(Debug, Default)]
pub struct Module {
    /// The file the module's items are written in.
    pub file: PathBuf,
    /// Names of the items defined here (functions, types, traits, constants, macros, inline
    /// modules).
    pub defines: Vec<String>,
    /// The `use` declarations written directly in this module.
    pub uses: Vec<Named>,
    /// Child modules by name.
    pub children: Vec<String>,
}

#[derive(Debug, Default)]
pub struct Crate {
    /// Every module, inline ones included, by its path from the crate root (the root is `[]`).
    pub modules: BTreeMap<Vec<String>, Module>,
    /// Every path named, in file order.
    pub named: Vec<Named>,
}

/// Reads the crate whose root file is `lib`.
pub fn read_crate(lib: &Path) -> Result<Crate, String> {
    let root = lib.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut krate = Crate::default();
    // (module path, file, directory its child modules live in)
    let mut pending = vec![(Vec::new(), lib.to_path_buf(), root)];
    while let Some((path, file, child_dir)) = pending.pop() {
        let source =
            std::fs::read_to_string(&file).map_err(|err| format!("{}: {err}", file.display()))?;
        let tokens = lex::tokens(&source);
        let file_dir = file.parent().map(Path::to_path_buf).unwrap_or_default();
        for (name, attr_path) in read_file(&mut krate, &path, &file, &tokens) {
            let mut child = path.clone();
            child.push(name.clone());
            let (child_file, grand_dir) = match attr_path {
                Some(relative) => {
                    let child_file = file_dir.join(relative);
                    let dir = child_file.with_extension("");
                    (child_file, dir)
                }
                None => {
                    let flat = child_dir.join(format!("{name}.rs"));
                    if flat.exists() {
                        (flat, child_dir.join(&name))
                    } else {
                        (child_dir.join(&name).join("mod.rs"), child_dir.join(&name))
                    }
                }
            };
            pending.push((child, child_file, grand_dir));
        }
    }
    Ok(krate)
}

/// Reads one file's tokens into `krate` under module `path`; returns its out-of-line child
/// modules (`mod name;`) with their `#[path]` if any.
fn read_file(
    krate: &mut Crate,
    path: &[String],
    file: &Path,
    tokens: &[Token],
) -> Vec<(String, Option<String>)> {
    let mut file_children = Vec::new();
    // Inline modules open here: (module path, brace depth at which its body closes).
    let mut scopes: Vec<(Vec<String>, usize)> = vec![(path.to_vec(), 0)];
    krate.modules.entry(path.to_vec()).or_default().file = file.to_path_buf();
    let mut depth = 0usize;
    let mut i = 0;
    while i < tokens.len() {
        let current = scopes.last().map(|(p, _)| p.clone()).unwrap_or_default();
        let token = &tokens[i];
        match &token.kind {
            Kind::Punct('{') => depth += 1,
            Kind::Punct('}') => {
                depth = depth.saturating_sub(1);
                if scopes.len() > 1 && scopes.last().is_some_and(|(_, d)| *d == depth) {
                    scopes.pop();
                }
            }
            // Test modules are left out: a test may reach across floors for its fixtures, and
            // the ladder is the shipped code's.
            Kind::Ident(word) if word == "mod" && is_cfg_test(tokens, i) => {
                i = skip_item(tokens, i + 2);
                continue;
            }
            Kind::Ident(word) if word == "mod" => {
                if let (Some(name), Some(after)) =
                    (tokens.get(i + 1).and_then(Token::ident), tokens.get(i + 2))
                {
                    let mut child = current.clone();
                    child.push(name.to_string());
                    let module = krate.modules.entry(current.clone()).or_default();
                    module.children.push(name.to_string());
                    if after.is_punct(';') {
                        file_children.push((name.to_string(), path_attribute(tokens, i)));
                    } else if after.is_punct('{') {
                        module.defines.push(name.to_string());
                        krate.modules.entry(child.clone()).or_default().file = file.to_path_buf();
                        depth += 1;
                        scopes.push((child, depth - 1));
                        i += 3;
                        continue;
                    }
                }
            }
            Kind::Ident(word)
                if matches!(
                    word.as_str(),
                    "fn" | "struct" | "enum" | "trait" | "type" | "const" | "static" | "union"
                ) =>
            {
                if let Some(name) = tokens.get(i + 1).and_then(Token::ident) {
                    krate
                        .modules
                        .entry(current.clone())
                        .or_default()
                        .defines
                        .push(name.to_string());
                }
            }
            Kind::Ident(word) if word == "macro_rules" => {
                if let Some(name) = tokens.get(i + 2).and_then(Token::ident) {
                    krate
                        .modules
                        .entry(current.clone())
                        .or_default()
                        .defines
                        .push(name.to_string());
                }
            }
            Kind::Ident(word) if word == "use" && starts_item(tokens, i) => {
                let mut uses = Vec::new();
                let end = use_tree(tokens, i + 1, &mut Vec::new(), &mut uses);
                for (segments, binds, line) in uses {
                    let named = Named {
                        from: current.clone(),
                        segments,
                        line,
                        binds: Some(binds),
                    };
                    krate
                        .modules
                        .entry(current.clone())
                        .or_default()
                        .uses
                        .push(named.clone());
                    krate.named.push(named);
                }
                i = end;
                continue;
            }
            Kind::Ident(first) if starts_path(tokens, i) => {
                let mut segments = vec![first.clone()];
                let mut j = i + 1;
                while tokens.get(j).is_some_and(|t| t.kind == Kind::PathSep) {
                    match tokens.get(j + 1).and_then(Token::ident) {
                        Some(next) => segments.push(next.to_string()),
                        None => break,
                    }
                    j += 2;
                }
                krate.named.push(Named {
                    from: current.clone(),
                    segments,
                    line: token.line,
                    binds: None,
                });
                i = j;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    file_children
}

/// Whether the `mod` at `i` carries `#[cfg(test)]` among its attributes.
fn is_cfg_test(tokens: &[Token], i: usize) -> bool {
    let mut j = i;
    // Step back over a visibility: `pub`, `pub(crate)`, `pub(super)`, `pub(in path)`.
    if j >= 1 && tokens[j - 1].is_punct(')') {
        while j >= 1 && !tokens[j - 1].is_punct('(') {
            j -= 1;
        }
        j = j.saturating_sub(1);
    }
    if j >= 1 && tokens[j - 1].is_ident("pub") {
        j -= 1;
    }
    // Then over attributes `#[…]`, last first.
    while j >= 1 && tokens[j - 1].is_punct(']') {
        let close = j - 1;
        let mut open = close;
        let mut nesting = 0usize;
        loop {
            if tokens[open].is_punct(']') {
                nesting += 1;
            } else if tokens[open].is_punct('[') {
                nesting -= 1;
                if nesting == 0 {
                    break;
                }
            }
            if open == 0 {
                return false;
            }
            open -= 1;
        }
        let inside = &tokens[open + 1..close];
        let is_test = inside.len() == 4
            && inside[0].is_ident("cfg")
            && inside[1].is_punct('(')
            && inside[2].is_ident("test")
            && inside[3].is_punct(')');
        if is_test {
            return true;
        }
        if open == 0 || !tokens[open - 1].is_punct('#') {
            return false;
        }
        j = open - 1;
    }
    false
}

/// The index after the item whose name ends at `i`: past its `;`, or past its `{ … }` body.
fn skip_item(tokens: &[Token], i: usize) -> usize {
    let mut j = i;
    let mut depth = 0usize;
    while j < tokens.len() {
        if tokens[j].is_punct('{') {
            depth += 1;
        } else if tokens[j].is_punct('}') {
            depth = depth.saturating_sub(1);
            if depth == 0 {
                return j + 1;
            }
        } else if tokens[j].is_punct(';') && depth == 0 {
            return j + 1;
        }
        j += 1;
    }
    j
}

/// Whether `use` at `i` starts a declaration (not `use` inside `pub(in …)` or a macro's text).
fn starts_item(tokens: &[Token], i: usize) -> bool {
    match i.checked_sub(1).map(|p| &tokens[p].kind) {
        None => true,
        Some(Kind::Punct(';' | '{' | '}' | ']' | ')')) => true,
        Some(Kind::Ident(word)) => word == "pub",
        _ => false,
    }
}

/// Whether the identifier at `i` starts a path of two segments or more (`a::b`), not in the
/// middle of one, and not a visibility restriction (`pub(in crate::x)`).
fn starts_path(tokens: &[Token], i: usize) -> bool {
    let is_followed = tokens.get(i + 1).is_some_and(|t| t.kind == Kind::PathSep)
        && tokens.get(i + 2).is_some_and(|t| t.ident().is_some());
    let previous = i.checked_sub(1).map(|p| &tokens[p]);
    is_followed && !previous.is_some_and(|t| t.kind == Kind::PathSep || t.is_ident("in"))
}

/// Reads a use tree starting at `i` with `prefix` already read; pushes each leaf as
/// (segments, bound name, line). Returns the index after the tree (after `;` at the top).
fn use_tree(
    tokens: &[Token],
    mut i: usize,
    prefix: &mut Vec<String>,
    out: &mut Vec<(Vec<String>, String, usize)>,
) -> usize {
    let depth_at_start = prefix.len();
    loop {
        let Some(token) = tokens.get(i) else { return i };
        match &token.kind {
            Kind::PathSep => i += 1,
            Kind::Ident(word) if word == "as" => {
                // `x as y`: the leaf was pushed with its own name; rebind it.
                if let (Some(alias), Some(last)) =
                    (tokens.get(i + 1).and_then(Token::ident), out.last_mut())
                {
                    last.1 = alias.to_string();
                }
                i += 2;
            }
            Kind::Ident(word) => {
                prefix.push(word.clone());
                let leaf = !tokens.get(i + 1).is_some_and(|t| t.kind == Kind::PathSep);
                if leaf {
                    let binds = if word == "self" {
                        prefix
                            .get(prefix.len().wrapping_sub(2))
                            .cloned()
                            .unwrap_or_default()
                    } else {
                        word.clone()
                    };
                    let mut segments = prefix.clone();
                    if word == "self" && segments.len() > 1 {
                        segments.pop();
                    }
                    out.push((segments, binds, token.line));
                    prefix.truncate(depth_at_start);
                }
                i += 1;
            }
            Kind::Punct('*') => {
                out.push((prefix.clone(), "*".to_string(), token.line));
                prefix.truncate(depth_at_start);
                i += 1;
            }
            Kind::Punct('{') => {
                i = use_tree(tokens, i + 1, prefix, out);
                prefix.truncate(depth_at_start);
            }
            Kind::Punct(',') => {
                prefix.truncate(depth_at_start);
                i += 1;
            }
            Kind::Punct('}') => return i + 1,
            Kind::Punct(';') => return i + 1,
            _ => i += 1,
        }
    }
}

/// The `#[path = "…"]` among the attributes before the `mod` at `i`.
fn path_attribute(tokens: &[Token], i: usize) -> Option<String> {
    let mut j = i;
    // Skip the visibility: `pub`, `pub(crate)`, `pub(super)`, `pub(in path)`.
    while j > 0 {
        let previous = &tokens[j - 1];
        if previous.is_ident("pub") {
            j -= 1;
        } else if previous.is_punct(')') {
            while j > 0 && !tokens[j - 1].is_punct('(') {
                j -= 1;
            }
            j = j.saturating_sub(1);
        } else {
            break;
        }
    }
    // Each attribute: `#` `[` … `]`, read backwards.
    while j > 0 && tokens[j - 1].is_punct(']') {
        let close = j - 1;
        let mut open = close;
        while open > 0 && !tokens[open].is_punct('[') {
            open -= 1;
        }
        let body = &tokens[open + 1..close];
        if body.first().is_some_and(|t| t.is_ident("path"))
            && let Some(Kind::Str(text)) = body.get(2).map(|t| &t.kind)
        {
            return Some(text.clone());
        }
        j = open.saturating_sub(1);
    }
    None
}

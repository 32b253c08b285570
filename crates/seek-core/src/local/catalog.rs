//! `resolve`: what the user typed, as a catalog entry or a `.gguf` file. The catalog's data
//! (`crate::catalog`) is re-exported here under the paths seek has always used.
//!
//! It must not download (`download` does) nor open model files; `resolve` only asks whether a
//! named `.gguf` file exists.

use std::path::{Path, PathBuf};

use super::LocalError;
pub use crate::catalog::*;
use seek_engine::EngineError;

/// What a model name stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelRef {
    /// A catalog model, downloaded on demand (`download::ensure_downloaded`).
    Catalog(&'static CatalogEntry),
    /// A `.gguf` file the user named; it exists (as of `resolve`).
    File(PathBuf),
}

/// A catalog name, or the path of an existing `.gguf` file (relative paths are relative to
/// `cwd`, `~/` is the home directory); anything else is `UnknownModel`, which lists the catalog.
pub fn resolve(name_or_path: &str, cwd: &Path) -> Result<ModelRef, LocalError> {
    let trimmed = name_or_path.trim();
    if let Some(entry) = find(trimmed) {
        return Ok(ModelRef::Catalog(entry));
    }
    let looks_like_gguf = Path::new(trimmed)
        .extension()
        .is_some_and(|ext| ext.eq_ignore_ascii_case("gguf"));
    if !looks_like_gguf {
        return Err(LocalError::UnknownModel {
            name: trimmed.to_owned(),
            catalog: names(),
        });
    }
    // `./x.gguf` shows as `cwd/x.gguf`, not `cwd/./x.gguf` (`..` is kept: it may cross a link).
    let path: PathBuf = cwd
        .join(expand_home(trimmed))
        .components()
        .filter(|c| !matches!(c, std::path::Component::CurDir))
        .collect();
    match std::fs::metadata(&path) {
        Ok(meta) if meta.is_file() => Ok(ModelRef::File(path)),
        Ok(_) => Err(LocalError::from(EngineError::Unreadable {
            path,
            reason: "it is a directory, not a model file".into(),
        })),
        Err(err) => Err(LocalError::from(EngineError::Unreadable {
            reason: match err.kind() {
                std::io::ErrorKind::NotFound => format!(
                    "no such file (relative paths start at {}; catalog names are: {})",
                    cwd.display(),
                    names()
                ),
                _ => err.to_string(),
            },
            path,
        })),
    }
}

fn expand_home(path: &str) -> PathBuf {
    match (
        path.strip_prefix("~/"),
        directories::BaseDirs::new().map(|b| b.home_dir().to_owned()),
    ) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => PathBuf::from(path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catalog_is_well_formed() {
        assert_eq!(CATALOG[0].name, DEFAULT_MODEL);
        for entry in CATALOG {
            assert!(entry.file_name.ends_with(".gguf"), "{}", entry.name);
            assert!(entry.size > 0, "{}", entry.name);
            assert!(!entry.sources.is_empty(), "{}", entry.name);
            if let Some(hex) = entry.sha256.known() {
                assert!(
                    hex.len() == 64
                        && hex
                            .bytes()
                            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
                    "{}: {hex}",
                    entry.name
                );
            }
            assert!(
                entry.sources[0]
                    .url()
                    .starts_with("https://huggingface.co/"),
                "Hugging Face comes first: {}",
                entry.name
            );
            for source in entry.sources {
                assert!(source.url().starts_with("https://"), "{source:?}");
            }
        }
        let names: Vec<_> = CATALOG.iter().map(|e| e.name).collect();
        for wanted in ["smollm2-135m", "qwen2.5-coder-1.5b", "qwen2.5-coder-7b"] {
            assert!(names.contains(&wanted), "{wanted}");
        }
    }

    #[test]
    fn catalog_names_and_gguf_paths_run_locally() {
        assert!(runs_locally("smollm2-135m") && runs_locally(" Qwen2.5-Coder-7B "));
        assert!(runs_locally("./models/x.GGUF"));
        assert!(!runs_locally("qwen2.5-coder:7b") && !runs_locally("gpt-4o-mini"));
    }

    #[test]
    fn names_files_and_unknowns_resolve() {
        let dir = tempfile::tempdir().expect("temp dir");
        assert_eq!(
            resolve(" SmolLM2-135M ", dir.path()).expect("catalog"),
            ModelRef::Catalog(&CATALOG[0])
        );
        std::fs::write(dir.path().join("x.gguf"), b"GGUF").expect("write");
        assert_eq!(
            resolve("x.gguf", dir.path()).expect("file"),
            ModelRef::File(dir.path().join("x.gguf"))
        );
        match resolve("qwen9", dir.path()) {
            Err(err @ LocalError::UnknownModel { .. }) => {
                let text = err.to_string();
                assert!(text.contains("qwen9") && text.contains(&names()), "{text}");
            }
            other => panic!("{other:?}"),
        }
        match resolve("missing.gguf", dir.path()) {
            Err(err @ LocalError::Engine(EngineError::Unreadable { .. })) => {
                assert!(err.to_string().contains("no such file"), "{err}");
            }
            other => panic!("{other:?}"),
        }
        std::fs::create_dir(dir.path().join("d.gguf")).expect("mkdir");
        assert!(matches!(
            resolve("d.gguf", dir.path()),
            Err(LocalError::Engine(EngineError::Unreadable { .. }))
        ));
    }
}

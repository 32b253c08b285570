//! The `[local]` section: where the built-in engine keeps downloaded models, where it downloads
//! them from, how long a silent download may last, how many threads the engine uses, and how
//! much of what it read it keeps.
//!
//! Owns their defaults (the platform cache dir, `SEEK_CACHE_DIR`) and their validation, and the
//! special cases of their lines in `seek config` (the keys, and `LocalSettings` they land in,
//! are the settings table's, which names this file). It must not download or load anything.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::{Config, ConfigError, Env, Origin, Sourced, invalid};

/// Default seconds without a byte before a download source counts as failed.
pub const DEFAULT_DOWNLOAD_STALL_SECS: u64 = 30;

/// Default count of read prompts the engine keeps: the agents a session usually switches
/// between (coder, casual, file, planner).
pub const DEFAULT_KEPT_PREFIXES: u64 = 4;

/// Default MiB the kept prompts may take: a 2,000-token conversation of a 1.5B model takes
/// about 110 MiB, of the 135M default 90 MiB.
pub const DEFAULT_PREFIX_CACHE_MB: u64 = 1024;

/// The mirrors as the file gives them (one URL or a list), checked; none when not set.
pub(super) fn mirrors(
    raw: Option<Sourced<toml::Value>>,
) -> Result<Sourced<Vec<String>>, ConfigError> {
    match raw {
        Some(raw) => Ok(Sourced::new(mirror_list(&raw)?, raw.origin)),
        None => Ok(Sourced::new(Vec::new(), Origin::Default)),
    }
}

/// `offline = true` needs a mirror to download from.
pub(super) fn offline(
    offline: Sourced<bool>,
    mirrors: &Sourced<Vec<String>>,
) -> Result<Sourced<bool>, ConfigError> {
    if offline.value && mirrors.value.is_empty() {
        return Err(invalid(
            &offline,
            "local.offline",
            "offline downloads come only from a mirror: set [local] mirror = \"http://host/path/\" too",
        ));
    }
    Ok(offline)
}

/// The models dir: a cache dir variable's (its name and value) `models` folder, relative to
/// `cwd`, else the file's (its value and the file's path), else the platform's.
pub(super) fn models_dir(
    cache_dir: Option<(&'static str, &str)>,
    cwd: &Path,
    in_file: Option<(Sourced<String>, &Path)>,
) -> Result<Sourced<PathBuf>, ConfigError> {
    if let Some((var, dir)) = cache_dir {
        return Ok(models_dir_in_cache(cwd, var, dir));
    }
    if let Some((given, config_file)) = in_file {
        return models_dir_in_file(given, config_file);
    }
    Ok(default_models_dir())
}

/// The models dir a cache dir variable names (`SEEK_CACHE_DIR`): its `models` folder, relative
/// to `cwd`.
fn models_dir_in_cache(cwd: &Path, var: &'static str, dir: &str) -> Sourced<PathBuf> {
    Sourced::new(cwd.join(dir).join("models"), Origin::Env(var))
}

/// `[local] models_dir`, relative to the config file's folder, `~` expanded.
fn models_dir_in_file(
    given: Sourced<String>,
    config_file: &Path,
) -> Result<Sourced<PathBuf>, ConfigError> {
    if given.value.trim().is_empty() {
        return Err(invalid(
            &given,
            "local.models_dir",
            "expected a directory path",
        ));
    }
    let base = config_file.parent().unwrap_or(Path::new("."));
    Ok(Sourced::new(
        base.join(expand_home(&given.value)),
        given.origin,
    ))
}

/// `<platform cache dir>/seek/models`.
fn default_models_dir() -> Sourced<PathBuf> {
    let cache = directories::BaseDirs::new().map_or_else(
        // No home directory at all (a bare container): keep models beside the process.
        || PathBuf::from(".seek/cache"),
        |b| b.cache_dir().join("seek"),
    );
    Sourced::new(cache.join("models"), Origin::Default)
}

/// `~` and `~/…` are the home folder.
pub(super) fn expand_home(raw: &str) -> PathBuf {
    let home = directories::BaseDirs::new().map(|b| b.home_dir().to_owned());
    match (raw.strip_prefix('~'), home) {
        (Some(rest), Some(home)) if rest.is_empty() || rest.starts_with('/') => {
            home.join(rest.trim_start_matches('/'))
        }
        _ => PathBuf::from(raw),
    }
}

/// `mirror = "URL"` or `mirror = ["URL", …]`, each an http(s) URL; a trailing `/` is added so
/// that `<mirror><file name>` names a file in it.
fn mirror_list(raw: &Sourced<toml::Value>) -> Result<Vec<String>, ConfigError> {
    const EXPECTED: &str =
        "expected an http(s) URL of a folder, or a list of them, such as \"http://host/models/\"";
    let urls: Vec<&toml::Value> = match &raw.value {
        toml::Value::Array(items) => items.iter().collect(),
        one => vec![one],
    };
    urls.into_iter()
        .map(|url| {
            let text = url.as_str().filter(|u| {
                (u.starts_with("http://") || u.starts_with("https://"))
                    && !u.chars().any(char::is_whitespace)
            });
            match text {
                Some(u) if u.ends_with('/') => Ok(u.to_owned()),
                Some(u) => Ok(format!("{u}/")),
                None => Err(ConfigError::Invalid {
                    origin: raw.origin.clone(),
                    key: "local.mirror".into(),
                    value: url.to_string(),
                    expected: EXPECTED.into(),
                }),
            }
        })
        .collect()
}

/// Special case in `seek config`: the mirrors, credentials masked, or that none is set.
pub(super) fn render_mirror(config: &Config, _: &Env, out: &mut String) {
    let local = &config.local;
    match local.mirrors.value.as_slice() {
        [] => {
            let _ = writeln!(
                out,
                "# mirror is not set: the catalog's own sources are used"
            );
        }
        mirrors => {
            let shown: Vec<String> = mirrors.iter().map(|m| super::redact_url(m)).collect();
            super::setting::line(
                out,
                "mirror",
                &super::setting::toml_list(shown.iter().map(String::as_str)),
                &local.mirrors.origin,
                None,
            );
        }
    }
}

/// What `seek config` says when `threads` is not set.
pub(super) fn threads_unset(config: &Config) -> String {
    format!(
        "threads is not set: every core ({}) computes",
        config.local.thread_count()
    )
}

#[cfg(test)]
mod tests {
    use super::super::Env;
    use super::*;

    use super::super::tests::resolve_in as resolve;

    #[test]
    fn defaults_put_models_in_the_cache_dir() {
        let dir = tempfile::tempdir().expect("temp dir");
        let local = resolve(dir.path(), None, &[]).expect("defaults").local;
        assert!(local.models_dir.value.ends_with("seek/models"));
        assert_eq!(local.models_dir.origin, Origin::Default);
        assert!(local.mirrors.value.is_empty());
        assert!(!local.offline.value);
        assert_eq!(local.download_stall_secs.value, DEFAULT_DOWNLOAD_STALL_SECS);
        assert_eq!(local.threads, None);
        assert!(local.thread_count() >= 1);
    }

    #[test]
    fn the_file_and_seek_cache_dir_set_the_models_dir() {
        let dir = tempfile::tempdir().expect("temp dir");
        let text = "[local]\nmodels_dir = \"m\"\nmirror = \"http://h/x\"\nthreads = 3\n";
        let local = resolve(dir.path(), Some(text), &[]).expect("file").local;
        assert_eq!(
            local.models_dir.value,
            dir.path().join("m"),
            "relative to the file"
        );
        assert!(matches!(
            local.models_dir.origin,
            Origin::File { line: 2, .. }
        ));
        assert_eq!(local.mirrors.value, vec!["http://h/x/".to_owned()]);
        assert_eq!(local.thread_count(), 3);

        let env = [("SEEK_CACHE_DIR", "cache")];
        let local = resolve(dir.path(), Some(text), &env).expect("env").local;
        assert_eq!(local.models_dir.value, dir.path().join("cache/models"));
        assert_eq!(local.models_dir.origin, Origin::Env("SEEK_CACHE_DIR"));
    }

    #[test]
    fn bad_values_name_the_key() {
        let dir = tempfile::tempdir().expect("temp dir");
        for (text, key) in [
            ("[local]\nmirror = \"ftp://h/\"\n", "local.mirror"),
            ("[local]\nmirror = [\"http://h/\", 3]\n", "local.mirror"),
            ("[local]\noffline = true\n", "local.offline"),
            ("[local]\nthreads = 0\n", "local.threads"),
            (
                "[local]\ndownload_stall_secs = 0\n",
                "local.download_stall_secs",
            ),
        ] {
            let err = resolve(dir.path(), Some(text), &[])
                .expect_err(text)
                .to_string();
            assert!(err.contains(key), "{text}: {err}");
        }
        let err = resolve(dir.path(), Some("[local]\nmodel_dir = \"x\"\n"), &[])
            .expect_err("unknown key")
            .to_string();
        assert!(err.contains("model_dir"), "{err}");
    }

    #[test]
    fn seek_config_shows_the_section_with_origins() {
        let dir = tempfile::tempdir().expect("temp dir");
        let text = "[local]\nmirror = [\"http://a/\", \"http://b/m\"]\noffline = true\n";
        let config = resolve(dir.path(), Some(text), &[]).expect("file");
        let shown = super::super::render(&config, &Env::default());
        assert!(shown.contains("\n[local]\n"), "{shown}");
        assert!(
            shown.contains("mirror = [\"http://a/\", \"http://b/m/\"]"),
            "{shown}"
        );
        assert!(shown.contains("offline = true"), "{shown}");
        assert!(shown.contains("config.toml:3"), "{shown}");
        assert!(shown.contains("# threads is not set"), "{shown}");
        toml::from_str::<toml::Value>(&shown).expect("seek config stays valid TOML");
    }
}

//! The work dir: where blocks run and files are saved, and the one folder the sandbox lets them
//! write. `--work-dir` > `SEEK_WORK_DIR` / `WORK_DIR` > `work_dir` in the config file > the
//! current directory, except that seek does not work in `/`, the home folder or a folder holding
//! it unless told to: started there, it uses a scratch folder (`<data dir>/workspace`) and says
//! so (`Config::work_dir_notice`).
//!
//! Owns that choice, creating the folder (`Config::ensure_work_dir`) and the warning about an
//! explicit work dir that is or holds the home folder. It must not change the process's current
//! directory or create anything but the work dir.

use std::path::{Path, PathBuf};

use super::settings::WORK_DIR;
use super::{Config, ConfigError, Dirs, Origin, Resolver, Sourced, invalid};

/// Where seek was started, when that folder was not used as the work dir (it is `/`, the home
/// folder, or holds the home folder) and the scratch folder was used instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusedStart {
    /// The current directory seek was started in (canonical).
    pub started_in: PathBuf,
    /// The home folder (canonical), if there is one.
    pub home: Option<PathBuf>,
}

impl Resolver<'_> {
    /// The work dir and, when the current directory was passed over, where seek was started.
    pub(super) fn work_dir(
        &self,
        dirs: &Dirs,
    ) -> Result<(Sourced<PathBuf>, Option<RefusedStart>), ConfigError> {
        let home = directories::BaseDirs::new().map(|b| b.home_dir().to_owned());
        let expand = |raw: &str, base: &Path| -> PathBuf {
            let path = match (raw.strip_prefix('~'), &home) {
                (Some(rest), Some(home)) if rest.is_empty() || rest.starts_with('/') => {
                    home.join(rest.trim_start_matches('/'))
                }
                _ => PathBuf::from(raw),
            };
            base.join(path)
        };
        // The flag's path is taken as given (not `~`-expanded, not as text).
        if let Some(dir) = &self.overrides.work_dir {
            let dir = Sourced::new(self.cwd.join(dir), Origin::Flag("--work-dir"));
            return Ok((dir, None));
        }
        for var in WORK_DIR.env {
            if let Some(dir) = self.env.get(var) {
                return Ok((Sourced::new(expand(dir, self.cwd), Origin::Env(var)), None));
            }
        }
        if let (Some(s), Some(f)) = (self.raw(&WORK_DIR), self.file) {
            if s.value.trim().is_empty() {
                return Err(invalid(&s, "work_dir", "expected a directory path"));
            }
            // A relative work_dir in a config file is relative to that file, not to wherever
            // seek happens to be started.
            let base = f.path.parent().unwrap_or(Path::new("."));
            return Ok((Sourced::new(expand(&s.value, base), s.origin), None));
        }
        let home = self.home().and_then(|h| std::fs::canonicalize(h).ok());
        let started_in = std::fs::canonicalize(self.cwd).unwrap_or_else(|_| self.cwd.to_owned());
        if is_too_wide(&started_in, home.as_deref()) {
            let scratch = Sourced::new(dirs.data_dir.join("workspace"), Origin::Default);
            return Ok((scratch, Some(RefusedStart { started_in, home })));
        }
        Ok((Sourced::new(self.cwd.to_owned(), Origin::CurrentDir), None))
    }
}

/// Whether a folder is too wide to become the work dir without being asked for: the root, the
/// home folder, or a folder holding it. Blocks may write anywhere in the work dir.
fn is_too_wide(dir: &Path, home: Option<&Path>) -> bool {
    dir.parent().is_none() || home.is_some_and(|home| home.starts_with(dir))
}

/// `path` with the home folder written `~` (`~` alone for the home folder itself).
pub fn abbreviate_home(path: &Path, home: Option<&Path>) -> String {
    if let Some(home) = home
        && let Ok(rest) = path.strip_prefix(home)
        && home.parent().is_some()
    {
        return if rest.as_os_str().is_empty() {
            "~".to_owned()
        } else {
            format!("~/{}", rest.display())
        };
    }
    path.display().to_string()
}

impl Config {
    /// Creates the work dir if it is missing and makes its path absolute and canonical. A path
    /// that is (or runs through) a file, and the root of the filesystem, are refused: blocks may
    /// write anywhere in the work dir.
    pub fn ensure_work_dir(&mut self) -> Result<&Path, ConfigError> {
        let path = &self.work_dir.value;
        if let Some(file) = path
            .ancestors()
            .find(|p| std::fs::metadata(p).is_ok_and(|m| !m.is_dir()))
        {
            let expected = if file == path {
                "this is a file, not a directory: name a directory (it is created if missing)"
                    .to_owned()
            } else {
                format!(
                    "{} is a file, so no directory can be made inside it: name a directory",
                    file.display()
                )
            };
            return Err(invalid(&self.work_dir, "work_dir", &expected));
        }
        let made = std::fs::create_dir_all(path).and_then(|()| std::fs::canonicalize(path));
        let made = made.map_err(|source| ConfigError::WorkDir {
            path: path.clone(),
            source,
        })?;
        if made.parent().is_none() {
            return Err(invalid(
                &self.work_dir,
                "work_dir",
                "the root of the filesystem cannot be the work dir: blocks could write anywhere the sandbox allows; name a folder of its own",
            ));
        }
        self.work_dir.value = made;
        Ok(&self.work_dir.value)
    }

    /// What to say once at start-up when the work dir was asked for (flag, env, file) and is the
    /// user's home or holds it: every file there is within the blocks' reach.
    pub fn work_dir_warning(&self) -> Option<String> {
        let home = std::fs::canonicalize(self.home.as_ref()?).ok()?;
        let work_dir = &self.work_dir.value;
        let what = if *work_dir == home {
            "is your home directory"
        } else if home.starts_with(work_dir) {
            "contains your home directory"
        } else {
            return None;
        };
        Some(format!(
            "the work dir {} ({}) {what}: blocks can change every file in it; a folder of its own is safer",
            work_dir.display(),
            self.work_dir.origin
        ))
    }

    /// What to say once at start-up when seek was started in `/`, the home folder or a folder
    /// holding it, and so works in the scratch folder instead of there.
    pub fn work_dir_notice(&self) -> Option<String> {
        let refused = self.work_dir_refused.as_ref()?;
        let home = refused.home.as_deref();
        let scratch = abbreviate_home(&self.work_dir.value, home);
        let started = &refused.started_in;
        let (where_, to_work_here) = if started.parent().is_none() {
            (
                "started in / (the root of the filesystem)".to_owned(),
                String::new(),
            )
        } else if Some(started.as_path()) == home {
            (
                "started in your home folder (~)".to_owned(),
                ", or pass --work-dir ~ to work here".to_owned(),
            )
        } else {
            let shown = started.display();
            (
                format!("started in {shown}, which holds your home folder"),
                format!(", or pass --work-dir {shown} to work here"),
            )
        };
        Some(format!(
            "{where_}: code runs in {scratch} instead; run seek from a project folder{to_work_here}"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_the_home_folder_and_what_holds_it_are_too_wide() {
        let home = Path::new("/home/ann");
        for dir in ["/", "/home", "/home/ann"] {
            assert!(is_too_wide(Path::new(dir), Some(home)), "{dir}");
        }
        for dir in ["/home/ann/project", "/home/bob", "/tmp", "/home/annex"] {
            assert!(!is_too_wide(Path::new(dir), Some(home)), "{dir}");
        }
        assert!(is_too_wide(Path::new("/"), None));
        assert!(!is_too_wide(Path::new("/srv"), None));
    }

    #[test]
    fn paths_under_home_are_abbreviated() {
        let home = Some(Path::new("/home/ann"));
        assert_eq!(abbreviate_home(Path::new("/home/ann"), home), "~");
        assert_eq!(abbreviate_home(Path::new("/home/ann/p/q"), home), "~/p/q");
        assert_eq!(
            abbreviate_home(Path::new("/home/annex"), home),
            "/home/annex"
        );
        assert_eq!(abbreviate_home(Path::new("/srv"), None), "/srv");
        // A home of `/` would make every path look like it is in the home folder.
        assert_eq!(
            abbreviate_home(Path::new("/srv"), Some(Path::new("/"))),
            "/srv"
        );
    }
}

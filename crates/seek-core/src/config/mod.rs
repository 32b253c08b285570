//! Configuration: flags > environment > config file > defaults, with where each value came from.
//!
//! Owns resolution and validation of every setting and the platform directories. It must not
//! start anything: it reads one file and the environment it is given, and creates nothing except
//! the work dir when asked (`Config::ensure_work_dir`, in `work_dir`). Each scalar key is declared
//! once in the settings table (`settings`); `Resolver::given`/`setting` read any key of it.
//!
//! The files form a ladder, bottom first: the machinery of one setting (`setting`); the
//! sections' value types, defaults, checks and `seek config` special cases (`web`, `tui`,
//! `safety`, `model`, `local`, `serve`, `tools`, `mcp`, `show`, …), which name no key; the
//! table (`settings`), which names them; and what reads the table: the file's parsing (`file`),
//! resolution (`resolve`) and `seek config` (`render`).

mod env;
mod file;
mod local;
pub mod mcp;
mod model;
pub mod model_size;
pub mod providers;
mod render;
mod resolve;
mod safety;
mod section;
mod sections;
mod serve;
mod setting;
mod settings;
mod show;
mod tools;
mod tui;
mod web;
mod work_dir;

use std::fmt;
use std::path::{Path, PathBuf};

use setting::{Fallback, Refusal, Value};

/// A key of the settings table: its value is found in the file's top-level struct.
type Key<T> = setting::Key<T, file::FileConfig>;

pub use crate::wire::AgentName;
pub use env::Env;
pub use local::DEFAULT_DOWNLOAD_STALL_SECS;
pub use mcp::{McpServer, McpSettings, McpTransport};
pub use model::{DEFAULT_REPLY_TIMEOUT_SECS, DEFAULT_STREAM_MAX_LINE_MIB};
pub use model_size::ModelSize;
pub use providers::{Preset, Wire};
pub use render::render;
pub use safety::{AllowedSocket, Approval, Limits, SandboxMode};
pub use serve::DEFAULT_ALLOWED_ORIGIN;
pub use settings::{LocalSettings, ModelSettings, Safety, ServeSettings, TuiSettings, WebSettings};
pub use show::redact_url;
pub use tools::{TOOL_TAGS, ToolConfig};
pub use tui::{DEFAULT_NOTIFY_AFTER_SECS, Notify, NotifySignal};
pub use web::{
    BrowserChoice, DEFAULT_MAX_PAGE_BYTES, DEFAULT_WEB_MAX_STEPS, DEFAULT_WEB_TIMEOUT_SECS,
};
pub use work_dir::{RefusedStart, abbreviate_home};

/// Where a setting's value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    Default,
    Preset(&'static str),
    File {
        path: PathBuf,
        line: usize,
    },
    Env(&'static str),
    Flag(&'static str),
    /// The directory seek was started in.
    CurrentDir,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Default => write!(f, "default"),
            Origin::Preset(name) => write!(f, "preset {name}"),
            Origin::File { path, line } => write!(f, "{}:{line}", path.display()),
            Origin::Env(var) => write!(f, "env {var}"),
            Origin::Flag(flag) => write!(f, "flag {flag}"),
            Origin::CurrentDir => write!(f, "current directory"),
        }
    }
}

/// A value and its origin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sourced<T> {
    pub value: T,
    pub origin: Origin,
}

impl<T> Sourced<T> {
    pub fn new(value: T, origin: Origin) -> Self {
        Self { value, origin }
    }
}

/// Why the configuration could not be built. Every variant names the thing and what is expected.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("config file {} is not valid:\n{message}", path.display())]
    Parse { path: PathBuf, message: String },
    #[error("{origin}: {key} = {value}: {expected}")]
    Invalid {
        origin: Origin,
        key: String,
        value: String,
        expected: String,
    },
    #[error("cannot create the work dir {}: {source} (set work_dir, SEEK_WORK_DIR or --work-dir)", path.display())]
    WorkDir {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Settings given on the command line (all optional).
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub config: Option<PathBuf>,
    pub provider: Option<String>,
    pub base_url: Option<String>,
    pub model: Option<String>,
    pub agent: Option<String>,
    pub work_dir: Option<PathBuf>,
    pub sandbox: Option<String>,
    pub approval: Option<String>,
}

/// seek's platform directories.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dirs {
    /// The config file read when none is named (it may not exist).
    pub default_config_file: Option<PathBuf>,
    /// Sessions, logs and the default work dir live here.
    pub data_dir: PathBuf,
}

impl Dirs {
    /// The platform directories (`~/.config/seek`, `~/.local/share/seek` on Linux);
    /// `SEEK_DATA_DIR` moves the data dir.
    pub fn from_env(env: &Env) -> Self {
        let project = directories::ProjectDirs::from("", "", "seek");
        let data_dir = match (env.get("SEEK_DATA_DIR"), &project) {
            (Some(dir), _) => PathBuf::from(dir),
            (None, Some(p)) => p.data_dir().to_owned(),
            // No home directory at all (a bare container): keep data beside the process.
            (None, None) => PathBuf::from(".seek"),
        };
        Self {
            default_config_file: project.map(|p| p.config_dir().join("config.toml")),
            data_dir,
        }
    }
}

/// What happened with the config file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigFile {
    Loaded(PathBuf),
    /// The default location has no file; defaults apply.
    Absent(PathBuf),
    /// No home directory, so no default location.
    NoLocation,
}

/// The effective configuration.
#[derive(Debug, Clone)]
pub struct Config {
    pub file: ConfigFile,
    pub data_dir: PathBuf,
    pub provider: Sourced<&'static Preset>,
    pub base_url: Sourced<String>,
    pub model: Sourced<Option<String>>,
    pub api_key_env: Sourced<Option<String>>,
    pub work_dir: Sourced<PathBuf>,
    /// Set when seek was started in `/`, the home folder or a folder holding it, and so works
    /// in the scratch folder instead (`work_dir_notice` says so).
    pub work_dir_refused: Option<RefusedStart>,
    pub agent: Sourced<AgentName>,
    pub max_attempts: Sourced<u32>,
    /// Rounds (model calls) per task, successful or not.
    pub max_rounds: Sourced<u32>,
    pub output_limit_bytes: Sourced<u64>,
    pub model_settings: ModelSettings,
    /// Whether the model is treated as a small one (`Config::small_model` applies the rule).
    pub model_size: Sourced<ModelSize>,
    /// The small-model adaptations `SEEK_SMALL_MODEL_OFF` turns off (for measuring them).
    pub small_model_off: Vec<String>,
    /// What seek learnt about the model in use once it asked the server (`agent::size`): none
    /// in the configuration as resolved.
    pub model_facts: model_size::ModelFacts,
    pub tools: Vec<ToolConfig>,
    pub safety: Safety,
    /// The built-in engine's `[local]` section.
    pub local: LocalSettings,
    /// The terminal UI's `[tui]` section.
    pub tui: TuiSettings,
    /// `[mcp_servers.NAME]` and `[tools.mcp]`.
    pub mcp: McpSettings,
    /// The `[web]` section: search, page reading, the web agent's caps.
    pub web: WebSettings,
    /// The `[serve]` section: who may call `seek serve` from a browser page.
    pub serve: ServeSettings,
    /// The user's home directory (`HOME`), which a work dir should not be.
    pub home: Option<PathBuf>,
}

/// Default number of failed rounds before an agent gives up (AgenticSeek's 5).
pub(crate) const DEFAULT_MAX_ATTEMPTS: u32 = 5;
/// Default cap on model calls per task, so endless successful loops end.
pub(crate) const DEFAULT_MAX_ROUNDS: u32 = 12;
/// Default captured output per block: head and tail, in bytes.
pub(crate) const DEFAULT_OUTPUT_LIMIT: u64 = 64 * 1024;

impl Config {
    /// The defaults with no file nor environment and a model of `size`, for unit tests.
    #[cfg(test)]
    pub(crate) fn defaults_for_tests(size: ModelSize) -> Config {
        let dirs = Dirs {
            default_config_file: None,
            data_dir: std::env::temp_dir().join("seek-unit-test"),
        };
        let mut config = Config::resolve(
            &Overrides::default(),
            &Env::default(),
            &dirs,
            &std::env::temp_dir(),
        )
        .expect("defaults resolve");
        config.model_size.value = size;
        config
    }

    /// Resolves the configuration from flags, environment, the config file and defaults.
    /// `cwd` anchors relative paths given by flags and env vars.
    pub fn resolve(
        overrides: &Overrides,
        env: &Env,
        dirs: &Dirs,
        cwd: &Path,
    ) -> Result<Self, ConfigError> {
        let (file, loaded) = read_config_file(overrides, env, dirs, cwd)?;
        let resolver = Resolver {
            overrides,
            env,
            file: loaded.as_ref(),
            cwd,
        };
        resolver.resolve(file, dirs)
    }

    /// The variables the configuration names as holding credentials: `api_key_env` and every MCP
    /// server's `bearer_token_env_var`. Blocks and servers never inherit them (unless `pass_env`
    /// lists them) and their values are masked like other secrets.
    pub fn credential_vars(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.api_key_env.value.as_deref().into_iter().collect();
        names.extend(
            self.mcp
                .servers
                .iter()
                .filter_map(|server| match &server.transport {
                    McpTransport::Http {
                        bearer_token_env_var,
                        ..
                    } => bearer_token_env_var.as_deref(),
                    McpTransport::Stdio { .. } => None,
                }),
        );
        names
    }

    /// Whether seek adapts to a small model: `model_size`, or under `auto` the parameter count
    /// the server reported, the model's name, the context window (`model_size::decide`).
    pub fn small_model(&self) -> bool {
        self.size_decision().small
    }

    /// Whether seek adapts to a small model and why, from what is known now: the configuration,
    /// and what the server said once it was asked (`model_facts`).
    pub(crate) fn size_decision(&self) -> model_size::Decision {
        model_size::decide(
            self.model_size.value,
            &self.model_facts,
            self.model.value.as_deref(),
            self.model_settings.context_window.value,
        )
    }

    /// What seek changes for the model: all the small-model adaptations when `small_model`, less
    /// those `SEEK_SMALL_MODEL_OFF` names.
    pub fn adaptations(&self) -> model_size::Adaptations {
        model_size::Adaptations::new(self.small_model(), &self.small_model_off)
    }

    /// The settings of one tool, as configured (`ToolConfig::of` fills in the defaults).
    pub fn tool(&self, kind: crate::tool_kind::ToolKind) -> Option<&ToolConfig> {
        self.tools.iter().find(|t| t.kind == kind)
    }

    /// seek's log file.
    pub fn log_file(&self) -> PathBuf {
        self.data_dir.join("seek.log")
    }

    /// The terminal UI's prompt history.
    pub fn history_file(&self) -> PathBuf {
        self.data_dir.join("history")
    }

    /// seek's own files and folders, which no block may write (a folder covers what is in it):
    /// the config file read (or where it would be), the default config folder (the config and
    /// prompt overrides), the sessions, the prompt history and the log.
    pub(crate) fn own_files(&self) -> Vec<(PathBuf, &'static str)> {
        let mut own = Vec::new();
        if let ConfigFile::Loaded(path) | ConfigFile::Absent(path) = &self.file {
            own.push((path.clone(), "config file"));
        }
        if let Some(dirs) = directories::ProjectDirs::from("", "", "seek") {
            own.push((dirs.config_dir().to_owned(), "config folder"));
        }
        // `session::store::dir`'s folder (a test there checks they agree).
        own.push((self.data_dir.join("sessions"), "session files"));
        own.push((self.history_file(), "prompt history"));
        own.push((self.log_file(), "log"));
        own.push((self.run_dir(), "instance locks"));
        // A block that could write here could swap a verified model or plant a link at a
        // download's partial file.
        own.push((self.local.models_dir.value.clone(), "downloaded models"));
        own
    }

    /// Where each running seek keeps the lock that says it is alive (see `exec::instance`).
    pub(crate) fn run_dir(&self) -> PathBuf {
        self.data_dir.join("run")
    }
}

fn read_config_file(
    overrides: &Overrides,
    env: &Env,
    dirs: &Dirs,
    cwd: &Path,
) -> Result<(ConfigFile, Option<file::LoadedFile>), ConfigError> {
    let named = overrides
        .config
        .clone()
        .or_else(|| env.get("SEEK_CONFIG").map(PathBuf::from));
    if let Some(path) = named {
        let path = cwd.join(path);
        let loaded = file::load(&path)?;
        return Ok((ConfigFile::Loaded(path), Some(loaded)));
    }
    match &dirs.default_config_file {
        Some(path) if path.exists() => {
            let loaded = file::load(path)?;
            Ok((ConfigFile::Loaded(path.clone()), Some(loaded)))
        }
        Some(path) => Ok((ConfigFile::Absent(path.clone()), None)),
        None => Ok((ConfigFile::NoLocation, None)),
    }
}

/// One resolution pass; holds the layers.
struct Resolver<'a> {
    overrides: &'a Overrides,
    env: &'a Env,
    file: Option<&'a file::LoadedFile>,
    cwd: &'a Path,
}

impl Resolver<'_> {
    fn file_value<T: Clone>(&self, value: Option<&toml::Spanned<T>>) -> Option<Sourced<T>> {
        value.map(|v| Sourced::new(v.get_ref().clone(), self.file_origin(v.span().start)))
    }

    fn file_origin(&self, offset: usize) -> Origin {
        match self.file {
            Some(f) => Origin::File {
                path: f.path.clone(),
                line: f.line_of(offset),
            },
            None => Origin::Default,
        }
    }

    /// A key's value from its flag, then its variables, then the file; `None` when none sets
    /// it. A value the key refuses is an error naming where it came from.
    pub(super) fn given<T: Value>(&self, key: &Key<T>) -> Result<Option<Sourced<T>>, ConfigError> {
        let refused = |origin: Origin, quoted: String, refusal: Refusal| ConfigError::Invalid {
            origin,
            key: key.name.to_owned(),
            value: refusal.part.unwrap_or(quoted),
            expected: refusal.expected,
        };
        let from_text = |text: &str, origin: Origin| match T::from_text(text, key.bounds) {
            Ok(value) => Ok(Some(Sourced::new(value, origin))),
            Err(refusal) => Err(refused(origin, format!("{text:?}"), refusal)),
        };
        if let Some(flag) = key.flag
            && let Some(text) = (flag.get)(self.overrides)
        {
            return from_text(text, Origin::Flag(flag.name));
        }
        for var in key.env {
            if let Some(text) = self.env.get(var) {
                return from_text(text, Origin::Env(var));
            }
        }
        let Some(raw) = self.raw(key) else {
            return Ok(None);
        };
        match T::from_file(&raw.value, key.bounds) {
            Ok(value) => Ok(Some(Sourced::new(value, raw.origin))),
            Err(refusal) => Err(refused(raw.origin, T::quote(&raw.value), refusal)),
        }
    }

    /// A key's value, or its default (`Fallback::Value`).
    pub(super) fn setting<T: Value>(&self, key: &Key<T>) -> Result<Sourced<T>, ConfigError> {
        match (self.given(key)?, &key.default) {
            (Some(value), _) => Ok(value),
            (None, Fallback::Value(default)) => Ok(Sourced::new(default(), Origin::Default)),
            // The resolver asks for keys without a default through `given` (a table test
            // checks every key it asks through `setting` has one).
            (None, Fallback::Unset | Fallback::Computed(_)) => Err(ConfigError::Invalid {
                origin: Origin::Default,
                key: key.name.to_owned(),
                value: String::new(),
                expected: "a value: the settings table gives this key no default".to_owned(),
            }),
        }
    }

    /// A whole number from the file under a key named at run time (`[mcp_servers.NAME]`'s
    /// timeouts), within `range`, or `default`.
    pub(super) fn number(
        &self,
        value: Option<&toml::Spanned<i64>>,
        key: &str,
        range: std::ops::RangeInclusive<u64>,
        default: u64,
    ) -> Result<Sourced<u64>, ConfigError> {
        let Some(given) = self.file_value(value) else {
            return Ok(Sourced::new(default, Origin::Default));
        };
        let bounds = setting::Bounds::Whole(*range.start(), *range.end());
        match u64::from_file(&given.value, bounds) {
            Ok(n) => Ok(Sourced::new(n, given.origin)),
            Err(refusal) => Err(invalid(&given, key, &refusal.expected)),
        }
    }

    /// A typed section's defaults: the section read with no flag, variable or file.
    pub(super) fn defaults<S>(read: fn(&Resolver<'_>) -> Result<S, ConfigError>) -> S {
        let (overrides, env) = (Overrides::default(), Env::default());
        let nothing = Resolver {
            overrides: &overrides,
            env: &env,
            file: None,
            cwd: Path::new(""),
        };
        // With nothing given, no value can be refused, and every key a section reads through
        // `setting` has a default (the table's tests check both).
        read(&nothing).expect("a section's keys all have defaults")
    }

    /// The first of a key's variables that is set: its name and its value.
    pub(super) fn variable<T: Value>(&self, key: &Key<T>) -> Option<(&'static str, &str)> {
        key.env
            .iter()
            .find_map(|var| self.env.get(var).map(|value| (*var, value)))
    }

    /// The config file's path, when a file was read.
    pub(super) fn file_path(&self) -> Option<&Path> {
        self.file.map(|f| f.path.as_path())
    }

    /// A key's value as the file wrote it (for keys whose resolver reads the file its own way).
    pub(super) fn raw<T: Value>(&self, key: &Key<T>) -> Option<Sourced<T::File>> {
        self.file_value(self.file.and_then(|f| (key.file)(&f.config)))
    }
}

/// An invalid-value error; `Debug` quotes strings and leaves numbers bare, as TOML writes them.
fn invalid<T: fmt::Debug>(value: &Sourced<T>, key: &str, expected: &str) -> ConfigError {
    ConfigError::Invalid {
        origin: value.origin.clone(),
        key: key.to_owned(),
        value: format!("{:?}", value.value),
        expected: expected.to_owned(),
    }
}

fn is_env_var_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests;

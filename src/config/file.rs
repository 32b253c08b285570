//! The config file's schema and its parsing.
//!
//! Owns what a TOML config file may contain and turns parse failures into messages naming the
//! file, the line and the key. It must not apply precedence or defaults (`resolve` does).

use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use super::ConfigError;

/// A value read from the file, with where it was.
pub type FileValue<T> = Option<Spanned<T>>;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    pub provider: FileValue<String>,
    pub base_url: FileValue<String>,
    pub model: FileValue<String>,
    pub api_key_env: FileValue<String>,
    pub work_dir: FileValue<String>,
    pub agent: FileValue<String>,
    pub max_attempts: FileValue<i64>,
    pub max_rounds: FileValue<i64>,
    pub context_window: FileValue<i64>,
    pub max_tokens: FileValue<i64>,
    pub temperature: FileValue<super::model::Number>,
    pub top_p: FileValue<super::model::Number>,
    pub seed: FileValue<i64>,
    pub stream_idle_timeout_secs: FileValue<i64>,
    pub connect_timeout_secs: FileValue<i64>,
    pub max_retries: FileValue<i64>,
    pub sandbox: FileValue<String>,
    pub approval: FileValue<String>,
    pub safe_mode: FileValue<bool>,
    #[serde(default)]
    pub exec: ExecFile,
    #[serde(default)]
    pub tools: ToolsFile,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecFile {
    pub output_limit_bytes: FileValue<i64>,
    pub pass_env: FileValue<Vec<String>>,
    pub allow_sockets: FileValue<Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolsFile {
    #[serde(default)]
    pub bash: ToolFile,
    #[serde(default)]
    pub python: ToolFile,
    #[serde(default)]
    pub c: ToolFile,
    #[serde(default)]
    pub go: ToolFile,
    #[serde(default)]
    pub java: ToolFile,
    #[serde(default)]
    pub file_finder: ToolFile,
}

/// `[tools.<tag>]`. One shape for every tool keeps the file simple; keys a tool does not use are
/// refused by `resolve` with the tool's name.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolFile {
    pub timeout_secs: FileValue<i64>,
    pub compile_timeout_secs: FileValue<i64>,
    pub command: FileValue<String>,
    pub runtime: FileValue<String>,
    pub allow_rerun: FileValue<bool>,
    pub max_read_bytes: FileValue<i64>,
}

/// A parsed config file and its text (kept to turn spans into line numbers).
#[derive(Debug)]
pub struct LoadedFile {
    pub path: PathBuf,
    pub text: String,
    pub config: FileConfig,
}

impl LoadedFile {
    /// The 1-based line of a byte offset.
    pub fn line_of(&self, offset: usize) -> usize {
        self.text[..offset.min(self.text.len())]
            .bytes()
            .filter(|&b| b == b'\n')
            .count()
            + 1
    }
}

/// Reads and parses a config file.
pub fn load(path: &Path) -> Result<LoadedFile, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_owned(),
        source,
    })?;
    parse(path, text)
}

/// Parses config text that came from `path`.
pub fn parse(path: &Path, text: String) -> Result<LoadedFile, ConfigError> {
    let config = toml::from_str::<FileConfig>(&text).map_err(|e| ConfigError::Parse {
        path: path.to_owned(),
        // serde names Rust types; users write TOML.
        message: e
            .to_string()
            .trim_end()
            .replace("expected i64", "expected a whole number"),
    })?;
    Ok(LoadedFile {
        path: path.to_owned(),
        text,
        config,
    })
}

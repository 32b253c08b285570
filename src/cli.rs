//! The command line: flags, subcommands and exit codes, the contract users and scripts rely on.
//!
//! Owns argument parsing (clap) and the mapping to config overrides. It must not run anything.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::config::Overrides;

/// Process exit codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Exit {
    Success = 0,
    /// The task failed or the agent gave up.
    TaskFailed = 1,
    /// Usage or configuration error.
    Usage = 2,
    /// The model server failed (unreachable, or an error after retries).
    ModelServer = 3,
    /// Interrupted (Ctrl+C / SIGINT).
    Interrupted = 130,
}

impl From<Exit> for std::process::ExitCode {
    fn from(exit: Exit) -> Self {
        std::process::ExitCode::from(exit as u8)
    }
}

const AFTER_HELP: &str = "\
Exit codes: 0 success, 1 the task failed or the agent gave up, 2 usage or configuration error,
3 the model server failed, 130 interrupted.

Configuration: flags > environment (SEEK_PROVIDER, SEEK_BASE_URL, SEEK_MODEL, SEEK_AGENT,
SEEK_WORK_DIR or WORK_DIR, SEEK_CONFIG, SEEK_DATA_DIR, SEEK_CACHE_DIR) > config file >
defaults.
`seek config` shows the effective values and where each came from.";

/// seek: a terminal agent shell. The model answers with fenced code blocks; seek runs them.
#[derive(Debug, Parser)]
#[command(name = "seek", version, about, after_help = AFTER_HELP, args_conflicts_with_subcommands = true)]
pub struct Cli {
    /// Run one task without the terminal UI and print the answer.
    #[arg(short = 'p', long = "print", value_name = "PROMPT")]
    pub print: Option<String>,

    /// With -p: write JSON Lines events to stdout instead of text.
    #[arg(long, requires = "print")]
    pub json: bool,

    /// Model provider: ollama, llama.cpp, lm-studio, vllm, openai, deepseek, openrouter, together, groq.
    #[arg(long, value_name = "NAME", global = true)]
    pub provider: Option<String>,

    /// Base URL of the model server (with or without /v1).
    #[arg(long, value_name = "URL", global = true)]
    pub base_url: Option<String>,

    /// Model name.
    #[arg(long, value_name = "NAME", global = true)]
    pub model: Option<String>,

    /// Agent: auto, casual, coder or file.
    #[arg(long, value_name = "NAME", global = true)]
    pub agent: Option<String>,

    /// Directory where code runs and files are saved.
    #[arg(long, value_name = "DIR", global = true)]
    pub work_dir: Option<PathBuf>,

    /// Config file (default: the platform config dir, e.g. ~/.config/seek/config.toml).
    #[arg(long, value_name = "FILE", global = true)]
    pub config: Option<PathBuf>,

    /// Where blocks may write: workspace-write (default), read-only, off.
    #[arg(long, value_name = "MODE", global = true)]
    pub sandbox: Option<String>,

    /// Whether blocks run without asking: auto, ask, never.
    #[arg(long, value_name = "POLICY", global = true, conflicts_with = "yes")]
    pub approval: Option<String>,

    /// Run blocks without asking (the same as --approval auto).
    #[arg(short = 'y', long, global = true)]
    pub yes: bool,

    /// Continue the most recently active session.
    #[arg(short = 'c', long = "continue", conflicts_with = "resume")]
    pub continue_latest: bool,

    /// Continue session ID (or the one session whose id starts with it).
    #[arg(short = 'r', long = "resume", value_name = "ID")]
    pub resume: Option<String>,

    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the effective configuration and where each value came from (secrets hidden).
    Config,
    /// List the models the configured server offers (with the built-in engine: its catalog and
    /// the downloaded models).
    Models,
    /// Download a model of the built-in catalog (e.g. smollm2-135m) without running anything.
    Pull {
        /// A catalog name (`seek models` lists them).
        name: String,
    },
    /// List saved sessions, the most recently active first.
    Sessions,
}

/// Which saved session to continue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resume {
    Latest,
    Id(String),
}

impl Cli {
    /// The session to continue, if `-c` or `-r` asked for one.
    pub fn resume(&self) -> Option<Resume> {
        match (&self.resume, self.continue_latest) {
            (Some(id), _) => Some(Resume::Id(id.clone())),
            (None, true) => Some(Resume::Latest),
            (None, false) => None,
        }
    }

    /// The settings given as flags.
    pub fn overrides(&self) -> Overrides {
        Overrides {
            config: self.config.clone(),
            provider: self.provider.clone(),
            base_url: self.base_url.clone(),
            model: self.model.clone(),
            agent: self.agent.clone(),
            work_dir: self.work_dir.clone(),
            sandbox: self.sandbox.clone(),
            approval: if self.yes {
                Some("auto".into())
            } else {
                self.approval.clone()
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn json_needs_print() {
        let err = Cli::try_parse_from(["seek", "--json"]).expect_err("--json alone");
        assert_eq!(err.exit_code(), 2);
        let cli = Cli::try_parse_from(["seek", "-p", "hi", "--json"]).expect("valid");
        assert!(cli.json);
        assert_eq!(cli.print.as_deref(), Some("hi"));
    }

    #[test]
    fn flags_become_overrides() {
        let cli = Cli::try_parse_from(["seek", "config", "--model", "m", "--work-dir", "w"])
            .expect("valid");
        let o = cli.overrides();
        assert_eq!(o.model.as_deref(), Some("m"));
        assert_eq!(o.work_dir, Some(PathBuf::from("w")));
        assert!(matches!(cli.command, Some(Command::Config)));
    }

    #[test]
    fn print_conflicts_with_subcommands() {
        assert!(Cli::try_parse_from(["seek", "-p", "x", "config"]).is_err());
    }
}

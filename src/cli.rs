//! The command line: flags, subcommands and exit codes, the contract users and scripts rely on.
//!
//! Owns argument parsing (clap), the mapping to config overrides, and how text piped on stdin
//! goes with the prompt (`prompt_with_stdin`: pure; `main` reads stdin): as context, data kept
//! apart from the words typed on the command line. It must not run anything.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand};

use crate::config::Overrides;

mod typo;
pub use typo::subcommand_typo;

// The exit codes are the wire's (front ends return them); which session to resume is the
// session store's.
pub use crate::session::Resume;
pub use crate::wire::Exit;

const AFTER_HELP: &str = r#"Exit codes: 0 success, 1 the task failed or the agent gave up, 2 usage or configuration error,
3 the model server failed, 130 interrupted.

Configuration: flags > environment (SEEK_PROVIDER, SEEK_BASE_URL, SEEK_MODEL, SEEK_AGENT,
SEEK_WORK_DIR or WORK_DIR, SEEK_CONFIG, SEEK_DATA_DIR, SEEK_CACHE_DIR) > config file >
defaults.
`seek config` shows the effective values and where each came from.

Code runs in the current directory (started in / or your home folder: a scratch folder
instead; --work-dir DIR names another). `seek "task"` opens the UI and sends the task;
`seek -p "task"` runs it headless, and text piped on stdin joins it (`cat log | seek -p "why"`;
alone, it is the task). A first word that is a subcommand (config, mcp, models, pull, serve, sessions) runs
that subcommand: to send the word itself, use -p or the UI."#;

/// seek: a terminal agent shell. The model answers with fenced code blocks; seek runs them.
#[derive(Debug, Parser)]
#[command(
    name = "seek",
    version,
    about,
    after_help = AFTER_HELP,
    subcommand_negates_reqs = true
)]
pub struct Cli {
    /// Run one task without the terminal UI and print the answer. Text piped on stdin is added
    /// to PROMPT as context, or is the prompt when PROMPT is missing or `-`.
    #[arg(
        short = 'p',
        long = "print",
        value_name = "PROMPT",
        num_args = 0..=1,
        default_missing_value = "",
        allow_hyphen_values = false
    )]
    pub print: Option<String>,

    /// With -p: write JSON Lines events to stdout instead of text.
    #[arg(long, requires = "print")]
    pub json: bool,

    /// Model provider: local (the built-in engine, no server), ollama, llama.cpp, lm-studio,
    /// vllm, openai, deepseek, openrouter, together, groq.
    #[arg(long, value_name = "NAME", global = true)]
    pub provider: Option<String>,

    /// Base URL of the model server (with or without /v1).
    #[arg(long, value_name = "URL", global = true)]
    pub base_url: Option<String>,

    /// Model name.
    #[arg(long, value_name = "NAME", global = true)]
    pub model: Option<String>,

    /// Agent: auto (the router picks), coder, file, casual, planner or web; AgenticSeek's
    /// roles (code, files, talk, planification) are accepted too.
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

    /// Continue the most recently active session of this work dir.
    #[arg(short = 'c', long = "continue", conflicts_with = "resume")]
    pub continue_latest: bool,

    /// Continue session ID (or the one session whose id starts with it).
    #[arg(short = 'r', long = "resume", value_name = "ID")]
    pub resume: Option<String>,

    /// The task to start with (several words are joined with spaces): the UI opens and sends
    /// it; with -p, it is run headless.
    #[arg(value_name = "TASK")]
    pub prompt: Vec<String>,

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
    /// Start the configured MCP servers, list each one's state and tools, and end them (exit 1
    /// when an enabled server is not ready).
    Mcp {
        /// Print `{"servers": [...]}` as JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Download a model of the built-in catalog (e.g. smollm2-135m) without running anything.
    Pull {
        /// A catalog name (`seek models` lists them).
        name: String,
    },
    /// Serve AgenticSeek's HTTP API (and seek's /events, /sessions) on loopback: a bearer token
    /// is required (SEEK_API_TOKEN, or one made and printed at start-up). See docs/api.md.
    Serve {
        /// The address to listen on (default 127.0.0.1). Any other than loopback exposes seek:
        /// a warning is printed, and --no-token is refused.
        #[arg(long, value_name = "IP")]
        host: Option<String>,
        /// The port (default 7777, AgenticSeek's; 0 picks a free one).
        #[arg(long, value_name = "PORT")]
        port: Option<u16>,
        /// Serve without a token, for AgenticSeek's front end: only on loopback, and only to
        /// requests with a loopback Host and an Origin (if any) listed in [serve] allowed_origins.
        #[arg(long)]
        no_token: bool,
    },
    /// List this work dir's saved sessions, the most recently active first (`--all`: every
    /// one); remove sessions (`rm`, `prune`).
    Sessions {
        /// List the sessions of every work dir.
        #[arg(long)]
        all: bool,
        #[command(subcommand)]
        action: Option<SessionsAction>,
    },
}

/// What `seek sessions` does besides listing.
#[derive(Debug, Subcommand)]
pub enum SessionsAction {
    /// Remove sessions by id (or a prefix naming one session). A session in use is refused.
    Rm {
        #[arg(required = true, value_name = "ID")]
        ids: Vec<String>,
    },
    /// Remove the sessions whose last activity is older than AGE (e.g. 30d, 12h, 90m). A session
    /// in use is left alone.
    Prune {
        /// How old: a number and d (days), h (hours) or m (minutes).
        #[arg(long, value_name = "AGE", value_parser = parse_age, required = true)]
        older_than: Duration,
        /// Say what would be removed, remove nothing.
        #[arg(long)]
        dry_run: bool,
    },
}

/// An age such as `30d`, `12h` or `90m`.
pub(crate) fn parse_age(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let expected = || format!("{text:?}: expected a number and d, h or m, such as 30d");
    let unit_at = text
        .char_indices()
        .last()
        .map(|(at, _)| at)
        .ok_or_else(expected)?;
    let (number, unit) = text.split_at(unit_at);
    let seconds = match unit {
        "d" => 86_400,
        "h" => 3_600,
        "m" => 60,
        _ => return Err(expected()),
    };
    let number: u64 = number.parse().map_err(|_| expected())?;
    number
        .checked_mul(seconds)
        .map(Duration::from_secs)
        .ok_or_else(expected)
}

/// At most this much of stdin joins a prompt; the rest is cut, and the prompt says so.
pub const STDIN_LIMIT: usize = 1024 * 1024;

/// The task of `seek -p`: the words typed on the command line, and what stdin held, kept apart.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PrintPrompt {
    /// The user's own words (from -p and the words after it; empty when only `-` or nothing
    /// was given): the only text whose `@path` mentions attach files and whose hosts the web
    /// agent trusts.
    pub words: String,
    /// What stdin held, as the model gets it (`Command::Submit`'s `context`): data, never read
    /// for `@path` mentions or hosts.
    pub context: Option<String>,
}

impl PrintPrompt {
    /// Whether there is no task at all.
    pub fn is_empty(&self) -> bool {
        self.words.trim().is_empty() && self.context.as_deref().is_none_or(|c| c.trim().is_empty())
    }
}

/// The task of `seek -p`: `given` (from -p and the words after it) and what stdin held.
/// Stdin alone is the task when nothing (or `-`) was given; otherwise it follows the prompt as
/// context, in a fence longer than any run of backticks inside it. Either way it is context,
/// never the user's words. Empty stdin adds nothing. `cut`: stdin held more than was read.
pub fn prompt_with_stdin(given: &str, stdin: &[u8], cut: bool) -> PrintPrompt {
    let text = String::from_utf8_lossy(stdin);
    let note = if cut {
        format!(
            "\n[stdin was cut: only its first {} KiB are here]",
            STDIN_LIMIT / 1024
        )
    } else {
        String::new()
    };
    let alone = given.trim().is_empty() || given.trim() == "-";
    // The prompt as typed (trailing spaces and all), unless it was only `-`.
    let words = if given.trim() == "-" {
        String::new()
    } else {
        given.to_owned()
    };
    if text.trim().is_empty() {
        return PrintPrompt {
            words,
            context: None,
        };
    }
    if alone {
        return PrintPrompt {
            words: String::new(),
            context: Some(format!("{}{note}", text.trim_end())),
        };
    }
    let longest_run = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest_run.max(2) + 1);
    PrintPrompt {
        words,
        context: Some(format!(
            "This came from stdin:\n{fence}\n{}\n{fence}{note}",
            text.trim_end()
        )),
    }
}

impl Command {
    /// The name the user typed.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Config => "config",
            Self::Models => "models",
            Self::Mcp { .. } => "mcp",
            Self::Pull { .. } => "pull",
            Self::Serve { .. } => "serve",
            Self::Sessions { .. } => "sessions",
        }
    }
}

impl Cli {
    /// Parses the process's arguments; usage errors are clap's (`exit_code` 2).
    pub fn parse_args<I, T>(args: I) -> Result<Self, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        use clap::CommandFactory;
        let cli = Self::try_parse_from(args)?;
        // -p, -c, -r and a task belong to a run, not to a subcommand; the flags that configure
        // one (--model, --work-dir, …) go with both.
        if let Some(command) = &cli.command {
            let run_only = [
                (cli.print.is_some(), "-p/--print"),
                (cli.json, "--json"),
                (cli.continue_latest, "-c/--continue"),
                (cli.resume.is_some(), "-r/--resume"),
            ];
            if let Some((_, flag)) = run_only.iter().find(|(given, _)| *given) {
                return Err(Self::command().error(
                    clap::error::ErrorKind::ArgumentConflict,
                    format!(
                        "{flag} starts a task and cannot be used with `seek {}`",
                        command.name()
                    ),
                ));
            }
        }
        // `seek sesions` is a mistyped subcommand, not a task to send to the model.
        if let (None, None, [word]) = (&cli.command, &cli.print, cli.prompt.as_slice())
            && let Some(meant) = subcommand_typo(word)
        {
            return Err(Self::command().error(
                clap::error::ErrorKind::InvalidSubcommand,
                format!(
                    "`{word}` is not a subcommand: did you mean `seek {meant}`? To send `{word}` to the model as a task, use `seek -p {word}` or type it in the UI"
                ),
            ));
        }
        Ok(cli)
    }

    /// The task given on the command line: -p's text and the words, joined with spaces.
    pub fn task(&self) -> String {
        let mut parts: Vec<&str> = Vec::new();
        if let Some(print) = self.print.as_deref().filter(|p| !p.is_empty()) {
            parts.push(print);
        }
        parts.extend(self.prompt.iter().map(String::as_str));
        parts.join(" ")
    }

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

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::parse_args(std::iter::once("seek").chain(args.iter().copied()))
    }

    #[test]
    fn the_help_lists_every_provider() {
        let help = Cli::command().render_long_help().to_string();
        for preset in crate::config::providers::PRESETS {
            assert!(
                help.contains(preset.name),
                "{} missing from --help",
                preset.name
            );
        }
    }

    #[test]
    fn json_needs_print() {
        let err = parse(&["--json"]).expect_err("--json alone");
        assert_eq!(err.exit_code(), 2);
        let cli = parse(&["-p", "hi", "--json"]).expect("valid");
        assert!(cli.json);
        assert_eq!(cli.print.as_deref(), Some("hi"));
    }

    #[test]
    fn flags_become_overrides() {
        let cli = parse(&["config", "--model", "m", "--work-dir", "w"]).expect("valid");
        let o = cli.overrides();
        assert_eq!(o.model.as_deref(), Some("m"));
        assert_eq!(o.work_dir, Some(PathBuf::from("w")));
        assert!(matches!(cli.command, Some(Command::Config)));
    }

    #[test]
    fn flags_go_before_and_after_subcommands() {
        for args in [
            &["--model", "m", "config"][..],
            &["config", "--model", "m"],
            &["--model", "m", "sessions", "--all"],
            &["sessions", "--model", "m", "--all"],
        ] {
            let cli = parse(args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
            assert_eq!(cli.overrides().model.as_deref(), Some("m"), "{args:?}");
            assert!(cli.command.is_some() && cli.prompt.is_empty(), "{args:?}");
        }
    }

    #[test]
    fn run_flags_are_refused_with_subcommands() {
        for args in [
            &["-p", "x", "config"][..],
            &["-c", "config"],
            &["config", "-c"],
            &["-r", "abc", "sessions"],
            &["sessions", "-r", "abc"],
            &["models", "-p", "x"],
        ] {
            let err = parse(args).expect_err("refused");
            assert_eq!(err.exit_code(), 2, "{args:?}");
        }
        let err = parse(&["-c", "config"]).expect_err("refused").to_string();
        assert!(
            err.contains("-c/--continue") && err.contains("seek config"),
            "{err}"
        );
    }

    #[test]
    fn words_are_a_task_unless_the_first_is_a_subcommand() {
        let cli = parse(&["fix the bug"]).expect("valid");
        assert_eq!(
            (cli.task().as_str(), cli.command.is_none()),
            ("fix the bug", true)
        );
        let cli = parse(&["fix", "the", "config"]).expect("valid");
        assert_eq!(cli.task(), "fix the config");
        assert!(cli.command.is_none());
        let cli = parse(&["--model", "m", "-c", "go", "on"]).expect("valid");
        assert_eq!(cli.task(), "go on");
        assert!(cli.continue_latest);
        let cli = parse(&["config"]).expect("valid");
        assert!(matches!(cli.command, Some(Command::Config)));
        // The word itself is sent with -p.
        let cli = parse(&["-p", "config"]).expect("valid");
        assert_eq!(cli.task(), "config");
        assert!(cli.command.is_none());
    }

    #[test]
    fn print_takes_its_text_the_words_after_it_or_nothing() {
        let cli = parse(&["-p", "why", "does", "this", "fail"]).expect("valid");
        assert_eq!(cli.task(), "why does this fail");
        let cli = parse(&["-p"]).expect("valid");
        assert_eq!((cli.print.as_deref(), cli.task().as_str()), (Some(""), ""));
        let cli = parse(&["-p", "-"]).expect("valid");
        assert_eq!(cli.task(), "-");
        let cli = parse(&["-p", "--json"]).expect("valid");
        assert!(cli.json && cli.task().is_empty());
        let cli = parse(&["task", "-p"]).expect("valid");
        assert_eq!(cli.task(), "task");
    }

    #[test]
    fn session_actions_parse() {
        let cli = parse(&["sessions", "rm", "a", "b"]).expect("valid");
        assert!(matches!(
            cli.command,
            Some(Command::Sessions { action: Some(SessionsAction::Rm { ref ids }), .. }) if ids == &["a", "b"]
        ));
        let cli = parse(&["sessions", "prune", "--older-than", "30d", "--dry-run"]).expect("valid");
        assert!(matches!(
            cli.command,
            Some(Command::Sessions {
                action: Some(SessionsAction::Prune { older_than, dry_run: true }),
                ..
            }) if older_than == Duration::from_secs(30 * 86_400)
        ));
        assert!(parse(&["sessions", "rm"]).is_err(), "rm needs an id");
        assert!(parse(&["sessions", "prune"]).is_err(), "prune needs an age");
        assert!(parse(&["sessions", "prune", "--older-than", "soon"]).is_err());
    }

    #[test]
    fn mcp_takes_its_own_json_flag() {
        let cli = parse(&["mcp", "--json"]).expect("valid");
        assert!(matches!(cli.command, Some(Command::Mcp { json: true })));
        assert!(!cli.json, "not the -p flag");
        let cli = parse(&["--config", "c.toml", "mcp"]).expect("valid");
        assert!(matches!(cli.command, Some(Command::Mcp { json: false })));
        assert!(
            parse(&["--json", "mcp"]).is_err(),
            "-p's --json is not mcp's"
        );
        assert!(parse(&["mcp", "-p", "x"]).is_err());
        let cli = parse(&["-p", "mcp"]).expect("valid");
        assert_eq!(cli.task(), "mcp");
    }

    #[test]
    fn ages_have_a_unit() {
        assert_eq!(parse_age("30d"), Ok(Duration::from_secs(30 * 86_400)));
        assert_eq!(parse_age("12h"), Ok(Duration::from_secs(12 * 3_600)));
        assert_eq!(parse_age("90m"), Ok(Duration::from_secs(90 * 60)));
        for bad in [
            "",
            "d",
            "30",
            "30s",
            "-1d",
            "1.5d",
            "99999999999999999999d",
            "é",
        ] {
            assert!(parse_age(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn stdin_is_the_prompt_or_its_context() {
        let words = |w: &str| PrintPrompt {
            words: w.into(),
            context: None,
        };
        let context = |w: &str, c: &str| PrintPrompt {
            words: w.into(),
            context: Some(c.into()),
        };
        assert_eq!(
            prompt_with_stdin("", b"explain\n", false),
            context("", "explain")
        );
        assert_eq!(
            prompt_with_stdin("-", b"explain", false),
            context("", "explain")
        );
        assert_eq!(prompt_with_stdin("why", b"", false), words("why"));
        assert_eq!(prompt_with_stdin("why", b" \n", false), words("why"));
        assert_eq!(prompt_with_stdin("-", b"", false), words(""));
        assert!(prompt_with_stdin("-", b"", false).is_empty());
        assert!(!prompt_with_stdin("-", b"x", false).is_empty());
        let with = prompt_with_stdin("why", b"error: boom\n", false);
        assert_eq!(
            with,
            context("why", "This came from stdin:\n```\nerror: boom\n```")
        );
        // A fence inside cannot close ours.
        let with = prompt_with_stdin("why", b"````\nx\n````", false).context;
        let with = with.unwrap_or_default();
        assert!(with.contains("`````\n````\nx\n````\n`````"), "{with}");
        // Not UTF-8: read lossily; cut: said so.
        let with = prompt_with_stdin("why", &[b'a', 0xff, b'b'], true).context;
        let with = with.unwrap_or_default();
        assert!(
            with.contains("a\u{fffd}b") && with.ends_with("KiB are here]"),
            "{with}"
        );
    }

    #[test]
    fn piped_mentions_and_links_never_become_the_users_words() {
        let piped = prompt_with_stdin("why", b"see @~/.ssh/id_ed25519 http://127.0.0.1/\n", false);
        assert_eq!(piped.words, "why");
        assert!(
            piped
                .context
                .is_some_and(|c| c.contains("@~/.ssh/id_ed25519"))
        );
        let alone = prompt_with_stdin("", b"see @secret.txt\n", false);
        assert_eq!(alone.words, "");
    }
}

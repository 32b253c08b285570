//! The settings table: every scalar key of the config file, declared once — its file name, the
//! variables and the flag that set it, its type and bounds, its default, its one-line doc, where
//! its value lands in `Config` and how `seek config` shows it. The file's serde structs, the
//! resolver's reading with origins and `seek config`'s lines all come from here; so do the typed
//! structs (`ModelSettings`, `Safety`, `LocalSettings`, `TuiSettings`, `WebSettings`,
//! `ServeSettings`: a field per key, their reading in declaration order and their defaults),
//! where adding a setting is one entry here (a top-level key of `Safety` also has its line in
//! `first { … }`, as a struct is generated with one file table's keys). A key landing in
//! `Config` itself is an entry, its field and its read line in `resolve.rs` (`Config` is more
//! than keys).
//!
//! Keys are listed in the file's historical order (which serde's "expected one of" repeats, and
//! which is the order a generated struct reads them in: the first refused value is the error);
//! `SECTIONS` lists them in `seek config`'s order. The `[tools.<tag>]` tables (one shape per tool,
//! `tools.rs`) and `[mcp_servers.NAME]` (`mcp.rs`) have tables of their own. This file must hold
//! data only: the special cases it names, readers included, are functions in the modules that
//! own them, which sit below it and never name a key nor the structs generated here; the code
//! that assembles `Config` sits above it (`resolve.rs`), and so do the generated structs'
//! methods (`sections.rs`).

use super::section::section;
use super::setting::{Bounds, Fallback, Flag, Row};
use super::{Approval, BrowserChoice, Config, Env, ModelSize, Notify, Sourced, show};
use super::{local, model, safety, serve, tools, tui, web};
use crate::config::safety::SandboxMode;
use std::path::PathBuf;

/// `Bounds::Whole`, short.
const fn whole(min: u64, max: u64) -> Bounds {
    Bounds::Whole(min, max)
}

section! {
    /// The config file's top level, as read.
    pub struct FileConfig in "" at |c: FileConfig| c;
    keys {
        /// The model server: a preset name (`local`, `ollama`, `openai`, …).
        PROVIDER provider: String {
            env: &["SEEK_PROVIDER"],
            flag: Some(Flag { name: "--provider", get: |o| o.provider.as_deref() }),
            default: Fallback::Computed("local, or ollama when a server is named"),
            custom: Some(show::provider),
        }
        /// The server's address (OLLAMA_HOST too, for an Ollama server).
        BASE_URL base_url: String {
            env: &["SEEK_BASE_URL"],
            flag: Some(Flag { name: "--base-url", get: |o| o.base_url.as_deref() }),
            default: Fallback::Computed("the provider's"),
            custom: Some(show::base_url),
        }
        /// The model's name (or a .gguf file for the built-in engine).
        MODEL model: String {
            env: &["SEEK_MODEL"],
            flag: Some(Flag { name: "--model", get: |o| o.model.as_deref() }),
            default: Fallback::Computed("the provider's"),
            custom: Some(show::model),
        }
        /// The NAME of the variable holding the API key (never the key itself).
        API_KEY_ENV api_key_env: String {
            default: Fallback::Computed("the provider's"),
            custom: Some(show::api_key_env),
        }
        /// Where blocks run and files are saved (WORK_DIR too, AgenticSeek's name).
        WORK_DIR work_dir: PathBuf {
            env: &["SEEK_WORK_DIR", "WORK_DIR"],
            flag: Some(Flag {
                name: "--work-dir",
                get: |o| o.work_dir.as_deref().and_then(std::path::Path::to_str),
            }),
            default: Fallback::Computed("the current directory"),
            at: Some(|c| Some(&c.work_dir)),
        }
        /// The starting agent (`auto`: the router picks one per task).
        AGENT agent: String {
            env: &["SEEK_AGENT"],
            flag: Some(Flag { name: "--agent", get: |o| o.agent.as_deref() }),
            default: Fallback::Computed("auto"),
            custom: Some(show::agent),
        }
        /// Failed rounds before an agent gives up.
        MAX_ATTEMPTS max_attempts: u32 {
            bounds: whole(1, 100),
            default: Fallback::Value(|| super::DEFAULT_MAX_ATTEMPTS),
            at: Some(|c| Some(&c.max_attempts)),
        }
        /// Rounds (model calls) per task, successful or not.
        MAX_ROUNDS max_rounds: u32 {
            bounds: whole(1, 1000),
            default: Fallback::Value(|| super::DEFAULT_MAX_ROUNDS),
            at: Some(|c| Some(&c.max_rounds)),
        }
    }
    keys => /// Effective model-request settings.
    #[derive(Debug, Clone, PartialEq)]
    pub struct ModelSettings read |r|; {
        /// Tokens the model can attend to (Ollama's num_ctx).
        CONTEXT_WINDOW context_window: u64 {
            bounds: whole(256, 10_000_000),
            default: Fallback::Value(|| model::DEFAULT_CONTEXT_WINDOW),
            at: Some(|c| Some(&c.model_settings.context_window)),
        }
        /// The most tokens one reply may have.
        MAX_TOKENS max_tokens: u64 {
            bounds: whole(1, 1_000_000),
            default: Fallback::Value(|| model::DEFAULT_MAX_TOKENS),
            at: Some(|c| Some(&c.model_settings.max_tokens)),
        }
        /// Sampling temperature (unset: the server's or the engine's default).
        TEMPERATURE temperature: f64 {
            bounds: Bounds::Real(0.0, 2.0),
            at: Some(|c| c.model_settings.temperature.as_ref()),
            unset: Some(show::temperature_unset),
        } => Option<Sourced<f64>> = r.given(&TEMPERATURE)?;
        /// Nucleus sampling (unset: the server's or the engine's default).
        TOP_P top_p: f64 {
            bounds: Bounds::Real(0.0, 1.0),
            at: Some(|c| c.model_settings.top_p.as_ref()),
            unset: Some(show::top_p_unset),
        } => Option<Sourced<f64>> = r.given(&TOP_P)?;
        /// The sampling seed (unset: random).
        SEED seed: i64 {
            at: Some(|c| c.model_settings.seed.as_ref()),
            unset: Some(|_| "seed is not set".to_owned()),
        } => Option<Sourced<i64>> = r.given(&SEED)?;
        /// A stream that sends no content for this long is an error.
        STREAM_IDLE_TIMEOUT_SECS stream_idle_timeout_secs: u64 {
            bounds: whole(1, 86_400),
            default: Fallback::Value(|| model::DEFAULT_IDLE_TIMEOUT_SECS),
            at: Some(|c| Some(&c.model_settings.stream_idle_timeout_secs)),
        }
        /// Seconds to connect to the server.
        CONNECT_TIMEOUT_SECS connect_timeout_secs: u64 {
            bounds: whole(1, 3600),
            default: Fallback::Value(|| model::DEFAULT_CONNECT_TIMEOUT_SECS),
            at: Some(|c| Some(&c.model_settings.connect_timeout_secs)),
        }
        /// The longest one reply may take, retries included.
        REPLY_TIMEOUT_SECS reply_timeout_secs: u64 {
            bounds: whole(1, 7 * 86_400),
            default: Fallback::Value(|| model::DEFAULT_REPLY_TIMEOUT_SECS),
            at: Some(|c| Some(&c.model_settings.reply_timeout_secs)),
        } => Sourced<u64> = {
            // `max_retries` was read before this key and the next one before they were
            // declared here: a refused `max_retries` is still the error reported first.
            r.given(&MAX_RETRIES)?;
            r.setting(&REPLY_TIMEOUT_SECS)?
        };
        /// The longest streamed line read, in MiB.
        STREAM_MAX_LINE_MIB stream_max_line_mib: u64 {
            bounds: whole(1, 1024),
            default: Fallback::Value(|| model::DEFAULT_STREAM_MAX_LINE_MIB),
            at: Some(|c| Some(&c.model_settings.stream_max_line_mib)),
        }
        /// Retries of a request that failed before its first token.
        MAX_RETRIES max_retries: u64 {
            bounds: whole(0, 20),
            default: Fallback::Value(|| model::DEFAULT_MAX_RETRIES),
            at: Some(|c| Some(&c.model_settings.max_retries)),
        }
    }
    keys {
        /// Whether seek adapts to a small model: auto, small or large.
        MODEL_SIZE model_size: ModelSize {
            env: &["SEEK_MODEL_SIZE"],
            default: Fallback::Value(|| ModelSize::Auto),
            at: Some(|c| Some(&c.model_size)),
            note: Some(show::size_note),
        }
        /// What blocks may write: workspace-write, read-only or off.
        SANDBOX sandbox: SandboxMode {
            env: &["SEEK_SANDBOX"],
            flag: Some(Flag { name: "--sandbox", get: |o| o.sandbox.as_deref() }),
            default: Fallback::Value(|| SandboxMode::WorkspaceWrite),
            at: Some(|c| Some(&c.safety.sandbox)),
            note: Some(show::sandbox_note),
        }
        /// Whether blocks run without asking: auto, ask or never.
        APPROVAL approval: Approval {
            env: &["SEEK_APPROVAL"],
            flag: Some(Flag { name: "--approval", get: |o| o.approval.as_deref() }),
            default: Fallback::Computed("auto under a working sandbox, else ask"),
            at: Some(|c| Some(&c.safety.approval)),
        }
        /// The shell-parsing command blocklist (a guard rail, not a sandbox).
        SAFE_MODE safe_mode: bool {
            default: Fallback::Value(|| false),
            at: Some(|c| Some(&c.safety.safe_mode)),
        }
    }
    extra {
        #[serde(default)]
        exec: ExecFile,
        #[serde(default)]
        tools: super::tools::ToolsFile,
        #[serde(default)]
        local: LocalFile,
        #[serde(default)]
        tui: TuiFile,
        #[serde(default)]
        web: WebFile,
        #[serde(default)]
        serve: ServeFile,
        /// `[mcp_servers.NAME]` tables (`mcp::resolve` keeps the file's order).
        #[serde(default)]
        mcp_servers: super::mcp::McpServersFile,
    }
}

section! {
    /// `[exec]` as read from the file.
    pub struct ExecFile in "exec." at |c: FileConfig| &c.exec;
    keys {
        /// Captured output per block (head and tail), in bytes.
        OUTPUT_LIMIT_BYTES output_limit_bytes: u64 {
            bounds: whole(1024, 1 << 30),
            default: Fallback::Value(|| super::DEFAULT_OUTPUT_LIMIT),
            at: Some(|c| Some(&c.output_limit_bytes)),
        }
    }
    keys => /// The safety settings: the sandbox, the approval policy, the command blocklist, what
    /// blocks may see and reach, and their resource limits.
    #[derive(Debug, Clone)]
    pub struct Safety read |r|;
    first {
        pub sandbox: Sourced<SandboxMode> = r.setting(&SANDBOX)?,
        pub approval: Sourced<Approval> = safety::approval(r.given(&APPROVAL)?, sandbox.value),
        /// The shell-parsing command blocklist (a guard rail, not a sandbox).
        pub safe_mode: Sourced<bool> = r.setting(&SAFE_MODE)?,
    }
    {
        /// Withheld variables (credentials) blocks may still see, by exact name.
        PASS_ENV pass_env: Vec<String> {
            default: Fallback::Value(Vec::new),
            at: Some(|c| Some(&c.safety.pass_env)),
        }
        /// Processes and threads one block may run at once (0: no limit).
        MAX_PROCESSES max_processes: u64 {
            bounds: whole(0, 1_000_000),
            default: Fallback::Value(|| safety::DEFAULT_MAX_PROCESSES),
            at: Some(|c| Some(&c.safety.max_processes)),
            note: Some(|c| Some(show::limit_note(c.safety.max_processes.value, "processes and threads"))),
            before: Some(show::processes_line),
        }
        /// Memory one block may use, in MiB (0: no limit).
        MAX_MEMORY_MB max_memory_mb: u64 {
            bounds: whole(0, 1 << 30),
            default: Fallback::Value(safety::default_max_memory_mb),
            at: Some(|c| Some(&c.safety.max_memory_mb)),
            note: Some(|c| Some(show::limit_note(c.safety.max_memory_mb.value, "MiB"))),
        }
        /// Unix sockets outside the sandbox's folders that blocks may connect to.
        ALLOW_SOCKETS allow_sockets: Vec<safety::AllowedSocket> {
            default: Fallback::Value(Vec::new),
            at: Some(|c| Some(&c.safety.allow_sockets)),
            note: Some(show::sockets_note),
        }
    }
}

section! {
    /// `[local]` as read from the file.
    pub struct LocalFile in "local." at |c: FileConfig| &c.local;
    => /// The effective `[local]` settings.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct LocalSettings read |r|;
    /// Where the built-in engine keeps downloaded models (SEEK_CACHE_DIR: its `models` folder).
    MODELS_DIR models_dir: PathBuf {
        env: &["SEEK_CACHE_DIR"],
        default: Fallback::Computed("<platform cache dir>/seek/models"),
        at: Some(|c| Some(&c.local.models_dir)),
    } => Sourced<PathBuf> = local::models_dir(
        r.variable(&MODELS_DIR),
        r.cwd,
        r.raw(&MODELS_DIR).zip(r.file_path()),
    )?;
    /// Base URLs tried first, in order, for every catalog file (one or a list).
    MIRROR mirror: toml::Value {
        custom: Some(local::render_mirror),
    } => as mirrors: Sourced<Vec<String>> = local::mirrors(r.raw(&MIRROR))?;
    /// Download only from the mirrors.
    OFFLINE offline: bool {
        default: Fallback::Value(|| false),
        at: Some(|c| Some(&c.local.offline)),
    } => Sourced<bool> = local::offline(r.setting(&OFFLINE)?, &mirrors)?;
    /// A download that receives no byte for this long has failed.
    DOWNLOAD_STALL_SECS download_stall_secs: u64 {
        bounds: whole(1, 3600),
        default: Fallback::Value(|| local::DEFAULT_DOWNLOAD_STALL_SECS),
        at: Some(|c| Some(&c.local.download_stall_secs)),
    }
    /// Threads the engine computes with (unset: every core).
    THREADS threads: u64 {
        bounds: whole(1, 1024),
        at: Some(|c| c.local.threads.as_ref()),
        unset: Some(local::threads_unset),
    } => Option<Sourced<u64>> = r.given(&THREADS)?;
    /// Conversations whose read prompt the engine keeps (one per agent, say); the least
    /// recently used is dropped.
    KEPT_PREFIXES kept_prefixes: u64 {
        bounds: whole(1, 64),
        default: Fallback::Value(|| local::DEFAULT_KEPT_PREFIXES),
        at: Some(|c| Some(&c.local.kept_prefixes)),
    }
    /// MiB those may take in memory, and a session's saved copy on disk (0: none saved).
    PREFIX_CACHE_MB prefix_cache_mb: u64 {
        bounds: whole(0, 1 << 20),
        default: Fallback::Value(|| local::DEFAULT_PREFIX_CACHE_MB),
        at: Some(|c| Some(&c.local.prefix_cache_mb)),
    }
    /// While seek waits for the next task, read the conversation ahead under the agents the
    /// router may pick next, so that switching to one reads only the new message.
    WARM_AGENTS warm_agents: bool {
        default: Fallback::Value(|| true),
        at: Some(|c| Some(&c.local.warm_agents)),
    }
}

section! {
    /// `[tui]` as read from the file.
    pub struct TuiFile in "tui." at |c: FileConfig| &c.tui;
    => /// The effective `[tui]` settings.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct TuiSettings read |r|;
    /// How the end of a long task is signalled: auto, bell, osc9 or off.
    NOTIFY notify: Notify {
        default: Fallback::Value(|| Notify::Auto),
        at: Some(|c| Some(&c.tui.notify)),
        note: Some(tui::notify_note),
    }
    /// A task that took at least this long is worth a notification.
    NOTIFY_AFTER_SECS notify_after_secs: u64 {
        bounds: whole(0, 86_400),
        default: Fallback::Value(|| tui::DEFAULT_NOTIFY_AFTER_SECS),
        at: Some(|c| Some(&c.tui.notify_after_secs)),
    }
    then {
        /// The environment names a terminal known to show OSC 9 notifications.
        pub(super) osc9_terminal: bool = tui::osc9_terminal(r.env),
    }
}

section! {
    /// `[web]` as read from the file.
    pub struct WebFile in "web." at |c: FileConfig| &c.web;
    => /// The effective `[web]` settings.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct WebSettings read |r|;
    /// The SearxNG instance web_search asks.
    SEARXNG_URL searxng_url: String {
        env: &["SEARXNG_BASE_URL"],
        custom: Some(web::render_searxng_url),
    } => Sourced<Option<String>> = web::searxng_url(r.given(&SEARXNG_URL)?)?;
    /// Which engine reads pages: auto, http or chromium.
    BROWSER browser: BrowserChoice {
        default: Fallback::Value(|| BrowserChoice::Auto),
        at: Some(|c| Some(&c.web.browser)),
    }
    /// Whether links may lead to loopback and private addresses.
    ALLOW_PRIVATE allow_private: bool {
        default: Fallback::Value(|| false),
        at: Some(|c| Some(&c.web.allow_private)),
    }
    /// The web agent's step cap.
    MAX_STEPS max_steps: u64 {
        bounds: whole(1, 200),
        default: Fallback::Value(|| web::DEFAULT_WEB_MAX_STEPS),
        at: Some(|c| Some(&c.web.max_steps)),
    }
    /// The timeout of one request or page load.
    TIMEOUT_SECS timeout_secs: u64 {
        bounds: whole(1, 600),
        default: Fallback::Value(|| web::DEFAULT_WEB_TIMEOUT_SECS),
        at: Some(|c| Some(&c.web.timeout_secs)),
    }
    /// The most bytes of one page read.
    MAX_PAGE_BYTES max_page_bytes: u64 {
        bounds: whole(16 * 1024, 256 * 1024 * 1024),
        default: Fallback::Value(|| web::DEFAULT_MAX_PAGE_BYTES),
        at: Some(|c| Some(&c.web.max_page_bytes)),
    }
    /// How long (ms) Chromium waits for a loaded page to settle.
    SETTLE_MS settle_ms: u64 {
        bounds: whole(0, 60_000),
        default: Fallback::Value(|| web::DEFAULT_SETTLE_MS),
        at: Some(|c| Some(&c.web.settle_ms)),
    }
    /// Chromium's binary (unset: looked up on PATH).
    CHROMIUM chromium: String {
        custom: Some(web::render_chromium),
    } => Sourced<Option<PathBuf>> = web::binary(r.raw(&CHROMIUM), CHROMIUM.name)?;
    /// Accepted for old config files and unused (Chromium is driven over a pipe).
    CHROMEDRIVER chromedriver: String {
        custom: Some(web::render_chromedriver),
    } => Sourced<Option<PathBuf>> = web::binary(r.raw(&CHROMEDRIVER), CHROMEDRIVER.name)?;
    then {
        /// Where the web agent keeps a screenshot of the latest page it read with a real
        /// browser (`updated_screen.png`, AgenticSeek's name). Not a file key: `seek serve` sets
        /// it, for its `/screenshot`; `None` takes none.
        pub screenshots: Option<PathBuf> = None,
    }
}

section! {
    /// `[serve]` as read from the file.
    pub struct ServeFile in "serve." at |c: FileConfig| &c.serve;
    => /// The effective `[serve]` settings.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct ServeSettings read |r|;
    /// Web origins whose pages may call `seek serve`.
    ALLOWED_ORIGINS allowed_origins: Vec<String> {
        default: Fallback::Value(|| vec![serve::DEFAULT_ALLOWED_ORIGIN.to_owned()]),
        at: Some(|c| Some(&c.serve.allowed_origins)),
    } => Sourced<Vec<String>> = serve::allowed_origins(r.given(&ALLOWED_ORIGINS)?)?;
}

/// A part of `seek config`: a table header, its keys in the order shown, and the special case
/// written after them (the per-tool tables after `[exec]`, the MCP servers at the end).
pub struct Section {
    /// `None` for the top level.
    pub header: Option<&'static str>,
    pub rows: &'static [&'static dyn Row],
    pub then: Option<fn(&Config, &Env, &mut String)>,
}

/// Every key, by section, in `seek config`'s order.
pub(crate) static SECTIONS: [Section; 6] = [
    Section {
        header: None,
        rows: &[
            &PROVIDER,
            &BASE_URL,
            &MODEL,
            &API_KEY_ENV,
            &WORK_DIR,
            &AGENT,
            &MAX_ATTEMPTS,
            &MAX_ROUNDS,
            &MODEL_SIZE,
            &CONTEXT_WINDOW,
            &MAX_TOKENS,
            &STREAM_IDLE_TIMEOUT_SECS,
            &CONNECT_TIMEOUT_SECS,
            &REPLY_TIMEOUT_SECS,
            &STREAM_MAX_LINE_MIB,
            &MAX_RETRIES,
            &TEMPERATURE,
            &TOP_P,
            &SEED,
            &SANDBOX,
            &APPROVAL,
            &SAFE_MODE,
        ],
        then: None,
    },
    Section {
        header: Some("exec"),
        rows: &[
            &OUTPUT_LIMIT_BYTES,
            &PASS_ENV,
            &ALLOW_SOCKETS,
            &MAX_PROCESSES,
            &MAX_MEMORY_MB,
        ],
        // Special case: one `[tools.<tag>]` table per tool.
        then: Some(tools::render),
    },
    Section {
        header: Some("local"),
        rows: &[
            &MODELS_DIR,
            &MIRROR,
            &OFFLINE,
            &DOWNLOAD_STALL_SECS,
            &THREADS,
            &KEPT_PREFIXES,
            &PREFIX_CACHE_MB,
            &WARM_AGENTS,
        ],
        then: None,
    },
    Section {
        header: Some("tui"),
        rows: &[&NOTIFY, &NOTIFY_AFTER_SECS],
        then: None,
    },
    Section {
        header: Some("web"),
        rows: &[
            &SEARXNG_URL,
            &BROWSER,
            &ALLOW_PRIVATE,
            &MAX_STEPS,
            &TIMEOUT_SECS,
            &MAX_PAGE_BYTES,
            &SETTLE_MS,
            &CHROMEDRIVER,
            &CHROMIUM,
        ],
        then: None,
    },
    Section {
        header: Some("serve"),
        rows: &[&ALLOWED_ORIGINS],
        // Special case: the `[mcp_servers.NAME]` tables.
        then: Some(|config, env, out| super::mcp::render(out, &config.mcp, env)),
    },
];

/// Every key of the table, whatever its section.
#[cfg(test)]
pub fn rows() -> impl Iterator<Item = &'static dyn Row> {
    SECTIONS.iter().flat_map(|s| s.rows.iter().copied())
}

#[cfg(test)]
#[path = "settings_tests.rs"]
mod tests;

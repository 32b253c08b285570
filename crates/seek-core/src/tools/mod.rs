//! Tools: one per fence tag, each turning a block into a run and a feedback.
//!
//! Owns the `Tool` trait, the registry of built-in tools (`REGISTRY`: each tool's file declares
//! its `ToolSpec`), the toolbox built from it, the outcome shape and the save-after-success step
//! (`execute_block`). It must not know about the agent loop: it runs one block when asked.

mod bash;
mod compiled;
mod confined;
mod file_finder;
mod guard;
mod interactive;
mod mcp;
mod no_code;
mod own_files;
mod python;
mod rerun;
mod save;
mod shell;
mod spec;
mod web_search;

use std::path::PathBuf;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::config::{Config, ToolConfig};
use crate::exec::{self, Ending, ExecError, RunRequest, RunResult};
use crate::protocol::{self, Block, ToolTags};
use crate::tool_kind::ToolKind;

pub use bash::Bash;
pub use compiled::Compiled;
pub use file_finder::FileFinder;
pub use mcp::McpTool;
pub(crate) use own_files::OwnFiles;
pub use python::Python;
pub use web_search::{SEARCH_LIMIT, WebSearchTool, query_of};

pub use save::{SaveError, save_block};
pub(crate) use spec::tools_of;
pub use spec::{ToolClass, ToolSpec, count_of, of_classes};

pub use crate::BoxFuture;

/// Every built-in tool, in the order they are listed and taught (`ToolKind::ALL`'s). Adding a
/// tool: its entry in seek-wire's `tool_kinds!`, its file here declaring its `ToolSpec`, and its
/// line below.
pub const REGISTRY: &[&ToolSpec] = &[
    &bash::TOOL,
    &python::TOOL,
    &compiled::C,
    &compiled::GO,
    &compiled::JAVA,
    &file_finder::TOOL,
    &mcp::TOOL,
    &web_search::TOOL,
];

/// The declaration of the built-in tool `kind`.
pub fn spec(kind: ToolKind) -> Option<&'static ToolSpec> {
    spec::find(REGISTRY, kind)
}

/// Receives output text as it streams.
pub(crate) type OutputSink<'a> = &'a mut (dyn FnMut(&str) + Send);

/// What a tool needs from the turn it runs in.
#[derive(Debug, Clone)]
pub struct ToolContext {
    pub work_dir: PathBuf,
    pub output_limit: usize,
    pub cancel: CancellationToken,
    /// `:path` files saved by earlier blocks of the same reply (as written in the fence).
    pub saved_this_reply: Vec<String>,
    /// The confinement every process of a block runs under (`None`: sandbox off).
    pub sandbox: Option<std::sync::Arc<crate::exec::sandbox::Sandbox>>,
    /// Credential-like variables blocks must not inherit.
    pub env_remove: std::sync::Arc<Vec<std::ffi::OsString>>,
    /// Refuse shell blocks that run a blocklisted command (`safe_mode`).
    pub safe_mode: bool,
    /// Processes and memory one block may use.
    pub limits: crate::exec::cgroup::Limits,
    /// seek's own files, which a `:path` save must never write.
    pub own_files: std::sync::Arc<OwnFiles>,
    /// A bash or python block of only comments fails instead of running (`no_code`).
    pub refuse_no_code: bool,
}

impl ToolContext {
    pub fn new(work_dir: impl Into<PathBuf>) -> Self {
        Self {
            work_dir: work_dir.into(),
            output_limit: crate::config::DEFAULT_OUTPUT_LIMIT as usize,
            cancel: CancellationToken::new(),
            saved_this_reply: Vec::new(),
            sandbox: None,
            env_remove: std::sync::Arc::default(),
            safe_mode: false,
            limits: crate::exec::cgroup::Limits::default(),
            own_files: std::sync::Arc::default(),
            refuse_no_code: true,
        }
    }

    /// Whether blocks run in the read-only sandbox, where nothing is written in the work dir.
    pub(crate) fn read_only(&self) -> bool {
        self.sandbox
            .as_deref()
            .is_some_and(|s| s.mode == crate::exec::sandbox::SandboxMode::ReadOnly)
    }

    /// Where blocks' own temporary folders go: the sandbox's private one, if any.
    pub fn temp_parent(&self) -> Option<&std::path::Path> {
        self.sandbox.as_deref().map(|s| s.temp_dir.as_path())
    }
}

/// The result of one block, in the shape the loop, the UI and the JSON output need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutcome {
    pub success: bool,
    /// The text sent back to the model (`[success] …` / `[failure] …`).
    pub feedback: String,
    /// What the block printed (bounded), for display.
    pub output: String,
    /// How the process ended; `None` when no process ran (file_finder, a refusal, a skip).
    pub ending: Option<Ending>,
    pub duration: Duration,
    /// The block was saved at its `:path` (it ran successfully and the save was allowed).
    pub saved: bool,
    /// The tool refused the block before anything ran, and why.
    pub refused: Option<Refusal>,
}

/// Why a tool refused a block before running it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The block waits for a person: python `input()` or curses, an editor, a pager, a REPL, …
    Interactive,
    /// Safe mode's blocklist.
    SafeMode,
}

impl ToolOutcome {
    /// A successful outcome with no process behind it.
    pub(crate) fn ok_without_process(output: String) -> Self {
        Self::without_process(true, output)
    }

    /// A failed outcome with no process behind it; `reason` tells the model what to do.
    pub(crate) fn failed_without_process(reason: String) -> Self {
        Self::without_process(false, reason)
    }

    /// A block refused before anything ran; `reason` tells the model what to do instead.
    pub fn refused(why: Refusal, reason: String) -> Self {
        Self {
            refused: Some(why),
            ..Self::without_process(false, reason)
        }
    }

    fn without_process(success: bool, text: String) -> Self {
        Self {
            success,
            feedback: protocol::feedback(success, &text),
            output: text,
            ending: None,
            duration: Duration::ZERO,
            saved: false,
            refused: None,
        }
    }

    /// The outcome of a process run: success is exit status 0, nothing else.
    pub(crate) fn from_run(result: RunResult, failure_context: Option<&str>) -> Self {
        let success = result.success();
        let body = if result.output.is_empty() {
            "(no output)\n".to_owned()
        } else {
            result.output.clone()
        };
        let feedback = match result.failure_reason() {
            None => protocol::feedback(true, &body),
            Some(reason) => {
                let what = failure_context.map_or(reason.clone(), |c| format!("{c} ({reason})"));
                protocol::feedback(false, &format!("{what}\n{body}"))
            }
        };
        Self {
            success,
            feedback,
            output: result.output,
            ending: Some(result.ending),
            duration: result.duration,
            saved: false,
            refused: None,
        }
    }

    pub fn exit_code(&self) -> Option<i32> {
        match self.ending {
            Some(Ending::Exited { code }) => Some(code),
            _ => None,
        }
    }

    pub fn timed_out(&self) -> bool {
        // Ended as stuck (the idle timeout) is killed like a timeout.
        matches!(
            self.ending,
            Some(Ending::TimedOut { .. } | Ending::Idle { .. })
        )
    }

    pub fn stopped(&self) -> bool {
        self.ending == Some(Ending::Stopped)
    }
}

/// A tool: owns one fence tag.
pub trait Tool: Send + Sync {
    /// Which tool this is (its fence tag is `kind().tag()`).
    fn kind(&self) -> ToolKind;

    /// Runs one block.
    fn run<'a>(
        &'a self,
        block: &'a Block,
        ctx: &'a ToolContext,
        on_output: OutputSink<'a>,
    ) -> BoxFuture<'a, ToolOutcome>;
}

/// The tools of an agent.
pub struct Toolbox {
    tools: Vec<Box<dyn Tool>>,
}

impl Toolbox {
    /// Every built-in tool, configured.
    pub fn builtin(config: &Config) -> Self {
        Self::built(config, None)
    }

    /// The built-in tools as they run a model's blocks: for a small model, each run timeout the
    /// config file does not set is at most `Adaptations::block_secs`. The user's own commands
    /// (`builtin`) are never cut short so.
    pub(crate) fn for_model_blocks(config: &Config) -> Self {
        Self::built(config, config.adaptations().block_secs)
    }

    fn built(config: &Config, timeout_cap: Option<u64>) -> Self {
        Self {
            tools: REGISTRY
                .iter()
                .filter_map(|spec| {
                    let mut settings = ToolConfig::of(config, spec.kind).into_owned();
                    if let Some(secs) = timeout_cap {
                        settings.cap_default_timeout(secs);
                    }
                    (spec.build)(settings, config)
                })
                .collect(),
        }
    }

    /// These tools and the `mcp` tool, calling `hub`'s servers.
    pub(crate) fn with_mcp(mut self, hub: std::sync::Arc<crate::mcp::Hub>) -> Self {
        self.tools.push(Box::new(McpTool::new(hub)));
        self
    }

    /// Only the listed tools, in that order.
    pub fn only(mut self, kinds: &[ToolKind]) -> Self {
        self.tools.retain(|t| kinds.contains(&t.kind()));
        self.tools
            .sort_by_key(|t| kinds.iter().position(|kind| *kind == t.kind()));
        self
    }

    /// The tool that runs blocks tagged `tag` (a canonical tag, as the parser gives it).
    pub fn get(&self, tag: &str) -> Option<&dyn Tool> {
        self.tools
            .iter()
            .find(|t| t.kind().tag() == tag)
            .map(|t| &**t)
    }

    /// The tags the parser should treat as tool blocks.
    pub fn tags(&self) -> ToolTags {
        ToolTags::new(self.tools.iter().map(|t| t.kind().tag()))
    }
}

/// Runs a block with its tool and, if it succeeded and has a `:path`, saves it in the work dir.
/// A save that is refused turns the outcome into a failure that says why, so the model fixes
/// the path. Under the read-only sandbox nothing is saved and the model is told so; the block
/// still succeeded (there is nothing to fix). A fence suffix that is not a path
/// (```` ```python:print('hello') ````) saves nothing; a note saying so ends the feedback and
/// the output, so the model and every front end see it.
pub async fn execute_block(
    tool: &dyn Tool,
    block: &Block,
    ctx: &ToolContext,
    on_output: OutputSink<'_>,
) -> ToolOutcome {
    let mut outcome = run_and_save(tool, block, ctx, on_output).await;
    if let Some(suffix) = block.ignored_suffix().filter(|_| tool.kind().saves_code()) {
        let note = ignored_suffix_note(&block.tag, suffix);
        for text in [&mut outcome.feedback, &mut outcome.output] {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&note);
        }
    }
    outcome
}

/// What the model and the user are told when a fence's `:` suffix is not a path.
pub(crate) fn ignored_suffix_note(tag: &str, suffix: &str) -> String {
    format!(
        "(note: `{suffix}` after `{tag}:` is not a file name, so the block was read as {tag} code and nothing was saved; to save a block, write a path such as `{tag}:hello.{ext}`)",
        ext = ToolKind::from_tag(tag).map_or("txt", ToolKind::file_extension)
    )
}

/// `execute_block` without the note on an ignored suffix.
async fn run_and_save(
    tool: &dyn Tool,
    block: &Block,
    ctx: &ToolContext,
    on_output: OutputSink<'_>,
) -> ToolOutcome {
    if !block.closed {
        return ToolOutcome::failed_without_process(format!(
            "the {} block was not closed: end it with a line holding only ``` and send it again",
            block.tag
        ));
    }
    if let Some(path) = &block.save_path
        && block.code.trim().is_empty()
        && tool.kind().saves_code()
    {
        return ToolOutcome::failed_without_process(format!(
            "the {} block to save as `{path}` holds no code, so nothing ran and no file was written: put the file's contents between the fences",
            block.tag
        ));
    }
    if ctx.refuse_no_code
        && block.save_path.is_none()
        && let Some(why) = no_code::refused(tool.kind(), &block.tag, &block.code)
    {
        return ToolOutcome::failed_without_process(why);
    }
    let mut outcome = tool.run(block, ctx, on_output).await;
    let Some(path) = block
        .save_path
        .as_deref()
        .filter(|_| tool.kind().saves_code())
    else {
        return outcome;
    };
    if !outcome.success {
        return outcome;
    }
    if ctx.read_only() {
        let why = SaveError::ReadOnly(path.trim().to_owned());
        outcome.feedback.push_str(&format!("\n({why})"));
        return outcome;
    }
    let (work_dir, own, code, wanted) = (
        ctx.work_dir.clone(),
        std::sync::Arc::clone(&ctx.own_files),
        block.code.clone(),
        path.to_owned(),
    );
    // Off the async threads: a save is a handful of system calls that never wait on a FIFO,
    // but a slow disk must not hold up the UI.
    let saved = tokio::task::spawn_blocking(move || save_block(&work_dir, &wanted, &code, &own))
        .await
        .unwrap_or_else(|e| {
            Err(SaveError::Io {
                path: path.to_owned(),
                message: format!("the save stopped: {e}"),
            })
        });
    match saved {
        Ok(_) => {
            outcome.feedback.push_str(&format!("\n(saved to {path})"));
            outcome.saved = true;
        }
        Err(err) => {
            outcome.success = false;
            outcome.feedback = protocol::feedback(
                false,
                &format!("the code ran, but was not saved: {err}\n{}", outcome.output),
            );
        }
    }
    outcome
}

/// Runs a prepared request and turns the result or the start failure into an outcome.
pub(crate) async fn run_process(
    request: &RunRequest,
    ctx: &ToolContext,
    on_output: OutputSink<'_>,
    failure_context: Option<&str>,
    install_hint: &str,
) -> ToolOutcome {
    let mut request = request.clone();
    request.sandbox = ctx.sandbox.clone();
    request.env_remove = ctx.env_remove.to_vec();
    request.limits = ctx.limits;
    match exec::run(&request, &ctx.cancel, |chunk| on_output(chunk)).await {
        Ok(result) => {
            let mut outcome = ToolOutcome::from_run(result, failure_context);
            if !outcome.success
                && let Some(sandbox) = ctx.sandbox.as_deref()
                && looks_refused(&outcome.output)
            {
                outcome.feedback.push_str(&sandbox_note(sandbox));
            }
            outcome
        }
        Err(err) => ToolOutcome::failed_without_process(start_failure(&err, install_hint)),
    }
}

/// Whether output reads like the sandbox said no.
fn looks_refused(output: &str) -> bool {
    [
        "Permission denied",
        "Operation not permitted",
        "Read-only file system",
        "EACCES",
        "EPERM",
    ]
    .iter()
    .any(|needle| output.contains(needle))
}

/// What the model is told when a block may have hit the sandbox.
fn sandbox_note(sandbox: &crate::exec::sandbox::Sandbox) -> String {
    use crate::exec::sandbox::SandboxMode;
    let writable = match sandbox.mode {
        SandboxMode::WorkspaceWrite => format!(
            "the work dir {} (and $TMPDIR) is the only writable place",
            sandbox.work_dir.display()
        ),
        SandboxMode::ReadOnly => "only $TMPDIR is writable (read-only sandbox)".to_owned(),
        SandboxMode::Off => return String::new(),
    };
    format!(
        "\n[sandbox] blocks run confined: {writable}, and without administrator rights (no sudo, no clock, no mounts). Write files inside the work dir with relative paths. Unix sockets outside the work dir (tmux, screen, ssh-agent, D-Bus, docker) are refused unless the user lists them in `[exec] allow_sockets`; unix datagram sockets and io_uring are refused."
    )
}

/// The message for a program that could not start, naming what to install.
pub(crate) fn start_failure(err: &ExecError, install_hint: &str) -> String {
    match err {
        ExecError::NotFound { program } => {
            format!("`{program}` is not installed (not found on PATH). {install_hint}")
        }
        other => other.to_string(),
    }
}

/// A private temporary directory for one block, holding `code` as `file_name`; removed when
/// dropped. A failure is already the outcome to report.
pub(crate) fn source_in_temp_dir(
    file_name: &str,
    code: &str,
    parent: Option<&std::path::Path>,
) -> Result<(tempfile::TempDir, PathBuf), ToolOutcome> {
    let mut builder = tempfile::Builder::new();
    builder.prefix("seek-block-");
    let dir = match parent {
        // Under the sandbox, compilers write their output here: it must be the writable one.
        Some(parent) => std::fs::create_dir_all(parent).and_then(|()| builder.tempdir_in(parent)),
        None => builder.tempdir(),
    }
    .map_err(|e| {
        ToolOutcome::failed_without_process(format!("cannot create a temporary folder: {e}"))
    })?;
    let path = dir.path().join(file_name);
    std::fs::write(&path, code).map_err(|e| {
        ToolOutcome::failed_without_process(format!("cannot write {}: {e}", path.display()))
    })?;
    Ok((dir, path))
}

/// How an interpreter gets a block's code.
pub(crate) enum CodeSource {
    /// Small enough for `-c CODE`.
    Inline,
    /// Too large for one argument: a file, whose folder is removed when this value drops.
    File {
        path: PathBuf,
        _folder: tempfile::TempDir,
    },
}

impl CodeSource {
    pub(crate) fn for_code(code: &str, file_name: &str) -> Result<Self, ToolOutcome> {
        if code.len() <= INLINE_CODE_LIMIT {
            return Ok(Self::Inline);
        }
        let (folder, path) = source_in_temp_dir(file_name, code, None)?;
        Ok(Self::File {
            path,
            _folder: folder,
        })
    }
}

/// Code up to this size is passed on the command line (`-c`); larger code goes through a file,
/// so a block of any size runs (one argument may not exceed 128 KiB on Linux).
pub(crate) const INLINE_CODE_LIMIT: usize = 64 * 1024;

//! The `bash` tool: runs a block with real bash (not `sh`).
//!
//! Owns how a bash block is invoked (inline with `-c`, or from a file when large), the explicit
//! skip of commands that only re-run a file this reply already ran, and the refusals made before
//! anything runs (safe mode's blocklist, then interactive programs). It must not decide success
//! beyond the exit status.

use super::{
    BoxFuture, CodeSource, OutputSink, Refusal, Tool, ToolClass, ToolContext, ToolOutcome,
    ToolSpec, rerun, run_process,
};
use crate::config::ToolConfig;
use crate::exec::RunRequest;
use crate::protocol::Block;
use crate::tool_kind::ToolKind;

/// bash's declaration: shell commands.
pub const TOOL: ToolSpec = ToolSpec {
    kind: ToolKind::Bash,
    class: ToolClass::Shell,
    line_comment: Some("#"),
    build: |settings, _| Some(Box::new(Bash::new(settings))),
};

pub struct Bash {
    settings: ToolConfig,
}

impl Bash {
    pub fn new(settings: ToolConfig) -> Self {
        Self { settings }
    }

    async fn execute(
        &self,
        block: &Block,
        ctx: &ToolContext,
        on_output: OutputSink<'_>,
    ) -> ToolOutcome {
        if !self.settings.allow_rerun()
            && let Some(commands) = rerun::only_reruns(&block.code, &ctx.saved_this_reply)
        {
            return ToolOutcome::ok_without_process(format!(
                "(skipped: `{}` only re-runs code that seek already ran from a block above; its \
                 output is in that block's result. Set [tools.bash] allow_rerun = true to run such \
                 commands anyway.)\n",
                commands.join("; ")
            ));
        }
        if ctx.safe_mode
            && let Some(command) = super::guard::refused(&block.code)
        {
            // AgenticSeek's refusal, word for word, with the command found.
            return ToolOutcome::refused(
                Refusal::SafeMode,
                format!(
                    "Unsafe command: {command}. Execution aborted. This is beyond allowed capabilities report to user. (safe_mode is on: the whole block was refused before anything ran.)"
                ),
            );
        }
        if let Some(reason) = super::interactive::refused(&block.code) {
            return ToolOutcome::refused(Refusal::Interactive, reason);
        }
        let source = match CodeSource::for_code(&block.code, "block.sh") {
            Ok(source) => source,
            Err(outcome) => return outcome,
        };
        let request = RunRequest::new(self.settings.command(), &ctx.work_dir)
            .timeout(self.settings.timeout())
            .idle_timeout(self.settings.idle_timeout())
            .output_limit(ctx.output_limit);
        let request = match &source {
            CodeSource::Inline => request.arg("-c").arg(&block.code),
            CodeSource::File { path, .. } => request.arg(path),
        };
        run_process(
            &request,
            ctx,
            on_output,
            None,
            "Install bash (Debian/Ubuntu: apt-get install bash).",
        )
        .await
    }
}

impl Tool for Bash {
    fn kind(&self) -> ToolKind {
        ToolKind::Bash
    }

    fn run<'a>(
        &'a self,
        block: &'a Block,
        ctx: &'a ToolContext,
        on_output: OutputSink<'a>,
    ) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(self.execute(block, ctx, on_output))
    }
}

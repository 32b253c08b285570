//! The `bash` tool: runs a block with real bash (not `sh`).
//!
//! Owns how a bash block is invoked (inline with `-c`, or from a file when large) and the
//! explicit skip of commands that only re-run a file this reply already ran. It must not decide
//! success beyond the exit status.

use std::time::Duration;

use super::{
    BoxFuture, INLINE_CODE_LIMIT, OutputSink, Tool, ToolContext, ToolOutcome, private_temp_dir,
    rerun, run_process, write_source,
};
use crate::config::ToolConfig;
use crate::exec::RunRequest;
use crate::protocol::Block;

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
        let temp;
        let mut request = RunRequest::new(self.settings.command(), &ctx.work_dir)
            .timeout(self.timeout())
            .output_limit(ctx.output_limit);
        if block.code.len() <= INLINE_CODE_LIMIT {
            request = request.arg("-c").arg(&block.code);
        } else {
            temp = match private_temp_dir() {
                Ok(dir) => dir,
                Err(e) => {
                    return ToolOutcome::failed_without_process(format!(
                        "cannot create a temporary folder: {e}"
                    ));
                }
            };
            match write_source(temp.path(), "block.sh", &block.code) {
                Ok(path) => request = request.arg(path),
                Err(e) => {
                    return ToolOutcome::failed_without_process(format!(
                        "cannot write the script: {e}"
                    ));
                }
            }
        }
        run_process(
            &request,
            ctx,
            on_output,
            None,
            "Install bash (Debian/Ubuntu: apt-get install bash).",
        )
        .await
    }

    fn timeout(&self) -> Duration {
        self.settings.timeout()
    }
}

impl Tool for Bash {
    fn tag(&self) -> &'static str {
        "bash"
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

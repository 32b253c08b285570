//! The `python` tool: runs a block with `python3` (configurable), unbuffered, in the work dir.
//!
//! Owns AgenticSeek's refusal of interactive code (`curses`, a bare `input(` call) with its
//! actionable message, and how the code is passed (inline with `-c`, so the work dir is on
//! `sys.path`; through a file when large). It must not decide success beyond the exit status.

use std::sync::LazyLock;

use regex::Regex;

use super::{
    BoxFuture, CodeSource, OutputSink, Refusal, Tool, ToolClass, ToolContext, ToolOutcome,
    ToolSpec, run_process,
};
use crate::config::ToolConfig;
use crate::exec::RunRequest;
use crate::protocol::Block;
use crate::tool_kind::ToolKind;

/// Runs a file's code as `__main__` while keeping `-c` semantics (`sys.path[0]` is the cwd).
const FILE_BOOTSTRAP: &str = "import sys\npath = sys.argv.pop(1)\nsys.argv[0] = '<block>'\nsource = open(path, encoding='utf-8').read()\ndel path\nexec(compile(source, '<block>', 'exec'))\n";

/// python's declaration: a Python 3 program.
pub const TOOL: ToolSpec = ToolSpec {
    kind: ToolKind::Python,
    class: ToolClass::Program,
    line_comment: Some("#"),
    build: |settings, _| Some(Box::new(Python::new(settings))),
};

pub struct Python {
    settings: ToolConfig,
}

impl Python {
    pub fn new(settings: ToolConfig) -> Self {
        Self { settings }
    }

    async fn execute(
        &self,
        block: &Block,
        ctx: &ToolContext,
        on_output: OutputSink<'_>,
    ) -> ToolOutcome {
        if let Some(feature) = interactive_feature(&block.code) {
            return ToolOutcome::refused(
                Refusal::Interactive,
                format!(
                    "code execution failed: {feature} requires an interactive terminal, but code runs headless in a sandbox with no terminal attached. Rewrite the code without {feature}: take values from variables in the code and print results to stdout.\n"
                ),
            );
        }
        let source = match CodeSource::for_code(&block.code, "block.py") {
            Ok(source) => source,
            Err(outcome) => return outcome,
        };
        let request = RunRequest::new(self.settings.command(), &ctx.work_dir)
            .env("PYTHONUNBUFFERED", "1")
            .timeout(self.settings.timeout())
            .idle_timeout(self.settings.idle_timeout())
            .output_limit(ctx.output_limit);
        let request = match &source {
            CodeSource::Inline => request.arg("-c").arg(&block.code),
            CodeSource::File { path, .. } => request.arg("-c").arg(FILE_BOOTSTRAP).arg(path),
        };
        run_process(
            &request,
            ctx,
            on_output,
            None,
            "Install Python 3 (Debian/Ubuntu: apt-get install python3), or set [tools.python] command.",
        )
        .await
    }
}

impl Tool for Python {
    fn kind(&self) -> ToolKind {
        ToolKind::Python
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

/// The interactive feature `code` uses, if any (AgenticSeek §2.1).
pub(crate) fn interactive_feature(code: &str) -> Option<&'static str> {
    static CURSES: LazyLock<Option<Regex>> =
        LazyLock::new(|| Regex::new(r"(?m)^\s*(?:import|from)\s+[^\n]*\bcurses\b").ok());
    if CURSES.as_ref().is_some_and(|re| re.is_match(code)) {
        return Some("curses");
    }
    calls_bare_input(code).then_some("input()")
}

/// A call `input(` not preceded by a word character or `.` (so `obj.input(` and `my_input(` are
/// fine) and not a definition (`def input(`).
fn calls_bare_input(code: &str) -> bool {
    code.match_indices("input").any(|(at, _)| {
        let before = &code[..at];
        let after = code[at + "input".len()..].trim_start_matches([' ', '\t']);
        let prev = before.chars().next_back();
        after.starts_with('(')
            && !prev.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.')
            && !before.trim_end_matches([' ', '\t']).ends_with("def")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interactive_code_is_recognised_as_agenticseek_did() {
        assert_eq!(
            interactive_feature("import curses\n\ncurses.wrapper(lambda s: None)"),
            Some("curses")
        );
        assert_eq!(
            interactive_feature("from curses import wrapper"),
            Some("curses")
        );
        assert_eq!(
            interactive_feature("name = input(\"your name: \")\nprint(name)"),
            Some("input()")
        );
        assert_eq!(interactive_feature("x = input ()"), Some("input()"));
        for fine in [
            "class Reader:\n    def input(self, value):\n        return value\nprint(Reader().input(\"ok\"))",
            "my_input(3)",
            "def input(x): pass",
            "print('no input here')",
            "import cursesque",
        ] {
            assert_eq!(interactive_feature(fine), None, "{fine}");
        }
    }
}

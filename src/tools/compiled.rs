//! The compiled languages: `c` (gcc, `-lm`), `go` and `java`.
//!
//! Owns the compile-then-run sequence: the source is written to a private temporary folder and
//! compiled there (compile timeout), then the program runs **in the work dir** (run timeout) and
//! the folder is removed. Java's file is named after the public class that has `main`. It must not
//! decide success beyond the exit statuses.

use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;

use super::{
    BoxFuture, OutputSink, Tool, ToolContext, ToolOutcome, run_process, source_in_temp_dir,
};
use crate::config::ToolConfig;
use crate::exec::RunRequest;
use crate::protocol::Block;

/// One language's recipe.
struct Recipe {
    /// Compiler arguments, given the source path and the output path.
    compile_args: Vec<String>,
    /// Program and arguments that run the result, given the private folder.
    run: (String, Vec<String>),
    /// Extra environment for the compiler.
    compile_env: Vec<(String, String)>,
    install_hint: &'static str,
}

async fn compile_and_run(
    settings: &ToolConfig,
    code: &str,
    ctx: &ToolContext,
    on_output: OutputSink<'_>,
    source_name: &str,
    recipe: impl FnOnce(&Path) -> Recipe,
) -> ToolOutcome {
    let (temp, _) = match source_in_temp_dir(source_name, code) {
        Ok(written) => written,
        Err(outcome) => return outcome,
    };
    let recipe = recipe(temp.path());
    let mut compile = RunRequest::new(settings.command(), temp.path())
        .args(&recipe.compile_args)
        .timeout(settings.compile_timeout())
        .output_limit(ctx.output_limit);
    for (k, v) in &recipe.compile_env {
        compile = compile.env(k, v);
    }
    let compiled = run_process(
        &compile,
        ctx,
        on_output,
        Some("compilation failed"),
        recipe.install_hint,
    )
    .await;
    if !compiled.success {
        return compiled;
    }
    let (program, args) = recipe.run;
    let run = RunRequest::new(program, &ctx.work_dir)
        .args(args)
        .timeout(settings.timeout())
        .output_limit(ctx.output_limit);
    let mut outcome = run_process(&run, ctx, on_output, None, recipe.install_hint).await;
    outcome.duration += compiled.duration;
    outcome
}

fn path_string(path: &Path) -> String {
    path.display().to_string()
}

/// The `c` tool.
pub struct CLang {
    settings: ToolConfig,
}

impl CLang {
    pub fn new(settings: ToolConfig) -> Self {
        Self { settings }
    }
}

impl Tool for CLang {
    fn tag(&self) -> &'static str {
        "c"
    }

    fn run<'a>(
        &'a self,
        block: &'a Block,
        ctx: &'a ToolContext,
        on_output: OutputSink<'a>,
    ) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(compile_and_run(
            &self.settings,
            &block.code,
            ctx,
            on_output,
            "main.c",
            |dir| Recipe {
                compile_args: vec!["main.c".into(), "-o".into(), "program".into(), "-lm".into()],
                run: (path_string(&dir.join("program")), Vec::new()),
                compile_env: Vec::new(),
                install_hint: "Install a C compiler (Debian/Ubuntu: apt-get install gcc), or set [tools.c] command.",
            },
        ))
    }
}

/// The `go` tool.
pub struct GoLang {
    settings: ToolConfig,
}

impl GoLang {
    pub fn new(settings: ToolConfig) -> Self {
        Self { settings }
    }
}

impl Tool for GoLang {
    fn tag(&self) -> &'static str {
        "go"
    }

    fn run<'a>(
        &'a self,
        block: &'a Block,
        ctx: &'a ToolContext,
        on_output: OutputSink<'a>,
    ) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(compile_and_run(
            &self.settings,
            &block.code,
            ctx,
            on_output,
            "main.go",
            |dir| Recipe {
                compile_args: vec![
                    "build".into(),
                    "-o".into(),
                    "program".into(),
                    "main.go".into(),
                ],
                run: (path_string(&dir.join("program")), Vec::new()),
                // A lone file builds without a module; never let a go.mod elsewhere decide.
                compile_env: vec![
                    ("GO111MODULE".into(), "off".into()),
                    ("GOFLAGS".into(), String::new()),
                ],
                install_hint: "Install Go (Debian/Ubuntu: apt-get install golang-go), or set [tools.go] command.",
            },
        ))
    }
}

/// The `java` tool.
pub struct JavaLang {
    settings: ToolConfig,
}

impl JavaLang {
    pub fn new(settings: ToolConfig) -> Self {
        Self { settings }
    }
}

impl Tool for JavaLang {
    fn tag(&self) -> &'static str {
        "java"
    }

    fn run<'a>(
        &'a self,
        block: &'a Block,
        ctx: &'a ToolContext,
        on_output: OutputSink<'a>,
    ) -> BoxFuture<'a, ToolOutcome> {
        let main = java_main_class(&block.code);
        let runtime = self.settings.runtime().to_owned();
        let source_name = format!("{}.java", main.file_stem);
        Box::pin(async move {
            compile_and_run(
            &self.settings,
            &block.code,
            ctx,
            on_output,
            &source_name,
            |dir| Recipe {
                compile_args: vec![
                    "-d".into(),
                    "classes".into(),
                    source_name.clone(),
                ],
                run: (
                    runtime,
                    vec![
                        "-cp".into(),
                        path_string(&dir.join("classes")),
                        main.qualified,
                    ],
                ),
                compile_env: Vec::new(),
                install_hint: "Install a JDK (Debian/Ubuntu: apt-get install default-jdk), or set [tools.java] command and runtime.",
            },
        )
        .await
        })
    }
}

/// Which file a Java source must be saved as and which class to run.
#[derive(Debug, PartialEq, Eq)]
pub struct JavaMain {
    /// The public top-level class (the file must be named after it), or the main class.
    pub file_stem: String,
    /// The class to run, with its package.
    pub qualified: String,
}

/// Finds the class to run: the class declaring `main`, else the public class, else `Main`.
pub fn java_main_class(code: &str) -> JavaMain {
    static PACKAGE: LazyLock<Option<Regex>> =
        LazyLock::new(|| Regex::new(r"(?m)^\s*package\s+([\w.]+)\s*;").ok());
    static CLASS: LazyLock<Option<Regex>> = LazyLock::new(|| {
        Regex::new(r"(?m)^\s*((?:public|final|abstract|static|\s)*)\b(?:class|record|enum|interface)\s+([A-Za-z_]\w*)").ok()
    });
    static MAIN: LazyLock<Option<Regex>> =
        LazyLock::new(|| Regex::new(r"static\s+(?:final\s+)?void\s+main\s*\(").ok());
    let package = PACKAGE
        .as_ref()
        .and_then(|re| re.captures(code))
        .and_then(|c| c.get(1))
        .map(|m| m.as_str().to_owned());
    let classes: Vec<(usize, bool, String)> = CLASS.as_ref().map_or_else(Vec::new, |re| {
        re.captures_iter(code)
            .filter_map(|c| {
                let whole = c.get(0)?;
                let public = c.get(1).is_some_and(|m| m.as_str().contains("public"));
                Some((whole.start(), public, c.get(2)?.as_str().to_owned()))
            })
            .collect()
    });
    let main_at = MAIN
        .as_ref()
        .and_then(|re| re.find(code))
        .map(|m| m.start());
    let main_class = main_at.and_then(|at| {
        classes
            .iter()
            .rev()
            .find(|(start, _, _)| *start < at)
            .map(|(_, _, name)| name.clone())
    });
    let public_class = classes
        .iter()
        .find(|(_, public, _)| *public)
        .map(|(_, _, name)| name.clone());
    let runs = main_class
        .clone()
        .or_else(|| public_class.clone())
        .unwrap_or_else(|| "Main".to_owned());
    JavaMain {
        file_stem: public_class.unwrap_or_else(|| runs.clone()),
        qualified: package.map_or(runs.clone(), |p| format!("{p}.{runs}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_file_and_class_names() {
        let hello = "public class Hello {\n  public static void main(String[] a) { }\n}";
        assert_eq!(
            java_main_class(hello),
            JavaMain {
                file_stem: "Hello".into(),
                qualified: "Hello".into()
            }
        );
        let two = "class Helper {}\npublic final class App {\n  public static void main(String... a) {}\n}";
        assert_eq!(
            java_main_class(two),
            JavaMain {
                file_stem: "App".into(),
                qualified: "App".into()
            }
        );
        let packaged = "package demo.app;\nclass Runner {\n static void main(String[] a) {}\n}";
        assert_eq!(
            java_main_class(packaged),
            JavaMain {
                file_stem: "Runner".into(),
                qualified: "demo.app.Runner".into()
            }
        );
        assert_eq!(
            java_main_class("int x;"),
            JavaMain {
                file_stem: "Main".into(),
                qualified: "Main".into()
            }
        );
    }
}

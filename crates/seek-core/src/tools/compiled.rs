//! The compiled languages: `c` (gcc, `-lm`), `go` and `java`.
//!
//! Owns the compile-then-run sequence: the source is written to a private temporary folder and
//! compiled there (compile timeout), then the program runs **in the work dir** (run timeout) and
//! the folder is removed. Java's file is named after the public class that has `main`. It must not
//! decide success beyond the exit statuses.

use std::sync::LazyLock;

use regex::Regex;

use super::{
    BoxFuture, OutputSink, Tool, ToolClass, ToolContext, ToolOutcome, ToolSpec, run_process,
    source_in_temp_dir,
};
use crate::config::ToolConfig;
use crate::exec::RunRequest;
use crate::protocol::Block;
use crate::tool_kind::ToolKind;

/// The compiled languages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Language {
    C,
    Go,
    Java,
}

/// How the compiled result runs.
enum Runner {
    /// The executable the compiler wrote to `program` in the private folder.
    BuiltProgram,
    /// `RUNTIME -cp <folder>/classes CLASS`.
    Java { runtime: String, class: String },
}

/// One block's build plan.
struct Plan {
    source_name: String,
    compile_args: Vec<String>,
    compile_env: Vec<(&'static str, &'static str)>,
    runner: Runner,
    install_hint: &'static str,
}

impl Language {
    fn plan(self, code: &str, settings: &ToolConfig) -> Plan {
        let args = |list: &[&str]| list.iter().map(|a| (*a).to_owned()).collect();
        match self {
            Language::C => Plan {
                source_name: "main.c".into(),
                compile_args: args(&["main.c", "-o", "program", "-lm"]),
                compile_env: Vec::new(),
                runner: Runner::BuiltProgram,
                install_hint: "Install a C compiler (Debian/Ubuntu: apt-get install gcc), or set [tools.c] command.",
            },
            Language::Go => Plan {
                source_name: "main.go".into(),
                compile_args: args(&["build", "-o", "program", "main.go"]),
                // A lone file builds without a module; never let a go.mod elsewhere decide.
                compile_env: vec![("GO111MODULE", "off"), ("GOFLAGS", "")],
                runner: Runner::BuiltProgram,
                install_hint: "Install Go (Debian/Ubuntu: apt-get install golang-go), or set [tools.go] command.",
            },
            Language::Java => {
                let main = java_main_class(code);
                let source_name = format!("{}.java", main.file_stem);
                Plan {
                    compile_args: vec!["-d".into(), "classes".into(), source_name.clone()],
                    source_name,
                    compile_env: Vec::new(),
                    runner: Runner::Java {
                        runtime: settings.runtime().to_owned(),
                        class: main.qualified,
                    },
                    install_hint: "Install a JDK (Debian/Ubuntu: apt-get install default-jdk), or set [tools.java] command and runtime.",
                }
            }
        }
    }
}

/// c's declaration: a C program, compiled with gcc.
pub const C: ToolSpec = ToolSpec {
    kind: ToolKind::C,
    class: ToolClass::Program,
    line_comment: None,
    build: |settings, _| Some(Box::new(Compiled::c(settings))),
};

/// go's declaration: a Go program.
pub(crate) const GO: ToolSpec = ToolSpec {
    kind: ToolKind::Go,
    class: ToolClass::Program,
    line_comment: None,
    build: |settings, _| Some(Box::new(Compiled::go(settings))),
};

/// java's declaration: a Java class with `main`.
pub(crate) const JAVA: ToolSpec = ToolSpec {
    kind: ToolKind::Java,
    class: ToolClass::Program,
    line_comment: None,
    build: |settings, _| Some(Box::new(Compiled::java(settings))),
};

/// The `c`, `go` and `java` tools.
pub struct Compiled {
    language: Language,
    settings: ToolConfig,
}

impl Compiled {
    /// C, compiled with gcc (`-lm`).
    pub fn c(settings: ToolConfig) -> Self {
        Self {
            language: Language::C,
            settings,
        }
    }

    pub fn go(settings: ToolConfig) -> Self {
        Self {
            language: Language::Go,
            settings,
        }
    }

    pub fn java(settings: ToolConfig) -> Self {
        Self {
            language: Language::Java,
            settings,
        }
    }

    async fn compile_and_run(
        &self,
        code: &str,
        ctx: &ToolContext,
        on_output: OutputSink<'_>,
    ) -> ToolOutcome {
        let settings = &self.settings;
        let plan = self.language.plan(code, settings);
        let (folder, _) = match source_in_temp_dir(&plan.source_name, code, ctx.temp_parent()) {
            Ok(written) => written,
            Err(outcome) => return outcome,
        };
        let mut compile = RunRequest::new(settings.command(), folder.path())
            .args(&plan.compile_args)
            .timeout(settings.compile_timeout())
            .output_limit(ctx.output_limit);
        for (k, v) in &plan.compile_env {
            compile = compile.env(k, v);
        }
        let compiled = run_process(
            &compile,
            ctx,
            on_output,
            Some("compilation failed"),
            plan.install_hint,
        )
        .await;
        if !compiled.success {
            return compiled;
        }
        let run = match plan.runner {
            Runner::BuiltProgram => RunRequest::new(folder.path().join("program"), &ctx.work_dir),
            Runner::Java { runtime, class } => RunRequest::new(runtime, &ctx.work_dir)
                .arg("-cp")
                .arg(folder.path().join("classes"))
                .arg(class),
        }
        .timeout(settings.timeout())
        .idle_timeout(settings.idle_timeout())
        .output_limit(ctx.output_limit);
        let mut outcome = run_process(&run, ctx, on_output, None, plan.install_hint).await;
        outcome.duration += compiled.duration;
        outcome
    }
}

impl Tool for Compiled {
    fn kind(&self) -> ToolKind {
        match self.language {
            Language::C => ToolKind::C,
            Language::Go => ToolKind::Go,
            Language::Java => ToolKind::Java,
        }
    }

    fn run<'a>(
        &'a self,
        block: &'a Block,
        ctx: &'a ToolContext,
        on_output: OutputSink<'a>,
    ) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(self.compile_and_run(&block.code, ctx, on_output))
    }
}

/// Which file a Java source must be saved as and which class to run.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct JavaMain {
    /// The public top-level class (the file must be named after it), or the main class.
    pub file_stem: String,
    /// The class to run, with its package.
    pub qualified: String,
}

/// Finds the class to run: the class declaring `main`, else the public class, else `Main`.
pub(crate) fn java_main_class(code: &str) -> JavaMain {
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

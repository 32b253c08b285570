//! The agents' system prompts: embedded in the binary, overridable by a file of the same name in
//! the config dir's `prompts/`, and filled in with the work dir, the OS and the tools that are
//! really usable here (Go is not advertised when `go` is missing).
//!
//! What a prompt depends on outside the configuration (the override files, the kernel release,
//! which programs PATH holds) is read once into a `PromptEnv`, on a blocking thread; building a
//! prompt from it is pure. It must not run anything.

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::config::{AgentName, Config, ToolConfig};
use crate::tool_kind::ToolKind;

/// The tools each agent owns, in the order they are taught.
pub fn agent_tools(agent: AgentName) -> &'static [ToolKind] {
    crate::agents::spec(agent).tools
}

/// The agent that runs when `auto` is asked for and no router picked one: the coder.
pub fn resolve_agent(agent: AgentName) -> AgentName {
    crate::agents::spec(agent).name
}

/// The prompt template of `agent`: its file name (in `prompts/`, and of an override) and the
/// text built into seek; the compact variant for a small model, when the agent has one.
fn template(agent: AgentName, small: bool) -> crate::agents::Prompt {
    let spec = crate::agents::spec(agent);
    match spec.small_prompt {
        Some(compact) if small => compact,
        _ => spec.prompt,
    }
}

/// What building prompts reads from the machine, read once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PromptEnv {
    /// The operating system and kernel release, such as `linux 6.1.0`.
    pub os: String,
    /// The programs of the configured tools that can be run.
    pub installed: HashSet<String>,
    /// Templates from the config dir's `prompts/`, by file name (`coder.md`, …).
    pub overrides: HashMap<&'static str, String>,
    /// The ready MCP servers' tools as a prompt lists them (`mcp::prompt::tools_section`);
    /// empty until they are ready, or when there are none.
    pub mcp_section: String,
}

impl PromptEnv {
    /// Reads the kernel release, `PATH` and the override files. Blocking: call it off the async
    /// threads.
    pub fn gather(config: &Config) -> Self {
        Self::gather_from(config, std::env::var_os("PATH"), prompts_dir().as_deref())
    }

    /// `gather` with the search path and the overrides' folder given.
    pub(crate) fn gather_from(
        config: &Config,
        path: Option<OsString>,
        prompts: Option<&Path>,
    ) -> Self {
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
        let os = format!("{} {}", std::env::consts::OS, release.trim())
            .trim()
            .to_owned();
        let installed = ToolKind::ALL
            .into_iter()
            .flat_map(|kind| {
                let settings = ToolConfig::of(config, kind);
                settings.programs().map(str::to_owned).collect::<Vec<_>>()
            })
            .filter(|program| runnable(program, path.as_deref()))
            .collect();
        let overrides = crate::agents::REGISTRY
            .into_iter()
            .flat_map(|spec| std::iter::once(spec.prompt).chain(spec.small_prompt))
            .filter(|prompt| !prompt.text.is_empty())
            .filter_map(|prompt| {
                let name = prompt.file;
                let text = std::fs::read_to_string(prompts?.join(name)).ok()?;
                Some((name, text))
            })
            .collect();
        Self {
            os,
            installed,
            overrides,
            mcp_section: String::new(),
        }
    }

    /// This environment with the tools of `hub`'s ready servers, listed within a budget of an
    /// eighth of the context window (names only when the full list does not fit).
    pub(crate) fn with_mcp_tools(&self, config: &Config, hub: &crate::mcp::Hub) -> Self {
        let window = config.model_settings.context_window.value;
        let budget = usize::try_from(window / 2)
            .unwrap_or(usize::MAX)
            .clamp(MIN_MCP_SECTION, MAX_MCP_SECTION);
        Self {
            mcp_section: crate::mcp::prompt::tools_section(&hub.tools(), budget),
            ..self.clone()
        }
    }
}

/// The MCP tool list's bounds in bytes (an eighth of the context window, at about 4 bytes a
/// token, within these).
const MIN_MCP_SECTION: usize = 1024;
const MAX_MCP_SECTION: usize = 16 * 1024;

/// The tools of `agent` whose programs are installed.
pub fn available_tools(agent: AgentName, config: &Config, env: &PromptEnv) -> Vec<ToolKind> {
    agent_tools(agent)
        .iter()
        .copied()
        .filter(|kind| match kind {
            // Taught only to the agents configured for it, once a server lists tools.
            ToolKind::Mcp => may_call_mcp(agent, config) && !env.mcp_section.is_empty(),
            _ => ToolConfig::of(config, *kind)
                .programs()
                .all(|program| env.installed.contains(program)),
        })
        .collect()
}

/// Whether `agent`'s blocks may call MCP tools: servers are configured and `[tools.mcp]
/// agents` names it.
pub fn may_call_mcp(agent: AgentName, config: &Config) -> bool {
    !config.mcp.servers.is_empty()
        && config.mcp.agents.contains(&agent)
        && agent_tools(agent).contains(&ToolKind::Mcp)
}

/// The system prompt for `agent`, teaching `tools`.
pub fn system_prompt(
    agent: AgentName,
    config: &Config,
    tools: &[ToolKind],
    env: &PromptEnv,
) -> String {
    let small = config.adaptations().compact_prompt;
    let prompt = template(agent, small);
    let template = env
        .overrides
        .get(prompt.file)
        .map_or(prompt.text, String::as_str);
    let compact = small && crate::agents::spec(agent).small_prompt.is_some();
    let lessons: Vec<String> = tools
        .iter()
        .map(|kind| {
            if compact {
                format!("- {}", kind.short_lesson())
            } else {
                format!("- {}", kind.lesson())
            }
        })
        .collect();
    let mut tools_text = if lessons.is_empty() {
        "(none)".to_owned()
    } else {
        lessons.join("\n")
    };
    if tools.contains(&ToolKind::Mcp) {
        tools_text.push_str("\n\n");
        tools_text.push_str(&env.mcp_section);
    }
    template
        .replace("{work_dir}", &config.work_dir.value.display().to_string())
        .replace("{os}", &env.os)
        .replace("{tools}", &tools_text)
}

/// Whether `program` (a name or a path) can be run.
pub fn on_path(program: &str) -> bool {
    runnable(program, std::env::var_os("PATH").as_deref())
}

/// Whether `program` is an executable file: itself when it is a path, else in a folder of
/// `path` (a `PATH` value).
fn runnable(program: &str, path: Option<&std::ffi::OsStr>) -> bool {
    if program.is_empty() {
        return false;
    }
    let program_path = Path::new(program);
    if program_path.components().count() > 1 {
        return is_executable(program_path);
    }
    path.is_some_and(|paths| {
        std::env::split_paths(paths).any(|dir| is_executable(&dir.join(program)))
    })
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The folder prompt overrides are read from: `prompts/` in seek's config dir.
fn prompts_dir() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "seek").map(|d| d.config_dir().join("prompts"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Origin, Sourced};

    fn config() -> Config {
        // The default model is the built-in 135M one; these tests are about the full prompt.
        Config::defaults_for_tests(crate::config::ModelSize::Large)
    }

    /// A folder holding an executable file for each of `programs`, and `go` without the
    /// executable bit.
    fn bin_dir(programs: &[&str]) -> tempfile::TempDir {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        for program in programs {
            let path = dir.path().join(program);
            std::fs::write(&path, "#!/bin/sh\n").expect("write");
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        }
        std::fs::write(dir.path().join("go"), "not runnable").expect("write");
        dir
    }

    #[test]
    fn a_tool_whose_program_is_missing_is_not_advertised() {
        let config = config();
        let bin = bin_dir(&["bash", "python3", "gcc", "javac", "java"]);
        let env = PromptEnv::gather_from(&config, Some(bin.path().into()), None);
        let tools = available_tools(AgentName::Coder, &config, &env);
        assert_eq!(
            tools,
            [
                ToolKind::Bash,
                ToolKind::Python,
                ToolKind::C,
                ToolKind::Java,
                ToolKind::FileFinder
            ],
            "go is there but not executable"
        );
        let prompt = system_prompt(AgentName::Coder, &config, &tools, &env);
        assert!(!prompt.contains("```go"), "{prompt}");
        assert!(
            prompt.contains("```bash") && prompt.contains("name=notes.txt"),
            "{prompt}"
        );
        assert!(prompt.contains(&config.work_dir.value.display().to_string()));
        assert!(prompt.contains(&env.os), "{prompt}");
        assert!(!prompt.contains("{tools}") && !prompt.contains("{os}"));

        // Java needs its runtime as well as its compiler; a configured path counts as itself.
        let mut config = config;
        for tool in &mut config.tools {
            if tool.kind == ToolKind::Java {
                tool.runtime = Some(Sourced::new("seek-no-such-java".into(), Origin::Default));
            }
            if tool.kind == ToolKind::Go {
                let go = bin.path().join("python3").display().to_string();
                tool.command = Some(Sourced::new(go, Origin::Default));
            }
        }
        let env = PromptEnv::gather_from(&config, Some(bin.path().into()), None);
        let tools = available_tools(AgentName::Coder, &config, &env);
        assert!(!tools.contains(&ToolKind::Java), "{tools:?}");
        assert!(tools.contains(&ToolKind::Go), "{tools:?}");
    }

    #[test]
    fn a_prompt_is_built_from_the_snapshot_alone() {
        let config = config();
        let env = PromptEnv {
            os: "plan9 4e".into(),
            installed: HashSet::from(["bash".to_owned()]),
            overrides: HashMap::from([("file.md", "on {os} in {work_dir}: {tools}".to_owned())]),
            mcp_section: String::new(),
        };
        let tools = available_tools(AgentName::File, &config, &env);
        assert_eq!(tools, [ToolKind::FileFinder, ToolKind::Bash]);
        let prompt = system_prompt(AgentName::File, &config, &tools, &env);
        assert_eq!(
            prompt,
            format!(
                "on plan9 4e in {}: - {}\n- {}",
                config.work_dir.value.display(),
                ToolKind::FileFinder.lesson(),
                ToolKind::Bash.lesson()
            )
        );
        // Another agent's template is the built-in one.
        let coder = system_prompt(AgentName::Auto, &config, &[], &env);
        assert!(coder.starts_with("You are seek's coder agent"), "{coder}");
        assert!(coder.contains("(none)"), "{coder}");
    }

    #[test]
    fn overrides_are_read_from_the_prompts_folder() {
        let config = config();
        let prompts = tempfile::tempdir().expect("tempdir");
        std::fs::write(prompts.path().join("coder.md"), "custom {tools}").expect("write");
        let env = PromptEnv::gather_from(&config, None, Some(prompts.path()));
        assert_eq!(env.overrides.len(), 1, "{env:?}");
        assert!(env.installed.is_empty(), "no PATH, no programs: {env:?}");
        let prompt = system_prompt(AgentName::Coder, &config, &[ToolKind::Bash], &env);
        assert_eq!(prompt, format!("custom - {}", ToolKind::Bash.lesson()));
    }

    #[test]
    fn a_small_model_gets_the_compact_prompt_with_its_example() {
        let mut config = config();
        config.model_size.value = crate::config::ModelSize::Small;
        let env = PromptEnv {
            os: "linux 6".into(),
            installed: HashSet::from(["bash".to_owned(), "python3".to_owned()]),
            ..PromptEnv::default()
        };
        let tools = available_tools(AgentName::Coder, &config, &env);
        let compact = system_prompt(AgentName::Coder, &config, &tools, &env);
        assert!(compact.contains("print(2 + 3)") && compact.contains("[success]"));
        assert!(
            compact.contains(ToolKind::Python.short_lesson()),
            "{compact}"
        );
        assert!(!compact.contains(ToolKind::Python.lesson()), "{compact}");
        config.model_size.value = crate::config::ModelSize::Large;
        let full = system_prompt(AgentName::Coder, &config, &tools, &env);
        assert!(
            compact.len() < full.len(),
            "{} vs {}",
            compact.len(),
            full.len()
        );
        // An agent without a compact variant keeps its prompt.
        config.model_size.value = crate::config::ModelSize::Small;
        let casual = system_prompt(AgentName::Casual, &config, &[], &env);
        config.model_size.value = crate::config::ModelSize::Large;
        assert_eq!(casual, system_prompt(AgentName::Casual, &config, &[], &env));
    }

    #[test]
    fn each_agent_has_its_tools() {
        assert!(agent_tools(AgentName::Casual).is_empty());
        assert_eq!(
            agent_tools(AgentName::File),
            [ToolKind::FileFinder, ToolKind::Bash, ToolKind::Mcp]
        );
        assert_eq!(resolve_agent(AgentName::Auto), AgentName::Coder);
    }

    #[test]
    fn mcp_is_taught_only_with_servers_tools_and_to_the_configured_agents() {
        let mut config = config();
        let mut env = PromptEnv::gather_from(&config, None, None);
        let offered = |config: &Config, env: &PromptEnv, agent| {
            available_tools(agent, config, env).contains(&ToolKind::Mcp)
        };
        assert!(!offered(&config, &env, AgentName::Coder), "no servers");
        config.mcp.servers.push(crate::config::McpServer {
            name: "time".into(),
            transport: crate::config::McpTransport::Http {
                url: "http://127.0.0.1:9/mcp".into(),
                bearer_token_env_var: None,
            },
            env: Vec::new(),
            startup_timeout: std::time::Duration::from_secs(1),
            tool_timeout: std::time::Duration::from_secs(1),
            enabled: true,
        });
        assert!(
            !offered(&config, &env, AgentName::Coder),
            "no tools listed yet"
        );
        env.mcp_section = "MCP tools:\n- time.now() — the time".into();
        assert!(offered(&config, &env, AgentName::Coder));
        assert!(offered(&config, &env, AgentName::File));
        assert!(
            !offered(&config, &env, AgentName::Casual),
            "casual runs no blocks"
        );
        let prompt = system_prompt(
            AgentName::Coder,
            &config,
            &available_tools(AgentName::Coder, &config, &env),
            &env,
        );
        assert!(prompt.contains("```mcp\n") && prompt.contains("- time.now() — the time"));
        config.mcp.agents = vec![AgentName::File];
        assert!(
            !offered(&config, &env, AgentName::Coder),
            "not configured for it"
        );
        assert!(offered(&config, &env, AgentName::File));
    }
}

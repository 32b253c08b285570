//! The agents' system prompts: embedded in the binary, overridable by a file of the same name in
//! the config dir's `prompts/`, and filled in with the work dir, the OS and the tools that are
//! really usable here (Go is not advertised when `go` is missing).
//!
//! It must not run anything; it only looks up programs on PATH.

use std::path::{Path, PathBuf};

use crate::config::{AgentName, Config, ToolConfig};
use crate::tool_kind::ToolKind;

const CODER: &str = include_str!("../../prompts/coder.md");
const FILE: &str = include_str!("../../prompts/file.md");
const CASUAL: &str = include_str!("../../prompts/casual.md");

/// The tools each agent owns, in the order they are taught.
pub fn agent_tools(agent: AgentName) -> &'static [ToolKind] {
    match agent {
        AgentName::Casual => &[],
        AgentName::File => &[ToolKind::FileFinder, ToolKind::Bash],
        AgentName::Coder | AgentName::Auto => &ToolKind::ALL,
    }
}

/// The agent that runs when `auto` is asked for (no router yet).
pub fn resolve_agent(agent: AgentName) -> AgentName {
    match agent {
        AgentName::Auto => AgentName::Coder,
        other => other,
    }
}

/// The tools of `agent` whose programs are installed.
pub fn available_tools(agent: AgentName, config: &Config) -> Vec<ToolKind> {
    agent_tools(agent)
        .iter()
        .copied()
        .filter(|kind| ToolConfig::of(config, *kind).programs().all(on_path))
        .collect()
}

/// The system prompt for `agent`.
pub fn system_prompt(agent: AgentName, config: &Config, tools: &[ToolKind]) -> String {
    let agent = resolve_agent(agent);
    let embedded = match agent {
        AgentName::Casual => CASUAL,
        AgentName::File => FILE,
        AgentName::Coder | AgentName::Auto => CODER,
    };
    let template = override_location(agent)
        .and_then(|p| std::fs::read_to_string(p).ok())
        .unwrap_or_else(|| embedded.to_owned());
    let lessons: Vec<String> = tools
        .iter()
        .map(|kind| format!("- {}", kind.lesson()))
        .collect();
    let tools_text = if lessons.is_empty() {
        "(none)".to_owned()
    } else {
        lessons.join("\n")
    };
    template
        .replace("{work_dir}", &config.work_dir.value.display().to_string())
        .replace("{os}", &os_description())
        .replace("{tools}", &tools_text)
}

fn os_description() -> String {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!("{} {}", std::env::consts::OS, release.trim())
        .trim()
        .to_owned()
}

/// Whether `program` (a name or a path) can be run.
pub fn on_path(program: &str) -> bool {
    if program.is_empty() {
        return false;
    }
    let path = Path::new(program);
    if path.components().count() > 1 {
        return is_executable(path);
    }
    std::env::var_os("PATH").is_some_and(|paths| {
        std::env::split_paths(&paths).any(|dir| is_executable(&dir.join(program)))
    })
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Where a prompt override for `agent` would be read from.
pub fn override_location(agent: AgentName) -> Option<PathBuf> {
    let name = match resolve_agent(agent) {
        AgentName::Casual => "casual.md",
        AgentName::File => "file.md",
        _ => "coder.md",
    };
    directories::ProjectDirs::from("", "", "seek")
        .map(|d| d.config_dir().join("prompts").join(name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Dirs, Env, Origin, Overrides, Sourced};

    fn config() -> Config {
        let dirs = Dirs {
            default_config_file: None,
            data_dir: std::env::temp_dir().join("seek-prompt-test"),
        };
        Config::resolve(
            &Overrides::default(),
            &Env::default(),
            &dirs,
            &std::env::temp_dir(),
        )
        .expect("defaults resolve")
    }

    #[test]
    fn a_tool_whose_program_is_missing_is_not_advertised() {
        let mut config = config();
        for tool in &mut config.tools {
            if tool.kind == ToolKind::Go {
                tool.command = Some(Sourced::new("seek-no-such-go".into(), Origin::Default));
            }
        }
        let tools = available_tools(AgentName::Coder, &config);
        assert!(!tools.contains(&ToolKind::Go), "{tools:?}");
        assert!(
            tools.contains(&ToolKind::Bash) && tools.contains(&ToolKind::FileFinder),
            "{tools:?}"
        );
        let prompt = system_prompt(AgentName::Coder, &config, &tools);
        assert!(!prompt.contains("```go"), "{prompt}");
        assert!(
            prompt.contains("```bash") && prompt.contains("name=notes.txt"),
            "{prompt}"
        );
        assert!(prompt.contains(&config.work_dir.value.display().to_string()));
        assert!(
            !prompt.contains('{') || !prompt.contains("{tools}"),
            "placeholders are filled"
        );
    }

    #[test]
    fn each_agent_has_its_tools() {
        assert!(agent_tools(AgentName::Casual).is_empty());
        assert_eq!(
            agent_tools(AgentName::File),
            [ToolKind::FileFinder, ToolKind::Bash]
        );
        assert_eq!(resolve_agent(AgentName::Auto), AgentName::Coder);
    }
}

//! The agents' system prompts: embedded in the binary, overridable by a file of the same name in
//! the config dir's `prompts/`, and filled in with the work dir, the OS and the tools that are
//! really usable here (Go is not advertised when `go` is missing).
//!
//! It must not run anything; it only looks up programs on PATH.

use std::path::{Path, PathBuf};

use crate::config::{AgentName, Config};

const CODER: &str = include_str!("../../prompts/coder.md");
const FILE: &str = include_str!("../../prompts/file.md");
const CASUAL: &str = include_str!("../../prompts/casual.md");

/// The tags of the tools each agent owns, in the order they are taught.
pub fn agent_tools(agent: AgentName) -> &'static [&'static str] {
    match agent {
        AgentName::Casual => &[],
        AgentName::File => &["file_finder", "bash"],
        AgentName::Coder | AgentName::Auto => &["bash", "python", "c", "go", "java", "file_finder"],
    }
}

/// The agent that runs when `auto` is asked for (no router yet).
pub fn resolve_agent(agent: AgentName) -> AgentName {
    match agent {
        AgentName::Auto => AgentName::Coder,
        other => other,
    }
}

/// How each tool is taught, with the programs it needs.
fn tool_lesson(tag: &str, config: &Config) -> Option<(Vec<String>, String)> {
    let tool = config.tool(tag);
    let command = tool.map_or("", |t| t.command()).to_owned();
    let lesson = match tag {
        "bash" => (vec![command], "```bash\nls -la\n```  runs in bash.".to_owned()),
        "python" => (vec![command], "```python\nprint(\"hello\")\n```  runs with Python 3.".to_owned()),
        "c" => (vec![command], "```c\n#include <stdio.h>\nint main(void) { printf(\"hi\\n\"); return 0; }\n```  is compiled with gcc and run.".to_owned()),
        "go" => (vec![command], "```go\npackage main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hi\") }\n```  is compiled and run (standard library only).".to_owned()),
        "java" => (
            vec![command, tool.map_or("java", |t| t.runtime()).to_owned()],
            "```java\npublic class Hello {\n    public static void main(String[] args) { System.out.println(\"hi\"); }\n}\n```  is compiled and run.".to_owned(),
        ),
        "file_finder" => (
            Vec::new(),
            "```file_finder\nname=notes.txt\n```  finds files by name in the work directory; add a line `action=read` to read the best match.".to_owned(),
        ),
        _ => return None,
    };
    Some(lesson)
}

/// The tools of `agent` whose programs are installed.
pub fn available_tools(agent: AgentName, config: &Config) -> Vec<&'static str> {
    agent_tools(agent)
        .iter()
        .copied()
        .filter(|tag| {
            tool_lesson(tag, config)
                .is_some_and(|(programs, _)| programs.iter().all(|p| on_path(p)))
        })
        .collect()
}

/// The system prompt for `agent`.
pub fn system_prompt(agent: AgentName, config: &Config, tools: &[&str]) -> String {
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
        .filter_map(|tag| tool_lesson(tag, config).map(|(_, lesson)| format!("- {lesson}")))
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
            if tool.tag == "go" {
                tool.command = Some(Sourced::new("seek-no-such-go".into(), Origin::Default));
            }
        }
        let tools = available_tools(AgentName::Coder, &config);
        assert!(!tools.contains(&"go"), "{tools:?}");
        assert!(
            tools.contains(&"bash") && tools.contains(&"file_finder"),
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
        assert_eq!(agent_tools(AgentName::File), ["file_finder", "bash"]);
        assert_eq!(resolve_agent(AgentName::Auto), AgentName::Coder);
    }
}

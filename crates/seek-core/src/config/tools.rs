//! `[tools.<tag>]` settings: which keys each tool takes, their defaults, and their validation.
//!
//! Owns the `[tools]` table's shape as read from the file and the per-tool defaults
//! (AgenticSeek's timeouts, the interpreters' commands, the agents that get `mcp`), keyed by
//! `ToolKind`: a tool's settings are one `tool_tables!` entry. It must not run anything; the
//! tools read these values.

use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use super::setting::FileValue;
use super::{ConfigError, Origin, Sourced};
use crate::tool_kind::ToolKind;
use crate::wire::{AgentName, Runs};

/// The tags of every built-in tool, in the order they are listed.
pub const TOOL_TAGS: [&str; 7] = {
    let mut tags = [""; 7];
    let mut i = 0;
    while i < tags.len() {
        tags[i] = ToolKind::ALL[i].tag();
        i += 1;
    }
    tags
};

/// `[tools.<tag>]`. One shape for every tool keeps the file simple; keys a tool does not use are
/// refused by `resolve` with the tool's name.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ToolFile {
    pub timeout_secs: FileValue<i64>,
    pub idle_timeout_secs: FileValue<i64>,
    pub compile_timeout_secs: FileValue<i64>,
    pub command: FileValue<String>,
    pub runtime: FileValue<String>,
    pub allow_rerun: FileValue<bool>,
    pub max_read_bytes: FileValue<i64>,
    /// `[tools.mcp]`: the agents that get the tool.
    pub agents: FileValue<Vec<String>>,
}

/// A block that prints nothing and uses no CPU for this long is ended as stuck (0: never).
pub(crate) const DEFAULT_IDLE_TIMEOUT_SECS: u64 = 60;

/// What a tool accepts and its defaults; `None` means the key does not apply to the tool.
struct Spec {
    kind: ToolKind,
    timeout_secs: Option<u64>,
    idle_timeout_secs: Option<u64>,
    compile_timeout_secs: Option<u64>,
    command: Option<&'static str>,
    runtime: Option<&'static str>,
    allow_rerun: Option<bool>,
    max_read_bytes: Option<u64>,
    agents: Option<&'static [AgentName]>,
}

const fn bare(kind: ToolKind) -> Spec {
    Spec {
        kind,
        timeout_secs: None,
        idle_timeout_secs: None,
        compile_timeout_secs: None,
        command: None,
        runtime: None,
        allow_rerun: None,
        max_read_bytes: None,
        agents: None,
    }
}

/// Declares each tool's `[tools.<tag>]` table once: its `ToolKind`, its table's name (the tag,
/// which a test checks), and the keys it takes with their defaults (a key left out does not
/// apply to it: the file setting it is refused, naming the keys it takes). The file's `[tools]`
/// struct (its fields in the entries' order, which serde's "expected one of" repeats), the
/// lookup of a tool's table in it and `Spec::of` come from the one list.
macro_rules! tool_tables {
    ($($kind:ident => $tag:ident { $($key:ident: $default:expr),* $(,)? },)+) => {
        /// `[tools]` as read from the file: one table per tool.
        #[derive(Debug, Default, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub(crate) struct ToolsFile {
            $(#[serde(default)] pub $tag: ToolFile,)+
        }

        impl ToolsFile {
            /// The `[tools.<tag>]` table of `kind`.
            fn table(&self, kind: ToolKind) -> &ToolFile {
                match kind {
                    $(ToolKind::$kind => &self.$tag,)+
                }
            }

            /// Each table's name with its tool, in the file's order.
            #[cfg(test)]
            const TABLES: &[(ToolKind, &str)] = &[$((ToolKind::$kind, stringify!($tag)),)+];
        }

        impl Spec {
            /// What `kind` takes and its defaults.
            const fn of(kind: ToolKind) -> Spec {
                match kind {
                    $(ToolKind::$kind => Spec { $($key: Some($default),)* ..bare(kind) },)+
                }
            }
        }
    };
}

// Every tool's settings. Timeouts are AgenticSeek's (reference §2.1–§2.3), except Go's compile
// step: a first `go build` on a cold build cache compiles the standard library and takes far
// longer than its 10 s.
tool_tables! {
    Bash => bash {
        idle_timeout_secs: DEFAULT_IDLE_TIMEOUT_SECS,
        timeout_secs: 300,
        command: "bash",
        allow_rerun: false,
    },
    Python => python {
        idle_timeout_secs: DEFAULT_IDLE_TIMEOUT_SECS,
        timeout_secs: 300,
        command: "python3",
    },
    C => c {
        compile_timeout_secs: 60,
        idle_timeout_secs: DEFAULT_IDLE_TIMEOUT_SECS,
        timeout_secs: 120,
        command: "gcc",
    },
    Go => go {
        compile_timeout_secs: 120,
        idle_timeout_secs: DEFAULT_IDLE_TIMEOUT_SECS,
        timeout_secs: 10,
        command: "go",
    },
    Java => java {
        compile_timeout_secs: 10,
        idle_timeout_secs: DEFAULT_IDLE_TIMEOUT_SECS,
        timeout_secs: 10,
        command: "javac",
        runtime: "java",
    },
    FileFinder => file_finder { max_read_bytes: 64 * 1024 },
    // Its timeouts are each server's (`[mcp_servers.NAME]`).
    Mcp => mcp { agents: &super::mcp::DEFAULT_MCP_AGENTS },
    // Its settings are the `[web]` section's (the SearxNG URL, the timeout).
    WebSearch => web_search {},
}

impl Spec {
    /// The settings a tool has when the file says nothing about it.
    fn defaults(&self) -> ToolConfig {
        let default = |v| Sourced::new(v, Origin::Default);
        ToolConfig {
            kind: self.kind,
            tag: self.kind.tag(),
            timeout_secs: self.timeout_secs.map(default),
            idle_timeout_secs: self.idle_timeout_secs.map(default),
            compile_timeout_secs: self.compile_timeout_secs.map(default),
            command: self
                .command
                .map(|v| Sourced::new(v.to_owned(), Origin::Default)),
            runtime: self
                .runtime
                .map(|v| Sourced::new(v.to_owned(), Origin::Default)),
            allow_rerun: self.allow_rerun.map(|v| Sourced::new(v, Origin::Default)),
            max_read_bytes: self.max_read_bytes.map(default),
            agents: self
                .agents
                .map(|a| Sourced::new(a.to_vec(), Origin::Default)),
        }
    }
}

/// One tool's effective settings. A field is `None` when the key does not apply to the tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolConfig {
    pub kind: ToolKind,
    /// `kind.tag()`, the `[tools.<tag>]` table's name.
    pub tag: &'static str,
    pub timeout_secs: Option<Sourced<u64>>,
    /// No output and no CPU use for this long ends a run as stuck; 0 turns it off.
    pub idle_timeout_secs: Option<Sourced<u64>>,
    pub compile_timeout_secs: Option<Sourced<u64>>,
    pub command: Option<Sourced<String>>,
    pub runtime: Option<Sourced<String>>,
    pub allow_rerun: Option<Sourced<bool>>,
    pub max_read_bytes: Option<Sourced<u64>>,
    /// The agents that get the tool (`mcp` only).
    pub agents: Option<Sourced<Vec<AgentName>>>,
}

impl ToolConfig {
    /// The run timeout lowered to at most `secs` where the config file did not set it (a small
    /// model's blocks: `Adaptations::block_secs`). A timeout the user chose is kept.
    pub(crate) fn cap_default_timeout(&mut self, secs: u64) {
        if let Some(timeout) = self.timeout_secs.as_mut()
            && timeout.origin == Origin::Default
        {
            timeout.value = timeout.value.min(secs);
        }
    }

    /// The run timeout (zero for tools without one).
    pub fn timeout(&self) -> Duration {
        Duration::from_secs(self.timeout_secs.as_ref().map_or(0, |s| s.value))
    }

    /// The idle timeout of a run (`None`: off, or a tool without one).
    pub fn idle_timeout(&self) -> Option<Duration> {
        self.idle_timeout_secs
            .as_ref()
            .map(|s| s.value)
            .filter(|secs| *secs > 0)
            .map(Duration::from_secs)
    }

    /// The compile timeout (zero for interpreted tools).
    pub(crate) fn compile_timeout(&self) -> Duration {
        Duration::from_secs(self.compile_timeout_secs.as_ref().map_or(0, |s| s.value))
    }

    /// The command (interpreter or compiler), or `""` for tools that run none.
    pub fn command(&self) -> &str {
        self.command.as_ref().map_or("", |s| s.value.as_str())
    }

    /// The runtime that runs compiled output (Java's `java`), or `""`.
    pub fn runtime(&self) -> &str {
        self.runtime.as_ref().map_or("", |s| s.value.as_str())
    }

    pub fn allow_rerun(&self) -> bool {
        self.allow_rerun.as_ref().is_some_and(|s| s.value)
    }

    pub(crate) fn max_read_bytes(&self) -> u64 {
        self.max_read_bytes.as_ref().map_or(0, |s| s.value)
    }

    /// The programs the tool runs (its command, and the runtime that runs compiled output):
    /// all must be installed for the tool to be usable. None for tools that run no program.
    pub fn programs(&self) -> impl Iterator<Item = &str> {
        [&self.command, &self.runtime]
            .into_iter()
            .flatten()
            .map(|s| s.value.as_str())
    }

    /// The defaults of `kind`.
    pub fn defaults(kind: ToolKind) -> ToolConfig {
        Spec::of(kind).defaults()
    }

    /// `kind`'s settings in `config`, or its defaults in a configuration built without them.
    pub fn of(config: &super::Config, kind: ToolKind) -> std::borrow::Cow<'_, ToolConfig> {
        config.tools.iter().find(|t| t.kind == kind).map_or_else(
            || std::borrow::Cow::Owned(Self::defaults(kind)),
            std::borrow::Cow::Borrowed,
        )
    }

    /// The keys this tool takes, for messages.
    fn keys(&self) -> Vec<&'static str> {
        [
            ("timeout_secs", self.timeout_secs.is_some()),
            ("compile_timeout_secs", self.compile_timeout_secs.is_some()),
            ("command", self.command.is_some()),
            ("runtime", self.runtime.is_some()),
            ("allow_rerun", self.allow_rerun.is_some()),
            ("max_read_bytes", self.max_read_bytes.is_some()),
            ("idle_timeout_secs", self.idle_timeout_secs.is_some()),
            ("agents", self.agents.is_some()),
        ]
        .into_iter()
        .filter_map(|(key, takes)| takes.then_some(key))
        .collect()
    }
}

/// Resolves every tool's settings from the file's `[tools]` table; `origin` maps a byte offset
/// in the file to where it is.
pub fn resolve(
    file: Option<&ToolsFile>,
    origin: &dyn Fn(usize) -> Origin,
) -> Result<Vec<ToolConfig>, ConfigError> {
    let empty = ToolFile::default();
    ToolKind::ALL
        .into_iter()
        .map(|kind| {
            let table = file.map_or(&empty, |f| f.table(kind));
            resolve_one(&Spec::of(kind), table, origin)
        })
        .collect()
}

fn resolve_one(
    spec: &Spec,
    table: &ToolFile,
    origin: &dyn Fn(usize) -> Origin,
) -> Result<ToolConfig, ConfigError> {
    let defaults = spec.defaults();
    let ctx = Ctx {
        tag: spec.kind.tag(),
        keys: defaults.keys().join(", "),
        origin,
    };
    Ok(ToolConfig {
        timeout_secs: ctx.number(
            defaults.timeout_secs.clone(),
            &table.timeout_secs,
            "timeout_secs",
            1,
            86_400,
        )?,
        idle_timeout_secs: ctx.number(
            defaults.idle_timeout_secs.clone(),
            &table.idle_timeout_secs,
            "idle_timeout_secs",
            0,
            86_400,
        )?,
        compile_timeout_secs: ctx.number(
            defaults.compile_timeout_secs.clone(),
            &table.compile_timeout_secs,
            "compile_timeout_secs",
            1,
            86_400,
        )?,
        command: ctx.text(defaults.command.clone(), &table.command, "command")?,
        runtime: ctx.text(defaults.runtime.clone(), &table.runtime, "runtime")?,
        allow_rerun: ctx.flag(
            defaults.allow_rerun.clone(),
            &table.allow_rerun,
            "allow_rerun",
        )?,
        max_read_bytes: ctx.number(
            defaults.max_read_bytes.clone(),
            &table.max_read_bytes,
            "max_read_bytes",
            1,
            1 << 30,
        )?,
        agents: ctx.agents(defaults.agents.clone(), &table.agents)?,
        ..defaults
    })
}

struct Ctx<'a> {
    tag: &'static str,
    keys: String,
    origin: &'a dyn Fn(usize) -> Origin,
}

impl Ctx<'_> {
    /// The file's value if the tool takes the key, an error if it does not.
    fn take<T: Clone + std::fmt::Debug>(
        &self,
        default: Option<Sourced<T>>,
        given: &Option<Spanned<T>>,
        key: &str,
    ) -> Result<Option<Sourced<T>>, ConfigError> {
        match (given, default) {
            (None, default) => Ok(default),
            (Some(v), None) => Err(ConfigError::Invalid {
                origin: (self.origin)(v.span().start),
                key: format!("tools.{}.{key}", self.tag),
                value: format!("{:?}", v.get_ref()),
                expected: format!("[tools.{}] has no {key}; it takes: {}", self.tag, self.keys),
            }),
            (Some(v), Some(_)) => Ok(Some(Sourced::new(
                v.get_ref().clone(),
                (self.origin)(v.span().start),
            ))),
        }
    }

    fn number(
        &self,
        default: Option<Sourced<u64>>,
        given: &Option<Spanned<i64>>,
        key: &str,
        min: u64,
        max: u64,
    ) -> Result<Option<Sourced<u64>>, ConfigError> {
        let as_i64 =
            default.map(|s| Sourced::new(i64::try_from(s.value).unwrap_or(i64::MAX), s.origin));
        let Some(value) = self.take(as_i64, given, key)? else {
            return Ok(None);
        };
        match u64::try_from(value.value) {
            Ok(n) if (min..=max).contains(&n) => Ok(Some(Sourced::new(n, value.origin))),
            _ => Err(ConfigError::Invalid {
                origin: value.origin,
                key: format!("tools.{}.{key}", self.tag),
                value: value.value.to_string(),
                expected: format!("expected a whole number from {min} to {max}"),
            }),
        }
    }

    fn text(
        &self,
        default: Option<Sourced<String>>,
        given: &Option<Spanned<String>>,
        key: &str,
    ) -> Result<Option<Sourced<String>>, ConfigError> {
        let value = self.take(default, given, key)?;
        if let Some(v) = &value
            && v.value.trim().is_empty()
        {
            return Err(ConfigError::Invalid {
                origin: v.origin.clone(),
                key: format!("tools.{}.{key}", self.tag),
                value: format!("{:?}", v.value),
                expected: "expected a program name or path, such as python3".into(),
            });
        }
        Ok(value)
    }

    /// `agents = ["coder", "file"]`: agents that run blocks, each once, in the given order.
    fn agents(
        &self,
        default: Option<Sourced<Vec<AgentName>>>,
        given: &Option<Spanned<Vec<String>>>,
    ) -> Result<Option<Sourced<Vec<AgentName>>>, ConfigError> {
        let as_names = default.map(|s| {
            let names = s.value.iter().map(|a| a.as_str().to_owned()).collect();
            Sourced::new(names, s.origin)
        });
        let Some(names) = self.take(as_names, given, "agents")? else {
            return Ok(None);
        };
        let mut agents = Vec::new();
        for name in &names.value {
            let agent = agent_with_blocks(name).map_err(|expected| ConfigError::Invalid {
                origin: names.origin.clone(),
                key: format!("tools.{}.agents", self.tag),
                value: format!("{name:?}"),
                expected,
            })?;
            if !agents.contains(&agent) {
                agents.push(agent);
            }
        }
        Ok(Some(Sourced::new(agents, names.origin)))
    }

    fn flag(
        &self,
        default: Option<Sourced<bool>>,
        given: &Option<Spanned<bool>>,
        key: &str,
    ) -> Result<Option<Sourced<bool>>, ConfigError> {
        self.take(default, given, key)
    }
}

/// Special case in `seek config`: one `[tools.<tag>]` table per tool, with the keys it takes.
pub(super) fn render(config: &super::Config, _: &super::Env, out: &mut String) {
    use super::setting::{line, toml_list, toml_str};
    use std::fmt::Write as _;
    for tool in &config.tools {
        let _ = writeln!(out, "\n[tools.{}]", tool.tag);
        let numbers = [
            ("timeout_secs", &tool.timeout_secs),
            ("idle_timeout_secs", &tool.idle_timeout_secs),
            ("compile_timeout_secs", &tool.compile_timeout_secs),
            ("max_read_bytes", &tool.max_read_bytes),
        ];
        for (key, value) in numbers {
            if let Some(v) = value {
                line(out, key, &v.value.to_string(), &v.origin, None);
            }
        }
        for (key, value) in [("command", &tool.command), ("runtime", &tool.runtime)] {
            if let Some(v) = value {
                line(out, key, &toml_str(&v.value), &v.origin, None);
            }
        }
        if let Some(v) = &tool.allow_rerun {
            line(out, "allow_rerun", &v.value.to_string(), &v.origin, None);
        }
        if let Some(v) = &tool.agents {
            let names = toml_list(v.value.iter().map(|a| a.as_str()));
            line(out, "agents", &names, &v.origin, None);
        }
    }
}

/// The agent `name` names, if its wire entry says its blocks may call MCP tools (an agent
/// without tools, or one that does not run blocks itself, cannot call one).
fn agent_with_blocks(name: &str) -> Result<AgentName, String> {
    let with_mcp = || -> String {
        let names: Vec<&str> = AgentName::LISTED
            .iter()
            .filter(|agent| agent.runs() == Runs::Blocks && agent.calls_mcp())
            .map(|agent| agent.as_str())
            .collect();
        names.join(", ")
    };
    let agent = AgentName::find(name)
        .ok_or_else(|| format!("expected agents that can call MCP tools: {}", with_mcp()))?;
    match (agent, agent.runs()) {
        (AgentName::Auto, _) => Err(format!(
            "auto is not an agent: the router hands each task to one of them; name those: {}",
            with_mcp()
        )),
        (_, Runs::Plan) => {
            Err("the planner's steps run the coder and file agents, which have the tool".to_owned())
        }
        (_, Runs::Web) => Err(
            "the web agent runs no code blocks; agents that can call MCP tools: ".to_owned()
                + &with_mcp(),
        ),
        (_, Runs::Blocks) if agent.calls_mcp() => Ok(agent),
        (_, Runs::Blocks) => Err(format!(
            "the {agent} agent runs no tools; agents that can call MCP tools: {}",
            with_mcp()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_has_one_table_named_by_its_tag_in_the_tools_order() {
        let kinds: Vec<ToolKind> = ToolsFile::TABLES.iter().map(|(kind, _)| *kind).collect();
        assert_eq!(kinds, ToolKind::ALL);
        for (kind, name) in ToolsFile::TABLES {
            assert_eq!(*name, kind.tag());
        }
    }
}

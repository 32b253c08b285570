//! What a tool declares beside its run: which `ToolKind` it is (its wire identity), its class
//! (what kind of work it does, which is how agents choose their tools), and how it is built
//! from its settings. Each tool's file holds its `ToolSpec`; `tools::REGISTRY` lists them.
//!
//! Also the const selection of tools by class that the agents' declarations use. Pure data: it
//! must not run anything.

use super::Tool;
use crate::config::{Config, ToolConfig};
use crate::tool_kind::ToolKind;

/// The kind of work a tool does. An agent names the classes it may use, not the tools, so a
/// new tool of an existing class reaches every agent that uses the class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolClass {
    /// Runs shell commands (`bash`).
    Shell,
    /// Runs a program written in a language (`python`, `c`, `go`, `java`).
    Program,
    /// Finds and reads files by name in the work dir (`file_finder`).
    Files,
    /// Calls a tool of a configured MCP server (`mcp`).
    Mcp,
    /// Searches the web (`web_search`).
    WebSearch,
}

/// One tool's declaration.
#[derive(Debug)]
pub struct ToolSpec {
    /// Its identity: fence tag, aliases, lessons (seek-wire's `tool_kinds!` entry).
    pub kind: ToolKind,
    pub class: ToolClass,
    /// How a line comment starts in its blocks, when a block of only comments and blank lines
    /// is refused as nothing to run (`no_code`); `None`: such a block runs as it is.
    pub line_comment: Option<&'static str>,
    /// The tool, configured with its settings (`[tools.<tag>]`) and the whole configuration;
    /// `None` when it is not built from the configuration alone (`mcp` needs the running
    /// servers: `Toolbox::with_mcp`).
    pub build: fn(ToolConfig, &Config) -> Option<Box<dyn Tool>>,
}

/// The declaration of `kind` in `registry` (every kind has one: a test holds it).
pub fn find(registry: &'static [&'static ToolSpec], kind: ToolKind) -> Option<&'static ToolSpec> {
    registry.iter().copied().find(|spec| spec.kind == kind)
}

/// How many of `registry`'s tools belong to one of `classes`.
pub const fn count_of(registry: &[&ToolSpec], classes: &[ToolClass]) -> usize {
    let mut count = 0;
    let mut c = 0;
    while c < classes.len() {
        let mut t = 0;
        while t < registry.len() {
            if registry[t].class as u8 == classes[c] as u8 {
                count += 1;
            }
            t += 1;
        }
        c += 1;
    }
    count
}

/// `registry`'s tools of `classes`: class by class in the order given, each class's tools in
/// the registry's order. `N` must be `count_of(registry, classes)`; any other is refused when
/// the constant is evaluated, so a wrong count does not compile.
pub const fn of_classes<const N: usize>(
    registry: &[&ToolSpec],
    classes: &[ToolClass],
) -> [ToolKind; N] {
    assert!(
        N == count_of(registry, classes),
        "N must be the number of tools of these classes"
    );
    // Every slot is overwritten below: the assertion holds the count.
    let mut tools = [ToolKind::Bash; N];
    let mut filled = 0;
    let mut c = 0;
    while c < classes.len() {
        let mut t = 0;
        while t < registry.len() {
            if registry[t].class as u8 == classes[c] as u8 {
                tools[filled] = registry[t].kind;
                filled += 1;
            }
            t += 1;
        }
        c += 1;
    }
    tools
}

/// The built-in tools of the given classes, as a `&'static [ToolKind]` for an agent's
/// declaration: `tools_of!(ToolClass::Shell, ToolClass::Files)`.
macro_rules! tools_of {
    ($($class:expr),* $(,)?) => {{
        const CLASSES: &[$crate::tools::ToolClass] = &[$($class),*];
        const TOOLS: [$crate::tool_kind::ToolKind;
            $crate::tools::count_of($crate::tools::REGISTRY, CLASSES)] =
            $crate::tools::of_classes($crate::tools::REGISTRY, CLASSES);
        &TOOLS
    }};
}
pub(crate) use tools_of;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::REGISTRY;

    #[test]
    fn the_registry_declares_every_tool_once_in_the_wires_order() {
        let kinds: Vec<ToolKind> = REGISTRY.iter().map(|spec| spec.kind).collect();
        assert_eq!(kinds, ToolKind::ALL);
    }

    #[test]
    fn tools_are_selected_class_by_class_in_the_registrys_order() {
        let files_then_shell: [ToolKind; 2] =
            of_classes(REGISTRY, &[ToolClass::Files, ToolClass::Shell]);
        assert_eq!(files_then_shell, [ToolKind::FileFinder, ToolKind::Bash]);
        assert_eq!(count_of(REGISTRY, &[ToolClass::Program]), 4);
        let programs: &[ToolKind] = crate::tools::tools_of!(ToolClass::Program);
        assert_eq!(
            programs,
            [ToolKind::Python, ToolKind::C, ToolKind::Go, ToolKind::Java]
        );
        let none: &[ToolKind] = crate::tools::tools_of!();
        assert!(none.is_empty());
    }

    #[test]
    fn each_tool_but_mcp_is_built_from_the_configuration() {
        let dirs = crate::config::Dirs {
            default_config_file: None,
            data_dir: std::env::temp_dir().join("seek-tool-spec-test"),
        };
        let config = Config::resolve(
            &crate::config::Overrides::default(),
            &crate::config::Env::default(),
            &dirs,
            &std::env::temp_dir(),
        )
        .expect("defaults resolve");
        for spec in REGISTRY {
            let settings = ToolConfig::defaults(spec.kind);
            let built = (spec.build)(settings, &config);
            match built {
                Some(tool) => assert_eq!(tool.kind(), spec.kind),
                None => assert_eq!(spec.kind, ToolKind::Mcp, "only mcp needs its servers"),
            }
        }
    }
}

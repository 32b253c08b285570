//! The built-in tools' identities: one entry per tool in `tool_kinds!` below, holding its fence
//! tag, the aliases small models write for it, and the facts about it that more than one layer
//! needs (how it is taught in a prompt, the file extension an editor wants, whether a `:path`
//! suffix saves its code, whether the model reads its output before finishing).
//!
//! Pure data at the bottom of the graph: it imports nothing of seek's, so the protocol, the
//! configuration, the tools, the agent and the UI all read it instead of spelling tags as
//! strings. It must not know how a tool runs or what its settings are (seek-core's `tools/`
//! does: one file per tool and its line in `tools::REGISTRY`). The tags and aliases are wire
//! strings (fence tags, `tool_type` in JSON, `[tools.<tag>]` tables): they never change.

use std::fmt;

/// What the floors above need to know about one tool without running it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity {
    /// The canonical fence tag, lower case.
    pub tag: &'static str,
    /// Other spellings small models use for the fence tag, lower case, whole words only.
    pub aliases: &'static [&'static str],
    /// The extension of a file holding the tool's code, so an editor picks the right syntax.
    pub file_extension: &'static str,
    /// How the tool is taught in a system prompt: an example block and what it does.
    pub lesson: &'static str,
    /// The one-line lesson of the compact prompt small models get.
    pub short_lesson: &'static str,
    /// A `:path` after the tag saves the block's code there once it ran.
    pub saves_code: bool,
    /// After a successful round that ended with this tool, its output is for the model to read.
    pub output_is_read: bool,
}

/// Declares the built-in tools: for each, its variant and its `Identity`, one entry per tool.
/// The enum, `ToolKind::ALL` (in declaration order) and `ToolKind::identity` come from it, so
/// a tool's wire facts are written in exactly one place.
macro_rules! tool_kinds {
    ($($(#[$doc:meta])* $variant:ident => $identity:expr,)+) => {
        /// One built-in tool.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum ToolKind {
            $($(#[$doc])* $variant,)+
        }

        impl ToolKind {
            /// Every built-in tool, in the order they are listed and taught.
            pub const ALL: [ToolKind; [$(ToolKind::$variant),+].len()] = [$(ToolKind::$variant),+];

            /// Everything the wire and the prompts know about this tool.
            pub const fn identity(self) -> &'static Identity {
                match self {
                    $(ToolKind::$variant => &$identity,)+
                }
            }
        }
    };
}

// Adding a tool: one entry here (its wire identity), its file in seek-core's `tools/`, and its
// line in `tools::REGISTRY` there.
tool_kinds! {
    Bash => Identity {
        tag: "bash",
        aliases: &["sh", "shell"],
        file_extension: "sh",
        lesson: "```bash\nls -la\n```  runs in bash.",
        short_lesson: "```bash  shell commands",
        saves_code: true,
        // AgenticSeek's rule: a shell command inspects something the model has yet to see.
        output_is_read: true,
    },
    Python => Identity {
        tag: "python",
        aliases: &["py", "python3"],
        file_extension: "py",
        lesson: "```python\nprint(\"hello\")\n```  runs with Python 3.",
        short_lesson: "```python  a Python 3 program",
        saves_code: true,
        // A program's successful run is the answer.
        output_is_read: false,
    },
    C => Identity {
        tag: "c",
        aliases: &[],
        file_extension: "c",
        lesson: "```c\n#include <stdio.h>\nint main(void) { printf(\"hi\\n\"); return 0; }\n```  is compiled with gcc and run.",
        short_lesson: "```c  a C program with main(), compiled with gcc and run",
        saves_code: true,
        output_is_read: false,
    },
    Go => Identity {
        tag: "go",
        aliases: &["golang"],
        file_extension: "go",
        lesson: "```go\npackage main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hi\") }\n```  is compiled and run (standard library only).",
        short_lesson: "```go  a Go program (package main), compiled and run",
        saves_code: true,
        output_is_read: false,
    },
    Java => Identity {
        tag: "java",
        aliases: &[],
        file_extension: "java",
        lesson: "```java\npublic class Hello {\n    public static void main(String[] args) { System.out.println(\"hi\"); }\n}\n```  is compiled and run.",
        short_lesson: "```java  a Java class with main, compiled and run",
        saves_code: true,
        output_is_read: false,
    },
    FileFinder => Identity {
        tag: "file_finder",
        aliases: &[],
        file_extension: "txt",
        lesson: "```file_finder\nname=notes.txt\n```  finds files by name in the work directory; add a line `action=read` to read the best match.",
        short_lesson: "```file_finder  a line name=FILE finds that file",
        // Its suffix is an action (`:read`), not a path.
        saves_code: false,
        output_is_read: false,
    },
    /// Calls a tool of a configured MCP server (`server.tool` then its arguments).
    Mcp => Identity {
        tag: "mcp",
        aliases: &[],
        file_extension: "txt",
        lesson: "```mcp\nserver.tool\nkey: value\n```  calls a tool of an MCP server (the tools are listed below): its name on the first line, then one `key: value` line per argument (or a JSON object).",
        short_lesson: "```mcp  server.tool, then key: value lines: calls an MCP tool",
        saves_code: false,
        output_is_read: true,
    },
    /// Searches the web (SearxNG): the query on the block's first line.
    WebSearch => Identity {
        tag: "web_search",
        aliases: &["search", "websearch"],
        file_extension: "txt",
        lesson: "```web_search\nrust async tutorial\n```  searches the web; the results are titles, snippets and links.",
        short_lesson: "```web_search  a query: searches the web",
        saves_code: false,
        output_is_read: true,
    },
}

impl ToolKind {
    /// The canonical fence tag, lower case.
    pub const fn tag(self) -> &'static str {
        self.identity().tag
    }

    /// Other spellings small models use for the tool's fence tag, lower case. Whole words only:
    /// `javascript` is never `java`, `cpp` never `c`.
    pub const fn aliases(self) -> &'static [&'static str] {
        self.identity().aliases
    }

    /// The tool whose canonical tag is exactly `tag`.
    pub fn from_tag(tag: &str) -> Option<ToolKind> {
        Self::ALL.into_iter().find(|kind| kind.tag() == tag)
    }

    /// The tool a lower-case fence word names, by its tag or one of its aliases.
    pub fn from_word(lower: &str) -> Option<ToolKind> {
        Self::ALL
            .into_iter()
            .find(|kind| kind.tag() == lower || kind.aliases().contains(&lower))
    }

    /// The extension a file holding the tool's code has, so an editor picks the right syntax.
    pub const fn file_extension(self) -> &'static str {
        self.identity().file_extension
    }

    /// How the tool is taught in a system prompt: an example block and what it does.
    pub const fn lesson(self) -> &'static str {
        self.identity().lesson
    }

    /// The one-line lesson of the compact prompt small models get: the tag and what it runs.
    pub const fn short_lesson(self) -> &'static str {
        self.identity().short_lesson
    }

    /// Whether a `:path` after the tag saves the block's code there once it ran. file_finder's
    /// suffix is an action (`:read`), not a path.
    pub const fn saves_code(self) -> bool {
        self.identity().saves_code
    }

    /// Whether the coder, after a round whose blocks all succeeded and ended with this tool,
    /// gets another turn to read the output (AgenticSeek's rule: a shell command inspects
    /// something the model has yet to see; a program's successful run is the answer).
    pub const fn coder_reads_output(self) -> bool {
        self.identity().output_is_read
    }
}

impl fmt::Display for ToolKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.tag())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_and_aliases_name_one_tool_each() {
        let mut words: Vec<&str> = ToolKind::ALL
            .iter()
            .flat_map(|k| std::iter::once(k.tag()).chain(k.aliases().iter().copied()))
            .collect();
        let count = words.len();
        words.sort_unstable();
        words.dedup();
        assert_eq!(words.len(), count, "a word names two tools");
        for word in words {
            assert_eq!(word, word.to_ascii_lowercase(), "{word} is not lower case");
        }
    }

    #[test]
    fn every_tag_and_alias_resolves_to_its_tool() {
        for kind in ToolKind::ALL {
            assert_eq!(ToolKind::from_tag(kind.tag()), Some(kind));
            assert_eq!(ToolKind::from_word(kind.tag()), Some(kind));
            for alias in kind.aliases() {
                assert_eq!(ToolKind::from_word(alias), Some(kind), "{alias}");
                assert_eq!(ToolKind::from_tag(alias), None, "{alias} is not a tag");
            }
        }
        for word in ["javascript", "cpp", "golang2", "PY", ""] {
            assert_eq!(ToolKind::from_word(word), None, "{word}");
        }
    }

    #[test]
    fn the_wire_tags_do_not_change() {
        let tags: Vec<&str> = ToolKind::ALL.iter().map(|k| k.tag()).collect();
        assert_eq!(
            tags,
            [
                "bash",
                "python",
                "c",
                "go",
                "java",
                "file_finder",
                "mcp",
                "web_search"
            ]
        );
        assert_eq!(ToolKind::FileFinder.to_string(), "file_finder");
    }

    #[test]
    fn the_aliases_and_the_facts_of_each_tool_do_not_change() {
        let facts: Vec<(&str, &[&str], &str, bool, bool)> = ToolKind::ALL
            .iter()
            .map(|k| {
                (
                    k.tag(),
                    k.aliases(),
                    k.file_extension(),
                    k.saves_code(),
                    k.coder_reads_output(),
                )
            })
            .collect();
        let expected: [(&str, &[&str], &str, bool, bool); 8] = [
            ("bash", &["sh", "shell"], "sh", true, true),
            ("python", &["py", "python3"], "py", true, false),
            ("c", &[], "c", true, false),
            ("go", &["golang"], "go", true, false),
            ("java", &[], "java", true, false),
            ("file_finder", &[], "txt", false, false),
            ("mcp", &[], "txt", false, true),
            ("web_search", &["search", "websearch"], "txt", false, true),
        ];
        assert_eq!(facts, expected);
    }

    #[test]
    fn each_lesson_shows_a_block_with_the_tools_own_tag() {
        for kind in ToolKind::ALL {
            assert!(
                kind.lesson().starts_with(&format!("```{}\n", kind.tag())),
                "{kind}"
            );
        }
    }
}

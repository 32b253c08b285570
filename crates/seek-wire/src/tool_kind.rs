//! The built-in tools' identities: one `ToolKind` per tool, with its fence tag, the aliases small
//! models write for it, and the facts about it that more than one layer needs (how it is taught
//! in a prompt, the file extension an editor wants, whether a `:path` suffix saves its code,
//! whether the coder reads its output before finishing).
//!
//! Pure data at the bottom of the graph: it imports nothing of seek's, so the protocol, the
//! configuration, the tools, the agent and the UI all read it instead of spelling tags as
//! strings. It must not know how a tool runs or what its settings are. The tags are wire
//! strings (fence tags, `tool_type` in JSON, `[tools.<tag>]` tables): they never change.

use std::fmt;

/// One built-in tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ToolKind {
    Bash,
    Python,
    C,
    Go,
    Java,
    FileFinder,
    /// Calls a tool of a configured MCP server (`server.tool` then its arguments).
    Mcp,
    /// Searches the web (SearxNG): the query on the block's first line.
    WebSearch,
}

impl ToolKind {
    /// Every built-in tool, in the order they are listed and taught.
    pub const ALL: [ToolKind; 8] = [
        ToolKind::Bash,
        ToolKind::Python,
        ToolKind::C,
        ToolKind::Go,
        ToolKind::Java,
        ToolKind::FileFinder,
        ToolKind::Mcp,
        ToolKind::WebSearch,
    ];

    /// The canonical fence tag, lower case.
    pub const fn tag(self) -> &'static str {
        match self {
            ToolKind::Bash => "bash",
            ToolKind::Python => "python",
            ToolKind::C => "c",
            ToolKind::Go => "go",
            ToolKind::Java => "java",
            ToolKind::FileFinder => "file_finder",
            ToolKind::Mcp => "mcp",
            ToolKind::WebSearch => "web_search",
        }
    }

    /// Other spellings small models use for the tool's fence tag, lower case. Whole words only:
    /// `javascript` is never `java`, `cpp` never `c`.
    pub const fn aliases(self) -> &'static [&'static str] {
        match self {
            ToolKind::Bash => &["sh", "shell"],
            ToolKind::Python => &["py", "python3"],
            ToolKind::Go => &["golang"],
            ToolKind::WebSearch => &["search", "websearch"],
            ToolKind::C | ToolKind::Java | ToolKind::FileFinder | ToolKind::Mcp => &[],
        }
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
        match self {
            ToolKind::Bash => "sh",
            ToolKind::Python => "py",
            ToolKind::C => "c",
            ToolKind::Go => "go",
            ToolKind::Java => "java",
            ToolKind::FileFinder | ToolKind::Mcp | ToolKind::WebSearch => "txt",
        }
    }

    /// How the tool is taught in a system prompt: an example block and what it does.
    pub const fn lesson(self) -> &'static str {
        match self {
            ToolKind::Bash => "```bash\nls -la\n```  runs in bash.",
            ToolKind::Python => "```python\nprint(\"hello\")\n```  runs with Python 3.",
            ToolKind::C => {
                "```c\n#include <stdio.h>\nint main(void) { printf(\"hi\\n\"); return 0; }\n```  is compiled with gcc and run."
            }
            ToolKind::Go => {
                "```go\npackage main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hi\") }\n```  is compiled and run (standard library only)."
            }
            ToolKind::Java => {
                "```java\npublic class Hello {\n    public static void main(String[] args) { System.out.println(\"hi\"); }\n}\n```  is compiled and run."
            }
            ToolKind::FileFinder => {
                "```file_finder\nname=notes.txt\n```  finds files by name in the work directory; add a line `action=read` to read the best match."
            }
            ToolKind::Mcp => {
                "```mcp\nserver.tool\nkey: value\n```  calls a tool of an MCP server (the tools are listed below): its name on the first line, then one `key: value` line per argument (or a JSON object)."
            }
            ToolKind::WebSearch => {
                "```web_search\nrust async tutorial\n```  searches the web; the results are titles, snippets and links."
            }
        }
    }

    /// The one-line lesson of the compact prompt small models get: the tag and what it runs.
    pub const fn short_lesson(self) -> &'static str {
        match self {
            ToolKind::Bash => "```bash  shell commands",
            ToolKind::Python => "```python  a Python 3 program",
            ToolKind::C => "```c  a C program with main(), compiled with gcc and run",
            ToolKind::Go => "```go  a Go program (package main), compiled and run",
            ToolKind::Java => "```java  a Java class with main, compiled and run",
            ToolKind::FileFinder => "```file_finder  a line name=FILE finds that file",
            ToolKind::Mcp => "```mcp  server.tool, then key: value lines: calls an MCP tool",
            ToolKind::WebSearch => "```web_search  a query: searches the web",
        }
    }

    /// Whether a `:path` after the tag saves the block's code there once it ran. file_finder's
    /// suffix is an action (`:read`), not a path.
    pub const fn saves_code(self) -> bool {
        !matches!(
            self,
            ToolKind::FileFinder | ToolKind::Mcp | ToolKind::WebSearch
        )
    }

    /// Whether the coder, after a round whose blocks all succeeded and ended with this tool,
    /// gets another turn to read the output (AgenticSeek's rule: a shell command inspects
    /// something the model has yet to see; a program's successful run is the answer).
    pub const fn coder_reads_output(self) -> bool {
        matches!(self, ToolKind::Bash | ToolKind::Mcp | ToolKind::WebSearch)
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
    fn each_lesson_shows_a_block_with_the_tools_own_tag() {
        for kind in ToolKind::ALL {
            assert!(
                kind.lesson().starts_with(&format!("```{}\n", kind.tag())),
                "{kind}"
            );
        }
    }
}

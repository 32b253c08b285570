//! Tool tags: which fence info strings name which tool.
//!
//! Owns the exact, case-insensitive matching rule; the aliases small models need (`py` →
//! `python`, `sh` → `bash`, …) are `ToolKind`'s. It must not know what a tool does: an agent
//! hands it the set of tags its tools own, and everything else stays ordinary markdown.

use std::borrow::Cow;

use crate::tool_kind::ToolKind;

/// The canonical form of a fence's tag word: lower-cased, with aliases resolved.
///
/// `javascript` stays `javascript` (never `java`), `cpp` stays `cpp` (never `c`): matching is on
/// the whole word, unlike AgenticSeek's prefix test.
pub fn canonical_tag(word: &str) -> Cow<'_, str> {
    let lower: Cow<'_, str> = if word.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(word.to_ascii_lowercase())
    } else {
        Cow::Borrowed(word)
    };
    match ToolKind::from_word(&lower) {
        Some(kind) => Cow::Borrowed(kind.tag()),
        None => lower,
    }
}

/// The tags owned by the tools of one agent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolTags {
    tags: Vec<String>,
}

impl ToolTags {
    /// Builds the set from canonical tags (`"python"`, `"bash"`, …).
    pub fn new<I, S>(tags: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut tags: Vec<String> = tags
            .into_iter()
            .map(|t| canonical_tag(&t.into()).into_owned())
            .collect();
        tags.sort();
        tags.dedup();
        Self { tags }
    }

    /// The canonical tag of `word` if one of these tools owns it.
    pub fn resolve(&self, word: &str) -> Option<&str> {
        let canonical = canonical_tag(word);
        self.tags
            .iter()
            .find(|t| t.as_str() == canonical)
            .map(String::as_str)
    }

    /// The canonical tags, sorted.
    pub fn tags(&self) -> impl Iterator<Item = &str> {
        self.tags.iter().map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn coder() -> ToolTags {
        ToolTags::new(["bash", "python", "c", "go", "java", "file_finder"])
    }

    #[test]
    fn aliases_resolve_to_their_tool() {
        let tags = coder();
        for (word, tool) in [
            ("py", "python"),
            ("python3", "python"),
            ("Python", "python"),
            ("PY", "python"),
            ("sh", "bash"),
            ("shell", "bash"),
            ("golang", "go"),
            ("C", "c"),
        ] {
            assert_eq!(tags.resolve(word), Some(tool), "{word}");
        }
    }

    #[test]
    fn prefixes_of_other_languages_do_not_match() {
        // AgenticSeek §1.3 [probed]: javascript ran as java, cpp/css/csv as c, golang as go.
        let tags = coder();
        for word in [
            "javascript",
            "cpp",
            "css",
            "csv",
            "gofmt",
            "python2",
            "bashrc",
            "json",
        ] {
            assert_eq!(tags.resolve(word), None, "{word}");
        }
    }

    #[test]
    fn aliases_only_apply_to_tools_the_agent_owns() {
        let tags = ToolTags::new(["bash"]);
        assert_eq!(tags.resolve("py"), None);
        assert_eq!(tags.resolve("sh"), Some("bash"));
    }
}

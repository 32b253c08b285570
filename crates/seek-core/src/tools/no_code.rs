//! A block with nothing to run: only blank lines and line comments, in a block of a tool that
//! declares its line comment (`ToolSpec::line_comment`: bash's and python's `#`).
//! Run as it is, it "succeeds" with no output, and a small model that wrote `# delete junk.tmp`
//! instead of `rm junk.tmp` would see its task end as done. seek answers it as a failure that
//! says what is missing instead.
//!
//! Pure text; it must not run anything. Blocks saved to a file (`:path`) are not judged here:
//! a file of comments may be what was asked for.

use crate::tool_kind::ToolKind;

/// The failure told when `code` of `kind` has nothing to run, `None` when it has.
pub fn refused(kind: ToolKind, tag: &str, code: &str) -> Option<String> {
    let comment = super::spec(kind)?.line_comment?;
    let has_code = code.lines().any(|line| {
        let line = line.trim();
        !line.is_empty() && !line.starts_with(comment)
    });
    (!has_code).then(|| {
        format!(
            "the {tag} block holds no command, only comments or blank lines, so nothing ran and nothing was done. Write the commands themselves, for example `ls`, not `# list the files`."
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_and_blank_lines_are_nothing_to_run() {
        for code in [
            "# delete junk.tmp with bash\n",
            "#!/bin/bash\n\n# replace with your command\n",
            "",
            "  \n",
        ] {
            assert!(refused(ToolKind::Bash, "bash", code).is_some(), "{code:?}");
        }
        let told = refused(ToolKind::Python, "python", "# Hello World\n").unwrap_or_default();
        assert!(
            told.starts_with("the python block holds no command, only comments"),
            "{told}"
        );
    }

    #[test]
    fn a_line_of_code_is_something_to_run() {
        assert_eq!(
            refused(ToolKind::Bash, "bash", "# remove it\nrm junk.tmp\n"),
            None
        );
        assert_eq!(refused(ToolKind::Python, "python", "print('#')"), None);
        assert_eq!(refused(ToolKind::Bash, "sh", "  ls # list\n"), None);
    }

    #[test]
    fn other_languages_are_left_to_their_compiler() {
        assert_eq!(refused(ToolKind::C, "c", "// nothing\n"), None);
        assert_eq!(refused(ToolKind::FileFinder, "file_finder", "# x\n"), None);
    }
}

//! Editing a block in the user's editor (`$VISUAL`, `$EDITOR`, else `vi`) before it runs.
//!
//! Owns the temporary file and the editor's run; the caller hands the terminal over first and
//! takes it back after. It must not draw.

use crate::tool_kind::ToolKind;

/// Opens `code` (a block of `tool`'s, if seek knows the tool) in the editor and returns the
/// edited text, or why there is none.
pub(crate) fn edit(tool: Option<ToolKind>, code: &str) -> Result<String, String> {
    let dir = tempfile::Builder::new()
        .prefix("seek-edit-")
        .tempdir()
        .map_err(|e| format!("cannot create a file to edit: {e}"))?;
    // The extension gives the editor the right syntax.
    let extension = tool.map_or("txt", ToolKind::file_extension);
    let path = dir.path().join(format!("block.{extension}"));
    std::fs::write(&path, code).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    let editor = std::env::var("VISUAL")
        .or_else(|_| std::env::var("EDITOR"))
        .ok()
        .filter(|e| !e.trim().is_empty())
        .unwrap_or_else(|| "vi".to_owned());
    // Through the shell, so `EDITOR="code --wait"` works.
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("sh")
        .arg(&path)
        .status()
        .map_err(|e| format!("cannot start the editor `{editor}`: {e}"))?;
    if !status.success() {
        return Err(format!(
            "the editor `{editor}` ended with {status}: the block was not changed"
        ));
    }
    std::fs::read_to_string(&path).map_err(|e| format!("cannot read the edited block: {e}"))
}

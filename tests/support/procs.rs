//! Looking for processes in `/proc`, to check that nothing a block started survives it.

#![allow(dead_code)]

/// Pids of live (non-zombie) processes whose command line contains `marker`, and of zombies too
/// when `include_zombies` is set.
pub fn processes_with(marker: &str, include_zombies: bool) -> Vec<(i32, String)> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let zombie = stat
            .rfind(')')
            .and_then(|i| stat.get(i + 2..i + 3))
            .is_some_and(|s| s == "Z");
        if cmdline.contains(marker) || (include_zombies && zombie && stat.contains(marker)) {
            found.push((pid, cmdline));
        }
    }
    found
}

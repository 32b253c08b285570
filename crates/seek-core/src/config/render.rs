//! `seek config`: the effective configuration as TOML, each value commented with its origin.
//!
//! Owns the walk over the settings table (`settings::SECTIONS`, in its order): each key's lines,
//! then each section's special case (the per-tool tables, the MCP servers). It must not resolve
//! anything itself, nor show a secret (the special cases mask them: `show.rs`, `mcp.rs`).

use std::fmt::Write as _;

use super::{Config, ConfigFile, Env};

/// Renders `config` as a valid TOML document. `env` is consulted only to say whether the API key
/// variable is set; its value is never printed.
pub fn render(config: &Config, env: &Env) -> String {
    let mut out = String::new();
    let file_line = match &config.file {
        ConfigFile::Loaded(path) => format!("# config file: {}", path.display()),
        ConfigFile::Absent(path) => format!(
            "# config file: {} (not present; write one to change defaults)",
            path.display()
        ),
        ConfigFile::NoLocation => {
            "# config file: none (no home directory; use --config or SEEK_CONFIG)".into()
        }
    };
    let _ = writeln!(out, "# seek: effective configuration\n{file_line}");
    let _ = writeln!(out, "# data dir: {}\n", config.data_dir.display());
    for section in &super::settings::SECTIONS {
        if let Some(header) = section.header {
            let _ = writeln!(out, "\n[{header}]");
        }
        for row in section.rows {
            row.render(config, env, &mut out);
        }
        if let Some(then) = section.then {
            then(config, env, &mut out);
        }
    }
    out
}

//! Which of seek's environment variables a block does not inherit: credentials, and the
//! addresses of services that act with the user's authority (`SESSION_HANDLES`), unless the
//! configuration's `[exec] pass_env` names them.
//!
//! Owns the one list of such handles and the decision per variable; it must not spawn anything
//! (the runner removes the names it is given).

use std::ffi::{OsStr, OsString};

use super::{names::is_credential_name, url};

/// Variables that hand a program a way into the user's session rather than a value: with them a
/// block could type into other terminal panes or windows, sign or decrypt as the user, or drive
/// the desktop or a root-equivalent container engine. Removing the variable hides the address;
/// it does not close the socket (see docs/safety.md).
pub const SESSION_HANDLES: &[&str] = &[
    // Terminal multiplexers and terminals or editors with remote control: `tmux send-keys`,
    // `kitty @ send-text`, `wezterm cli send-text`, `nvim --remote-send`, `code`.
    "TMUX",
    "TMUX_PANE",
    "STY",
    "ZELLIJ",
    "ZELLIJ_PANE_ID",
    "ZELLIJ_SESSION_NAME",
    "KITTY_LISTEN_ON",
    "WEZTERM_UNIX_SOCKET",
    "NVIM",
    "NVIM_LISTEN_ADDRESS",
    "VSCODE_IPC_HOOK_CLI",
    // Credential agents and tickets: ssh, gpg, the GNOME keyring, Kerberos.
    "SSH_AUTH_SOCK",
    "SSH_AGENT_PID",
    "GPG_AGENT_INFO",
    "GNOME_KEYRING_CONTROL",
    "KRB5CCNAME",
    // The desktop: the session bus, the display server (which lets a client inject keystrokes
    // into other windows), the session manager, window-manager IPC, and the runtime dir where
    // those sockets live.
    "DBUS_SESSION_BUS_ADDRESS",
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "XAUTHORITY",
    "SESSION_MANAGER",
    "SWAYSOCK",
    "I3SOCK",
    "HYPRLAND_INSTANCE_SIGNATURE",
    "XDG_RUNTIME_DIR",
    // Container engines (root-equivalent on most machines).
    "DOCKER_HOST",
    "CONTAINER_HOST",
    // seek's own model server address, which may carry credentials.
    "SEEK_BASE_URL",
];

/// Whether a block must not inherit `name=value`: its name looks like a credential's or is one of
/// the `configured` credential variables (`api_key_env`, the MCP servers'
/// `bearer_token_env_var`s: `Config::credential_vars`), its value holds a URL with a password, or
/// it is a session handle. `pass_env` (`[exec] pass_env`, exact names) lets any variable through.
pub(crate) fn is_withheld(
    name: &str,
    value: &str,
    configured: &[&str],
    pass_env: &[String],
) -> bool {
    !pass_env.iter().any(|p| p == name)
        && (SESSION_HANDLES.contains(&name)
            || is_credential_name(name)
            || configured.contains(&name)
            || url::has_password(value))
}

/// The names, exactly as in the environment, that blocks must not inherit from `vars`
/// (normally `std::env::vars_os()`).
pub fn withheld_names(
    vars: impl IntoIterator<Item = (OsString, OsString)>,
    configured: &[&str],
    pass_env: &[String],
) -> Vec<OsString> {
    vars.into_iter()
        .filter(|(name, value)| is_withheld(&lossy(name), &lossy(value), configured, pass_env))
        .map(|(name, _)| name)
        .collect()
}

fn lossy(s: &OsStr) -> std::borrow::Cow<'_, str> {
    s.to_string_lossy()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(pairs: &[(&str, &str)], api_key_env: Option<&str>, pass: &[&str]) -> Vec<String> {
        let pass: Vec<String> = pass.iter().map(|p| (*p).to_owned()).collect();
        let vars = pairs
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        withheld_names(vars, api_key_env.as_slice(), &pass)
            .into_iter()
            .map(|n| n.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn credentials_handles_and_url_passwords_are_withheld() {
        let got = names(
            &[
                ("OPENAI_API_KEY", "a"),
                ("GITHUB_TOKEN", "b"),
                ("DATABASE_URL", "postgres://u:pw@db/app"),
                ("PLAIN_URL", "https://example.com/x"),
                ("TMUX", "/tmp/tmux-1000/default,1,0"),
                ("MY_LLM", "k"),
                ("PATH", "/bin"),
                ("PWD", "/w"),
                ("KEYBOARD_LAYOUT", "us"),
            ],
            Some("MY_LLM"),
            &[],
        );
        assert_eq!(
            got,
            [
                "OPENAI_API_KEY",
                "GITHUB_TOKEN",
                "DATABASE_URL",
                "TMUX",
                "MY_LLM"
            ]
        );
    }

    #[test]
    fn pass_env_lets_any_of_them_through() {
        let got = names(
            &[
                ("GITHUB_TOKEN", "b"),
                ("SSH_AUTH_SOCK", "/run/agent"),
                ("DATABASE_URL", "postgres://u:pw@db/app"),
            ],
            None,
            &["GITHUB_TOKEN", "SSH_AUTH_SOCK", "DATABASE_URL"],
        );
        assert!(got.is_empty(), "{got:?}");
    }

    #[test]
    fn every_handle_is_withheld_whatever_its_value() {
        for name in SESSION_HANDLES {
            assert!(is_withheld(name, "", &[], &[]), "{name}");
        }
    }

    #[test]
    fn names_that_are_not_utf8_are_returned_as_they_are() {
        use std::os::unix::ffi::OsStringExt;
        let name = OsString::from_vec(b"BAD_\xffTOKEN".to_vec());
        let got = withheld_names([(name.clone(), OsString::from("v"))], &[], &[]);
        assert_eq!(got, [name]);
    }
}

//! Which environment variable names look like they hold credentials.
//!
//! Pure string classification; it must not read the environment or decide what happens to a
//! variable (that is `inherit` and `masker`).

/// Name parts (split at `_`, other punctuation and camelCase humps, any case, trailing digits
/// ignored, a plural `S` allowed) that mark a credential. The list plus `PAT` (personal
/// access tokens: `GITHUB_PAT`), `APIKEY`, `DSN` (Sentry-style DSNs carry a key), `CREDS`, `JWT`,
/// `PASSPHRASE`, `AUTHORIZATION`, `OAUTH`, `BEARER`, `AUTHTOKEN` and `SSHPASS` (sshpass's password).
const CREDENTIAL_PARTS: &[&str] = &[
    "KEY",
    "SECRET",
    "TOKEN",
    "PASS",
    "PASSWD",
    "PASSWORD",
    "PASSPHRASE",
    "PWD",
    "AUTH",
    "AUTHORIZATION",
    "CREDENTIAL",
    "CREDS",
    "PRIVATE",
    "WEBHOOK",
    "COOKIE",
    "SESSION",
    "PAT",
    "APIKEY",
    "DSN",
    "JWT",
    "OAUTH",
    "BEARER",
    "AUTHTOKEN",
    "SSHPASS",
];

/// Words that mark a credential even inside a longer part (`PGPASSWORD`, `DBPASSWD`,
/// `CLIENTSECRET`). `KEY` and `TOKEN` are not here: `KEYBOARD_LAYOUT` and
/// `TOKENIZERS_PARALLELISM` are ordinary.
const CREDENTIAL_INFIXES: &[&str] = &[
    "PASSWORD",
    "PASSWD",
    "PASSPHRASE",
    "SECRET",
    "APIKEY",
    "CREDENTIAL",
    "AUTHTOKEN",
    "BEARER",
];

/// Names that match the rules but hold nothing secret, set by the shell or the desktop session:
/// `PWD`/`OLDPWD` are the shell's working directories; the `XDG_SESSION_*` and `DESKTOP_SESSION`
/// values are words such as `user`, `wayland` or `ubuntu` (masking them would blank those words
/// in every session file).
const NOT_CREDENTIALS: &[&str] = &[
    "PWD",
    "OLDPWD",
    "DESKTOP_SESSION",
    "XDG_SESSION_CLASS",
    "XDG_SESSION_DESKTOP",
    "XDG_SESSION_ID",
    "XDG_SESSION_PATH",
    "XDG_SESSION_TYPE",
];

/// Whether a variable named `name` looks like it holds a credential (see `CREDENTIAL_PARTS`,
/// `CREDENTIAL_INFIXES` and `NOT_CREDENTIALS`).
pub fn is_credential_name(name: &str) -> bool {
    if NOT_CREDENTIALS.contains(&name) {
        return false;
    }
    let upper = name.to_ascii_uppercase();
    if CREDENTIAL_INFIXES.iter().any(|word| upper.contains(word)) {
        return true;
    }
    name_parts(name).any(|part| {
        let part = part.trim_end_matches(|c: char| c.is_ascii_digit());
        let singular = part.strip_suffix('S').unwrap_or(part);
        CREDENTIAL_PARTS
            .iter()
            .any(|word| *word == part || *word == singular)
    })
}

/// The upper-cased parts of a name: split at anything that is not a letter or digit, and where a
/// lower-case letter is followed by an upper-case one (`githubToken` → `GITHUB`, `TOKEN`).
fn name_parts(name: &str) -> impl Iterator<Item = String> + '_ {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for c in name.chars() {
        if !c.is_ascii_alphanumeric() {
            parts.push(std::mem::take(&mut current));
            previous_lower = false;
            continue;
        }
        if c.is_ascii_uppercase() && previous_lower {
            parts.push(std::mem::take(&mut current));
        }
        previous_lower = c.is_ascii_lowercase();
        current.push(c.to_ascii_uppercase());
    }
    parts.push(current);
    parts.into_iter().filter(|p| !p.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_names_are_recognised_by_their_parts() {
        for name in [
            "AWS_SECRET_ACCESS_KEY",
            "AWS_ACCESS_KEY_ID",
            "AWS_SESSION_TOKEN",
            "GITHUB_PAT",
            "DB_PASSWD",
            "SECRET_KEY",
            "PRIVATE_KEY",
            "TOKEN",
            "NPM_AUTH",
            "SLACK_WEBHOOK_URL",
            "OPENAI_API_KEY",
            "HF_TOKEN",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "MYSQL_PWD",
            "PGPASSWORD",
            "SMTP_PASS",
            "SESSION_COOKIE",
            "SENTRY_DSN",
            "OPENAI_APIKEY",
            "GITHUB_TOKEN_2",
            "DB_PASSWORD_FILE",
            "githubToken",
            "OAuthToken",
            "x-api-key",
            "api_keys",
            "ClientSecret",
            "SSHPASS",
            "NGROK_AUTHTOKEN",
            "NPM_AUTHTOKEN",
            "OAUTHTOKEN",
            "GH_OAUTH",
            "X_BEARER",
            "DISCORD_BOT_BEARERTOKEN",
        ] {
            assert!(is_credential_name(name), "{name} is a credential name");
        }
    }

    #[test]
    fn ordinary_names_are_not_credentials() {
        for name in [
            "PATH",
            "HOME",
            "LANG",
            "TERM",
            "PWD",
            "OLDPWD",
            "USER",
            "SHELL",
            "GOPATH",
            "PYTHONPATH",
            "KEYBOARD_LAYOUT",
            "TOKENIZERS_PARALLELISM",
            "XAUTHORITY",
            "GIT_ASKPASS",
            "PASSAGE",
            "XDG_SESSION_TYPE",
            "DESKTOP_SESSION",
            "MONKEY",
            "PATTERN",
            "",
        ] {
            assert!(!is_credential_name(name), "{name} is not a credential name");
        }
    }
}

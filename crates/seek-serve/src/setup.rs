//! What `seek serve` decides before it listens: the address (loopback unless `--host` names
//! another), whether a token is required and which (`SEEK_API_TOKEN`, else a fresh random one),
//! and the combinations it refuses (`--no-token` off loopback, an empty token).
//!
//! Pure decisions and their messages; it must not bind a socket or print.

use std::net::{IpAddr, Ipv4Addr};

/// The address `seek serve` binds when `--host` is not given.
pub(crate) const DEFAULT_HOST: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
/// AgenticSeek's port, so its clients switch by changing nothing.
pub(crate) const DEFAULT_PORT: u16 = 7777;
/// Where the token comes from when it is not generated.
pub const TOKEN_VAR: &str = "SEEK_API_TOKEN";
/// Tokens shorter than this are refused: they can be guessed.
pub(crate) const MIN_TOKEN_LEN: usize = 16;

/// What the command line asked for.
#[derive(Debug, Clone, Default)]
pub struct ServeArgs {
    pub host: Option<String>,
    pub port: Option<u16>,
    pub no_token: bool,
}

/// How the server lets requests in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenChoice {
    /// `--no-token`: loopback only, loopback `Host`, allowed `Origin`s.
    None,
    /// From `SEEK_API_TOKEN`.
    FromEnv(String),
    /// Made at start-up; printed once.
    Generated(String),
}

impl TokenChoice {
    pub fn token(&self) -> Option<&str> {
        match self {
            Self::None => None,
            Self::FromEnv(t) | Self::Generated(t) => Some(t),
        }
    }
}

/// The decided set-up.
#[derive(Debug, Clone)]
pub struct Plan {
    pub host: IpAddr,
    pub port: u16,
    pub token: TokenChoice,
    /// The address is not loopback: say so loudly.
    pub exposed: bool,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SetupError {
    #[error(
        "--host {0:?} is not an IP address: give one, e.g. --host 127.0.0.1 (loopback) or --host 0.0.0.0 (every interface)"
    )]
    BadHost(String),
    #[error(
        "--no-token is only allowed on a loopback address, not {0}: anyone who can reach it could run code on this machine; drop --no-token (a token is then required) or use --host 127.0.0.1"
    )]
    NoTokenOffLoopback(IpAddr),
    #[error(
        "SEEK_API_TOKEN is set but shorter than {MIN_TOKEN_LEN} characters: use a long random token (or unset it and seek makes one)"
    )]
    WeakToken,
    #[error("cannot make a token (the system's random source failed: {0}); set SEEK_API_TOKEN")]
    NoRandom(String),
    #[error(
        "SEEK_API_TOKEN holds characters an Authorization header cannot carry: use letters, digits and -._~+/="
    )]
    UnsendableToken,
}

/// Decides the set-up from the arguments and `SEEK_API_TOKEN`; `generate` makes a new token
/// (`generate_token`) when one is needed and none is given.
pub fn plan(
    args: &ServeArgs,
    env_token: Option<&str>,
    generate: impl FnOnce() -> std::io::Result<String>,
) -> Result<Plan, SetupError> {
    let host = match args.host.as_deref().map(str::trim) {
        None => DEFAULT_HOST,
        Some("localhost") => DEFAULT_HOST,
        Some(text) => text
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .map_err(|_| SetupError::BadHost(text.to_owned()))?,
    };
    let exposed = !host.is_loopback();
    let token = if args.no_token {
        if exposed {
            return Err(SetupError::NoTokenOffLoopback(host));
        }
        TokenChoice::None
    } else {
        match env_token {
            Some(token) if token.len() < MIN_TOKEN_LEN => return Err(SetupError::WeakToken),
            Some(token) if !token.bytes().all(|b| b.is_ascii_graphic()) => {
                return Err(SetupError::UnsendableToken);
            }
            Some(token) => TokenChoice::FromEnv(token.to_owned()),
            None => {
                TokenChoice::Generated(generate().map_err(|e| SetupError::NoRandom(e.to_string()))?)
            }
        }
    };
    Ok(Plan {
        host,
        port: args.port.unwrap_or(DEFAULT_PORT),
        token,
        exposed,
    })
}

/// A new token: 32 random bytes from the operating system, in hex.
pub(crate) fn generate_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(host: Option<&str>, no_token: bool) -> ServeArgs {
        ServeArgs {
            host: host.map(str::to_owned),
            port: None,
            no_token,
        }
    }

    #[test]
    fn loopback_and_a_generated_token_by_default() {
        let plan = plan(&args(None, false), None, || Ok("generated".into())).expect("plan");
        assert_eq!(plan.host, DEFAULT_HOST);
        assert_eq!(plan.port, DEFAULT_PORT);
        assert!(!plan.exposed);
        assert_eq!(plan.token, TokenChoice::Generated("generated".into()));
    }

    #[test]
    fn the_environments_token_wins_and_must_be_strong() {
        let long = "0123456789abcdef0123";
        let plan = plan(&args(None, false), Some(long), || {
            unreachable!("the environment gives the token")
        })
        .expect("plan");
        assert_eq!(plan.token, TokenChoice::FromEnv(long.into()));
        assert_eq!(
            super::plan(&args(None, false), Some("short"), || Ok(String::new())).err(),
            Some(SetupError::WeakToken)
        );
        assert_eq!(
            super::plan(&args(None, false), Some("0123456789abcdef 0123"), || Ok(
                String::new()
            ))
            .err(),
            Some(SetupError::UnsendableToken)
        );
    }

    #[test]
    fn no_token_only_on_loopback() {
        for host in ["127.0.0.1", "::1", "[::1]", "localhost", "127.0.0.2"] {
            let plan = plan(&args(Some(host), true), None, || Ok(String::new())).expect(host);
            assert_eq!(plan.token, TokenChoice::None, "{host}");
        }
        for host in ["0.0.0.0", "::", "192.168.1.5"] {
            assert!(
                matches!(
                    plan(&args(Some(host), true), None, || Ok(String::new())),
                    Err(SetupError::NoTokenOffLoopback(_))
                ),
                "{host}"
            );
        }
    }

    #[test]
    fn another_address_is_exposed_and_names_are_refused() {
        let plan = plan(&args(Some("0.0.0.0"), false), None, || Ok("t".into())).expect("plan");
        assert!(plan.exposed);
        assert!(matches!(
            super::plan(
                &args(Some("example.com"), false),
                None,
                || Ok(String::new())
            ),
            Err(SetupError::BadHost(_))
        ));
    }

    #[test]
    fn generated_tokens_are_long_and_differ() {
        let a = generate_token().expect("random");
        let b = generate_token().expect("random");
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
    }
}

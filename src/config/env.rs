//! The environment variables seek reads, as a snapshot (so tests can give their own), and which
//! of them hold credentials.
//!
//! Owns reading and classifying variables; it must not apply them to settings.

use std::collections::BTreeMap;

/// A snapshot of the environment variables seek reads.
#[derive(Debug, Clone, Default)]
pub struct Env {
    vars: BTreeMap<String, String>,
}

impl Env {
    /// The process environment (values that are not UTF-8 are read lossily).
    pub fn from_process() -> Self {
        Self {
            vars: std::env::vars_os()
                .map(|(k, v)| {
                    (
                        k.to_string_lossy().into_owned(),
                        v.to_string_lossy().into_owned(),
                    )
                })
                .collect(),
        }
    }

    pub fn from_pairs<I, K, V>(pairs: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        Self {
            vars: pairs
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }

    /// A variable's value; an empty value counts as unset.
    /// Values of variables that hold credentials (`is_credential_name`, or `extra`: the
    /// configured `api_key_env`).
    pub fn secret_values(&self, extra: Option<&str>) -> Vec<String> {
        self.vars
            .iter()
            .filter(|(name, _)| is_credential_name(name) || Some(name.as_str()) == extra)
            .map(|(_, value)| value.clone())
            .filter(|value| !value.is_empty())
            .collect()
    }

    /// Names of the credential variables blocks must not inherit: `is_credential_name` or
    /// `extra`, unless listed in `pass`.
    pub fn secret_names(&self, extra: Option<&str>, pass: &[String]) -> Vec<String> {
        self.vars
            .keys()
            .filter(|name| is_credential_name(name) || Some(name.as_str()) == extra)
            .filter(|name| !pass.iter().any(|p| p == *name))
            .cloned()
            .collect()
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }
}

/// Names that look like credentials: ending in `_API_KEY`, `_TOKEN` or `_SECRET`, `API_KEY`
/// itself, or containing `PASSWORD` (any case).
pub fn is_credential_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    upper.ends_with("_API_KEY")
        || upper == "API_KEY"
        || upper.ends_with("_TOKEN")
        || upper.ends_with("_SECRET")
        || upper.contains("PASSWORD")
}

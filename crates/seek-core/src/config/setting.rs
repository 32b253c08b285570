//! What one setting is, as data: `Key<T, F>` (its file name, environment names, flag, bounds,
//! default, one-line doc, where its value is in the file struct `F`, where it lands in `Config`
//! and how `seek config` shows it), and the `Value` trait that reads and writes a type of
//! setting. The `section!` macro that declares a section's keys once is `section.rs`.
//!
//! Owns the reading of one value from the file, a variable or a flag, and its TOML text. It must
//! not apply precedence (`Resolver::setting` does) nor know any particular key or the file's
//! shape (the settings table, `settings.rs`, does: it names this file, never the reverse).

use std::fmt;
use std::path::PathBuf;

use serde::de::{DeserializeOwned, IntoDeserializer};
use toml::Spanned;

use super::{Config, Env, Overrides, Sourced};

/// A value read from the file, with where it was.
pub(crate) type FileValue<T> = Option<Spanned<T>>;

/// The numbers a setting accepts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Bounds {
    Any,
    /// A whole number in this inclusive range.
    Whole(u64, u64),
    /// A number in this inclusive range.
    Real(f64, f64),
}

/// Why a value was refused: what was expected, and the offending part when it is not the whole
/// value (one entry of a list).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub expected: String,
    pub part: Option<String>,
}

impl From<String> for Refusal {
    fn from(expected: String) -> Self {
        Self {
            expected,
            part: None,
        }
    }
}

/// A type a setting can have: how the file holds it, how a variable or flag spells it, and how
/// `seek config` writes it.
pub trait Value: Clone + fmt::Debug + Sized + 'static {
    /// What the file's serde struct reads.
    type File: Clone + fmt::Debug + DeserializeOwned;
    /// The file's value, checked.
    fn from_file(raw: &Self::File, bounds: Bounds) -> Result<Self, Refusal>;
    /// A variable's or a flag's text, checked.
    fn from_text(text: &str, bounds: Bounds) -> Result<Self, Refusal>;
    /// The file's value as an error message quotes it (strings quoted, numbers bare, as TOML).
    fn quote(raw: &Self::File) -> String {
        format!("{raw:?}")
    }
    /// The value as `seek config` writes it (valid TOML).
    fn to_toml(&self) -> String;
}

fn whole(n: i64, bounds: Bounds) -> Result<u64, Refusal> {
    match (u64::try_from(n), bounds) {
        (Ok(n), Bounds::Whole(min, max)) if (min..=max).contains(&n) => Ok(n),
        (Ok(n), Bounds::Any) => Ok(n),
        (_, Bounds::Whole(min, max)) => {
            Err(format!("expected a whole number from {min} to {max}").into())
        }
        _ => Err(String::from("expected a whole number").into()),
    }
}

fn parse_int(text: &str) -> Result<i64, Refusal> {
    text.trim()
        .parse()
        .map_err(|_| String::from("expected a whole number").into())
}

impl Value for u64 {
    type File = i64;
    fn from_file(raw: &i64, bounds: Bounds) -> Result<Self, Refusal> {
        whole(*raw, bounds)
    }
    fn from_text(text: &str, bounds: Bounds) -> Result<Self, Refusal> {
        whole(parse_int(text)?, bounds)
    }
    fn to_toml(&self) -> String {
        self.to_string()
    }
}

impl Value for u32 {
    type File = i64;
    fn from_file(raw: &i64, bounds: Bounds) -> Result<Self, Refusal> {
        // The bounds of a `u32` key fit a `u32` (a unit test checks the table).
        whole(*raw, bounds).map(|n| u32::try_from(n).unwrap_or(u32::MAX))
    }
    fn from_text(text: &str, bounds: Bounds) -> Result<Self, Refusal> {
        Self::from_file(&parse_int(text)?, bounds)
    }
    fn to_toml(&self) -> String {
        self.to_string()
    }
}

impl Value for i64 {
    type File = i64;
    fn from_file(raw: &i64, _: Bounds) -> Result<Self, Refusal> {
        Ok(*raw)
    }
    fn from_text(text: &str, _: Bounds) -> Result<Self, Refusal> {
        parse_int(text)
    }
    fn to_toml(&self) -> String {
        self.to_string()
    }
}

/// A TOML number that may be written as an integer (`temperature = 0`) or a float.
#[derive(Debug, Clone, Copy, serde::Deserialize)]
#[serde(untagged)]
pub enum Number {
    Int(i64),
    Float(f64),
}

impl Number {
    fn as_f64(self) -> f64 {
        match self {
            Number::Int(i) => i as f64,
            Number::Float(f) => f,
        }
    }
}

fn real(n: f64, bounds: Bounds) -> Result<f64, Refusal> {
    match bounds {
        Bounds::Real(min, max) if !(min..=max).contains(&n) => {
            Err(format!("expected a number from {min} to {max}").into())
        }
        _ => Ok(n),
    }
}

impl Value for f64 {
    type File = Number;
    fn from_file(raw: &Number, bounds: Bounds) -> Result<Self, Refusal> {
        real(raw.as_f64(), bounds)
    }
    fn from_text(text: &str, bounds: Bounds) -> Result<Self, Refusal> {
        let n = text
            .trim()
            .parse()
            .map_err(|_| Refusal::from(String::from("expected a number")))?;
        real(n, bounds)
    }
    fn quote(raw: &Number) -> String {
        raw.as_f64().to_string()
    }
    fn to_toml(&self) -> String {
        format!("{self:?}")
    }
}

impl Value for bool {
    type File = bool;
    fn from_file(raw: &bool, _: Bounds) -> Result<Self, Refusal> {
        Ok(*raw)
    }
    fn from_text(text: &str, _: Bounds) -> Result<Self, Refusal> {
        match text.trim().to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" => Ok(true),
            "false" | "0" | "no" => Ok(false),
            _ => Err(String::from("expected true or false").into()),
        }
    }
    fn to_toml(&self) -> String {
        self.to_string()
    }
}

impl Value for String {
    type File = String;
    fn from_file(raw: &String, _: Bounds) -> Result<Self, Refusal> {
        Ok(raw.clone())
    }
    fn from_text(text: &str, _: Bounds) -> Result<Self, Refusal> {
        Ok(text.to_owned())
    }
    fn to_toml(&self) -> String {
        toml_str(self)
    }
}

/// A path, written as the file gives it (`seek config` shows it as text).
impl Value for PathBuf {
    type File = String;
    fn from_file(raw: &String, _: Bounds) -> Result<Self, Refusal> {
        Ok(PathBuf::from(raw))
    }
    fn from_text(text: &str, _: Bounds) -> Result<Self, Refusal> {
        Ok(PathBuf::from(text))
    }
    fn to_toml(&self) -> String {
        toml_str(&self.display().to_string())
    }
}

impl Value for Vec<String> {
    type File = Vec<String>;
    fn from_file(raw: &Vec<String>, _: Bounds) -> Result<Self, Refusal> {
        Ok(raw.clone())
    }
    fn from_text(text: &str, _: Bounds) -> Result<Self, Refusal> {
        Ok(text
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect())
    }
    fn to_toml(&self) -> String {
        toml_list(self.iter().map(String::as_str))
    }
}

/// A value that is one or more strings (`mirror = "URL"` or `mirror = ["URL", …]`); the key's
/// resolver checks it.
impl Value for toml::Value {
    type File = toml::Value;
    fn from_file(raw: &toml::Value, _: Bounds) -> Result<Self, Refusal> {
        Ok(raw.clone())
    }
    fn from_text(text: &str, _: Bounds) -> Result<Self, Refusal> {
        Ok(toml::Value::String(text.to_owned()))
    }
    fn quote(raw: &toml::Value) -> String {
        raw.to_string()
    }
    fn to_toml(&self) -> String {
        self.to_string()
    }
}

/// An enum setting: a serde enum whose variant names (`rename_all`, `alias`) are the words the
/// file, the variables and the flags accept, in any case and with spaces around.
pub(crate) trait Choice: DeserializeOwned + Copy + fmt::Debug + 'static {
    /// The canonical word (what `seek config` shows).
    fn word(self) -> &'static str;
    /// What a refusal says is accepted: `expected one of: a, b, c` (serde's variant names,
    /// aliases left out: a name is listed when it is its variant's own word).
    fn expected() -> String {
        let canonical: Vec<&str> = variants::<Self>()
            .iter()
            .copied()
            .filter(|name| read::<Self>(name).is_ok_and(|value| value.word() == *name))
            .collect();
        format!("expected one of: {}", canonical.join(", "))
    }
}

/// `word` as serde reads it into `E`.
fn read<E: DeserializeOwned>(word: &str) -> Result<E, Unknown> {
    let words: serde::de::value::StrDeserializer<'_, Unknown> = word.into_deserializer();
    E::deserialize(words)
}

/// Parses `text` into a `Choice` through its serde names.
pub(crate) fn parse_choice<E: Choice>(text: &str) -> Result<E, String> {
    read(&text.trim().to_ascii_lowercase()).map_err(|_| E::expected())
}

/// The names of `E`'s variants, as serde's derive lists them (aliases too).
fn variants<E: DeserializeOwned>() -> &'static [&'static str] {
    match read::<E>("\u{0}") {
        Err(Unknown(Some(names))) => names,
        _ => &[],
    }
}

/// serde's error for a word that names no variant, keeping the variant list.
#[derive(Debug)]
struct Unknown(Option<&'static [&'static str]>);

impl fmt::Display for Unknown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("unknown variant")
    }
}

impl std::error::Error for Unknown {}

impl serde::de::Error for Unknown {
    fn custom<T: fmt::Display>(_: T) -> Self {
        Unknown(None)
    }
    fn unknown_variant(_: &str, expected: &'static [&'static str]) -> Self {
        Unknown(Some(expected))
    }
}

/// Implements `Value` for `Choice` enums: read through their serde names in any case.
macro_rules! choice_value {
    ($($ty:ty),* $(,)?) => {$(
        impl $crate::config::setting::Value for $ty {
            type File = String;
            fn from_file(
                raw: &String,
                _: $crate::config::setting::Bounds,
            ) -> Result<Self, $crate::config::setting::Refusal> {
                $crate::config::setting::parse_choice(raw).map_err(Into::into)
            }
            fn from_text(
                text: &str,
                _: $crate::config::setting::Bounds,
            ) -> Result<Self, $crate::config::setting::Refusal> {
                $crate::config::setting::parse_choice(text).map_err(Into::into)
            }
            fn to_toml(&self) -> String {
                $crate::config::setting::toml_str(
                    $crate::config::setting::Choice::word(*self),
                )
            }
        }
    )*};
}
pub(crate) use choice_value;

/// How a key's value is found on the command line.
#[derive(Clone, Copy)]
pub(crate) struct Flag {
    pub name: &'static str,
    pub get: fn(&Overrides) -> Option<&str>,
}

/// A key's value when nothing sets it.
#[cfg_attr(
    not(test),
    allow(dead_code, reason = "the table's descriptions are read by its tests")
)]
pub(crate) enum Fallback<T> {
    /// This value.
    Value(fn() -> T),
    /// No value (the key is optional); `seek config` says what applies instead.
    Unset,
    /// Decided by the resolver from other settings; the text says how.
    Computed(&'static str),
}

/// Where a key's resolved value lives in `Config` (`None`: not set).
pub(crate) type Landing<T> = for<'a> fn(&'a Config) -> Option<&'a Sourced<T>>;

/// One setting: everything about it that is not code of its own. `F` is the file's top-level
/// struct, which the table generates (`settings::FileConfig`).
#[cfg_attr(
    not(test),
    allow(dead_code, reason = "the table's descriptions are read by its tests")
)]
pub struct Key<T: Value, F> {
    /// The dotted file name (`exec.max_processes`); errors name the key by it.
    pub name: &'static str,
    pub doc: &'static str,
    /// Variables that set it, first one first.
    pub env: &'static [&'static str],
    pub flag: Option<Flag>,
    pub bounds: Bounds,
    pub default: Fallback<T>,
    /// Where the file's value is (generated by `section!`).
    pub file: for<'a> fn(&'a F) -> Option<&'a Spanned<T::File>>,
    /// Where the resolved value lands, for `seek config` (`None`: not set).
    pub at: Option<Landing<T>>,
    /// A note after the origin on its `seek config` line.
    pub note: Option<fn(&Config) -> Option<String>>,
    /// The comment `seek config` writes instead of a line when the key is not set.
    pub unset: Option<fn(&Config) -> String>,
    /// A comment line `seek config` writes before the key's.
    pub before: Option<fn(&Config) -> String>,
    /// Special case: the key's `seek config` lines are written by this function.
    pub custom: Option<fn(&Config, &Env, &mut String)>,
}

impl<T: Value, F> Key<T, F> {
    /// A key with nothing but its name and doc; `section!` starts every key from it.
    pub(crate) const BLANK: Self = Self {
        name: "",
        doc: "",
        env: &[],
        flag: None,
        bounds: Bounds::Any,
        default: Fallback::Unset,
        file: |_| None,
        at: None,
        note: None,
        unset: None,
        before: None,
        custom: None,
    };

    /// The last part of the dotted name: the key as written inside its table.
    pub fn leaf(&self) -> &'static str {
        self.name.rsplit('.').next().unwrap_or(self.name)
    }
}

/// What the table says of a key, whatever its type (for `seek config`, the docs and tests).
#[cfg_attr(
    not(test),
    allow(dead_code, reason = "the table's descriptions are read by its tests")
)]
pub trait Row: Sync {
    fn name(&self) -> &'static str;
    fn doc(&self) -> &'static str;
    fn env(&self) -> &'static [&'static str];
    fn flag(&self) -> Option<&'static str>;
    /// The default as `seek config` would write it, or how it is decided.
    fn default_text(&self) -> String;
    /// Writes the key's lines of `seek config`.
    fn render(&self, config: &Config, env: &Env, out: &mut String);
}

impl<T: Value, F> Row for Key<T, F> {
    fn name(&self) -> &'static str {
        self.name
    }
    fn doc(&self) -> &'static str {
        self.doc.trim()
    }
    fn env(&self) -> &'static [&'static str] {
        self.env
    }
    fn flag(&self) -> Option<&'static str> {
        self.flag.map(|f| f.name)
    }
    fn default_text(&self) -> String {
        match &self.default {
            Fallback::Value(value) => value().to_toml(),
            Fallback::Unset => "not set".to_owned(),
            Fallback::Computed(how) => (*how).to_owned(),
        }
    }
    fn render(&self, config: &Config, env: &Env, out: &mut String) {
        use std::fmt::Write as _;
        if let Some(custom) = self.custom {
            custom(config, env, out);
            return;
        }
        if let Some(before) = self.before {
            let _ = writeln!(out, "# {}", before(config));
        }
        match self.at.and_then(|at| at(config)) {
            Some(value) => {
                let note = self.note.and_then(|note| note(config));
                line(
                    out,
                    self.leaf(),
                    &value.value.to_toml(),
                    &value.origin,
                    note.as_deref(),
                );
            }
            None => {
                if let Some(unset) = self.unset {
                    let _ = writeln!(out, "# {}", unset(config));
                }
            }
        }
    }
}

/// One `seek config` line: `key = value`, padded, then `# origin` and the note.
pub(super) fn line(
    out: &mut String,
    key: &str,
    value: &str,
    origin: &super::Origin,
    note: Option<&str>,
) {
    use std::fmt::Write as _;
    let assignment = format!("{key} = {value}");
    let _ = match note {
        Some(note) => writeln!(out, "{assignment:<44} # {origin}; {note}"),
        None => writeln!(out, "{assignment:<44} # {origin}"),
    };
}

/// A TOML basic string.
pub(crate) fn toml_str(value: &str) -> String {
    toml::Value::String(value.to_owned()).to_string()
}

/// A TOML array of strings.
pub(crate) fn toml_list<'a>(values: impl Iterator<Item = &'a str>) -> String {
    let items: Vec<String> = values.map(toml_str).collect();
    format!("[{}]", items.join(", "))
}

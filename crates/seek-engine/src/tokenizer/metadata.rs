//! Typed reads of the tokenizer's GGUF metadata keys, each failure a sentence naming the key and
//! what was found instead.
//!
//! Owns only the shape checks (is it there, is it a string, an array of strings, an id); it
//! must not decide what a missing optional key means (the tokenizer does).

use std::collections::HashMap;

use candle_core::quantized::gguf_file::Value;

/// The metadata of one GGUF file, read for the tokenizer. Errors are plain sentences; the
/// caller wraps them with the file's path.
pub(super) struct Metadata<'a> {
    map: &'a HashMap<String, Value>,
}

impl<'a> Metadata<'a> {
    pub(super) fn new(map: &'a HashMap<String, Value>) -> Self {
        Self { map }
    }

    /// A string key that may be absent.
    pub(super) fn optional_string(&self, key: &str) -> Result<Option<&'a str>, String> {
        match self.map.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(format!("{key} is {}, not a string", describe(other))),
        }
    }

    /// A boolean key that may be absent.
    pub(super) fn optional_bool(&self, key: &str) -> Result<Option<bool>, String> {
        match self.map.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(format!("{key} is {}, not a boolean", describe(other))),
        }
    }

    /// A token id key that may be absent; it must be an integer below `vocab_size`.
    pub(super) fn optional_token_id(
        &self,
        key: &str,
        vocab_size: usize,
    ) -> Result<Option<u32>, String> {
        let Some(value) = self.map.get(key) else {
            return Ok(None);
        };
        let id = integer(value)
            .ok_or_else(|| format!("{key} is {}, not a token id", describe(value)))?;
        match u32::try_from(id) {
            Ok(id) if (id as usize) < vocab_size => Ok(Some(id)),
            _ => Err(format!(
                "{key} is {id}, outside the vocabulary of {vocab_size} tokens"
            )),
        }
    }

    /// An array of strings that must be present.
    pub(super) fn string_array(&self, key: &str) -> Result<Vec<&'a str>, String> {
        let items = self
            .array(key)?
            .ok_or_else(|| format!("the key {key} is missing"))?;
        items
            .iter()
            .enumerate()
            .map(|(i, item)| match item {
                Value::String(s) => Ok(s.as_str()),
                other => Err(format!("{key}[{i}] is {}, not a string", describe(other))),
            })
            .collect()
    }

    /// An array of 32-bit signed integers that may be absent (the token types).
    pub(super) fn optional_i32_array(&self, key: &str) -> Result<Option<Vec<i32>>, String> {
        let Some(items) = self.array(key)? else {
            return Ok(None);
        };
        items
            .iter()
            .enumerate()
            .map(|(i, item)| match item {
                Value::I32(v) => Ok(*v),
                other => Err(format!(
                    "{key}[{i}] is {}, not a 32-bit integer",
                    describe(other)
                )),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }

    fn array(&self, key: &str) -> Result<Option<&'a Vec<Value>>, String> {
        match self.map.get(key) {
            None => Ok(None),
            Some(Value::Array(items)) => Ok(Some(items)),
            Some(other) => Err(format!("{key} is {}, not an array", describe(other))),
        }
    }
}

fn integer(value: &Value) -> Option<i128> {
    Some(match value {
        Value::U8(v) => i128::from(*v),
        Value::I8(v) => i128::from(*v),
        Value::U16(v) => i128::from(*v),
        Value::I16(v) => i128::from(*v),
        Value::U32(v) => i128::from(*v),
        Value::I32(v) => i128::from(*v),
        Value::U64(v) => i128::from(*v),
        Value::I64(v) => i128::from(*v),
        _ => return None,
    })
}

/// A short description of a value for error messages (never the whole of a large array).
fn describe(value: &Value) -> String {
    match value {
        Value::String(s) if s.len() > 40 => "a long string".to_owned(),
        Value::String(s) => format!("the string {s:?}"),
        Value::Array(items) => match items.first() {
            Some(first) => format!("an array of {:?}", first.value_type()),
            None => "an empty array".to_owned(),
        },
        other => format!("{other:?}"),
    }
}

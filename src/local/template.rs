//! The chat template of a GGUF model: `tokenizer.chat_template` rendered with minijinja the way
//! llama.cpp's server renders it, so the prompt text is the one llama.cpp would build.
//!
//! Owns parsing the template once at load and rendering a conversation to prompt text. It must
//! not tokenize (the tokenizer does) nor decide what the conversation holds (the engine does).
//!
//! What a template sees, as in llama.cpp and Hugging Face: `messages` (a list of
//! `{role, content}`), `add_generation_prompt`, `bos_token` and `eos_token` (their texts),
//! `tools` (none: seek's tools are fenced blocks in the text, not function calls),
//! `enable_thinking` (true, llama.cpp's default) and a `raise_exception(message)` function;
//! Python string methods such as `.strip()` work (minijinja-contrib's pycompat). Blocks are
//! trimmed as Hugging Face and llama.cpp trim them (`trim_blocks`, `lstrip_blocks`). A file
//! without a template gets llama.cpp's ChatML one. Not provided: `strftime_now` (templates that
//! use it test whether it is defined and fall back to a fixed date).
//!
//! A conversation whose last message is the assistant's is continued (`prompt`): that message's
//! text ends the prompt, unclosed, and the reply is the rest of it, as llama.cpp's server and
//! Ollama do with a trailing assistant message.

use std::path::{Path, PathBuf};

use candle_core::quantized::gguf_file;
use minijinja::{AutoEscape, Environment, Error, ErrorKind, Value, context};

use super::LocalError;
use super::tokenizer::Tokenizer;
use crate::llm::{Message, Role};

const TEMPLATE_KEY: &str = "tokenizer.chat_template";
/// Steps a template may take to render one conversation (minijinja's fuel): thousands of
/// messages' worth, and a fraction of a second of a runaway loop.
const TEMPLATE_FUEL: u64 = 20_000_000;
const TEMPLATE_NAME: &str = "chat_template";

/// llama.cpp's template for a file that has none.
const CHATML: &str = "{%- for message in messages -%}\n\
  {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' -}}\n\
{%- endfor -%}\n\
{%- if add_generation_prompt -%}\n\
  {{- '<|im_start|>assistant\\n' -}}\n\
{%- endif -%}";

/// A parsed chat template with the special-token texts it renders with.
#[derive(Debug)]
pub struct ChatTemplate {
    path: PathBuf,
    env: Environment<'static>,
    bos_token: String,
    eos_token: String,
    /// The tokenizer adds BOS itself, so a BOS the template writes first is dropped (else the
    /// prompt would start with two), as llama.cpp does.
    strip_leading_bos: bool,
}

impl ChatTemplate {
    /// Parses the file's `tokenizer.chat_template` (ChatML when the file has none). A template
    /// that does not parse is an error now rather than at the first message.
    pub fn from_gguf(
        content: &gguf_file::Content,
        path: &Path,
        tok: &Tokenizer,
    ) -> Result<Self, LocalError> {
        let source = match content.metadata.get(TEMPLATE_KEY) {
            None => CHATML,
            Some(gguf_file::Value::String(s)) if s.is_empty() || s == "chatml" => CHATML,
            Some(gguf_file::Value::String(s)) => s.as_str(),
            Some(other) => {
                return Err(LocalError::Template {
                    path: path.to_owned(),
                    reason: format!("{TEMPLATE_KEY} is {:?}, not a string", other.value_type()),
                });
            }
        };
        Self::new(
            source,
            path,
            tok.bos_token().unwrap_or_default(),
            tok.eos_token().unwrap_or_default(),
            tok.adds_bos(),
        )
    }

    fn new(
        source: &str,
        path: &Path,
        bos_token: &str,
        eos_token: &str,
        tokenizer_adds_bos: bool,
    ) -> Result<Self, LocalError> {
        let mut env = Environment::new();
        env.set_trim_blocks(true);
        env.set_lstrip_blocks(true);
        env.set_auto_escape_callback(|_| AutoEscape::None);
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_function("raise_exception", raise_exception);
        // The template comes with the model file: one that loops without end must fail, not
        // hang the engine. A real chat template spends a few hundred steps per message.
        env.set_fuel(Some(TEMPLATE_FUEL));
        env.add_template_owned(TEMPLATE_NAME, source.to_owned())
            .map_err(|e| LocalError::Template {
                path: path.to_owned(),
                reason: format!("{TEMPLATE_KEY} does not parse: {e}"),
            })?;
        Ok(Self {
            path: path.to_owned(),
            env,
            bos_token: bos_token.to_owned(),
            eos_token: eos_token.to_owned(),
            strip_leading_bos: tokenizer_adds_bos && !bos_token.is_empty(),
        })
    }

    /// The prompt a reply to `messages` continues: the assistant's turn opened after them, or,
    /// when the last message is the assistant's, the turn opened before it and its text written
    /// in (never closed), so that the reply goes on from that text.
    pub fn prompt(&self, messages: &[Message]) -> Result<String, LocalError> {
        match messages.split_last() {
            Some((last, earlier)) if last.role == Role::Assistant => {
                let mut prompt = self.render(earlier, true)?;
                prompt.push_str(&last.content);
                Ok(prompt)
            }
            _ => self.render(messages, true),
        }
    }

    /// The prompt text for `messages`, ending with the assistant's turn opened when
    /// `add_generation_prompt`. A template that refuses the conversation (`raise_exception`,
    /// e.g. roles that do not alternate) is an error naming its message.
    pub fn render(
        &self,
        messages: &[Message],
        add_generation_prompt: bool,
    ) -> Result<String, LocalError> {
        let failed = |e: Error| LocalError::Template {
            path: self.path.clone(),
            reason: e.to_string(),
        };
        let template = self.env.get_template(TEMPLATE_NAME).map_err(failed)?;
        let rendered = template
            .render(context! {
                messages => Value::from_serialize(messages),
                add_generation_prompt => add_generation_prompt,
                bos_token => &self.bos_token,
                eos_token => &self.eos_token,
                tools => Value::from(()),
                enable_thinking => true,
            })
            .map_err(failed)?;
        Ok(match rendered.strip_prefix(self.bos_token.as_str()) {
            Some(rest) if self.strip_leading_bos => rest.to_owned(),
            _ => rendered,
        })
    }
}

/// The template's own `raise_exception(message)`: stops rendering with that message.
fn raise_exception(message: String) -> Result<Value, Error> {
    Err(Error::new(ErrorKind::InvalidOperation, message))
}

#[cfg(test)]
mod tests;

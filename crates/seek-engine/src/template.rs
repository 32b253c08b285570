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
//!
//! The template comes with the model file, so it is untrusted: a rendering is bounded in steps
//! (minijinja's fuel), in memory and value nesting (`budget.rs`, through the rewrite of
//! `guard.rs`), and in call depth (a recursion limit, on a thread whose stack holds it). A
//! template that passes a bound fails with an error naming the file; none can abort seek.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use candle_core::quantized::gguf_file;
use minijinja::machinery::{self, CodeGenerator, Vm, WhitespaceConfig};
use minijinja::syntax::SyntaxConfig;
use minijinja::{AutoEscape, Environment, Error, ErrorKind, Value, context};

use crate::EngineError;
use crate::chat::{Message, Role};
use crate::tokenizer::Tokenizer;

mod budget;
mod guard;

pub use budget::{MAX_DEPTH, MEMORY_LIMIT};

const TEMPLATE_KEY: &str = "tokenizer.chat_template";
/// Steps a template may take to render one conversation (minijinja's fuel): thousands of
/// messages' worth, and a fraction of a second of a runaway loop.
const TEMPLATE_FUEL: u64 = 20_000_000;
const TEMPLATE_NAME: &str = "chat_template";
/// Nested calls (macros, `loop(…)`, `caller()`) a rendering may make; real templates nest a few.
pub const RECURSION_LIMIT: usize = 100;
/// The stack of the thread a template renders on: room for `RECURSION_LIMIT` nested calls and
/// values nested `MAX_DEPTH` deep with a wide margin (only what is used is ever touched).
const RENDER_STACK: usize = 64 << 20;

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
    source: String,
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
    ) -> Result<Self, EngineError> {
        let source = match content.metadata.get(TEMPLATE_KEY) {
            None => CHATML,
            Some(gguf_file::Value::String(s)) if s.is_empty() || s == "chatml" => CHATML,
            Some(gguf_file::Value::String(s)) => s.as_str(),
            Some(other) => {
                return Err(EngineError::Template {
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
    ) -> Result<Self, EngineError> {
        let refused = |reason: String| EngineError::Template {
            path: path.to_owned(),
            reason,
        };
        if source.contains(guard::RESERVED_PREFIX) {
            return Err(refused(format!(
                "{TEMPLATE_KEY} uses a name starting with {}, which seek reserves for its checks",
                guard::RESERVED_PREFIX
            )));
        }
        // Parsed on the render thread's stack too: minijinja's parser nests up to its own limit.
        on_render_thread(|| parse(source).map(drop))
            .map_err(|e| refused(format!("{TEMPLATE_KEY} does not parse: {e}")))?;
        Ok(Self {
            path: path.to_owned(),
            source: source.to_owned(),
            bos_token: bos_token.to_owned(),
            eos_token: eos_token.to_owned(),
            strip_leading_bos: tokenizer_adds_bos && !bos_token.is_empty(),
        })
    }

    /// The prompt a reply to `messages` continues: the assistant's turn opened after them, or,
    /// when the last message is the assistant's, the turn opened before it and its text written
    /// in (never closed), so that the reply goes on from that text.
    pub fn prompt(&self, messages: &[Message]) -> Result<String, EngineError> {
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
    ) -> Result<String, EngineError> {
        let root = context! {
            messages => Value::from_serialize(messages),
            add_generation_prompt => add_generation_prompt,
            bos_token => &self.bos_token,
            eos_token => &self.eos_token,
            tools => Value::from(()),
            enable_thinking => true,
        };
        let budget = Arc::new(budget::Budget::default());
        let rendered = on_render_thread(|| render_bounded(&self.source, root, &budget))
            .map_err(|e| self.failure(&e, &budget))?;
        Ok(match rendered.strip_prefix(self.bos_token.as_str()) {
            Some(rest) if self.strip_leading_bos => rest.to_owned(),
            _ => rendered,
        })
    }
}

impl ChatTemplate {
    /// The error for a rendering that failed: a bound it ran into, or the template's own error.
    fn failure(&self, e: &Error, budget: &budget::Budget) -> EngineError {
        let limit = match budget.exceeded() {
            Some(what) => Some(what.describe()),
            None if e.kind() == ErrorKind::OutOfFuel => {
                return EngineError::Template {
                    path: self.path.clone(),
                    reason: format!(
                        "it took more than {TEMPLATE_FUEL} steps (a loop without end?); use a different model file"
                    ),
                };
            }
            None if e.to_string().contains("recursion limit exceeded") => {
                Some(format!("{RECURSION_LIMIT} nested calls"))
            }
            None => None,
        };
        match limit {
            Some(limit) => EngineError::TemplateLimit {
                path: self.path.clone(),
                limit,
            },
            None => EngineError::Template {
                path: self.path.clone(),
                reason: e.to_string(),
            },
        }
    }
}

fn parse(source: &str) -> Result<machinery::ast::Stmt<'_>, Error> {
    machinery::parse(
        source,
        TEMPLATE_NAME,
        SyntaxConfig,
        // As Hugging Face and llama.cpp render chat templates.
        WhitespaceConfig {
            keep_trailing_newline: false,
            lstrip_blocks: true,
            trim_blocks: true,
        },
    )
}

/// Parses `source`, puts the checks in, and renders it with `root` within `budget`.
fn render_bounded(
    source: &str,
    root: Value,
    budget: &Arc<budget::Budget>,
) -> Result<String, Error> {
    let ast = guard::rewrite(&parse(source)?);
    let mut generator = CodeGenerator::new(TEMPLATE_NAME, source);
    generator.compile_stmt(&ast);
    let (instructions, blocks) = generator.finish();
    let mut env = Environment::new();
    env.set_auto_escape_callback(|_| AutoEscape::None);
    env.add_function("raise_exception", raise_exception);
    // One that loops without end must fail, not hang the engine. A real chat template spends a
    // few hundred steps per message.
    env.set_fuel(Some(TEMPLATE_FUEL));
    env.set_recursion_limit(RECURSION_LIMIT);
    budget::install(&mut env, budget);
    let mut rendered = String::new();
    let mut out = machinery::make_string_output(&mut rendered);
    Vm::new(&env).eval(&instructions, root, &blocks, &mut out, AutoEscape::None)?;
    Ok(rendered)
}

/// Runs `work` on a thread of its own with `RENDER_STACK` of stack, so that the nesting the
/// bounds allow can never overflow the caller's (smaller) stack.
fn on_render_thread<T: Send>(work: impl FnOnce() -> Result<T, Error> + Send) -> Result<T, Error> {
    std::thread::scope(|scope| {
        let handle = std::thread::Builder::new()
            .name("seek-template".into())
            .stack_size(RENDER_STACK)
            .spawn_scoped(scope, work)
            .map_err(|e| {
                Error::new(
                    ErrorKind::InvalidOperation,
                    format!("cannot start the template thread: {e}"),
                )
            })?;
        handle.join().unwrap_or_else(|_| {
            Err(Error::new(
                ErrorKind::InvalidOperation,
                "the template renderer failed (an internal error)",
            ))
        })
    })
}

/// The template's own `raise_exception(message)`: stops rendering with that message.
fn raise_exception(message: String) -> Result<Value, Error> {
    Err(Error::new(ErrorKind::InvalidOperation, message))
}

#[cfg(test)]
mod attacks;
#[cfg(test)]
mod tests;

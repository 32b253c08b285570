//! (being written: a stub with the agreed API so the engine compiles meanwhile)
use std::path::Path;

use candle_core::quantized::gguf_file;

use super::LocalError;
use super::tokenizer::Tokenizer;

pub struct ChatTemplate;

impl ChatTemplate {
    pub fn from_gguf(
        _content: &gguf_file::Content,
        path: &Path,
        _tok: &Tokenizer,
    ) -> Result<Self, LocalError> {
        Err(LocalError::Template {
            path: path.to_owned(),
            reason: "not written yet".into(),
        })
    }
    pub fn render(
        &self,
        _messages: &[crate::llm::Message],
        _add_generation_prompt: bool,
    ) -> Result<String, LocalError> {
        Ok(String::new())
    }
}

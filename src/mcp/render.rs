//! A tool's result as the text the model and the execution pane get.
//!
//! Text parts as they are, structured content as compact JSON (only when the text parts do not
//! already say it), images, audio and resources as one line each; cut to the output limit
//! keeping the head and the tail. It must not decide success (`CallOutput::is_error` does).

use super::CallOutput;

/// The result's text, at most `limit` bytes.
pub fn render(output: &CallOutput, limit: usize) -> String {
    let _ = (output, limit);
    String::new()
}

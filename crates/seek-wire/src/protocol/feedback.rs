//! The feedback text a tool result is reported to the model with.
//!
//! Owns AgenticSeek's wire prefixes (`[success] …` / `[failure] …`) so every tool speaks them the
//! same way. It must not decide success; the caller passes that in.

/// Prefix of a successful block's feedback.
pub const SUCCESS_PREFIX: &str = "[success] Execution success, code output:\n";
/// Prefix of a failed block's feedback.
pub const FAILURE_PREFIX: &str = "[failure] Error in execution:\n";

/// Feedback for one block, in AgenticSeek's format.
pub fn feedback(success: bool, output: &str) -> String {
    let prefix = if success {
        SUCCESS_PREFIX
    } else {
        FAILURE_PREFIX
    };
    let mut text = String::with_capacity(prefix.len() + output.len());
    text.push_str(prefix);
    text.push_str(output);
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_match_agenticseek() {
        assert_eq!(
            feedback(true, "hi\n"),
            "[success] Execution success, code output:\nhi\n"
        );
        assert_eq!(
            feedback(false, "boom"),
            "[failure] Error in execution:\nboom"
        );
    }
}

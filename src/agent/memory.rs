//! The conversation the model sees: a system prompt and the exchanges since.
//!
//! Owns the message list and turn boundaries (so a retry can drop the last turn). It must not
//! hold reasoning: `<think>` text never goes back to the model.

use crate::llm::{Message, Role};

#[derive(Debug, Clone, Default)]
pub struct Memory {
    messages: Vec<Message>,
    /// Index of the first message of the last turn.
    last_turn_start: Option<usize>,
}

impl Memory {
    pub fn new(system_prompt: impl Into<String>) -> Self {
        Self {
            messages: vec![Message::new(Role::System, system_prompt)],
            last_turn_start: None,
        }
    }

    /// Replaces the system prompt (the agent changed).
    pub fn set_system_prompt(&mut self, prompt: impl Into<String>) {
        let message = Message::new(Role::System, prompt);
        match self.messages.first_mut() {
            Some(first) if first.role == Role::System => *first = message,
            _ => self.messages.insert(0, message),
        }
    }

    /// Starts a turn with the user's prompt.
    pub fn begin_turn(&mut self, prompt: impl Into<String>) {
        self.last_turn_start = Some(self.messages.len());
        self.push(Role::User, prompt);
    }

    pub fn push(&mut self, role: Role, content: impl Into<String>) {
        self.messages.push(Message::new(role, content));
    }

    /// Drops everything the last turn added, including its prompt. Returns the prompt.
    pub fn forget_last_turn(&mut self) -> Option<String> {
        let start = self.last_turn_start.take()?;
        let prompt = self.messages.get(start).map(|m| m.content.clone());
        self.messages.truncate(start);
        prompt
    }

    pub fn messages(&self) -> &[Message] {
        &self.messages
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_forgets_exactly_the_last_turn() {
        let mut memory = Memory::new("system");
        memory.begin_turn("first");
        memory.push(Role::Assistant, "a1");
        memory.begin_turn("second");
        memory.push(Role::Assistant, "a2");
        memory.push(Role::User, "[failure] …");
        assert_eq!(memory.forget_last_turn().as_deref(), Some("second"));
        let contents: Vec<&str> = memory
            .messages()
            .iter()
            .map(|m| m.content.as_str())
            .collect();
        assert_eq!(contents, ["system", "first", "a1"]);
        assert_eq!(
            memory.forget_last_turn(),
            None,
            "only one turn can be retried"
        );
    }
}

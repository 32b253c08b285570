//! The conversation the model sees: a system prompt and the exchanges since.
//!
//! Owns the message list and task boundaries (so a retry can drop the last task and the context
//! budget can drop the oldest), and journals every change to the session file when it has one.
//! It must not hold reasoning: `<think>` text never goes back to the model.

use std::sync::Arc;

use crate::llm::{Message, Role};
use crate::session::{MemoryOp, SessionFile};

#[derive(Debug, Clone, Default)]
pub struct Memory {
    messages: Vec<Message>,
    /// Index of the first message (the prompt) of each task.
    turn_starts: Vec<usize>,
    /// The last task can be retried (once).
    retryable: bool,
    /// Notes pushed since the last task began (the user's own commands): a retry of that task
    /// keeps them.
    trailing_notes: usize,
    journal: Option<Arc<SessionFile>>,
}

impl Memory {
    pub fn new(system_prompt: impl Into<String>) -> Self {
        Self {
            messages: vec![Message::new(Role::System, system_prompt)],
            ..Self::default()
        }
    }

    /// A memory continued from a session: `messages` follow the system prompt and
    /// `turn_starts` index into them.
    pub fn restore(system_prompt: String, messages: Vec<Message>, turn_starts: Vec<usize>) -> Self {
        let mut memory = Self::new(system_prompt);
        memory.messages.extend(messages);
        memory.turn_starts = turn_starts
            .into_iter()
            .map(|i| i + 1)
            .filter(|&i| i < memory.messages.len())
            .collect();
        memory
    }

    /// Journals every change from now on to `session`.
    pub(crate) fn journal_to(&mut self, session: Arc<SessionFile>) {
        self.journal = Some(session);
    }

    fn record(&self, op: MemoryOp) {
        if let Some(journal) = &self.journal {
            journal.record_memory(op);
        }
    }

    /// Replaces the system prompt (the agent changed).
    pub(crate) fn set_system_prompt(&mut self, prompt: impl Into<String>) {
        let message = Message::new(Role::System, prompt);
        match self.messages.first_mut() {
            Some(first) if first.role == Role::System => *first = message,
            _ => {
                self.messages.insert(0, message);
                for start in &mut self.turn_starts {
                    *start += 1;
                }
            }
        }
    }

    /// Starts a task with the user's prompt.
    pub fn begin_turn(&mut self, prompt: impl Into<String>) {
        let prompt = prompt.into();
        self.record(MemoryOp::BeginTurn {
            content: prompt.clone(),
        });
        self.turn_starts.push(self.messages.len());
        self.retryable = true;
        self.trailing_notes = 0;
        self.messages.push(Message::new(Role::User, prompt));
    }

    pub fn push(&mut self, role: Role, content: impl Into<String>) {
        let content = content.into();
        self.record(MemoryOp::Push {
            role,
            content: content.clone(),
        });
        self.messages.push(Message::new(role, content));
    }

    /// Adds a note for the model between tasks (a command the user ran and its output), as a
    /// user message the next task's request carries before its prompt.
    pub(crate) fn push_note(&mut self, content: impl Into<String>) {
        self.push(Role::User, content);
        self.trailing_notes += 1;
    }

    /// Drops everything the last task added, including its prompt, but not the notes added
    /// after it ended. Returns the prompt.
    pub(crate) fn forget_last_turn(&mut self) -> Option<String> {
        if !std::mem::take(&mut self.retryable) {
            return None;
        }
        let start = self.turn_starts.pop()?;
        let notes_from = self
            .messages
            .len()
            .saturating_sub(self.trailing_notes)
            .max(start);
        let notes = self.messages.split_off(notes_from);
        self.trailing_notes = 0;
        self.record(MemoryOp::ForgetLastTurn);
        let prompt = self.messages.get(start).map(|m| m.content.clone());
        self.messages.truncate(start);
        for note in notes {
            self.push_note(note.content);
        }
        prompt
    }

    /// Forgets the conversation, keeping the system prompt.
    pub fn clear(&mut self) {
        self.record(MemoryOp::Clear);
        self.messages.truncate(1);
        self.turn_starts.clear();
        self.retryable = false;
        self.trailing_notes = 0;
    }

    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// Where each task starts in `messages`.
    pub(crate) fn turn_starts(&self) -> &[usize] {
        &self.turn_starts
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
        assert_eq!(memory.turn_starts(), [1]);
    }

    #[test]
    fn retry_keeps_the_notes_added_since_the_task_and_they_precede_its_prompt_again() {
        let mut memory = Memory::new("system");
        memory.push_note("the user ran `pwd`");
        memory.begin_turn("task");
        memory.push(Role::Assistant, "answer");
        memory.push_note("the user ran `ls`");
        assert_eq!(memory.forget_last_turn().as_deref(), Some("task"));
        memory.begin_turn("task");
        let contents: Vec<&str> = memory
            .messages()
            .iter()
            .map(|m| m.content.as_str())
            .collect();
        assert_eq!(
            contents,
            ["system", "the user ran `pwd`", "the user ran `ls`", "task"]
        );
        assert_eq!(memory.turn_starts(), [3]);
    }

    #[test]
    fn restore_puts_tasks_after_the_system_prompt() {
        let m = Memory::restore(
            "sys".into(),
            vec![
                Message::new(Role::User, "p1"),
                Message::new(Role::Assistant, "a1"),
                Message::new(Role::User, "p2"),
            ],
            vec![0, 2],
        );
        assert_eq!(m.turn_starts(), [1, 3]);
        assert_eq!(m.messages()[0].content, "sys");
    }
}

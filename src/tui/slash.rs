//! Slash commands typed in the input box: parsing and the help text.
//!
//! Owns the command names and their arguments; it must not carry them out.

use crate::config::AgentName;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Slash {
    Help,
    /// `None`: say which agent is in use.
    Agent(Option<AgentName>),
    /// `None`: say which model is in use.
    Model(Option<String>),
    Retry,
    Stop,
    Clear,
    /// Start a new session.
    New,
    /// `None`: list the saved sessions.
    Resume(Option<String>),
    Quit,
}

/// The key and command reference shown by `/help` (and in the README).
pub const HELP: &str = "\
Keys
  Enter               send the prompt
  Shift+Enter, Alt+Enter, Ctrl+J   new line in the prompt
  Up / Down           earlier prompts (on the first / last line of the prompt)
  Esc                 stop the running task (or leave the transcript focus)
  Ctrl+R              retry the last task
  Tab / Shift+Tab     move the focus over panes and thoughts, newest first
  Enter / Space       fold or unfold the focused item
  Ctrl+T              fold or unfold all thoughts
  Ctrl+O              collapse or expand all execution panes
  PageUp / PageDown   scroll; so do Home / End on an empty prompt, Ctrl+Home / Ctrl+End always
  mouse wheel         scroll
  Ctrl+C              stop a running task, else clear the prompt, else twice within 2 s to quit
  Ctrl+D              quit (on an empty prompt)
  Ctrl+W / Ctrl+U     delete a word / to the start of the line
Commands
  /help               this help
  /agent NAME         use an agent from the next task on: auto, casual, coder, file
  /model NAME         use another model of the same server from the next task on
  /retry              retry the last task          /stop   stop the running task
  /clear              forget the conversation and clear the screen
  /new                start a new session (the current one stays saved)
  /resume [ID]        list the saved sessions, or continue session ID
  /quit               leave (the transcript is printed to the terminal)";

/// Parses a line starting with `/`. `Err` carries what to tell the user.
pub fn parse(line: &str) -> Result<Slash, String> {
    let line = line.trim();
    let (name, argument) = match line.split_once(char::is_whitespace) {
        Some((name, rest)) => (name, Some(rest.trim()).filter(|r| !r.is_empty())),
        None => (line, None),
    };
    let no_argument = |slash: Slash| match argument {
        None => Ok(slash),
        Some(_) => Err(format!("{name} takes no argument")),
    };
    match name {
        "/help" | "/?" => no_argument(Slash::Help),
        "/agent" => match argument {
            None => Ok(Slash::Agent(None)),
            Some(a) => a
                .parse()
                .map(|a| Slash::Agent(Some(a)))
                .map_err(|e| format!("unknown agent {a}: {e}")),
        },
        "/model" => Ok(Slash::Model(argument.map(str::to_owned))),
        "/retry" => no_argument(Slash::Retry),
        "/stop" => no_argument(Slash::Stop),
        "/clear" => no_argument(Slash::Clear),
        "/new" => no_argument(Slash::New),
        "/resume" => Ok(Slash::Resume(argument.map(str::to_owned))),
        "/quit" | "/exit" => no_argument(Slash::Quit),
        other => Err(format!("unknown command {other}: /help lists the commands")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_and_their_arguments() {
        assert_eq!(parse("/help"), Ok(Slash::Help));
        assert_eq!(
            parse(" /agent  casual "),
            Ok(Slash::Agent(Some(AgentName::Casual)))
        );
        assert_eq!(parse("/agent"), Ok(Slash::Agent(None)));
        assert_eq!(
            parse("/model qwen2.5:7b"),
            Ok(Slash::Model(Some("qwen2.5:7b".into())))
        );
        assert_eq!(parse("/exit"), Ok(Slash::Quit));
        assert!(parse("/agent wizard").unwrap_err().contains("wizard"));
        assert_eq!(parse("/retry now"), Err("/retry takes no argument".into()));
        assert_eq!(
            parse("/frobnicate"),
            Err("unknown command /frobnicate: /help lists the commands".into())
        );
    }
}

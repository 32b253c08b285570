//! Slash commands typed in the input box: parsing, the help text, and the words `/agent` says
//! (the agents themselves are the registry's, `crate::agents`).
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
    /// The MCP servers, their state and their tools.
    Mcp,
    Quit,
}

/// One slash command, for the completion popup and `/help`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CommandInfo {
    /// With its slash: `/model`.
    pub name: &'static str,
    /// What its argument is, if it takes one (`/model NAME`).
    pub argument: Option<&'static str>,
    /// One line, shown beside the name.
    pub about: &'static str,
}

/// Every command, in the order the popup lists them (`/exit` is `/quit`'s other name).
pub(crate) const COMMANDS: &[CommandInfo] = &[
    CommandInfo {
        name: "/help",
        argument: None,
        about: "keys and commands",
    },
    CommandInfo {
        name: "/model",
        argument: Some("NAME"),
        about: "pick a model (alone: a picker)",
    },
    CommandInfo {
        name: "/agent",
        argument: Some("NAME"),
        about: "pick the agent for the next tasks (alone: a picker)",
    },
    CommandInfo {
        name: "/resume",
        argument: Some("ID"),
        about: "continue a saved session (alone: a picker)",
    },
    CommandInfo {
        name: "/mcp",
        argument: None,
        about: "the MCP servers, their state and tools",
    },
    CommandInfo {
        name: "/new",
        argument: None,
        about: "start a new session",
    },
    CommandInfo {
        name: "/clear",
        argument: None,
        about: "forget the conversation, clear the screen",
    },
    CommandInfo {
        name: "/retry",
        argument: None,
        about: "run the last task again",
    },
    CommandInfo {
        name: "/stop",
        argument: None,
        about: "stop the running task, empty the queue",
    },
    CommandInfo {
        name: "/quit",
        argument: None,
        about: "leave (the transcript is printed)",
    },
    CommandInfo {
        name: "/exit",
        argument: None,
        about: "leave, as /quit",
    },
];

/// The key and command reference shown by `/help` in a scrollable overlay. Every line fits 78
/// columns, so nothing is cut at 80.
pub(crate) const HELP: &str = "\
Commands
  /help               this help (arrows, PageUp/PageDown scroll; Esc closes)
  /model              pick a model from a list; /model NAME switches directly
  /agent              pick an agent from a list; /agent NAME picks directly
  /resume             pick a session of this directory; /resume ID goes to it
  /mcp                the MCP servers: their state, tools and arguments
  /new                start a new session (the current one stays saved)
  /clear              forget the conversation and clear the screen
  /retry              retry the last task
  /stop               stop the running task and empty the queue
  /quit, /exit        leave (the transcript is printed to the terminal)
  /                   at the start: the commands, filtered as you type;
                      after a command and a space: its arguments
  !cmd                run a shell command yourself (same sandbox as blocks);
                      the model sees it and its output with your next prompt
  @path               complete a file name of the work dir (Tab); the file is
                      attached to the prompt
Completion, pickers
  Up / Down           move in the list        Tab   complete
  Enter               run the command or choose the entry      Esc   close
Queue
  Enter while a task runs queues the prompt (shown under the prompt box):
  it is sent when the task ends. Esc or /stop stops the task and empties
  the queue.
Keys
  Enter               send the prompt
  Shift+Enter, Alt+Enter, Ctrl+J   new line in the prompt
  Up / Down           earlier prompts (on the first / last line of the prompt)
  Esc                 stop the running task (or leave the transcript focus)
  Ctrl+R              retry the last task
  Tab / Shift+Tab     move the focus over panes and thoughts, newest first
  Enter / Space       fold or unfold the focused item
  Ctrl+Y              copy the focused pane's code (again: its output), else
                      the last answer, to the clipboard (OSC 52)
  Ctrl+T              fold or unfold all thoughts
  Ctrl+O              collapse or expand all execution panes
  PageUp / PageDown   scroll; so do Home / End on an empty prompt,
                      Ctrl+Home / Ctrl+End always
  mouse wheel         scroll
  Shift+drag          select text with the mouse (seek captures the mouse)
  Ctrl+C              stop a running task, else clear the prompt, else twice
                      within 2 s to quit
  Ctrl+D              quit (on an empty prompt)
  Ctrl+W / Ctrl+U     delete a word / to the start of the line
  Ctrl+A / Ctrl+E     go to the start / end of the line
  y / n / a / e       a block waits for approval: run / decline / always /
                      edit in $EDITOR";

/// `/help`'s whole text: the keys and commands, then the agents of the registry by name (what
/// each does is `/agent`'s to say: the help stays short enough to page through at 80x24).
pub(crate) fn help_text() -> String {
    let names: Vec<&str> = agents().into_iter().map(|(name, _)| name).collect();
    format!(
        "{HELP}\nAgents (/agent NAME picks one; /agent alone opens a picker of them)\n  {}",
        names.join(", ")
    )
}

/// `auto` and every agent of the registry, with what each does.
pub fn agents() -> Vec<(&'static str, &'static str)> {
    let mut agents = vec![(AgentName::Auto.as_str(), crate::agents::AUTO_DESCRIPTION)];
    agents.extend(
        crate::agents::REGISTRY
            .iter()
            .map(|spec| (spec.name.as_str(), spec.description)),
    );
    agents
}

/// What `/agent NAME` says.
pub(crate) fn agent_chosen(agent: AgentName) -> String {
    if agent == AgentName::Auto {
        "agent: auto · the router picks the agent of each task, from the next one on".into()
    } else {
        format!("agent: {agent} (from the next task on) · /agent auto lets the router pick")
    }
}

/// Parses a line starting with `/`. `Err` carries what to tell the user.
pub(crate) fn parse(line: &str) -> Result<Slash, String> {
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
            Some(a) => crate::agents::parse(a)
                .map(|a| Slash::Agent(Some(a)))
                .map_err(|unknown| unknown.to_string()),
        },
        "/model" => Ok(Slash::Model(argument.map(str::to_owned))),
        "/retry" => no_argument(Slash::Retry),
        "/stop" => no_argument(Slash::Stop),
        "/clear" => no_argument(Slash::Clear),
        "/new" => no_argument(Slash::New),
        "/resume" => Ok(Slash::Resume(argument.map(str::to_owned))),
        "/mcp" => no_argument(Slash::Mcp),
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
        assert_eq!(parse("/mcp"), Ok(Slash::Mcp));
        assert_eq!(parse("/mcp x"), Err("/mcp takes no argument".into()));
        assert!(parse("/agent wizard").unwrap_err().contains("wizard"));
        assert_eq!(parse("/retry now"), Err("/retry takes no argument".into()));
        assert_eq!(
            parse("/frobnicate"),
            Err("unknown command /frobnicate: /help lists the commands".into())
        );
    }

    #[test]
    fn every_command_is_listed_parses_and_its_help_line_fits_80_columns() {
        for command in COMMANDS {
            assert!(
                !matches!(parse(command.name), Err(e) if e.starts_with("unknown")),
                "{}",
                command.name
            );
            assert!(HELP.contains(command.name), "{} in the help", command.name);
        }
        for line in help_text().lines() {
            assert!(
                unicode_width::UnicodeWidthStr::width(line) <= 78,
                "too wide: {line:?}"
            );
        }
    }

    #[test]
    fn the_help_and_agent_picker_name_every_agent_of_the_registry_and_auto() {
        let help = help_text();
        let picker = crate::picker::Picker::new(crate::picker::PickerKind::Agent);
        let rows = picker.agent_rows(&agents(), "planner");
        let listing: String = rows
            .iter()
            .map(|r| {
                let mark = if r.current { "*" } else { " " };
                format!("{mark} {} {}\n", r.label, r.detail)
            })
            .collect();
        for spec in crate::agents::REGISTRY {
            assert!(
                help.contains(spec.name.as_str()),
                "{} in the help",
                spec.name
            );
            assert!(listing.contains(spec.description), "{}", spec.name);
            assert!(
                !help.contains(spec.description),
                "descriptions are /agent's"
            );
        }
        assert!(
            help.ends_with("auto, coder, file, casual, planner, web"),
            "{help}"
        );
        assert!(listing.starts_with("  auto "), "auto first: {listing}");
        assert!(
            listing.contains("* planner"),
            "the current one is marked: {listing}"
        );
        assert_eq!(
            parse("/agent plan"),
            Ok(Slash::Agent(Some(AgentName::Planner)))
        );
        assert_eq!(
            parse("/agent AUTO"),
            Ok(Slash::Agent(Some(AgentName::Auto)))
        );
        assert!(agent_chosen(AgentName::Auto).contains("router"));
    }
}

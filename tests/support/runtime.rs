//! Driving the agent runtime in-process against the fake model server: a configuration, a
//! started runtime, and waiting for events. Shared by the tests that talk to the agent directly
//! rather than through the binary.

#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;

use seek::agent::{self, AgentHandle, BlockRecord, Command, Event};
use seek::config::{Config, Dirs, Env, Overrides};
use seek::model_factory;

/// A configuration for the fake server at `server_url`: code runs in `work_dir`, sessions and
/// the log go to `data_dir`; `approval` as the flag would give it.
pub fn config(
    server_url: &str,
    work_dir: &Path,
    data_dir: &Path,
    approval: Option<&str>,
) -> Arc<Config> {
    let overrides = Overrides {
        provider: Some("llama.cpp".into()),
        base_url: Some(server_url.to_owned()),
        model: Some("fake".into()),
        work_dir: Some(work_dir.to_owned()),
        approval: approval.map(str::to_owned),
        // These tests script the coder's replies; under `auto` the router would hand prompts
        // like "hello" to casual.
        agent: Some("coder".into()),
        ..Overrides::default()
    };
    let dirs = Dirs {
        default_config_file: None,
        data_dir: data_dir.to_owned(),
    };
    let mut config = Config::resolve(&overrides, &Env::default(), &dirs, work_dir).expect("config");
    config.ensure_work_dir().expect("work dir");
    Arc::new(config)
}

/// A runtime (without sessions) for `config`.
pub fn spawn(config: Arc<Config>) -> AgentHandle {
    let model = model_factory::connect(&config, &Env::default()).expect("model");
    agent::spawn(config, model)
}

pub fn send(handle: &AgentHandle, command: Command) {
    handle.commands.send(command).expect("agent alive");
}

pub fn submit(handle: &AgentHandle, prompt: &str) {
    send(
        handle,
        Command::Submit {
            prompt: prompt.into(),
            agent: None,
            context: None,
        },
    );
}

/// Events until (and with) the first one `done` accepts.
pub async fn until(handle: &mut AgentHandle, done: impl Fn(&Event) -> bool) -> Vec<Event> {
    let mut seen = Vec::new();
    while let Some(event) = handle.events.recv().await {
        let last = done(&event);
        seen.push(event);
        if last {
            return seen;
        }
    }
    panic!("the agent stopped before the awaited event: {seen:?}");
}

/// The events of one user command (`!cmd`), up to its `BlockFinished`, and its record.
pub async fn until_command_finished(handle: &mut AgentHandle) -> (Vec<Event>, BlockRecord) {
    let events = until(
        handle,
        |e| matches!(e, Event::BlockFinished { record } if record.round == 0),
    )
    .await;
    let Some(Event::BlockFinished { record }) = events.last().cloned() else {
        unreachable!("until returns with the awaited event last");
    };
    (events, record)
}

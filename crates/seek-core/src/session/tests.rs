//! Tests of writing, reading, replaying and listing sessions.

use super::*;
use crate::llm::Role;
use crate::wire::AgentName;
use crate::wire::{Event, Outcome};

fn sessions(dir: &std::path::Path) -> Sessions {
    Sessions {
        data_dir: dir.to_owned(),
        masker: std::sync::Arc::new(crate::secrets::Masker::new([
            "sk-very-secret-value".to_owned(),
            "short".to_owned(),
        ])),
        model: "m @ p http://x".into(),
        work_dir: "/w".into(),
    }
}

fn started(turn: u64, prompt: &str) -> Event {
    Event::TurnStarted {
        turn,
        prompt: prompt.into(),
        agent: AgentName::Casual,
    }
}

fn finished(turn: u64) -> Event {
    Event::TurnFinished {
        usage: None,
        turn,
        outcome: Outcome::Done,
        answer: "ok".into(),
        reasoning: None,
        agent: AgentName::Casual,
        rounds: 1,
        blocks: Vec::new(),
        message: None,
        plan: None,
        web: None,
    }
}

#[test]
fn a_written_session_loads_back_with_its_memory() {
    let dir = tempfile::tempdir().unwrap();
    let file = sessions(dir.path()).create(AgentName::Coder).unwrap();
    file.record_event(&started(1, "first"));
    file.record_memory(MemoryOp::BeginTurn {
        content: "first".into(),
    });
    file.record_memory(MemoryOp::Push {
        role: Role::Assistant,
        content: "short reply with sk-very-secret-value".into(),
    });
    file.record_event(&Event::AnswerDelta {
        text: "not kept".into(),
    });
    file.record_event(&finished(1));
    file.record_event(&started(2, "second"));
    file.record_memory(MemoryOp::BeginTurn {
        content: "second".into(),
    });
    file.record_memory(MemoryOp::ForgetLastTurn);
    file.sync();
    assert_eq!(file.take_failure(), None);

    let loaded = load(file.path(), file.id()).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert_eq!(loaded.agent, AgentName::Casual, "the last task's agent");
    assert_eq!(loaded.last_turn, 2);
    let contents: Vec<&str> = loaded.messages.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(contents, ["first", "short reply with [redacted]"]);
    assert_eq!(loaded.turn_starts, [0]);
    assert!(
        !loaded
            .events
            .iter()
            .any(|(_, e)| matches!(e, Event::AnswerDelta { .. })),
        "deltas are not kept"
    );
    // The second task never finished: it is closed as interrupted.
    assert!(matches!(
        loaded.events.last(),
        Some((_, Event::TurnFinished { outcome: Outcome::Stopped, message: Some(m), .. })) if m.contains("interrupted")
    ));
    let text = std::fs::read_to_string(file.path()).unwrap();
    assert!(!text.contains("sk-very-secret-value"));
    assert!(
        text.contains("short"),
        "short secrets are not masked (they would match words)"
    );
}

#[test]
fn torn_and_foreign_lines_are_skipped_with_warnings() {
    let dir = tempfile::tempdir().unwrap();
    let file = sessions(dir.path()).create(AgentName::Coder).unwrap();
    file.record_event(&started(1, "p"));
    file.sync();
    let path = file.path().to_owned();
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str("not json at all\n");
    std::fs::write(&path, &text).unwrap();
    file.record_event(&finished(1));
    file.sync();
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str("{\"kind\":\"event\",\"at");
    std::fs::write(&path, &text).unwrap();
    let loaded = load(&path, "x").unwrap();
    assert_eq!(loaded.warnings.len(), 2, "{:?}", loaded.warnings);
    assert!(loaded.warnings[0].contains(":3: not a session record"));
    assert!(loaded.warnings[1].contains("cut short"));
    assert_eq!(loaded.turns(), 1);
    // Appending after a torn line starts a new line (once the writer has let go of the file).
    drop(file);
    let reopened = SessionFile::reopen(&path, "x", std::sync::Arc::default()).unwrap();
    reopened.end_torn_line().unwrap();
    reopened.record_event(&started(2, "q"));
    reopened.sync();
    let loaded = load(&path, "x").unwrap();
    assert_eq!(loaded.turns(), 2);
}

#[test]
fn a_file_without_a_header_is_not_a_session() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.jsonl");
    std::fs::write(&path, "{}\n").unwrap();
    assert!(matches!(
        load(&path, "x"),
        Err(SessionError::NotASession(_))
    ));
}

#[test]
fn listing_summarises_and_finds_by_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let s = sessions(dir.path());
    let a = s.create(AgentName::Coder).unwrap();
    a.record_event(&started(1, "alpha task\nsecond line"));
    a.record_event(&started(2, "beta"));
    a.sync();
    let listing = list(dir.path()).unwrap();
    assert!(listing.skipped.is_empty(), "{listing:?}");
    let list = listing.sessions;
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].turns, Some(2));
    assert_eq!(list[0].first_prompt, "alpha task\nsecond line");
    assert_eq!(
        list[0].agent, "casual",
        "the last task's agent, not the header's"
    );
    let line = list[0].line(None);
    assert!(line.contains("alpha task") && !line.contains("second line") && line.contains(" /w "));
    assert_eq!(find(dir.path(), &a.id()[..10]).unwrap().0, a.id());
    assert!(matches!(
        find(dir.path(), "zzz"),
        Err(SessionError::NotFound { .. })
    ));
    assert!(matches!(
        latest(tempfile::tempdir().unwrap().path(), "/w"),
        Err(SessionError::NoSessionHere(_))
    ));
}

#[test]
fn ids_sort_by_creation_time() {
    let id = new_id(1_796_049_864_123);
    assert!(id.starts_with("20261130-144424-"), "{id}");
    assert_eq!(id.len(), "20261130-144424-abcd".len());
}

#[test]
fn files_that_are_not_sessions_are_skipped_and_never_chosen() {
    let dir = tempfile::tempdir().unwrap();
    let s = sessions(dir.path());
    let valid = s.create(AgentName::Coder).unwrap();
    valid.record_event(&started(1, "real"));
    valid.sync();
    let folder = super::dir(dir.path());
    std::fs::write(folder.join("zz-garbage.jsonl"), "not json\n").unwrap();
    std::fs::write(folder.join("zz-empty.jsonl"), "").unwrap();
    let listing = list(dir.path()).unwrap();
    assert_eq!(listing.sessions.len(), 1);
    assert_eq!(listing.skipped.len(), 2);
    let warning = listing.warning().unwrap();
    assert!(
        warning.contains("zz-empty.jsonl (empty)")
            && warning.contains("zz-garbage.jsonl (its first line is not a session header)"),
        "{warning}"
    );
    // Their mtime is newer than the session's last record; `latest` still picks the session.
    assert_eq!(latest(dir.path(), "/w").unwrap().0, valid.id());
}

#[test]
fn an_open_session_is_busy_for_others_and_shared_with_its_holder() {
    let dir = tempfile::tempdir().unwrap();
    let s = sessions(dir.path());
    let file = s.create(AgentName::Coder).unwrap();
    file.record_event(&started(1, "p"));
    let err = SessionFile::reopen(file.path(), file.id(), std::sync::Arc::default()).unwrap_err();
    assert!(matches!(err, lock::LockError::Held { .. }), "{err:?}");
    // This process continuing its own session shares the lock.
    let (loaded, again) = s.reopen(Some(file.id()), Some(&file)).unwrap();
    assert_eq!(loaded.turns(), 1);
    drop(file);
    assert!(matches!(
        s.reopen(None, None),
        Err(SessionError::Busy { .. })
    ));
    drop(again);
    let (_, reopened) = s.reopen(None, None).unwrap();
    assert!(matches!(
        s.reopen(None, None),
        Err(SessionError::Busy { holder: Holder(Some(pid)), .. }) if pid == std::process::id()
    ));
    drop(reopened);
}

#[test]
fn dropping_a_session_file_writes_what_was_queued_and_lets_go_of_it() {
    let dir = tempfile::tempdir().unwrap();
    let s = sessions(dir.path());
    let file = s.create(AgentName::Coder).unwrap();
    for turn in 1..=50 {
        file.record_event(&started(turn, "queued"));
    }
    let (path, id) = (file.path().to_owned(), file.id().to_owned());
    drop(file);
    assert_eq!(
        load(&path, &id).unwrap().last_turn,
        50,
        "every queued record"
    );
    let (loaded, _again) = s.reopen(Some(&id), None).expect("the lock is released");
    assert_eq!(loaded.turns(), 50);
}

fn in_dir(dir: &std::path::Path, work_dir: &str) -> Sessions {
    Sessions {
        work_dir: work_dir.into(),
        ..sessions(dir)
    }
}

#[test]
fn a_begun_session_reaches_the_disk_only_once_the_model_answers() {
    let dir = tempfile::tempdir().unwrap();
    let file = sessions(dir.path()).begin(AgentName::Coder).unwrap();
    let path = file.path().to_owned();
    file.record_event(&started(1, "hello"));
    file.record_memory(MemoryOp::BeginTurn {
        content: "hello".into(),
    });
    file.sync();
    assert!(
        !path.exists(),
        "nothing on the disk before the model answers"
    );
    assert_eq!(file.take_failure(), None);
    file.record_event(&Event::AnswerDelta { text: "Hi".into() });
    file.record_event(&finished(1));
    file.sync();
    let loaded = load(&path, file.id()).unwrap();
    assert_eq!(
        loaded.turns(),
        1,
        "what came before the answer is in the file"
    );
    assert_eq!(loaded.messages.len(), 1);
    assert_eq!(loaded.work_dir.as_deref(), Some("/w"));
    assert!(
        matches!(
            SessionFile::reopen(&path, file.id(), std::sync::Arc::default()),
            Err(lock::LockError::Held { .. })
        ),
        "created locked"
    );

    // A start that never reached the model: dropped, it leaves nothing.
    let failed = sessions(dir.path()).begin(AgentName::Coder).unwrap();
    failed.record_event(&started(1, "unreachable"));
    failed.record_event(&finished(1));
    failed.sync();
    let failed_path = failed.path().to_owned();
    drop(failed);
    assert!(!failed_path.exists());
    assert_eq!(list(dir.path()).unwrap().sessions.len(), 1);
}

#[test]
fn continue_picks_the_latest_session_of_this_work_dir_only() {
    let dir = tempfile::tempdir().unwrap();
    let here = in_dir(dir.path(), "/here");
    let there = in_dir(dir.path(), "/there");
    let mine = here.create(AgentName::Coder).unwrap();
    mine.record_event(&started(1, "mine"));
    let (mine_id, mine_path) = (mine.id().to_owned(), mine.path().to_owned());
    drop(mine);
    // Newer, but elsewhere; and an old file whose header has no work dir at all.
    let theirs = there.create(AgentName::Coder).unwrap();
    theirs.record_event(&started(1, "theirs"));
    let theirs_id = theirs.id().to_owned();
    drop(theirs);
    let old = super::dir(dir.path()).join("29991231-000000-0ld0.jsonl");
    std::fs::write(
        &old,
        "{\"kind\":\"header\",\"version\":1,\"id\":\"x\",\"created_ms\":99999999999999,\"model\":\"m\",\"agent\":\"coder\"}\n",
    )
    .unwrap();
    assert_eq!(
        latest(dir.path(), "/here").unwrap(),
        (mine_id.clone(), mine_path)
    );
    assert!(matches!(
        latest(dir.path(), "/elsewhere"),
        Err(SessionError::NoSessionHere(ref w)) if w == "/elsewhere"
    ));
    let message = in_dir(dir.path(), "/elsewhere")
        .reopen(None, None)
        .map(|_| ())
        .unwrap_err()
        .to_string();
    assert_eq!(
        message,
        "no saved session in /elsewhere; `seek sessions --all` lists every one"
    );
    let listing = list(dir.path()).unwrap();
    assert_eq!(listing.sessions.len(), 3, "the old file still lists");
    let old_summary = listing
        .sessions
        .iter()
        .find(|s| s.id.ends_with("0ld0"))
        .unwrap();
    assert_eq!(old_summary.work_dir, None);
    assert!(old_summary.line(None).contains(" ? "));
    let only_here = listing.only_in("/here");
    assert_eq!(only_here.sessions.len(), 1);
    assert_eq!(only_here.sessions[0].id, mine_id);
    assert_eq!(
        only_here.sessions[0].entry().work_dir.as_deref(),
        Some("/here")
    );

    // `-r ID` of another work dir's session: continued, with a warning naming both folders.
    let (loaded, _file) = here.reopen(Some(&theirs_id), None).unwrap();
    let warning = loaded.warnings.join("\n");
    assert!(
        warning.contains("worked in /there") && warning.contains("here, in /here"),
        "{warning}"
    );
}

#[test]
fn the_users_command_cut_short_by_seeks_end_is_closed_as_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let file = sessions(dir.path()).create(AgentName::Coder).unwrap();
    file.record_event(&started(1, "p"));
    file.record_event(&finished(1));
    // `!sleep 100`, outside any task, when seek was killed.
    file.record_event(&Event::BlockStarted {
        round: 0,
        index: 0,
        tool: "bash".into(),
        code: "sleep 100".into(),
        save_path: None,
    });
    file.sync();
    let loaded = load(file.path(), file.id()).unwrap();
    let closed = loaded.events.iter().find_map(|(_, e)| match e {
        Event::BlockFinished { record } if record.round == 0 => Some(record.not_run),
        _ => None,
    });
    assert_eq!(closed, Some(Some(crate::wire::NotRun::Interrupted)));
    assert!(
        !matches!(
            loaded.events.last(),
            Some((
                _,
                Event::TurnFinished {
                    outcome: Outcome::Stopped,
                    ..
                }
            ))
        ),
        "no task was open, so none is closed"
    );
}

//! Sessions: loading a long session file, appending one record to it, and listing a folder that
//! holds a 1 GiB session (listing reads only each file's ends).
//! Run with `cargo bench --bench session`; numbers in docs/benchmarks.md.

use criterion::{Criterion, criterion_group, criterion_main};
use seek::agent::{BlockRecord, Event, Outcome};
use seek::config::AgentName;
use seek::llm::Role;
use seek::session::{MemoryOp, Record, SessionFile, VERSION, list, load};

const TURNS: u64 = 10_000;

fn block(turn: u64) -> BlockRecord {
    BlockRecord {
        round: 1,
        index: 0,
        tool_type: "python".into(),
        block: "with open('notes.txt') as f:\n    print(len(f.read().split()))\n".into(),
        save_path: None,
        feedback: format!("[success] {turn}\n"),
        success: true,
        exit_code: Some(0),
        timed_out: false,
        stopped: false,
        skipped: false,
        duration_ms: 31.0,
        output: "212\n".repeat(50),
        not_run: None,
    }
}

/// A session of `TURNS` tasks, each with its prompt, reply, one block and the memory changes.
fn write_session(path: &std::path::Path) -> SessionFile {
    let header = Record::Header {
        version: VERSION,
        id: "bench".into(),
        created_ms: 0,
        work_dir: "/w".into(),
        model: "bench".into(),
        agent: AgentName::Coder,
    };
    let file =
        SessionFile::create(path, "bench", header, std::sync::Arc::default()).expect("create");
    for turn in 1..=TURNS {
        let prompt = format!("task {turn}: count the words in notes.txt");
        file.record_event(&Event::TurnStarted {
            turn,
            prompt: prompt.clone(),
            agent: AgentName::Coder,
        });
        file.record_memory(MemoryOp::BeginTurn { content: prompt });
        file.record_event(&Event::AnswerComplete {
            round: 1,
            answer: "I'll count.\nblock:0\n".into(),
            reasoning: Some("read and split".into()),
            blocks: 1,
            finish: seek::agent::AnswerFinish::Stop,
        });
        file.record_memory(MemoryOp::Push {
            role: Role::Assistant,
            content: "I'll count.\n```python\nprint(1)\n```\n".into(),
        });
        file.record_event(&Event::BlockStarted {
            round: 1,
            index: 0,
            tool: "python".into(),
            code: "print(1)\n".into(),
            save_path: None,
        });
        file.record_event(&Event::BlockFinished {
            record: block(turn),
        });
        file.record_memory(MemoryOp::Push {
            role: Role::User,
            content: format!("[success] {turn}"),
        });
        file.record_event(&Event::TurnFinished {
            usage: None,
            turn,
            outcome: Outcome::Done,
            answer: "I'll count.\nblock:0\n".into(),
            reasoning: None,
            agent: AgentName::Coder,
            rounds: 1,
            blocks: vec![block(turn)],
            message: None,
            plan: None,
            web: None,
        });
    }
    file
}

fn benches(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("bench.jsonl");
    let file = write_session(&path);
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    println!("session of {TURNS} tasks: {:.1} MB", size as f64 / 1e6);
    let mut group = c.benchmark_group("session");
    group.sample_size(10);
    group.bench_function("load 10,000 tasks", |b| {
        b.iter(|| load(&path, "bench").expect("load"))
    });
    group.finish();
    let event = Event::BlockFinished { record: block(1) };
    c.bench_function("session/append one event (no fsync)", |b| {
        b.iter(|| file.record_event(&event))
    });
}

/// A data dir whose one session is 1 GiB long: a few tasks, a sparse hole, a last record.
fn gigabyte_session(data_dir: &std::path::Path) {
    use std::io::Write;
    let path = data_dir.join("sessions/20260101-000000-beef.jsonl");
    std::fs::create_dir_all(path.parent().expect("a folder")).expect("mkdir");
    let header = Record::Header {
        version: VERSION,
        id: "20260101-000000-beef".into(),
        created_ms: 0,
        work_dir: "/w".into(),
        model: "bench".into(),
        agent: AgentName::Coder,
    };
    let file = SessionFile::create(
        &path,
        "20260101-000000-beef",
        header,
        std::sync::Arc::default(),
    )
    .expect("create");
    file.record_event(&Event::TurnStarted {
        turn: 1,
        prompt: "count the words in notes.txt".into(),
        agent: AgentName::Coder,
    });
    drop(file);
    let file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .expect("open");
    file.set_len(1 << 30).expect("set_len");
    let last = Event::TurnStarted {
        turn: 2,
        prompt: "again".into(),
        agent: AgentName::Coder,
    };
    let line = serde_json::to_string(&Record::Event {
        at_ms: 1,
        event: last,
    })
    .expect("encode");
    writeln!(&file, "\n{line}").expect("append");
}

fn listing(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    gigabyte_session(dir.path());
    c.bench_function("session/list a folder with one 1 GiB session", |b| {
        b.iter(|| {
            let listing = list(dir.path()).expect("list");
            assert_eq!(listing.sessions.len(), 1);
            listing
        })
    });
}

criterion_group!(session, benches, listing);
criterion_main!(session);

//! Sessions: loading a long session file, and appending one record to it.
//! Run with `cargo bench --bench session`; numbers in docs/benchmarks.md.

use criterion::{Criterion, criterion_group, criterion_main};
use seek::agent::{BlockRecord, Event, Outcome};
use seek::config::AgentName;
use seek::llm::Role;
use seek::session::{MemoryOp, Record, SessionFile, VERSION, load};

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
            turn,
            outcome: Outcome::Done,
            answer: "I'll count.\nblock:0\n".into(),
            reasoning: None,
            agent: AgentName::Coder,
            rounds: 1,
            blocks: vec![block(turn)],
            message: None,
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

criterion_group!(session, benches);
criterion_main!(session);

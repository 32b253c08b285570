//! The terminal UI's speed: frame time against transcript length, keeping up with a fast
//! stream, launch to first frame, and CPU while idle.
//! Run with `cargo bench --bench tui`; numbers in docs/benchmarks.md.

use std::io::Read;
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize, native_pty_system};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use seek::agent::{BlockRecord, Event, Outcome};
use seek::config::AgentName;
use seek::tui::app::App;
use seek::tui::history::History;
use seek::tui::render::screen;

fn app() -> App {
    App::new(
        AgentName::Coder,
        "bench @ ollama".into(),
        "~/w".into(),
        History::default(),
    )
}

/// A transcript of `turns` tasks, each a prompt, thoughts, text, a pane and a closing line:
/// about five items per task.
fn transcript(turns: usize) -> (App, Instant) {
    let mut app = app();
    let t0 = Instant::now();
    for turn in 0..turns {
        let events = [
            Event::TurnStarted {
                turn: turn as u64,
                prompt: format!("task number {turn}: count the words in notes.txt"),
                agent: AgentName::Coder,
            },
            Event::ReasoningDelta {
                text: "read the file, split, count ".repeat(10),
            },
            Event::AnswerDelta { text: "x".into() },
            Event::AnswerComplete {
                round: 1,
                answer: "I'll **count** with `python`:\nblock:0\nThat gives the count.\n".into(),
                reasoning: None,
                blocks: 1,
                finish: seek::agent::AnswerFinish::Stop,
            },
            Event::BlockStarted {
                round: 1,
                index: 0,
                tool: "python".into(),
                code: "with open('notes.txt') as f:\n    print(len(f.read().split()))\n".into(),
                save_path: None,
            },
            Event::BlockFinished {
                record: BlockRecord {
                    round: 1,
                    index: 0,
                    tool_type: "python".into(),
                    block: String::new(),
                    save_path: None,
                    feedback: String::new(),
                    success: turn % 7 != 0,
                    exit_code: Some(i32::from(turn % 7 == 0)),
                    timed_out: false,
                    stopped: false,
                    skipped: false,
                    duration_ms: 31.0,
                    output: "212\nline two\nline three\nline four\n".into(),
                    not_run: None,
                },
            },
            Event::TurnFinished {
                usage: None,
                web: None,
                turn: turn as u64,
                outcome: Outcome::Done,
                answer: String::new(),
                reasoning: None,
                agent: AgentName::Coder,
                rounds: 1,
                blocks: Vec::new(),
                message: None,
                plan: None,
            },
        ];
        for event in &events {
            app.agent_event(event, t0);
        }
    }
    (app, t0)
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn frame_times() {
    println!("frame time at 120x40 (median of 200 frames)");
    for turns in [20, 2_000] {
        let (mut app, t0) = transcript(turns);
        let items = app.transcript.items().len();
        let mut terminal = Terminal::new(TestBackend::new(120, 40)).expect("terminal");
        let mut draw = |app: &mut App| {
            let start = Instant::now();
            terminal
                .draw(|f| screen::draw(f, app, t0, true))
                .expect("draw");
            start.elapsed()
        };
        // First frame: nothing cached.
        let cold = draw(&mut app);
        let follow = median((0..200).map(|_| draw(&mut app)).collect());
        app.viewport.to_top();
        let _ = draw(&mut app);
        for _ in 0..(items / 4) {
            app.viewport.scroll_down(&app.transcript, 10, t0);
        }
        let _ = draw(&mut app);
        let middle = median((0..200).map(|_| draw(&mut app)).collect());
        // Scrolling a page each frame renders newly visible items.
        let scrolling = median(
            (0..200)
                .map(|_| {
                    app.viewport.scroll_up(&app.transcript, 38, t0);
                    draw(&mut app)
                })
                .collect(),
        );
        println!(
            "  {items:>6} items: first frame {:>7.3} ms, following the end {:>6.3} ms, scrolled to the middle {:>6.3} ms, paging up each frame {:>6.3} ms",
            ms(cold),
            ms(follow),
            ms(middle),
            ms(scrolling)
        );
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// 2,000 tokens per second for 30 s into the UI, drawn at 60 frames per second: the UI's work
/// per second of stream must stay far below a second.
fn streaming() {
    streaming_case("prose and paragraphs", |token| match token % 40 {
        0 => "\n\n".to_owned(),
        13 => "`code` ".to_owned(),
        27 => "**bold** ".to_owned(),
        _ => format!("w{} ", token % 97),
    });
    // The worst case for paragraph commits: one code block that never closes.
    streaming_case("one endless code block", |token| match token {
        1 => "```python\n".to_owned(),
        t if t % 12 == 0 => "\n".to_owned(),
        t => format!("v{} = ", t % 97),
    });
}

fn streaming_case(name: &str, piece: impl Fn(usize) -> String) {
    const RATE: usize = 2_000;
    const SECONDS: usize = 30;
    const FPS: usize = 60;
    let mut app = app();
    let t0 = Instant::now();
    app.agent_event(
        &Event::TurnStarted {
            turn: 1,
            prompt: "write a long answer".into(),
            agent: AgentName::Coder,
        },
        t0,
    );
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).expect("terminal");
    let mut worst = Duration::ZERO;
    let mut total = Duration::ZERO;
    let mut token = 0usize;
    for second in 0..SECONDS {
        let start = Instant::now();
        for frame in 0..FPS {
            let now = t0 + Duration::from_millis((second * 1000 + frame * 1000 / FPS) as u64);
            for _ in 0..RATE / FPS {
                token += 1;
                app.agent_event(&Event::AnswerDelta { text: piece(token) }, now);
            }
            terminal
                .draw(|f| screen::draw(f, &mut app, now, true))
                .expect("draw");
        }
        let spent = start.elapsed();
        worst = worst.max(spent);
        total += spent;
    }
    println!(
        "{name}: {RATE} tokens/s for {SECONDS} s at {FPS} fps: UI work per second of stream: mean {:.1} ms, worst {:.1} ms (of 1000)",
        ms(total) / SECONDS as f64,
        ms(worst)
    );
}

/// Launch to first frame, and CPU used while idle, of the real binary in a pty.
fn launch_and_idle() {
    const RUNS: usize = 10;
    let home = tempfile::tempdir().expect("temp home");
    let mut launches = Vec::new();
    let mut idle_cpu = Duration::ZERO;
    for run in 0..RUNS {
        let pair = native_pty_system()
            .openpty(PtySize {
                rows: 40,
                cols: 120,
                pixel_width: 0,
                pixel_height: 0,
            })
            .expect("pty");
        let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_seek"));
        cmd.env_clear();
        cmd.env("HOME", home.path());
        cmd.env("XDG_CONFIG_HOME", home.path().join("config"));
        cmd.env("XDG_DATA_HOME", home.path().join("data"));
        cmd.env("TERM", "xterm-256color");
        cmd.env("PATH", std::env::var_os("PATH").unwrap_or_default());
        cmd.cwd(home.path());
        cmd.args([
            "--provider",
            "ollama",
            "--model",
            "bench",
            "--base-url",
            "http://127.0.0.1:9",
        ]);
        let start = Instant::now();
        let mut child = pair.slave.spawn_command(cmd).expect("spawn");
        drop(pair.slave);
        let mut reader = pair.master.try_clone_reader().expect("reader");
        let mut parser = vt100::Parser::new(
            std::num::NonZero::new(40).expect("rows"),
            std::num::NonZero::new(120).expect("cols"),
            0,
        );
        let mut buf = [0u8; 8192];
        loop {
            let n = reader.read(&mut buf).expect("read");
            assert!(n > 0, "seek closed the terminal");
            parser.process(&buf[..n]);
            if parser
                .screen()
                .contents()
                .contains("ask seek to do something")
            {
                break;
            }
        }
        launches.push(start.elapsed());
        if run == 0 {
            let pid = child.process_id().expect("pid");
            let before = cpu_time(pid);
            std::thread::sleep(Duration::from_secs(3));
            idle_cpu = cpu_time(pid).saturating_sub(before);
        }
        let _ = child.kill();
        let _ = child.wait();
    }
    println!(
        "launch to first frame (median of {RUNS}): {:.1} ms; CPU while idle for 3 s: {:.1} ms",
        ms(median(launches)),
        ms(idle_cpu)
    );
}

/// CPU time of a process, all its threads, from /proc (nanoseconds on CPU per thread).
fn cpu_time(pid: u32) -> Duration {
    let threads = std::fs::read_dir(format!("/proc/{pid}/task")).expect("threads");
    let nanos: u64 = threads
        .filter_map(Result::ok)
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| {
            s.split_whitespace()
                .next()
                .and_then(|n| n.parse::<u64>().ok())
        })
        .sum();
    Duration::from_nanos(nanos)
}

fn main() {
    frame_times();
    streaming();
    launch_and_idle();
}

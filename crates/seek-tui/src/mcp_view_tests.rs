//! `/mcp` drawn by the real screen code into ratatui's `TestBackend` at 80x24 (snapshots), its
//! flow from the command to `ListMcp` and back, its scrolling, the colours of the states, and
//! the notice an unrequested list with a failed server gives.

use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::style::Color;

use super::*;
use crate::agent::{Command, Event};
use crate::app::{App, Effect, Overlay};
use crate::config::AgentName;
use crate::history::History;
use crate::render::screen;
use crate::wire::McpToolInfo;

fn app() -> App {
    App::new(
        AgentName::Coder,
        "qwen2.5-coder:7b @ ollama http://127.0.0.1:11434".into(),
        "~/project".into(),
        History::default(),
    )
}

fn press(app: &mut App, code: KeyCode) -> Vec<Effect> {
    app.key(KeyEvent::new(code, KeyModifiers::NONE), Instant::now())
}

fn typed(app: &mut App, text: &str) -> Vec<Effect> {
    text.chars()
        .flat_map(|c| press(app, KeyCode::Char(c)))
        .collect()
}

fn draw_buffer(app: &mut App) -> Buffer {
    let mut terminal = Terminal::new(TestBackend::new(80, 24)).expect("test terminal");
    let now = Instant::now();
    terminal
        .draw(|frame| screen::draw(frame, app, now, true))
        .expect("draw");
    terminal.backend().buffer().clone()
}

fn draw(app: &mut App) -> String {
    let mut terminal = Terminal::new(TestBackend::new(80, 24)).expect("test terminal");
    let now = Instant::now();
    terminal
        .draw(|frame| screen::draw(frame, app, now, true))
        .expect("draw");
    terminal.backend().to_string()
}

fn tool(name: &str, arguments: &str, description: &str) -> McpToolInfo {
    McpToolInfo {
        name: name.into(),
        description: description.into(),
        arguments: arguments.into(),
    }
}

fn servers() -> Vec<McpServerInfo> {
    vec![
        McpServerInfo {
            name: "time".into(),
            transport: "stdio: python3 -m mcp_server_time".into(),
            state: McpState::Ready,
            error: None,
            tools: vec![
                tool(
                    "get_current_time",
                    "timezone: string",
                    "Get current time in a specific timezones",
                ),
                tool(
                    "convert_time",
                    "source_timezone: string, time: string, target_timezone: string",
                    "Convert time between timezones",
                ),
            ],
        },
        McpServerInfo {
            name: "broken".into(),
            transport: "stdio: no-such-server --flag".into(),
            state: McpState::Failed,
            error: Some(
                "cannot start `no-such-server`: No such file or directory (os error 2)".into(),
            ),
            tools: Vec::new(),
        },
        McpServerInfo {
            name: "remote".into(),
            transport: "http: https://u:***@mcp.example.com/mcp".into(),
            state: McpState::Disabled,
            error: None,
            tools: Vec::new(),
        },
    ]
}

/// The row of the screen holding `text`, and the column where it starts.
fn find(buf: &Buffer, text: &str) -> Option<(u16, u16)> {
    let area = buf.area;
    (0..area.height).find_map(|y| {
        let row: String = (0..area.width)
            .map(|x| buf[(x, y)].symbol().to_owned())
            .collect();
        row.find(text).map(|at| {
            // Every cell here is one column wide.
            (row[..at].chars().count() as u16, y)
        })
    })
}

#[test]
fn mcp_asks_the_runtime_shows_the_servers_and_esc_closes() {
    let mut a = app();
    typed(&mut a, "/mcp");
    assert_eq!(
        press(&mut a, KeyCode::Enter),
        [Effect::Send(Command::ListMcp)]
    );
    assert!(matches!(a.overlay, Some(Overlay::Mcp(_))));
    let loading = draw(&mut a);
    assert!(loading.contains("loading…"), "{loading}");
    a.agent_event(&Event::McpServers { servers: servers() }, Instant::now());
    insta::assert_snapshot!(draw(&mut a));
    let buf = draw_buffer(&mut a);
    let (x, y) = find(&buf, "ready").expect("ready shown");
    assert_eq!(buf[(x, y)].fg, Color::Green);
    let (x, y) = find(&buf, "failed").expect("failed shown");
    assert_eq!(buf[(x, y)].fg, Color::Red);
    assert!(
        a.transcript.items().is_empty(),
        "an answer to /mcp is no notice"
    );
    assert!(press(&mut a, KeyCode::Esc).is_empty());
    assert!(a.overlay.is_none(), "Esc closes");
}

#[test]
fn mcp_with_no_servers_says_how_to_add_one() {
    let mut a = app();
    typed(&mut a, "/mcp");
    press(&mut a, KeyCode::Enter);
    a.agent_event(
        &Event::McpServers {
            servers: Vec::new(),
        },
        Instant::now(),
    );
    let screen = draw(&mut a);
    assert!(
        screen.contains("no MCP servers are configured: add a [mcp_servers.NAME]"),
        "{screen}"
    );
}

#[test]
fn many_tools_scroll_and_hostile_text_is_made_safe() {
    let mut a = app();
    typed(&mut a, "/mcp");
    press(&mut a, KeyCode::Enter);
    let tools = (0..60)
        .map(|i| {
            tool(
                &format!("tool_{i:02}\x1b[2J"),
                "x: integer",
                &format!(
                    "does thing {i} \x1b]0;pwned\x07 and a long tail {}",
                    "z".repeat(200)
                ),
            )
        })
        .collect();
    a.agent_event(
        &Event::McpServers {
            servers: vec![McpServerInfo {
                name: "many".into(),
                transport: "stdio: many".into(),
                state: McpState::Ready,
                error: None,
                tools,
            }],
        },
        Instant::now(),
    );
    let first = draw(&mut a);
    assert!(
        first.contains("tool_00") && !first.contains("tool_59"),
        "{first}"
    );
    assert!(!first.contains('\x1b') && !first.contains("pwned\x07"));
    press(&mut a, KeyCode::End);
    let last = draw(&mut a);
    assert!(last.contains("tool_59") && last.contains("end"), "{last}");
    press(&mut a, KeyCode::Home);
    assert!(draw(&mut a).contains("tool_00"));
    // A key the overlay does not use closes it and goes to the input box.
    press(&mut a, KeyCode::Char('h'));
    assert!(a.overlay.is_none());
    assert_eq!(a.composer.text(), "h");
}

#[test]
fn an_unrequested_list_with_a_failed_server_is_a_one_line_notice() {
    let mut a = app();
    a.agent_event(&Event::McpServers { servers: servers() }, Instant::now());
    assert!(a.overlay.is_none(), "nothing opens by itself");
    let screen = draw(&mut a);
    assert!(
        screen
            .contains("MCP server `broken` failed: cannot start `no-such-server`: No such file or"),
        "{screen}"
    );
    assert!(screen.contains("/mcp for details"), "{screen}");
    // All well: nothing said.
    let mut quiet = app();
    let mut fine = servers();
    fine.truncate(1);
    quiet.agent_event(&Event::McpServers { servers: fine }, Instant::now());
    assert!(quiet.transcript.items().is_empty());
}

#[test]
fn the_notice_names_each_failed_or_exited_server() {
    let mut list = servers();
    list[0].state = McpState::Exited;
    list[0].error = Some("exit status 1\nTraceback…".into());
    let notice = failure_notice(&list).expect("two servers down");
    let lines: Vec<&str> = notice.lines().collect();
    assert_eq!(
        lines,
        [
            "MCP server `time` exited: exit status 1; /mcp for details",
            "MCP server `broken` failed: cannot start `no-such-server`: No such file or directory (os error 2); /mcp for details",
        ]
    );
    assert_eq!(failure_notice(&servers()[2..]), None);
}

#[test]
fn long_rows_wrap_under_their_start() {
    let rows = server_lines(
        &[McpServerInfo {
            name: "s".into(),
            transport: "stdio: s".into(),
            state: McpState::Ready,
            error: None,
            tools: vec![tool("t", "a: string", &"word ".repeat(40))],
        }],
        40,
    );
    let text: Vec<String> = rows
        .iter()
        .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
        .collect();
    assert!(text.len() > 3, "{text:?}");
    assert!(text[1].starts_with("   t(a: string) — word"), "{text:?}");
    assert!(text[2].starts_with("     word"), "{text:?}");
    assert!(text.iter().all(|row| row.chars().count() <= 40), "{text:?}");
}

#[test]
fn wrapping_breaks_at_spaces_splits_long_words_and_caps_the_text() {
    assert_eq!(wrap("ab cd ef", 5), ["ab cd", "ef"]);
    assert_eq!(wrap("abcdefgh", 3), ["abc", "def", "gh"]);
    assert_eq!(wrap("", 10), [""]);
    let huge = "y".repeat(50_000);
    let rows = wrap(&huge, 80);
    let kept: usize = rows.iter().map(|r| r.chars().count()).sum();
    assert_eq!(kept, TEXT_MAX + 1, "the text is capped, with an ellipsis");
    assert!(rows.iter().all(|r| width(r) <= 80));
}

#[test]
fn hidden_characters_of_a_server_are_drawn_escaped() {
    let server = McpServerInfo {
        name: "evil".into(),
        transport: "stdio: evil".into(),
        state: McpState::Failed,
        error: Some("bad\u{2066}\x1b[2J\nnews".into()),
        tools: vec![tool(
            "\u{202e}gnp.exe",
            "pa\u{202e}th: string",
            "shows\u{200b} images\u{feff}",
        )],
    };
    let lines = server_lines(std::slice::from_ref(&server), 200);
    let text: String = lines
        .iter()
        .map(|line| {
            let row: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
            row + "\n"
        })
        .collect();
    let hidden: Vec<char> = text
        .chars()
        .filter(|&c| (c.is_control() && c != '\n') || crate::terminal_safe::is_invisible(c))
        .collect();
    assert!(hidden.is_empty(), "{hidden:?} in {text:?}");
    assert!(text.contains("bad\\u{2066}\\u{1b}[2J news"), "{text}");
    assert!(
        text.contains("\\u{202e}gnp.exe(pa\\u{202e}th: string) — shows\\u{200b} images\\u{feff}"),
        "{text}"
    );
    let notice = failure_notice(&[server]).unwrap_or_default();
    assert!(notice.contains("bad\\u{2066}\\u{1b}[2J"), "{notice}");
}

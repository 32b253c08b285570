//! The web agent in the terminal UI end to end: the real binary in a pseudo-terminal against the
//! fake model and the local site. Each search and page read is a pane; Esc during a page load
//! stops the task at once. Waits are on the screen, never sleeps.

use crate::support;

use crate::fake_model;
use crate::pty;
use crate::web_site;

use fake_model::{FakeModel, Reply};
use pty::{Tui, keys};
use support::Sandbox;
use web_site::WebSite;

const ESC: &[u8] = b"\x1b";

fn start(sb: &Sandbox, server: &FakeModel, site: &WebSite) -> Tui {
    std::fs::create_dir_all(sb.path("work")).expect("the work dir");
    sb.write_config(&format!(
        "[web]\nsearxng_url = \"{}\"\nbrowser = \"http\"\nallow_private = true\n",
        site.base()
    ));
    let mut args = sb.model_args(&server.url());
    args.extend(["--agent".to_owned(), "web".to_owned()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let tui = Tui::start(sb, &args, 110, 40);
    tui.wait_for_text("ask seek to do something");
    tui
}

fn quit(mut tui: Tui) {
    tui.send(keys::CTRL_D);
    let (code, _) = tui.wait_exit();
    assert_eq!(code, 0);
}

#[test]
fn searches_and_pages_are_panes_and_the_answer_follows() {
    let site = WebSite::start();
    let article = site.url("/article.html");
    let server = FakeModel::start(vec![
        Reply::text("search: quokka"),
        Reply::text(format!("I will navigate to {article}")),
        Reply::text("Note: About 12,000 quokkas live on Rottnest Island.\nREQUEST_EXIT"),
        Reply::text("About 12,000 quokkas."),
    ]);
    let sb = Sandbox::new();
    let mut tui = start(&sb, &server, &site);
    tui.type_text("how many quokkas?");
    tui.send(keys::ENTER);
    tui.wait_for("the search and page panes and the answer", |s| {
        s.contains("search: quokka")
            && s.contains(&format!("read: {article}"))
            && s.contains("About 12,000 quokkas.")
    });
    quit(tui);
}

#[test]
fn esc_during_a_page_load_stops_the_task() {
    let site = std::sync::Arc::new(WebSite::start());
    let slow = site.url("/slow.html");
    let server = FakeModel::start(Vec::new());
    let sb = Sandbox::new();
    let mut tui = start(&sb, &server, &site);
    tui.type_text(&format!("read {slow}"));
    tui.send(keys::ENTER);
    site.wait_for("/slow.html");
    tui.send(ESC);
    tui.wait_for("the task stopped", |s| s.contains("stopped"));
    site.open_slow_page();
    quit(tui);
}

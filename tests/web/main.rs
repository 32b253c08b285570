//! The web agent: HTTP reads, HTML to text, search, the URL policy and its proxy, Chromium
//! (in-process and through the binary), the agent and the command line with the web, and the
//! attacks through web pages and the browser.
//!
//! One test binary for these modules (each was a binary of its own); the helpers in
//! `tests/support/` are declared once here. Run one module with
//! `cargo test --test web web_policy::`, one test with
//! `cargo test --test web -- --exact web_policy::<name>`.

#[path = "../support/fake_model.rs"]
mod fake_model;
#[path = "../support/procs.rs"]
mod procs;
#[path = "../support/proxy_site.rs"]
mod proxy_site;
#[path = "../support/runtime.rs"]
mod runtime;
#[path = "../support/mod.rs"]
mod support;
#[path = "../support/web_site.rs"]
mod web_site;

mod attack_browser;
mod attack_web;
mod web_agent;
mod web_chromium;
mod web_chromium_cli;
mod web_chromium_start;
mod web_cli;
mod web_html;
mod web_http;
mod web_policy;
mod web_proxy;
mod web_search;
mod web_site_selfcheck;

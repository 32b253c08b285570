//! What the `chromium` page reader costs: time to start (Chromium confined, its proxy, the
//! DevTools session over the pipe), time to read a page (a plain article, a page written by
//! script, one drawn 300 ms after its load, one waiting on a 700 ms API), how long a stop during
//! a page load takes until every process is gone and the profile removed, and the peak memory of
//! all the browser's processes. Run with `cargo bench --bench web_browser`.
//!
//! A small harness rather than criterion: each start is a whole browser, so a handful of runs
//! reported as median and spread says more than criterion's statistics. Needs Debian's
//! `chromium`.

#[path = "../tests/support/web_site.rs"]
#[allow(unused_imports)]
mod web_site;

use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::Url;
use seek::config::{BrowserChoice, WebSettings};
use seek::web::UrlPolicy;
use seek::web::read::{ChromiumReader, PageReader};

const STARTS: usize = 5;
const READS: usize = 10;

fn main() {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("no runtime: {e}");
            std::process::exit(1);
        }
    };
    runtime.block_on(run());
}

async fn run() {
    let site = web_site::WebSite::start();
    let mut settings = WebSettings::default();
    settings.allow_private.value = true;
    settings.browser.value = BrowserChoice::Chromium;
    let policy = Arc::new(UrlPolicy::new(true));
    let mut starts = Vec::new();
    let mut article = Vec::new();
    let mut script = Vec::new();
    let mut late = Vec::new();
    let mut api = Vec::new();
    let mut stops = Vec::new();
    let mut peak_kib = Vec::new();
    for _ in 0..STARTS {
        let began = Instant::now();
        let mut reader = match ChromiumReader::start(&settings, Arc::clone(&policy), &[]).await {
            Ok(reader) => reader,
            Err(e) => {
                eprintln!("chromium did not start: {e}");
                std::process::exit(1);
            }
        };
        starts.push(began.elapsed());
        let group = reader.process_group();
        for (path, into) in [
            ("/article.html", &mut article),
            ("/js.html", &mut script),
            ("/late.html", &mut late),
            ("/api.html", &mut api),
        ] {
            let Ok(url) = Url::parse(&site.url(path)) else {
                continue;
            };
            for _ in 0..READS {
                let began = Instant::now();
                if let Err(e) = reader.open(&url).await {
                    eprintln!("{path} did not read: {e}");
                    std::process::exit(1);
                }
                into.push(began.elapsed());
            }
        }
        peak_kib.push(group_memory_kib(group));
        reader.close().await;
        stops.push(stop_during_a_load(&settings, &policy).await);
    }
    println!("chromium reader, {STARTS} starts, {READS} reads of each page per start");
    report(
        "start (proxy + confined browser + DevTools session)",
        &mut starts,
    );
    report("read /article.html", &mut article);
    report("read /js.html (script-written)", &mut script);
    report("read /late.html (text drawn 300 ms after load)", &mut late);
    report("read /api.html (text from a 700 ms API)", &mut api);
    report(
        "stop during a load: processes gone, profile removed",
        &mut stops,
    );
    peak_kib.sort_unstable();
    let (hwm, rss): (Vec<u64>, Vec<u64>) = peak_kib.into_iter().unzip();
    println!(
        "memory of the group after the reads: sum of VmHWM median {} MiB, sum of VmRSS median {} MiB",
        median(&hwm) / 1024,
        median(&rss) / 1024
    );
}

/// Starts a reader, opens the held page, and once the site saw the request stops the load (the
/// future dropped, the reader closed): the time from the stop to no process and no profile.
async fn stop_during_a_load(settings: &WebSettings, policy: &Arc<UrlPolicy>) -> Duration {
    // A site of its own: its held page stays held until this stop is measured.
    let site = Arc::new(web_site::WebSite::start());
    let mut reader = match ChromiumReader::start(settings, Arc::clone(policy), &[]).await {
        Ok(reader) => reader,
        Err(e) => {
            eprintln!("chromium did not start: {e}");
            std::process::exit(1);
        }
    };
    let profile = reader.profile_dir().map(std::path::Path::to_path_buf);
    let Ok(slow) = Url::parse(&site.url("/slow.html")) else {
        return Duration::ZERO;
    };
    let watcher = Arc::clone(&site);
    let arrived = tokio::task::spawn_blocking(move || watcher.wait_for("/slow.html"));
    tokio::select! {
        _ = reader.open(&slow) => {}
        _ = arrived => {}
    }
    let began = Instant::now();
    reader.close().await;
    let took = began.elapsed();
    if profile.is_some_and(|p| p.exists()) {
        eprintln!("the profile was left after a stop");
        std::process::exit(1);
    }
    site.open_slow_page();
    took
}

fn median(values: &[u64]) -> u64 {
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    sorted.get(sorted.len() / 2).copied().unwrap_or(0)
}

fn report(what: &str, times: &mut [Duration]) {
    times.sort_unstable();
    let ms = |d: Option<&Duration>| d.map_or(0.0, |d| d.as_secs_f64() * 1000.0);
    println!(
        "{what}: median {:.0} ms, min {:.0} ms, max {:.0} ms",
        ms(times.get(times.len() / 2)),
        ms(times.first()),
        ms(times.last())
    );
}

/// `(sum of VmHWM, sum of VmRSS)` in KiB over the live processes of group `pgid` (the driver,
/// Chromium and its helpers). Shared pages count once per process: an upper bound.
fn group_memory_kib(pgid: i32) -> (u64, u64) {
    let mut hwm = 0;
    let mut rss = 0;
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return (0, 0);
    };
    for pid in entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
    {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let Some(rest) = stat.rfind(')').and_then(|i| stat.get(i + 2..)) else {
            continue;
        };
        if rest
            .split_whitespace()
            .nth(2)
            .and_then(|g| g.parse::<i32>().ok())
            != Some(pgid)
        {
            continue;
        }
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        for line in status.lines() {
            let kib = || {
                line.split_whitespace()
                    .nth(1)
                    .and_then(|v| v.parse::<u64>().ok())
                    .unwrap_or(0)
            };
            if line.starts_with("VmHWM:") {
                hwm += kib();
            } else if line.starts_with("VmRSS:") {
                rss += kib();
            }
        }
    }
    (hwm, rss)
}

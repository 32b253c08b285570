//! `web_search` costs: one search against the local fake SearxNG (tests/support/web_site.rs) by
//! the JSON API and by the HTML fallback (each through a kept backend, so connections are
//! reused as in a session), and `format_hits` / `parse_hits` on 16 results.
//! Run with `cargo bench --bench web_search`; numbers are recorded in docs/benchmarks.md.

#[path = "../tests/support/web_site.rs"]
mod web_site;

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use seek::web::search::{SearchBackend, SearchHit, SearxNg, format_hits, parse_hits};
use web_site::{Hit, SearchMode, WebSite};

fn sixteen_hits() -> Vec<SearchHit> {
    (0..16)
        .map(|i| SearchHit {
            title: format!("Result number {i} about quokkas on Rottnest Island"),
            snippet: format!(
                "Snippet {i}: the quokka is a small macropod about the size of a domestic cat, \
                 found on islands off Western Australia."
            ),
            link: format!("https://example{i}.org/articles/quokka-{i}?ref=search"),
        })
        .collect()
}

fn search(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("tokio runtime: {e}"));
    let site = WebSite::start();
    site.set_hits(
        sixteen_hits()
            .into_iter()
            .map(|h| Hit::new(&h.title, &h.snippet, &h.link))
            .collect(),
    );
    let json = SearxNg::new(&site.base(), Duration::from_secs(20));
    let html = SearxNg::new(&site.base(), Duration::from_secs(20));
    let mut group = c.benchmark_group("web_search");
    group.bench_function("search via JSON (16 results)", |b| {
        b.iter(|| {
            let hits = runtime.block_on(json.search(black_box("quokka facts"), 16));
            assert_eq!(hits.map(|h| h.len()), Ok(16));
        })
    });
    // The first search learns JSON is refused; every later one asks for HTML only.
    site.set_mode(SearchMode::RefuseJson);
    group.bench_function("search via HTML (16 results)", |b| {
        b.iter(|| {
            let hits = runtime.block_on(html.search(black_box("quokka facts"), 16));
            assert_eq!(hits.map(|h| h.len()), Ok(16));
        })
    });
    let hits = sixteen_hits();
    let text = format_hits(&hits);
    group.bench_function("format_hits (16 results)", |b| {
        b.iter(|| format_hits(black_box(&hits)))
    });
    group.bench_function("parse_hits (16 results)", |b| {
        b.iter(|| parse_hits(black_box(&text)))
    });
    group.finish();
}

criterion_group!(benches, search);
criterion_main!(benches);

//! What reading a page costs: `html::extract` on the article fixture and on a 2 MB page, and
//! `HttpReader::open` of the article from the local test site (loopback, so mostly seek's own
//! work). Prints the extracted text sizes. Run with `cargo bench --bench web_read`.

// The test site's own unit tests and lints are its owner's; here it is only served.
#[allow(unused_imports, clippy::unnecessary_to_owned)]
#[path = "../tests/support/web_site.rs"]
mod web_site;

use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use reqwest::Url;
use seek::config::{Origin, Sourced, WebSettings};
use seek::web::html::extract;
use seek::web::policy::UrlPolicy;
use seek::web::read::{HttpReader, PageReader};

const ARTICLE: &str = include_str!("../tests/fixtures/web/article.html");

/// A page of about `bytes` bytes: sections of headings, paragraphs with links, lists, tables.
fn big_page(bytes: usize) -> String {
    let mut html = String::from("<html><head><title>Big</title></head><body><main>");
    let mut n = 0;
    while html.len() < bytes {
        html.push_str(&format!(
            "<h2>Section {n}</h2><p>Paragraph {n} with <a href=\"/p/{n}\">a link</a> and <b>bold</b> words to read.</p>\
             <ul><li>one</li><li>two</li></ul><table><tr><td>a</td><td>{n}</td></tr></table>\n"
        ));
        n += 1;
    }
    html.push_str("</main></body></html>");
    html
}

fn bench(c: &mut Criterion) {
    let base = Url::parse("http://site.test/article.html").expect("a valid literal URL");
    let big = big_page(2 * 1024 * 1024);
    let article_text = extract(ARTICLE, &base).text.len();
    let big_extracted = extract(&big, &base);
    println!(
        "article: {} bytes of HTML -> {article_text} bytes of text; big page: {} bytes -> {} bytes of text, {} links",
        ARTICLE.len(),
        big.len(),
        big_extracted.text.len(),
        big_extracted.links.len()
    );
    c.bench_function("extract article", |b| b.iter(|| extract(ARTICLE, &base)));
    let mut group = c.benchmark_group("large");
    group.sample_size(10);
    group.bench_function("extract 2 MB page", |b| b.iter(|| extract(&big, &base)));
    group.finish();

    let site = web_site::WebSite::start();
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    let settings = WebSettings {
        allow_private: Sourced::new(true, Origin::Default),
        ..WebSettings::default()
    };
    let mut reader =
        HttpReader::new(&settings, Arc::new(UrlPolicy::new(true))).expect("the client builds");
    let article = Url::parse(&site.url("/article.html")).expect("a valid URL");
    c.bench_function("http open article (loopback)", |b| {
        b.iter(|| runtime.block_on(reader.open(&article)).expect("reads"))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);

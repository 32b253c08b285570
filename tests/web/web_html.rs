//! Tests of `web::html`: `extract` against the fixture pages and hostile HTML (deep nesting,
//! huge attributes, broken markup, bidi overrides), a property test that it never panics, and
//! `classify`. (An integration test: it needs only the public API.)

use proptest::prelude::*;
use reqwest::Url;

use seek::web::html::{Extracted, classify, extract};
use seek::wire::PageKind;

fn base() -> Url {
    Url::parse("http://site.test/dir/page.html").expect("a valid literal URL")
}

fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/web/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).expect("the fixture exists")
}

#[test]
fn the_article_keeps_headings_lists_tables_and_drops_boilerplate() {
    let page = extract(&fixture("article.html"), &base());
    assert_eq!(page.title, "The Quokka Article");
    let text = &page.text;
    assert!(text.contains("# Quokkas of Rottnest Island"), "{text}");
    assert!(text.contains("## Diet"), "{text}");
    assert!(
        text.contains("- Grasses and sedges\n- Leaves of shrubs"),
        "{text}"
    );
    assert!(text.contains("| Fact | Value |"), "{text}");
    assert!(text.contains("| Weight | 2.5 to 5 kg |"), "{text}");
    assert!(
        text.contains("Read the page that links onward for more."),
        "{text}"
    );
    assert!(text.contains("about 12,000.\n\n## Diet"), "{text}");
    for absent in [
        "NAV-BOILERPLATE",
        "FOOTER-BOILERPLATE",
        "SCRIPT-TEXT-MUST-NOT-APPEAR",
        "color: red",
        "http://",
        "The Quokka Article",
    ] {
        assert!(!text.contains(absent), "{absent} in {text}");
    }
    assert!(!text.contains("\n\n\n"), "{text:?}");
    assert!(!text.starts_with('\n') && !text.ends_with('\n'), "{text:?}");
}

#[test]
fn the_article_links_are_absolute_and_in_order() {
    let page = extract(&fixture("article.html"), &base());
    let links: Vec<(&str, &str)> = page
        .links
        .iter()
        .map(|l| (l.text.as_str(), l.url.as_str()))
        .collect();
    assert_eq!(
        links,
        [
            ("Home", "http://site.test/"),
            ("About us", "http://site.test/about.html"),
            ("page that links onward", "http://site.test/links.html"),
        ]
    );
    assert_eq!(
        classify(Some(200), &page.title, &page.text),
        PageKind::Content
    );
}

#[test]
fn the_captcha_page_is_a_captcha() {
    let page = extract(&fixture("captcha.html"), &base());
    assert_eq!(
        classify(Some(200), &page.title, &page.text),
        PageKind::Captcha
    );
}

#[test]
fn the_script_page_has_no_script_text() {
    let page = extract(&fixture("js.html"), &base());
    assert!(!page.text.contains("48151623"), "{}", page.text);
    assert!(!page.text.contains("needs JavaScript"), "{}", page.text);
    assert_eq!(page.title, "Written by script");
}

#[test]
fn the_login_form_is_read_with_its_fields() {
    let page = extract(&fixture("login.html"), &base());
    assert_eq!(page.forms.len(), 1);
    let form = &page.forms[0];
    assert_eq!(form.action, "http://site.test/login");
    assert_eq!(form.method, "post");
    let fields: Vec<(&str, &str, &str)> = form
        .fields
        .iter()
        .map(|f| (f.name.as_str(), f.kind.as_str(), f.value.as_str()))
        .collect();
    assert_eq!(
        fields,
        [
            ("csrf", "hidden", "token-123"),
            ("username", "text", ""),
            ("password", "password", ""),
            ("remember", "checkbox", "on"),
            ("newsletter", "checkbox", "on"),
        ]
    );
    assert!(form.fields[1].required);
    assert!(!form.fields[3].checked);
    assert!(!page.text.contains("token-123"), "{}", page.text);
}

#[test]
fn forms_read_selects_textareas_and_default_actions() {
    let html = r#"<form><select name="colour"><option>red</option>
        <option value="g" selected>green</option></select>
        <textarea name="note">hello</textarea><input value="nameless">
        <input type="radio" name="size" value="L" checked>
        <button name="go" value="1">Go</button><button type="button" name="x">X</button></form>
        <form action="javascript:alert(1)" method="GET"></form>
        <form action="/s#frag" method="dialog"></form>"#;
    let page = extract(html, &base());
    assert_eq!(page.forms.len(), 3);
    let first = &page.forms[0];
    assert_eq!(first.action, "http://site.test/dir/page.html");
    assert_eq!(first.method, "get");
    let select = &first.fields[0];
    assert_eq!(
        (select.kind.as_str(), select.value.as_str()),
        ("select", "g")
    );
    assert_eq!(select.options, ["red", "g"]);
    assert_eq!(first.fields[1].value, "hello");
    assert_eq!(first.fields[2].name, "size");
    assert!(first.fields[2].checked);
    assert_eq!(first.fields[3].name, "go");
    assert_eq!(first.fields.len(), 4);
    assert_eq!(page.forms[2].action, "http://site.test/s");
    assert_eq!(page.forms[2].method, "get");
}

#[test]
fn links_drop_other_schemes_fragments_and_duplicates() {
    let html = r##"<a href="javascript:alert(1)">js</a><a href="file:///etc/passwd">f</a>
        <a href="mailto:a@b.c">m</a><a href="data:text/html,x">d</a><a href="#top">top</a>
        <a href="a.html#x"><img alt="Icon"></a><a href="a.html">A again</a>
        <a href="https://other.test/x?q=1">  Other
        site  </a><a href="http://[bad">bad</a><a href="">self</a>"##;
    let page = extract(html, &base());
    let links: Vec<(&str, &str)> = page
        .links
        .iter()
        .map(|l| (l.text.as_str(), l.url.as_str()))
        .collect();
    assert_eq!(
        links,
        [
            ("top", "http://site.test/dir/page.html"),
            ("Icon", "http://site.test/dir/a.html"),
            ("Other site", "https://other.test/x?q=1"),
        ]
    );
}

#[test]
fn base_href_changes_where_links_resolve() {
    let html = r#"<head><base href="https://cdn.test/root/"></head><a href="x">x</a>"#;
    assert_eq!(
        extract(html, &base()).links[0].url,
        "https://cdn.test/root/x"
    );
    let html = r#"<head><base href="javascript:void(0)"></head><a href="x">x</a>"#;
    assert_eq!(
        extract(html, &base()).links[0].url,
        "http://site.test/dir/x"
    );
}

#[test]
fn link_texts_are_one_line_and_capped() {
    let html = format!(r#"<a href="/x">{}</a>"#, "long words ".repeat(100));
    let link = &extract(&html, &base()).links[0];
    assert!(link.text.chars().count() <= 100);
    assert!(!link.text.contains('\n'));
}

#[test]
fn hidden_and_landmark_elements_are_dropped() {
    let html = r#"<body><p>kept</p><div hidden>H1DDEN</div><p aria-hidden="true">AR1A</p>
        <div role="navigation">N4V</div><div role="banner">B4NNER</div>
        <div role="contentinfo">C0NTENT</div><aside>AS1DE</aside><svg><text>SVG</text></svg>
        <iframe>IFR</iframe><template>TPL</template><noscript>NOSCR</noscript>
        <select><option>OPTION</option></select><textarea>TXT</textarea></body>"#;
    let text = extract(html, &base()).text;
    assert_eq!(text, "kept");
}

#[test]
fn line_breaks_images_and_nested_lists() {
    let html = r#"<p>one<br>two</p><p><img src="x.png" alt="A cat"> <img src="y.png"></p>
        <ul><li>a<ul><li>b</li></ul></li><li>c</li></ul><p>after</p>
        <pre>x  y
z</pre>"#;
    let text = extract(html, &base()).text;
    assert_eq!(
        text,
        "one\ntwo\n\n[IMAGE: A cat]\n\n- a\n  - b\n- c\n\nafter\n\nx y\nz"
    );
}

#[test]
fn control_and_bidi_characters_are_removed() {
    let html = "<title>T\u{202e}itle\u{1b}[31m</title><p>safe\u{202e}txt.exe\u{2066} \u{7}bell\u{200b}</p><a href=/x>l\u{202e}ink</a>";
    let page = extract(html, &base());
    assert_eq!(page.text, "safetxt.exe bell\n\nlink");
    assert_eq!(page.title, "Title [31m");
    assert_eq!(page.links[0].text, "link");
}

#[test]
fn title_falls_back_to_the_first_heading() {
    let page = extract("<h1>First</h1><h1>Second</h1>", &base());
    assert_eq!(page.title, "First");
    assert_eq!(extract("", &base()), Extracted::default());
}

#[test]
fn deep_nesting_does_not_overflow_the_stack() {
    let depth = 100_000;
    let html = format!(
        "{}deep text{}",
        "<div>".repeat(depth),
        "</div>".repeat(depth)
    );
    let page = extract(&html, &base());
    assert!(page.text.contains("deep text"), "{}", page.text.len());
    let html = format!("{}x", "<span><a href=/y>".repeat(depth));
    let page = extract(&html, &base());
    assert!(page.links.len() <= 1);
}

#[test]
fn huge_attributes_and_broken_markup_are_read() {
    let huge = "v".repeat(2_000_000);
    let html = format!(
        r#"<form action="/f"><input name="n" value="{huge}"></form><a href="/{huge}">big</a>"#
    );
    let page = extract(&html, &base());
    assert_eq!(page.forms[0].fields[0].value.len(), huge.len());
    assert_eq!(page.links[0].text, "big");
    let broken = "<p>open <b>bold <i>both</p> rest</b> <table><td>cell<tr>x</table> <a href='/q";
    let page = extract(broken, &base());
    assert!(page.text.contains("open bold both"), "{}", page.text);
    assert!(page.text.contains("cell"), "{}", page.text);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn extract_never_panics(html in "(<[a-z/!]{0,6}( [a-z-]{1,6}(=\"[^\"]{0,8}\")?)?>|[^<]{0,10}|&[a-z#0-9]{0,5};?){0,40}") {
        let page = extract(&html, &base());
        prop_assert!(!page.text.chars().any(|c| c.is_control() && c != '\n'));
    }

    #[test]
    fn extract_never_panics_on_any_text(html in "\\PC{0,300}") {
        let _ = extract(&html, &base());
    }
}

#[test]
fn statuses_of_four_and_five_hundred_are_errors() {
    assert_eq!(classify(Some(404), "x", "some text"), PageKind::Error);
    assert_eq!(classify(Some(503), "x", "some text"), PageKind::Error);
    assert_eq!(classify(Some(200), "x", "some text"), PageKind::Content);
    assert_eq!(classify(None, "x", "some text"), PageKind::Content);
}

#[test]
fn bot_walls_are_captchas_when_short() {
    for text in [
        "Checking your browser before accessing example.com",
        "Please verify you are human",
        "Are you a robot?",
        "Solve the reCAPTCHA to continue",
        "hCaptcha challenge",
    ] {
        assert_eq!(classify(Some(200), "", text), PageKind::Captcha, "{text}");
    }
    assert_eq!(
        classify(Some(200), "Just a moment... captcha", ""),
        PageKind::Captcha
    );
    let article = format!("CAPTCHAs are a test. {}", "Long article text. ".repeat(300));
    assert_eq!(classify(Some(200), "", &article), PageKind::Content);
}

#[test]
fn tiny_not_found_pages_are_errors() {
    assert_eq!(
        classify(Some(200), "Page Not Found", "Sorry."),
        PageKind::Error
    );
    assert_eq!(classify(Some(200), "404", ""), PageKind::Error);
    let long = "words ".repeat(400);
    assert_eq!(
        classify(Some(200), "Not found: a novel", &long),
        PageKind::Content
    );
}

#[test]
fn no_text_is_empty() {
    assert_eq!(classify(Some(200), "A title", "  \n "), PageKind::Empty);
    assert_eq!(classify(None, "", ""), PageKind::Empty);
}

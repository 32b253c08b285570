//! The test web site answers as the web tests expect (a check of the fixture itself).

use crate::web_site;

use web_site::{SearchMode, WebSite, param};

fn get(url: &str) -> (u16, String) {
    let out = std::process::Command::new("curl")
        .args(["-s", "-w", "\n%{http_code}", url])
        .output()
        .expect("curl");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').expect("status line");
    (code.trim().parse().expect("status"), body.to_owned())
}

#[test]
fn the_site_serves_pages_search_and_errors() {
    let site = WebSite::start();
    let (status, body) = get(&site.url("/article.html"));
    assert_eq!(status, 200);
    assert!(body.contains("Quokkas of Rottnest Island"));
    assert_eq!(get(&site.url("/nope")).0, 404);
    let (status, json) = get(&format!("{}/search?q=quokka&format=json", site.base()));
    assert_eq!(status, 200);
    let value: serde_json::Value = serde_json::from_str(&json).expect("json");
    assert_eq!(value["results"][0]["url"], site.url("/article.html"));
    site.set_mode(SearchMode::RefuseJson);
    assert_eq!(
        get(&format!("{}/search?q=quokka&format=json", site.base())).0,
        403
    );
    let (status, html) = get(&format!("{}/search?q=quokka", site.base()));
    assert_eq!(status, 200);
    assert!(html.contains("class=\"url_header\""));
    assert_eq!(param("a=1&q=x%20y", "q").as_deref(), Some("x y"));
}

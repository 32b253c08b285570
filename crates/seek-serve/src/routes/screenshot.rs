//! `GET /screenshot` and `GET /screenshots/{*path}`: the latest page the web agent read with
//! Chromium, as a PNG. AgenticSeek served its screenshots folder at the second; its front end
//! asks for `updated_screen.png`, the only file there is.
//!
//! It reads one plain file and must not follow a link or wait on a FIFO put in its place.

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::{AppState, Endpoint, error};

pub(crate) const SCREENSHOT: Endpoint = Endpoint {
    path: "/screenshot",
    methods: || get(screenshot),
};

pub(crate) const SCREENSHOTS: Endpoint = Endpoint {
    path: "/screenshots/{*path}",
    methods: || get(screenshots),
};

/// The latest page the web agent read with Chromium, as a PNG (AgenticSeek's `/screenshot`).
async fn screenshot(State(state): State<AppState>) -> Response {
    match read_no_follow(&state.screenshot).await {
        Ok(png) => ([(header::CONTENT_TYPE, "image/png")], png).into_response(),
        Err(_) => error(StatusCode::NOT_FOUND, "No screenshot available"),
    }
}

/// Reads a file only if it is a plain file: a link put in its place is not followed, and a
/// FIFO is neither waited on nor read.
async fn read_no_follow(path: &std::path::Path) -> std::io::Result<Vec<u8>> {
    use tokio::io::AsyncReadExt;
    let mut file = tokio::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .await?;
    if !file.metadata().await?.is_file() {
        return Err(std::io::Error::other("not a plain file"));
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).await?;
    Ok(bytes)
}

/// AgenticSeek served its screenshots folder here; the front end asks for
/// `updated_screen.png`, the only file there is.
async fn screenshots(
    state: State<AppState>,
    axum::extract::Path(path): axum::extract::Path<String>,
) -> Response {
    if path == crate::web::read::SCREENSHOT_FILE {
        screenshot(state).await
    } else {
        error(StatusCode::NOT_FOUND, "No screenshot available")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_screenshot_is_read_only_from_a_plain_file() {
        let dir = tempfile::tempdir().expect("temp");
        let plain = dir.path().join("plain.png");
        std::fs::write(&plain, b"png").expect("write");
        assert_eq!(read_no_follow(&plain).await.expect("a file"), b"png");

        let secret = dir.path().join("secret");
        std::fs::write(&secret, b"secret").expect("write");
        let link = dir.path().join("link.png");
        std::os::unix::fs::symlink(&secret, &link).expect("symlink");
        assert!(
            read_no_follow(&link).await.is_err(),
            "a link is not followed"
        );

        let fifo = dir.path().join("fifo.png");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
        let read = tokio::time::timeout(Duration::from_secs(10), read_no_follow(&fifo)).await;
        assert!(
            matches!(read, Ok(Err(_))),
            "a FIFO is refused at once, not waited on"
        );
    }
}

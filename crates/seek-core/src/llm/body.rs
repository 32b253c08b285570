//! Reading a whole (non-streamed) response body within a bound: the client's error bodies and
//! model lists, and the side requests (`size`) alike. It must not parse what it reads.

/// A response body as text, at most `max` bytes of it (a longer one is cut there, lossily at a
/// character boundary): a server cannot make seek hold more than that.
pub(super) async fn read_body(
    mut response: reqwest::Response,
    max: usize,
) -> Result<String, reqwest::Error> {
    let mut body = Vec::new();
    while body.len() < max {
        let Some(chunk) = response.chunk().await? else {
            break;
        };
        let take = chunk.len().min(max - body.len());
        body.extend_from_slice(&chunk[..take]);
    }
    Ok(String::from_utf8_lossy(&body).into_owned())
}

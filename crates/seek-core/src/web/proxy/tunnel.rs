//! The byte pipe behind a `CONNECT` or an upgraded (websocket) request: what one side sends is
//! written to the other, an end of stream from one side is passed on as a half-close, and the
//! pipe ends when both sides have finished, when either fails, or after `idle` with no byte
//! moving either way (also when a write stays blocked that long).
//!
//! It must not look at the bytes: they are usually TLS.

use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::time::timeout;

const BUFFER: usize = 16 * 1024;

enum Step {
    FromA(std::io::Result<usize>),
    FromB(std::io::Result<usize>),
}

/// Copies between `a` and `b` until both ends finished, an error, or `idle` of silence.
pub(crate) async fn tunnel<A, B>(mut a: A, mut b: B, idle: Duration)
where
    A: AsyncRead + AsyncWrite + Unpin,
    B: AsyncRead + AsyncWrite + Unpin,
{
    let mut from_a = vec![0u8; BUFFER];
    let mut from_b = vec![0u8; BUFFER];
    let (mut a_open, mut b_open) = (true, true);
    while a_open || b_open {
        // Both reads are cancel-safe: the one not chosen has read nothing.
        let step = timeout(idle, async {
            tokio::select! {
                read = a.read(&mut from_a), if a_open => Step::FromA(read),
                read = b.read(&mut from_b), if b_open => Step::FromB(read),
            }
        })
        .await;
        let passed = match step {
            Err(_) => false,
            Ok(Step::FromA(read)) => pass(read, &mut a_open, &mut b, &from_a, idle).await,
            Ok(Step::FromB(read)) => pass(read, &mut b_open, &mut a, &from_b, idle).await,
        };
        if !passed {
            return;
        }
    }
}

/// Passes what one side's read gave on to the other side: the bytes, or a half-close at the
/// end of stream (then `source_open` turns false). False when the tunnel must end.
async fn pass<W: AsyncWrite + Unpin>(
    read: std::io::Result<usize>,
    source_open: &mut bool,
    sink: &mut W,
    buffer: &[u8],
    idle: Duration,
) -> bool {
    match read {
        Err(_) => false,
        Ok(0) => {
            *source_open = false;
            matches!(timeout(idle, sink.shutdown()).await, Ok(Ok(())))
        }
        Ok(n) => {
            let Some(bytes) = buffer.get(..n) else {
                return false;
            };
            let written = timeout(idle, async {
                sink.write_all(bytes).await?;
                sink.flush().await
            })
            .await;
            matches!(written, Ok(Ok(())))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::duplex;

    #[tokio::test]
    async fn bytes_flow_both_ways_and_half_closes_pass_on() {
        let (mut client, proxy_a) = duplex(64);
        let (proxy_b, mut server) = duplex(64);
        let pipe = tokio::spawn(tunnel(proxy_a, proxy_b, Duration::from_secs(30)));

        client.write_all(b"hello").await.unwrap();
        let mut got = [0u8; 5];
        server.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"hello");

        // More than the buffers hold, the other way.
        let big = vec![7u8; 100_000];
        let writer = {
            let big = big.clone();
            tokio::spawn(async move {
                server.write_all(&big).await.unwrap();
                server.shutdown().await.unwrap();
                server
            })
        };
        let mut back = Vec::new();
        client.read_to_end(&mut back).await.unwrap();
        assert_eq!(back, big);
        let mut server = writer.await.unwrap();

        // The client may still send after the server closed its side.
        client.write_all(b"late").await.unwrap();
        client.shutdown().await.unwrap();
        let mut rest = Vec::new();
        server.read_to_end(&mut rest).await.unwrap();
        assert_eq!(rest, b"late");
        pipe.await.unwrap();
    }

    #[tokio::test]
    async fn a_silent_tunnel_ends_after_the_idle_time() {
        let (mut client, proxy_a) = duplex(64);
        let (proxy_b, _server) = duplex(64);
        let started = std::time::Instant::now();
        let pipe = tokio::spawn(tunnel(proxy_a, proxy_b, Duration::from_millis(200)));
        timeout(Duration::from_secs(60), pipe)
            .await
            .unwrap()
            .unwrap();
        assert!(started.elapsed() >= Duration::from_millis(200));
        let mut rest = Vec::new();
        client.read_to_end(&mut rest).await.unwrap();
        assert!(rest.is_empty());
    }
}

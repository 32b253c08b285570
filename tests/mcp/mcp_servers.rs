//! `seek::mcp::Hub` against real MCP servers: the Python `mcp-server-time` (stdio) and the npm
//! `@modelcontextprotocol/server-everything` over stdio and streamable HTTP. Each must be
//! installed (`.ci/run` does it); a missing one fails the test and says what to install.

use crate::mcp_support;

use mcp_support::*;
use seek::mcp::{Hub, McpError, Part, ServerState};
use serde_json::json;

fn this_year() -> String {
    let out = std::process::Command::new("date")
        .args(["-u", "+%Y"])
        .output()
        .expect("date");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn time_server_lists_its_tools_and_tells_the_time() {
    let work = tempfile::tempdir().expect("tempdir");
    let server = stdio("time", &python(), &["-m", "mcp_server_time"]);
    let hub = ready_hub(vec![server], &[], work.path()).await;

    let status = status(&hub, "time");
    assert_eq!(status.state, ServerState::Ready, "{status:?}");
    assert_eq!(
        status.transport,
        format!("stdio: {} -m mcp_server_time", python())
    );
    assert!(
        status
            .server_info
            .as_deref()
            .is_some_and(|i| i.starts_with("mcp-time ")),
        "{status:?}"
    );
    // seek offers the newest version with an initialize handshake; the server agreed to it.
    assert_eq!(status.protocol_version.as_deref(), Some("2025-11-25"));
    assert!(status.startup_ms.is_some_and(|ms| ms > 0));

    let tools = hub.tools();
    let names: Vec<_> = tools.iter().map(|t| t.qualified()).collect();
    assert_eq!(names, ["time.get_current_time", "time.convert_time"]);
    let schema = &tools[0].input_schema;
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["required"], json!(["timezone"]));
    assert_eq!(schema["properties"]["timezone"]["type"], "string");
    assert!(
        tools[0].description.contains("current time"),
        "{:?}",
        tools[0]
    );

    let output = call(&hub, "time", "get_current_time", json!({"timezone": "UTC"}))
        .await
        .expect("the call succeeds");
    assert!(!output.is_error, "{output:?}");
    let text = texts(&output);
    assert!(text.contains(&this_year()), "{text}");
    assert!(text.contains("\"timezone\": \"UTC\""), "{text}");

    // The server answers an unknown timezone with an isError result (not a JSON-RPC error).
    let refused = call(
        &hub,
        "time",
        "get_current_time",
        json!({"timezone": "Mars/Olympus"}),
    )
    .await
    .expect("the call returns a result");
    assert!(refused.is_error, "{refused:?}");
    assert_eq!(refused.structured, None);
    let text = texts(&refused);
    assert!(
        text.contains("Invalid timezone") && text.contains("Mars/Olympus"),
        "{text}"
    );
    hub.shutdown().await;
}

/// The same checks over either transport.
async fn exercise_everything(hub: &Hub, name: &str) {
    let status = status(hub, name);
    assert_eq!(status.state, ServerState::Ready, "{status:?}");
    assert!(
        status
            .server_info
            .as_deref()
            .is_some_and(|i| i.contains("everything")),
        "{status:?}"
    );
    assert!(status.protocol_version.is_some());
    let names: Vec<_> = status.tools.iter().map(|t| t.name.as_str()).collect();
    for expected in [
        "echo",
        "get-sum",
        "get-structured-content",
        "get-tiny-image",
    ] {
        assert!(names.contains(&expected), "{names:?}");
    }

    let echoed = call(hub, name, "echo", json!({"message": "hello ✓"}))
        .await
        .expect("echo");
    assert_eq!(texts(&echoed), "Echo: hello ✓");

    let sum = call(hub, name, "get-sum", json!({"a": 2, "b": 40.5}))
        .await
        .expect("get-sum");
    assert!(texts(&sum).contains("42.5"), "{sum:?}");

    let weather = call(
        hub,
        name,
        "get-structured-content",
        json!({"location": "Chicago"}),
    )
    .await
    .expect("get-structured-content");
    let structured = weather.structured.expect("structured content");
    for field in ["temperature", "conditions", "humidity"] {
        assert!(structured.get(field).is_some(), "{structured}");
    }

    let image = call(hub, name, "get-tiny-image", json!({}))
        .await
        .expect("get-tiny-image");
    let (mime, bytes) = image
        .parts
        .iter()
        .find_map(|part| match part {
            Part::Image { mime_type, bytes } => Some((mime_type.clone(), *bytes)),
            _ => None,
        })
        .expect("an image part");
    assert_eq!(mime, "image/png");
    assert!(bytes > 100 && bytes < 100_000, "{bytes}");

    let links = call(hub, name, "get-resource-links", json!({"count": 2}))
        .await
        .expect("get-resource-links");
    let uris: Vec<_> = links
        .parts
        .iter()
        .filter_map(|part| match part {
            Part::ResourceLink { uri, name, .. } => Some((uri.clone(), name.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(uris.len(), 2, "{links:?}");
    assert!(
        uris.iter()
            .all(|(uri, name)| uri.starts_with("demo://") && name.is_some())
    );

    let embedded = call(
        hub,
        name,
        "get-resource-reference",
        json!({"resourceType": "Text", "resourceId": 1}),
    )
    .await
    .expect("get-resource-reference");
    assert!(
        embedded.parts.iter().any(|part| matches!(part,
            Part::Resource { uri, text: Some(text), .. }
                if uri.starts_with("demo://") && text.contains("Resource 1"))),
        "{embedded:?}"
    );

    let unknown = call(hub, name, "no-such-tool", json!({})).await;
    match unknown {
        // The TypeScript SDK answers an unknown tool with an isError result (2025-11-25 and
        // later); older releases used a JSON-RPC error. Either must name the tool.
        Ok(output) => {
            assert!(output.is_error, "{output:?}");
            assert!(texts(&output).contains("no-such-tool"), "{output:?}");
        }
        Err(McpError::Call { message, .. }) => {
            assert!(message.contains("no-such-tool"), "{message}")
        }
        Err(other) => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_server_over_stdio() {
    let work = tempfile::tempdir().expect("tempdir");
    let server = stdio("every", &everything(), &["stdio"]);
    let hub = ready_hub(vec![server], &[], work.path()).await;
    exercise_everything(&hub, "every").await;
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_server_over_streamable_http() {
    let work = tempfile::tempdir().expect("tempdir");
    let server = EverythingHttp::start();
    let hub = ready_hub(vec![http("web", &server.url)], &[], work.path()).await;
    assert_eq!(
        status(&hub, "web").transport,
        format!("http: {}", server.url)
    );
    exercise_everything(&hub, "web").await;
    hub.shutdown().await;
    assert!(matches!(status(&hub, "web").state, ServerState::Exited(_)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_server_that_goes_away_fails_calls_with_the_cause() {
    let work = tempfile::tempdir().expect("tempdir");
    let server = EverythingHttp::start();
    let hub = ready_hub(vec![http("web", &server.url)], &[], work.path()).await;
    assert_ready(&hub, "web");
    drop(server);
    let error = call(&hub, "web", "echo", json!({"message": "hi"}))
        .await
        .expect_err("the server is gone");
    let McpError::Call { server, message } = &error else {
        panic!("expected a Call error, got {error:?}");
    };
    assert_eq!(server, "web");
    assert!(message.starts_with("could not reach it: "), "{message}");
    assert!(message.contains("Connection refused"), "{message}");
    // An HTTP server may come back behind the same url: it stays listed, unlike a dead process.
    assert_ready(&hub, "web");
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_failures_name_the_cause() {
    let work = tempfile::tempdir().expect("tempdir");
    let closed_port = free_port();
    let mut missing_token = http("token", "http://127.0.0.1:9/mcp");
    if let seek::config::McpTransport::Http {
        bearer_token_env_var,
        ..
    } = &mut missing_token.transport
    {
        *bearer_token_env_var = Some("SEEK_TEST_NO_SUCH_TOKEN_VAR".to_owned());
    }
    let refused = http("refused", &format!("http://127.0.0.1:{closed_port}/mcp"));
    let bad_url = http("bad", "ftp://example.com/mcp");
    let hub = ready_hub(vec![missing_token, refused, bad_url], &[], work.path()).await;
    let token = state_message(&hub, "token");
    assert!(
        token.contains("SEEK_TEST_NO_SUCH_TOKEN_VAR") && token.contains("not set"),
        "{token}"
    );
    let refused = state_message(&hub, "refused");
    eprintln!("DEBUG {refused}");
    assert!(
        matches!(status(&hub, "refused").state, ServerState::Failed(_)),
        "{refused}"
    );
    assert!(
        state_message(&hub, "bad").contains("not http"),
        "{}",
        state_message(&hub, "bad")
    );
    assert!(hub.tools().is_empty());
    let error = call(&hub, "refused", "echo", json!({}))
        .await
        .expect_err("not running");
    assert!(matches!(error, McpError::NotRunning { .. }), "{error:?}");
    hub.shutdown().await;
}

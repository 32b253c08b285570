//! The provider clients against the fake model server: both wire formats, reasoning in both
//! forms, retries, faults, cancellation, the repetition guard and request bodies.

use crate::fake_model;

use std::time::Duration;

use fake_model::{FakeModel, Reply};
use seek::config::Wire;
use seek::llm::{
    ChatModel, ChatRequest, Delta, FinishReason, GenerationOptions, HttpChatModel, LlmError,
    Message, RetryPolicy, Role, ServerUrl,
};
use tokio_util::sync::CancellationToken;

fn options() -> GenerationOptions {
    GenerationOptions {
        max_tokens: 4096,
        temperature: Some(0.2),
        top_p: None,
        seed: Some(42),
        context_window: 8192,
    }
}

fn request() -> ChatRequest {
    ChatRequest {
        messages: vec![
            Message::new(Role::System, "You are seek."),
            Message::new(Role::User, "count to 3"),
        ],
        options: options(),
        json_schema: None,
        prefix_file: None,
    }
}

fn client(server: &FakeModel, wire: Wire, key: Option<&str>) -> HttpChatModel {
    client_at(&server.url(), wire, key)
}

fn client_at(url: &str, wire: Wire, key: Option<&str>) -> HttpChatModel {
    HttpChatModel::new(seek::llm::HttpChatModel::settings_for_tests(
        wire,
        ServerUrl::normalise(url, wire),
        Some("fake-coder:7b".into()),
        key.map(str::to_owned),
        Duration::from_secs(5),
    ))
    .with_retry(RetryPolicy {
        max_retries: 3,
        initial_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(5),
    })
}

async fn deltas(model: &HttpChatModel) -> Vec<Result<Delta, LlmError>> {
    let mut stream = model.stream(request(), CancellationToken::new());
    let mut out = Vec::new();
    while let Some(item) = stream.next().await {
        out.push(item);
    }
    out
}

#[tokio::test]
async fn openai_stream_with_reasoning_field() {
    let server = FakeModel::start(vec![Reply::Text {
        answer: "1, 2, 3.".into(),
        reasoning: Some("Counting is easy.".into()),
    }]);
    let done = client(&server, Wire::OpenAi, Some("sk-test"))
        .stream(request(), CancellationToken::new())
        .collect()
        .await
        .expect("reply");
    assert_eq!(done.answer, "1, 2, 3.");
    assert_eq!(done.reasoning, "Counting is easy.");
    let finish = done.finish.expect("finished");
    assert_eq!(finish.reason, FinishReason::Stop);
    assert_eq!(finish.usage.and_then(|u| u.completion_tokens), Some(7));

    let requests = server.chat_requests();
    assert_eq!(requests.len(), 1);
    let sent = &requests[0];
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(sent.header("authorization"), Some("Bearer sk-test"));
    let body = sent.json();
    assert_eq!(body["model"], "fake-coder:7b");
    assert_eq!(body["stream"], true);
    assert_eq!(body["max_tokens"], 4096);
    assert_eq!(body["temperature"], 0.2);
    assert_eq!(body["seed"], 42);
    assert!(body.get("top_p").is_none(), "unset options are not sent");
    assert_eq!(body["messages"][0]["role"], "system");
    assert_eq!(body["messages"][1]["content"], "count to 3");
}

#[tokio::test]
async fn ollama_stream_with_thinking_field_and_num_ctx() {
    let server = FakeModel::start(vec![Reply::Text {
        answer: "Hello from Ollama".into(),
        reasoning: Some("thinking natively".into()),
    }]);
    let done = client(&server, Wire::Ollama, None)
        .stream(request(), CancellationToken::new())
        .collect()
        .await
        .expect("reply");
    assert_eq!(done.answer, "Hello from Ollama");
    assert_eq!(done.reasoning, "thinking natively");
    assert_eq!(
        done.finish
            .and_then(|f| f.usage)
            .and_then(|u| u.prompt_tokens),
        Some(11)
    );
    let sent = &server.chat_requests()[0];
    assert_eq!(sent.path, "/api/chat");
    assert_eq!(sent.header("authorization"), None, "no key, no header");
    let body = sent.json();
    assert_eq!(body["options"]["num_ctx"], 8192);
    assert_eq!(body["options"]["num_predict"], 4096);
    assert_eq!(body["options"]["seed"], 42);
    assert_eq!(body["stream"], true);
}

#[tokio::test]
async fn inline_think_tags_become_reasoning() {
    for wire in [Wire::OpenAi, Wire::Ollama] {
        let server = FakeModel::start(vec![Reply::text(
            "<think>I should list files</think>\nHere is the answer.",
        )]);
        let done = client(&server, wire, None)
            .stream(request(), CancellationToken::new())
            .collect()
            .await
            .expect("reply");
        assert_eq!(done.reasoning, "I should list files");
        assert_eq!(done.answer.trim(), "Here is the answer.");
    }
}

#[tokio::test]
async fn rate_limits_and_server_errors_are_retried_before_the_first_token() {
    let server = FakeModel::start(vec![
        Reply::Status {
            code: 429,
            body: r#"{"error":{"message":"slow down"}}"#.into(),
            retry_after: Some("0".into()),
        },
        Reply::status(503, "overloaded"),
        Reply::text("finally"),
    ]);
    let items = deltas(&client(&server, Wire::OpenAi, None)).await;
    let retries: Vec<_> = items
        .iter()
        .filter_map(|d| match d {
            Ok(Delta::Retrying {
                attempt, reason, ..
            }) => Some((*attempt, reason.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(retries.len(), 2);
    assert!(
        retries[0].1.contains("429") && retries[0].1.contains("slow down"),
        "{}",
        retries[0].1
    );
    assert!(matches!(items.last(), Some(Ok(Delta::Done(_)))));
    assert_eq!(server.chat_requests().len(), 3);
}

#[tokio::test]
async fn retries_are_capped() {
    let server = FakeModel::start(
        (0..10)
            .map(|_| Reply::status(500, r#"{"error":"boom"}"#))
            .collect(),
    );
    let items = deltas(&client(&server, Wire::Ollama, None)).await;
    let err = items
        .last()
        .and_then(|d| d.as_ref().err())
        .expect("an error at the end");
    assert_eq!(
        err.to_string(),
        format!(
            "the model server at {}/api/chat answered HTTP 500: boom",
            server.url()
        )
    );
    assert_eq!(
        server.chat_requests().len(),
        4,
        "one attempt and three retries"
    );
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    let server = FakeModel::start(vec![Reply::status(
        401,
        r#"{"error":{"message":"invalid api key"}}"#,
    )]);
    let items = deltas(&client(&server, Wire::OpenAi, Some("bad"))).await;
    let err = items
        .last()
        .and_then(|d| d.as_ref().err())
        .expect("error")
        .to_string();
    assert!(
        err.contains("HTTP 401: invalid api key (check the API key"),
        "{err}"
    );
    assert_eq!(server.chat_requests().len(), 1);
}

#[tokio::test]
async fn ollama_missing_model_says_how_to_pull_it() {
    let server = FakeModel::start(vec![Reply::status(
        404,
        r#"{"error":"model \"fake-coder:7b\" not found, try pulling it first"}"#,
    )]);
    let items = deltas(&client(&server, Wire::Ollama, None)).await;
    let err = items.last().and_then(|d| d.as_ref().err()).expect("error");
    assert!(matches!(err, LlmError::ModelNotFound { .. }));
    assert_eq!(
        err.to_string(),
        format!(
            "model fake-coder:7b is not on {}; run `ollama pull fake-coder:7b` (or pick one with `seek models`)",
            server.url()
        )
    );
}

#[tokio::test]
async fn a_wrong_base_path_names_the_url_tried() {
    let server = FakeModel::start(vec![Reply::status(404, "404 page not found")]);
    let items = deltas(&client(&server, Wire::OpenAi, None)).await;
    let err = items
        .last()
        .and_then(|d| d.as_ref().err())
        .expect("error")
        .to_string();
    assert!(
        err.contains(&format!("seek tried {}/v1/chat/completions", server.url())),
        "{err}"
    );
}

#[tokio::test]
async fn context_overflow_names_the_window() {
    let body = r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9000,"n_ctx":4096}}"#;
    let server = FakeModel::start(vec![Reply::status(400, body)]);
    let items = deltas(&client(&server, Wire::OpenAi, None)).await;
    let err = items.last().and_then(|d| d.as_ref().err()).expect("error");
    assert!(
        matches!(err, LlmError::ContextExceeded { window: 4096, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("context window (4096 tokens)"));
}

#[tokio::test]
async fn a_stream_cut_after_text_keeps_the_partial_answer_and_is_not_retried() {
    let server = FakeModel::start(vec![
        Reply::CutAfter {
            answer: "The first half".into(),
        },
        Reply::text("unused"),
    ]);
    let result = client(&server, Wire::OpenAi, None)
        .stream(request(), CancellationToken::new())
        .collect()
        .await;
    let (err, partial) = result.expect_err("cut");
    assert!(matches!(err, LlmError::StreamCut { .. }), "{err:?}");
    assert_eq!(partial.answer, "The first half");
    assert_eq!(server.chat_requests().len(), 1);
}

#[tokio::test]
async fn a_stream_cut_before_any_token_is_retried() {
    let server = FakeModel::start(vec![
        Reply::CutAfter {
            answer: String::new(),
        },
        Reply::text("second try"),
    ]);
    let done = client(&server, Wire::Ollama, None)
        .stream(request(), CancellationToken::new())
        .collect()
        .await
        .expect("retried");
    assert_eq!(done.answer, "second try");
    assert_eq!(done.retries, 1);
}

#[tokio::test]
async fn a_malformed_line_is_an_error_that_quotes_it() {
    for (wire, line) in [
        (Wire::OpenAi, "data: {\"choices\": [oops"),
        (Wire::Ollama, "{not json at all"),
    ] {
        let server = FakeModel::start(vec![Reply::Malformed {
            answer: "ok so far".into(),
            line: line.into(),
        }]);
        let result = client(&server, wire, None)
            .stream(request(), CancellationToken::new())
            .collect()
            .await;
        let (err, partial) = result.expect_err("malformed");
        assert_eq!(
            err.to_string(),
            format!(
                "the model server at {} sent a line seek cannot read: {line}",
                server.url()
                    + if wire == Wire::OpenAi {
                        "/v1/chat/completions"
                    } else {
                        "/api/chat"
                    }
            )
        );
        assert_eq!(partial.answer, "ok so far");
    }
}

#[tokio::test]
async fn an_error_inside_the_stream_is_an_error() {
    let server = FakeModel::start(vec![
        Reply::Raw {
            lines: vec!["data: {\"error\":{\"message\":\"out of memory\"}}\n".into()],
        },
        Reply::text("recovered"),
    ]);
    let done = client(&server, Wire::OpenAi, None)
        .stream(request(), CancellationToken::new())
        .collect()
        .await
        .expect("retried before any token");
    assert_eq!(done.answer, "recovered");
}

// `wait_for_hangup` blocks: the client task needs a thread of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_server_times_out() {
    let server = FakeModel::start(vec![Reply::Stall {
        answer: "partial".into(),
    }]);
    let model = HttpChatModel::new(HttpChatModel::settings_for_tests(
        Wire::OpenAi,
        ServerUrl::normalise(&server.url(), Wire::OpenAi),
        Some("m".into()),
        None,
        Duration::from_secs(1),
    ));
    let (err, partial) = model
        .stream(request(), CancellationToken::new())
        .collect()
        .await
        .expect_err("stall");
    assert!(
        matches!(err, LlmError::IdleTimeout { secs: 1, .. }),
        "{err:?}"
    );
    assert_eq!(partial.answer, "partial");
    server.wait_for_hangup();
}

// `wait_for_hangup` blocks: the client task needs a thread of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_stream_closes_the_connection() {
    let server = FakeModel::start(vec![Reply::Stall {
        answer: "hello".into(),
    }]);
    let model = client(&server, Wire::Ollama, None);
    let mut stream = model.stream(request(), CancellationToken::new());
    assert!(matches!(stream.next().await, Some(Ok(Delta::Answer(_)))));
    drop(stream);
    server.wait_for_hangup();
}

// `wait_for_hangup` blocks: the client task needs a thread of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_the_token_closes_the_connection() {
    let server = FakeModel::start(vec![Reply::Stall {
        answer: "hello".into(),
    }]);
    let model = client(&server, Wire::OpenAi, None);
    let cancel = CancellationToken::new();
    let mut stream = model.stream(request(), cancel.clone());
    assert!(matches!(stream.next().await, Some(Ok(Delta::Answer(_)))));
    cancel.cancel();
    server.wait_for_hangup();
    assert!(
        stream.next().await.is_none(),
        "the stream ends after a cancel"
    );
}

#[tokio::test]
async fn a_huge_reply_arrives_whole() {
    let answer: String = (0..200_000).map(|i| format!("{i} ")).collect();
    let server = FakeModel::start(vec![Reply::text(answer.clone())]);
    // 260,000 pieces: a reply the request allows (the client stops one past `max_tokens`).
    let mut request = request();
    request.options.max_tokens = 1_000_000;
    let done = client(&server, Wire::OpenAi, None)
        .stream(request, CancellationToken::new())
        .collect()
        .await
        .expect("reply");
    assert_eq!(done.answer.len(), answer.len());
    assert_eq!(done.answer, answer);
}

// `wait_for_hangup` blocks: the client task needs a thread of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_that_repeats_itself_is_cut() {
    let server = FakeModel::start(vec![Reply::Repeat {
        unit: "I will print the answer again. ".into(),
        limit: 50 << 20,
    }]);
    let done = client(&server, Wire::Ollama, None)
        .stream(request(), CancellationToken::new())
        .collect()
        .await
        .expect("cut, not failed");
    let finish = done.finish.expect("finished");
    match finish.reason {
        FinishReason::Repetition(r) => {
            assert_eq!(r.unit_len, "I will print the answer again. ".len())
        }
        other => panic!("expected a repetition cut, got {other:?}"),
    }
    assert!(
        done.answer.len() < 8192,
        "cut early: {} bytes",
        done.answer.len()
    );
    server.wait_for_hangup();
}

#[tokio::test]
async fn lines_are_read_up_to_the_line_limit() {
    let line = |content_len: usize| {
        let event = serde_json::json!({"choices": [{"index": 0, "delta": {"content": "y".repeat(content_len)}, "finish_reason": null}]});
        format!("data: {event}\n")
    };
    let end = "data: [DONE]\n".to_owned();
    let server = FakeModel::start(vec![
        Reply::Raw {
            lines: vec![line(900), end.clone()],
        },
        Reply::Raw {
            lines: vec![line(100), line(2000), end],
        },
    ]);
    let model = client(&server, Wire::OpenAi, None).with_bounds(Duration::from_secs(60), 1024);
    let done = model
        .stream(request(), CancellationToken::new())
        .collect()
        .await
        .expect("a line under the limit is read");
    assert_eq!(done.answer.len(), 900);
    let (err, partial) = model
        .stream(request(), CancellationToken::new())
        .collect()
        .await
        .expect_err("a line over the limit");
    assert!(
        matches!(&err, LlmError::LineTooLong { limit, .. } if limit == "1 KiB"),
        "{err:?}"
    );
    assert_eq!(partial.answer.len(), 100, "what came before stands");
    assert_eq!(server.chat_requests().len(), 2, "not retried");
}

#[tokio::test]
async fn a_stream_cut_mid_line_before_any_token_is_retried() {
    let server = FakeModel::start(vec![
        Reply::CutMidLine {
            answer: String::new(),
        },
        Reply::text("second try"),
    ]);
    let done = client(&server, Wire::OpenAi, None)
        .stream(request(), CancellationToken::new())
        .collect()
        .await
        .expect("retried");
    assert_eq!(done.answer, "second try");
    assert_eq!(done.retries, 1);
}

#[tokio::test]
async fn an_unreachable_server_is_an_error_naming_the_url() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("addr").port()
    };
    let url = format!("127.0.0.1:{port}");
    let model = client_at(&url, Wire::Ollama, None).with_retry(RetryPolicy {
        max_retries: 1,
        initial_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(1),
    });
    let items = deltas(&model).await;
    // Refused on this machine: nothing will listen a moment later, so it is not retried.
    assert!(
        !items
            .iter()
            .any(|d| matches!(d, Ok(Delta::Retrying { .. }))),
        "{items:?}"
    );
    let err = items
        .last()
        .and_then(|d| d.as_ref().err())
        .expect("error")
        .to_string();
    assert!(
        err.starts_with(&format!(
            "cannot reach the model server at http://127.0.0.1:{port}/api/chat: "
        )),
        "{err}"
    );
    assert!(err.to_lowercase().contains("refused"), "{err}");
    assert!(
        err.ends_with("— is Ollama running? (ollama serve)"),
        "{err}"
    );
}

#[tokio::test]
async fn models_are_listed_for_both_wires() {
    let server = FakeModel::start(vec![]);
    for wire in [Wire::Ollama, Wire::OpenAi] {
        let names = client(&server, wire, None)
            .list_models()
            .await
            .expect("models");
        assert_eq!(names, ["fake-coder:7b", "fake-chat:1b"]);
    }
    let paths: Vec<String> = server.all_requests().into_iter().map(|r| r.path).collect();
    assert_eq!(paths, ["/api/tags", "/v1/models"]);
}

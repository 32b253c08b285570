//! Schema-constrained plans over HTTP against the fake model server: the schema goes as Ollama's
//! `format` and as the OpenAI-compatible `response_format`; a server that refuses it is asked
//! once more without it, and the client does not offer it again.

use crate::fake_model;

use std::time::Duration;

use fake_model::{FakeModel, Reply};
use seek::agents::planner::{parse_plan, plan_schema};
use seek::config::Wire;
use seek::llm::{
    ChatModel, ChatRequest, GenerationOptions, HttpChatModel, LlmError, Message, RetryPolicy, Role,
    ServerUrl,
};
use seek::wire::AgentName;
use tokio_util::sync::CancellationToken;

const BARE_PLAN: &str = r#"{"plan":[{"agent":"coder","id":"1","need":[],"task":"write hello.py"},{"agent":"casual","id":"2","need":["1"],"task":"explain it"}]}"#;

fn request(schema: Option<serde_json::Value>) -> ChatRequest {
    ChatRequest {
        messages: vec![
            Message::new(Role::System, "You are a project manager."),
            Message::new(Role::User, "write hello.py and explain it"),
        ],
        options: GenerationOptions {
            max_tokens: 4096,
            temperature: None,
            top_p: None,
            seed: None,
            context_window: 8192,
        },
        json_schema: schema,
        prefix_file: None,
    }
}

fn client(server: &FakeModel, wire: Wire) -> HttpChatModel {
    HttpChatModel::new(HttpChatModel::settings_for_tests(
        wire,
        ServerUrl::normalise(&server.url(), wire),
        Some("fake-coder:7b".into()),
        None,
        Duration::from_secs(5),
    ))
    .with_retry(RetryPolicy {
        max_retries: 3,
        initial_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(5),
    })
}

async fn answer(
    model: &HttpChatModel,
    schema: Option<serde_json::Value>,
) -> Result<String, LlmError> {
    model
        .stream(request(schema), CancellationToken::new())
        .collect()
        .await
        .map(|done| done.answer)
        .map_err(|(error, _partial)| error)
}

#[tokio::test]
async fn openai_compatible_body_carries_the_plan_schema_as_response_format() {
    let server = FakeModel::start(vec![Reply::text(BARE_PLAN)]);
    let reply = answer(&client(&server, Wire::OpenAi), Some(plan_schema()))
        .await
        .expect("reply");
    let sent = server.chat_requests();
    assert_eq!(sent.len(), 1);
    let format = &sent[0].json()["response_format"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(format["json_schema"]["name"], "plan");
    assert_eq!(format["json_schema"]["strict"], false);
    assert_eq!(format["json_schema"]["schema"], plan_schema());
    assert!(sent[0].json().get("format").is_none());
    // What a constrained server sends, bare JSON, is a plan.
    let plan = parse_plan(&reply, 1).expect("plan");
    assert_eq!(plan.steps.len(), 2);
    assert_eq!(plan.steps[0].agent, AgentName::Coder);
    assert_eq!(plan.steps[1].need, vec!["1".to_owned()]);
}

#[tokio::test]
async fn ollama_body_carries_the_plan_schema_as_format() {
    let server = FakeModel::start(vec![Reply::text(BARE_PLAN)]);
    answer(&client(&server, Wire::Ollama), Some(plan_schema()))
        .await
        .expect("reply");
    let body = server.chat_requests()[0].json();
    assert_eq!(body["format"], plan_schema());
    assert!(body.get("response_format").is_none());
    assert_eq!(body["options"]["num_ctx"], 8192, "the usual options stay");
}

#[tokio::test]
async fn a_request_without_schema_carries_neither_field() {
    for wire in [Wire::OpenAi, Wire::Ollama] {
        let server = FakeModel::start(vec![Reply::text("hello")]);
        answer(&client(&server, wire), None).await.expect("reply");
        let body = server.chat_requests()[0].json();
        assert!(body.get("response_format").is_none(), "{wire:?}");
        assert!(body.get("format").is_none(), "{wire:?}");
    }
}

#[tokio::test]
async fn a_refused_schema_is_dropped_once_and_remembered_for_the_clients_lifetime() {
    for wire in [Wire::OpenAi, Wire::Ollama] {
        let server = FakeModel::start(vec![
            Reply::status(
                400,
                r#"{"error":{"message":"response_format type json_schema is not supported"}}"#,
            ),
            Reply::text(format!("Here is the plan:\n```json\n{BARE_PLAN}\n```")),
            Reply::text(BARE_PLAN),
        ]);
        let model = client(&server, wire);
        let first = answer(&model, Some(plan_schema()))
            .await
            .expect("fallback reply");
        assert_eq!(parse_plan(&first, 1).expect("plan").steps.len(), 2);
        let second = answer(&model.clone(), Some(plan_schema()))
            .await
            .expect("second reply");
        assert_eq!(second, BARE_PLAN);

        let sent = server.chat_requests();
        assert_eq!(
            sent.len(),
            3,
            "{wire:?}: one refusal, then no schema at all"
        );
        let carries = |n: usize| {
            let body = sent[n].json();
            body.get("response_format").is_some() || body.get("format").is_some()
        };
        assert!(carries(0), "{wire:?}");
        assert!(!carries(1), "{wire:?}");
        assert!(!carries(2), "{wire:?}");
        assert_eq!(
            sent[0].json()["messages"],
            sent[1].json()["messages"],
            "the same request, only without the schema"
        );
    }
}

#[tokio::test]
async fn a_422_about_the_schema_is_a_refusal_and_one_about_anything_else_is_an_error() {
    let server = FakeModel::start(vec![
        Reply::status(422, r#"{"detail":"json_schema: unsupported keyword"}"#),
        Reply::text(BARE_PLAN),
    ]);
    answer(&client(&server, Wire::OpenAi), Some(plan_schema()))
        .await
        .expect("fallback reply");
    assert_eq!(server.chat_requests().len(), 2);

    let server = FakeModel::start(vec![
        Reply::status(422, r#"{"detail":"messages: field required"}"#),
        Reply::text(BARE_PLAN),
    ]);
    let error = answer(&client(&server, Wire::OpenAi), Some(plan_schema()))
        .await
        .expect_err("a 422 about the messages is reported");
    assert!(
        matches!(error, LlmError::Http { status: 422, .. }),
        "{error:?}"
    );
    assert_eq!(server.chat_requests().len(), 1, "not sent again");
}

#[tokio::test]
async fn a_400_that_is_not_about_the_schema_is_reported_after_one_request_without_it() {
    let server = FakeModel::start(vec![
        Reply::status(400, r#"{"error":{"message":"bad request"}}"#),
        Reply::status(400, r#"{"error":{"message":"bad request"}}"#),
        Reply::text("unused"),
    ]);
    let error = answer(&client(&server, Wire::OpenAi), Some(plan_schema()))
        .await
        .expect_err("the second 400 is the answer");
    assert!(
        matches!(error, LlmError::Http { status: 400, .. }),
        "{error:?}"
    );
    let sent = server.chat_requests();
    assert_eq!(
        sent.len(),
        2,
        "one request with the schema, one without, no more"
    );
    assert!(sent[1].json().get("response_format").is_none());
}

#[tokio::test]
async fn a_server_error_on_a_schema_request_is_retried_with_the_schema() {
    let server = FakeModel::start(vec![
        Reply::status(503, r#"{"error":{"message":"loading model"}}"#),
        Reply::text(BARE_PLAN),
    ]);
    answer(&client(&server, Wire::OpenAi), Some(plan_schema()))
        .await
        .expect("reply after a retry");
    let sent = server.chat_requests();
    assert_eq!(sent.len(), 2);
    assert!(
        sent[1].json().get("response_format").is_some(),
        "a 503 is not a refusal"
    );
}

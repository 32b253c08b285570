//! Unit tests of the chat template: the templates of SmolLM2 and Qwen2.5 (as their GGUF files
//! carry them), the ChatML fallback, Python string methods, `raise_exception`, block trimming and
//! the leading BOS.

use std::path::Path;

use super::*;
use crate::chat::{Message, Role};

/// SmolLM2-135M-Instruct's `tokenizer.chat_template`.
const SMOLLM2: &str = r#"{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"#;

/// Qwen2.5-7B-Instruct's `tokenizer.chat_template` (as in llama.cpp's models/templates).
const QWEN25: &str = r##"{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] }}
    {%- else %}
        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}
    {%- endif %}
    {{- "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' }}
    {%- else %}
        {{- '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\n<tool_call>\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- message.content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}
"##;

fn template(source: &str) -> ChatTemplate {
    ChatTemplate::new(source, Path::new("t.gguf"), "<s>", "</s>", false).expect("parses")
}

fn conversation() -> Vec<Message> {
    vec![
        Message::new(Role::System, "Be brief."),
        Message::new(Role::User, "Hi"),
        Message::new(Role::Assistant, "Hello!"),
        Message::new(Role::User, "2+2?"),
    ]
}

const CHATML_CONVERSATION: &str = "<|im_start|>system\nBe brief.<|im_end|>\n\
<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n\
<|im_start|>user\n2+2?<|im_end|>\n";

#[test]
fn smollm2_renders_chatml_with_its_default_system_message() {
    let t = template(SMOLLM2);
    assert_eq!(
        t.render(&conversation(), true).expect("renders"),
        format!("{CHATML_CONVERSATION}<|im_start|>assistant\n")
    );
    let only_user = [Message::new(Role::User, "hi")];
    assert_eq!(
        t.render(&only_user, false).expect("renders"),
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face\
<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n"
    );
}

#[test]
fn a_last_assistant_message_is_continued_not_closed() {
    let t = template(SMOLLM2);
    let mut messages = conversation();
    assert_eq!(
        t.prompt(&messages).expect("renders"),
        format!("{CHATML_CONVERSATION}<|im_start|>assistant\n"),
        "a conversation ending with the user's message opens the assistant's turn"
    );
    messages.push(Message::new(Role::Assistant, "```python"));
    assert_eq!(
        t.prompt(&messages).expect("renders"),
        format!("{CHATML_CONVERSATION}<|im_start|>assistant\n```python"),
        "the assistant's last message is written in, with no end of turn after it"
    );
}

#[test]
fn qwen25_renders_without_tools() {
    let t = template(QWEN25);
    assert_eq!(
        t.render(&conversation(), true).expect("renders"),
        format!("{CHATML_CONVERSATION}<|im_start|>assistant\n")
    );
    let only_user = [Message::new(Role::User, "hi")];
    assert_eq!(
        t.render(&only_user, true).expect("renders"),
        "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.\
<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    );
}

#[test]
fn a_file_without_a_template_gets_chatml() {
    let t = template(CHATML);
    assert_eq!(
        t.render(&conversation(), false).expect("renders"),
        CHATML_CONVERSATION
    );
}

#[test]
fn python_string_methods_and_the_special_tokens_are_available() {
    let t = template(
        "{{ bos_token }}{% for m in messages %}[{{ m.role.upper() }}:{{ m.content.strip() }}]{% endfor %}{{ eos_token }}",
    );
    let messages = [Message::new(Role::User, "  padded \n")];
    assert_eq!(
        t.render(&messages, false).expect("renders"),
        "<s>[USER:padded]</s>"
    );
}

#[test]
fn blocks_are_trimmed_as_in_hugging_face() {
    let t = template(
        "{% for m in messages %}\n    {% if m.role == 'user' %}\n{{ m.content }}\n    {% endif %}\n{% endfor %}",
    );
    let messages = [Message::new(Role::User, "a"), Message::new(Role::User, "b")];
    assert_eq!(t.render(&messages, false).expect("renders"), "a\nb\n");
}

#[test]
fn raise_exception_is_a_template_error_with_its_message() {
    let t = template(
        "{% if messages[0].role != 'user' %}{{ raise_exception('Conversations must start with a user message') }}{% endif %}",
    );
    let err = t
        .render(&conversation(), true)
        .expect_err("the template refuses");
    assert!(matches!(err, EngineError::Template { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains("Conversations must start with a user message") && text.contains("t.gguf"),
        "{text}"
    );
}

#[test]
fn a_template_that_does_not_parse_is_refused_at_load() {
    let err = ChatTemplate::new(
        "{% for m in messages %}",
        Path::new("t.gguf"),
        "",
        "",
        false,
    )
    .expect_err("an unclosed block");
    assert!(matches!(err, EngineError::Template { .. }), "{err:?}");
    assert!(err.to_string().contains("does not parse"), "{err}");
}

#[test]
fn a_leading_bos_is_dropped_when_the_tokenizer_adds_it() {
    let source = "{{ bos_token }}{{ messages[0].content }}";
    let messages = [Message::new(Role::User, "x")];
    let adds = ChatTemplate::new(source, Path::new("t.gguf"), "<s>", "</s>", true).expect("parses");
    assert_eq!(adds.render(&messages, false).expect("renders"), "x");
    let keeps =
        ChatTemplate::new(source, Path::new("t.gguf"), "<s>", "</s>", false).expect("parses");
    assert_eq!(keeps.render(&messages, false).expect("renders"), "<s>x");
}

#[test]
fn the_template_can_move_to_the_engine_thread() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<ChatTemplate>();
}

#[test]
fn a_template_that_loops_without_end_fails_instead_of_hanging() {
    let source =
        "{% for a in range(100000) %}{% for b in range(100000) %}x{% endfor %}{% endfor %}";
    let t = ChatTemplate::new(source, Path::new("t.gguf"), "", "", false).expect("parses");
    let err = t
        .render(&[Message::new(Role::User, "x")], true)
        .expect_err("out of fuel");
    assert!(matches!(err, EngineError::Template { .. }), "{err:?}");
}

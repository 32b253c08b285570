//! `model_size = "auto" | "small" | "large"`: whether seek treats the model as a small one and
//! adapts to it (a compact prompt with a worked example, one block per reply, a nudge when the
//! first reply runs nothing, short error feedback). `auto` decides from the parameter count the
//! server (or the built-in engine's model file) reports, else from the model's name (a size tag
//! such as `135m`, `0.5b`, `qwen2.5-coder:1.5b`), both small at most 2B parameters, else from the
//! context window (small at most 4,096 tokens).
//!
//! Owns the setting's values (its key and variable `SEEK_MODEL_SIZE` are the settings table's), the rule and the
//! words that say what it decided and why. It must not ask a server: what one reported arrives
//! as `ModelFacts` (`agent::size` asks).

use serde::Deserialize;

use super::setting::{Choice, choice_value};
use super::{ConfigError, Resolver};

/// What the setting says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ModelSize {
    /// Small when the name or the window says so.
    Auto,
    Small,
    Large,
}

impl ModelSize {
    pub fn as_str(self) -> &'static str {
        match self {
            ModelSize::Auto => "auto",
            ModelSize::Small => "small",
            ModelSize::Large => "large",
        }
    }

    #[cfg(test)]
    fn parse(text: &str) -> Option<Self> {
        super::setting::parse_choice(text).ok()
    }
}

impl Choice for ModelSize {
    fn word(self) -> &'static str {
        self.as_str()
    }
    fn expected() -> String {
        "expected \"auto\", \"small\" or \"large\"".to_owned()
    }
}

choice_value!(ModelSize);

/// Models with at most this many parameters are small under `auto`.
const SMALL_PARAMETERS: f64 = 2e9;
/// Context windows of at most this many tokens make the model small under `auto`: the full
/// prompt and a few rounds of feedback do not fit beside a reply.
const SMALL_WINDOW: u64 = 4096;

/// A parameter count a server, or the built-in engine's model file, reported for the model.
#[derive(Debug, Clone, PartialEq)]
pub struct Reported {
    pub parameters: f64,
    /// Where it was read, for people: `llama-server /v1/models`, `Ollama /api/show`, ….
    pub source: String,
}

/// What seek learnt about the model in use once it asked (at a session's first task, again
/// after `/model`); all `None` before, when the configuration alone decides.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelFacts {
    /// The model's name now (`/model` changes it); `None`: the configured `model`.
    pub name: Option<String>,
    /// The parameter count the server or the model file reported.
    pub parameters: Option<Reported>,
    /// The context window in use (the server's word reconciled with `context_window`).
    pub window: Option<u64>,
}

/// Why the model is, or is not, treated as small: the first thing known, in the rule's order.
#[derive(Debug, Clone, PartialEq)]
pub enum Reason {
    /// `model_size = "small"` or `"large"`.
    Setting(ModelSize),
    /// The parameter count a server or the model file reported.
    Reported(Reported),
    /// The size tag in the model's name.
    Name { name: String, parameters: f64 },
    /// No size is known: the context window decides.
    Window(u64),
}

/// Whether seek adapts to a small model, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub small: bool,
    pub reason: Reason,
}

impl Decision {
    /// The parameter count the decision rests on, when one does.
    pub fn parameters(&self) -> Option<f64> {
        match &self.reason {
            Reason::Reported(r) => Some(r.parameters),
            Reason::Name { parameters, .. } => Some(*parameters),
            Reason::Setting(_) | Reason::Window(_) => None,
        }
    }

    /// Why, in a few words: `135M parameters, from llama-server /v1/models`, `1.5B parameters,
    /// from the name "qwen2.5-coder:1.5b"`, `context window 4096`, `model_size = "small"`.
    pub fn why(&self) -> String {
        match &self.reason {
            Reason::Setting(size) => format!("model_size = \"{}\"", size.as_str()),
            Reason::Reported(r) => format!(
                "{} parameters, from {}",
                format_parameters(r.parameters),
                r.source
            ),
            Reason::Name { name, parameters } => format!(
                "{} parameters, from the name {name:?}",
                format_parameters(*parameters)
            ),
            Reason::Window(window) if *window <= SMALL_WINDOW => {
                format!("context window {window}")
            }
            Reason::Window(window) => {
                format!("size unknown, context window {window}")
            }
        }
    }

    /// `small (135M parameters, from llama-server /v1/models)`, `large (…)`.
    pub fn describe(&self) -> String {
        let size = if self.small { "small" } else { "large" };
        format!("{size} ({})", self.why())
    }
}

/// Whether the model is treated as small, and why: the setting when it is `small` or `large`;
/// under `auto` the reported parameter count, else the name's, else the window.
pub fn decide(size: ModelSize, facts: &ModelFacts, model: Option<&str>, window: u64) -> Decision {
    let model = facts.name.as_deref().or(model);
    let window = facts.window.unwrap_or(window);
    let reason = match size {
        ModelSize::Small | ModelSize::Large => Reason::Setting(size),
        ModelSize::Auto => match (&facts.parameters, model) {
            (Some(reported), _) => Reason::Reported(reported.clone()),
            (None, Some(name)) => match parameters_in_name(name) {
                Some(parameters) => Reason::Name {
                    name: name.to_owned(),
                    parameters,
                },
                None => Reason::Window(window),
            },
            (None, None) => Reason::Window(window),
        },
    };
    let small = match &reason {
        Reason::Setting(size) => *size == ModelSize::Small,
        Reason::Reported(r) => r.parameters <= SMALL_PARAMETERS,
        Reason::Name { parameters, .. } => *parameters <= SMALL_PARAMETERS,
        Reason::Window(window) => *window <= SMALL_WINDOW,
    };
    Decision { small, reason }
}

/// Whether a model of this name and window is treated as small, nothing reported.
#[cfg(test)] // kept for the tests that pin its behaviour
pub(crate) fn is_small(size: ModelSize, model: Option<&str>, context_window: u64) -> bool {
    decide(size, &ModelFacts::default(), model, context_window).small
}

/// A parameter count as servers write it: `135M`, `1.5B`, `7.6B`, `46.7B`, `500K`, `1T` (any
/// case), or a plain number. `None` for anything else, zero, or a count that is not finite.
pub(crate) fn parse_parameters(text: &str) -> Option<f64> {
    let text = text.trim();
    let (number, unit) = match text.char_indices().last()? {
        (at, c) if c.is_ascii_alphabetic() => {
            let unit = match c.to_ascii_lowercase() {
                'k' => 1e3,
                'm' => 1e6,
                'b' => 1e9,
                't' => 1e12,
                _ => return None,
            };
            (text[..at].trim(), unit)
        }
        _ => (text, 1.0),
    };
    let count = number.parse::<f64>().ok()? * unit;
    (count.is_finite() && count > 0.0).then_some(count)
}

/// A parameter count in a few characters: `135M`, `5M`, `1.5B`, `8B`, `405B`.
pub(crate) fn format_parameters(count: f64) -> String {
    let (value, unit) = if count >= 1e9 {
        (count / 1e9, "B")
    } else if count >= 1e6 {
        (count / 1e6, "M")
    } else {
        return format!("{count:.0}");
    };
    // Three significant digits at most; `8.0` is `8`.
    let text = if (value >= 10.0 && unit == "M") || value >= 100.0 {
        format!("{value:.0}")
    } else {
        format!("{value:.1}")
    };
    let text = text.strip_suffix(".0").unwrap_or(&text);
    format!("{text}{unit}")
}

/// The parameter count a model's name gives (`smollm2-135m` → 1.35e8, `qwen2.5-coder:1.5b` →
/// 1.5e9, `llama3.1:8b-instruct-q4_K_M` → 8e9): the largest number directly followed by `m` or
/// `b` and then a separator or the end. Version numbers (`qwen2.5`) are not followed by a unit;
/// mixtures (`8x7b`) count the factor too.
pub(crate) fn parameters_in_name(name: &str) -> Option<f64> {
    let lower = name.to_ascii_lowercase();
    let bytes = lower.as_bytes();
    let mut best: Option<f64> = None;
    let mut i = 0;
    while i < bytes.len() {
        let starts_number = bytes[i].is_ascii_digit() && (i == 0 || !is_name_char(bytes[i - 1]));
        if !starts_number {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'.') {
            i += 1;
        }
        let mut factor = 1.0;
        let mut number_start = start;
        // `8x7b`: experts times their size.
        if i + 1 < bytes.len() && bytes[i] == b'x' && bytes[i + 1].is_ascii_digit() {
            factor = lower[start..i].parse::<f64>().unwrap_or(1.0);
            i += 1;
            number_start = i;
            while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'.') {
                i += 1;
            }
        }
        let unit = match bytes.get(i) {
            Some(b'm') => 1e6,
            Some(b'b') => 1e9,
            _ => continue,
        };
        let ends_word = bytes.get(i + 1).is_none_or(|c| !c.is_ascii_alphanumeric());
        if let (true, Ok(n)) = (ends_word, lower[number_start..i].parse::<f64>()) {
            let count = factor * n * unit;
            best = Some(best.map_or(count, |b: f64| b.max(count)));
        }
        i += 1;
    }
    best
}

/// Letters glue a digit to the word before it (`qwen2` is a name, not a size).
fn is_name_char(c: u8) -> bool {
    c.is_ascii_alphabetic()
}

/// What seek changes for a small model, one switch each. All are on for a small model, none for
/// a large one, but `refuse_repeats` and `refuse_no_code`, which are on for every model; `SEEK_SMALL_MODEL_OFF` (a
/// comma list of the names below, or `all`) turns some off, so that the small-model benchmark
/// can measure each change on and off with one binary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Adaptations {
    /// `prompt`: the compact system prompt with a worked example.
    pub compact_prompt: bool,
    /// `examples`: worked exchanges go before a coder task's conversation.
    pub example_turns: bool,
    /// `nearest`: the last worked exchange is the bank's one-line task nearest the user's, with
    /// the task's file names (`examples::example_turns`), not a fixed one.
    pub nearest_example: bool,
    /// `fill`: that exchange also gets the task's other values (extensions, numbers, lists,
    /// ordinals) and the words it differs in (`examples::fill`), not only its file names.
    pub fill_values: bool,
    /// `one_block`: a reply ends where its first tool block closes.
    pub one_block: bool,
    /// `nudge`: a coder task whose first reply runs nothing is told once to run it.
    pub nudge: bool,
    /// `feedback`: a failure's last lines, a success's output bounded.
    pub short_feedback: bool,
    /// `repeats`: code that already failed in the task is not run again.
    pub refuse_repeats: bool,
    /// `resample`: after such a refusal the model samples warmer (it would resend the code).
    pub resample: bool,
    /// `reruns`: a reply resending code that already succeeded ends the task, its output being
    /// the answer, instead of running it again until `max_rounds`.
    pub end_on_rerun: bool,
    /// `loops`: a reply repeating a short unit a few lines long is cut as a loop
    /// (`RepetitionGuard::strict`), not only one repeating for 800 bytes.
    pub strict_loops: bool,
    /// `cap`: a reply is at most `SMALL_REPLY_TOKENS` tokens (less when `max_tokens` says so):
    /// a one-block answer never needs more, and a reply looping to 1,024 tokens round after
    /// round costs a minute on a CPU.
    pub reply_cap: Option<u64>,
    /// `fence`: a coder reply starts with its block's fence opened (`small::fence_opening`)
    /// until a block of the task succeeds, on the built-in engine (which continues a started
    /// answer).
    pub open_fence: bool,
    /// `block_time`: a block runs at most `SMALL_BLOCK_SECS` where its tool's `timeout_secs`
    /// was not set (AgenticSeek's defaults are 120 s for C, 300 s for bash and python): a small
    /// model's task is a one-liner, and its `while (n <= 99)` with `n` never changed printed for
    /// two minutes.
    pub block_secs: Option<u64>,
    /// `no_code`: a bash or python block of only comments fails, saying so, instead of
    /// succeeding with no output. On for every model.
    pub refuse_no_code: bool,
    /// `budget`: a coder task's replies write at most `SMALL_TASK_TOKENS` tokens in all while
    /// no block of it has worked (the last reply is capped to what is left); then it gives up.
    /// A 135M model that has written three replies' worth of text without a working block
    /// writes lists and copies of itself, not the fix, and each such reply costs seconds.
    pub task_tokens: Option<u64>,
}

/// The longest reply of a small model, in tokens (`Adaptations::reply_cap`).
pub(crate) const SMALL_REPLY_TOKENS: u64 = 256;

/// The longest a small model's block runs, in seconds, unless its tool's timeout is configured
/// (`Adaptations::block_secs`).
pub(crate) const SMALL_BLOCK_SECS: u64 = 20;

/// The most a small model's coder task writes before a block of it works, in tokens
/// (`Adaptations::task_tokens`): three replies at `SMALL_REPLY_TOKENS`.
pub(crate) const SMALL_TASK_TOKENS: u64 = 3 * SMALL_REPLY_TOKENS;

/// The names `SEEK_SMALL_MODEL_OFF` takes.
pub(crate) const ADAPTATION_NAMES: [&str; 16] = [
    "prompt",
    "examples",
    "nearest",
    "fill",
    "one_block",
    "nudge",
    "feedback",
    "repeats",
    "resample",
    "reruns",
    "loops",
    "cap",
    "fence",
    "block_time",
    "no_code",
    "budget",
];

impl Adaptations {
    /// The switches for a model that is `small` or not, less those `off` names.
    pub fn new(small: bool, off: &[String]) -> Self {
        let on = |name: &str| !off.iter().any(|o| o == name || o == "all");
        Self {
            compact_prompt: small && on("prompt"),
            example_turns: small && on("examples"),
            nearest_example: small && on("nearest"),
            fill_values: small && on("fill"),
            one_block: small && on("one_block"),
            nudge: small && on("nudge"),
            short_feedback: small && on("feedback"),
            refuse_repeats: on("repeats"),
            resample: small && on("resample"),
            end_on_rerun: small && on("reruns"),
            strict_loops: small && on("loops"),
            reply_cap: (small && on("cap")).then_some(SMALL_REPLY_TOKENS),
            open_fence: small && on("fence"),
            block_secs: (small && on("block_time")).then_some(SMALL_BLOCK_SECS),
            refuse_no_code: on("no_code"),
            task_tokens: (small && on("budget")).then_some(SMALL_TASK_TOKENS),
        }
    }
}

/// `SEEK_SMALL_MODEL_OFF`: the adaptations turned off, checked against `ADAPTATION_NAMES`.
pub(super) fn resolve_off(r: &Resolver<'_>) -> Result<Vec<String>, ConfigError> {
    let Some(text) = r.env.get(OFF_VAR) else {
        return Ok(Vec::new());
    };
    let names: Vec<String> = text
        .split(',')
        .map(|name| name.trim().to_ascii_lowercase())
        .filter(|name| !name.is_empty())
        .collect();
    match names
        .iter()
        .find(|name| *name != "all" && !ADAPTATION_NAMES.contains(&name.as_str()))
    {
        Some(unknown) => Err(ConfigError::Invalid {
            origin: super::Origin::Env(OFF_VAR),
            key: "small model adaptations".into(),
            value: format!("{unknown:?}"),
            expected: format!("a comma list of {} or all", ADAPTATION_NAMES.join(", ")),
        }),
        None => Ok(names),
    }
}

const OFF_VAR: &str = "SEEK_SMALL_MODEL_OFF";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_read_from_the_names_people_use() {
        let cases = [
            ("smollm2-135m", Some(1.35e8)),
            ("SmolLM2-360M-Instruct", Some(3.6e8)),
            ("qwen2.5-coder:1.5b", Some(1.5e9)),
            ("qwen2.5-coder-1.5b", Some(1.5e9)),
            ("qwen2.5:0.5b-instruct-q4_K_M", Some(5e8)),
            ("llama3.1:8b", Some(8e9)),
            ("mixtral:8x7b", Some(5.6e10)),
            ("gpt-4o-mini", None),
            ("qwen2.5-coder", None),
            ("phi3", None),
            ("llama3.2:3b-instruct", Some(3e9)),
            ("deepseek-r1:1.5b", Some(1.5e9)),
            ("model-q4_0.gguf", None),
        ];
        for (name, want) in cases {
            assert_eq!(parameters_in_name(name), want, "{name}");
        }
    }

    #[test]
    fn parameter_counts_are_read_as_servers_write_them() {
        let cases = [
            ("135M", Some(1.35e8)),
            ("1.5B", Some(1.5e9)),
            ("7.6B", Some(7.6e9)),
            ("46.7B", Some(4.67e10)),
            ("360m", Some(3.6e8)),
            (" 8B ", Some(8e9)),
            ("134515008", Some(134_515_008.0)),
            ("", None),
            ("B", None),
            ("7.6X", None),
            ("0B", None),
            ("-1B", None),
            ("NaNB", None),
            ("unknown", None),
        ];
        for (text, want) in cases {
            let got = parse_parameters(text);
            match (got, want) {
                (Some(got), Some(want)) => assert!((got - want).abs() < 1.0, "{text}: {got}"),
                _ => assert_eq!(got, want, "{text}"),
            }
        }
    }

    #[test]
    fn parameter_counts_are_shown_in_a_few_characters() {
        let cases = [
            (134_515_008.0, "135M"),
            (3.6e8, "360M"),
            (1.5e9, "1.5B"),
            (1_543_714_304.0, "1.5B"),
            (7_615_616_512.0, "7.6B"),
            (8e9, "8B"),
            (70.6e9, "70.6B"),
            (405e9, "405B"),
            (5e6, "5M"),
            (42.0, "42"),
        ];
        for (count, want) in cases {
            assert_eq!(format_parameters(count), want, "{count}");
        }
    }

    fn reported(parameters: f64) -> ModelFacts {
        ModelFacts {
            parameters: Some(Reported {
                parameters,
                source: "llama-server /v1/models".into(),
            }),
            ..ModelFacts::default()
        }
    }

    #[test]
    fn a_reported_count_goes_before_the_name_and_the_window() {
        let small = decide(ModelSize::Auto, &reported(1.35e8), Some("default"), 32_768);
        assert!(small.small);
        assert_eq!(
            small.describe(),
            "small (135M parameters, from llama-server /v1/models)"
        );
        // The server's word beats a name that says otherwise, and a small window.
        let large = decide(ModelSize::Auto, &reported(7.6e9), Some("tiny-135m"), 2048);
        assert!(!large.small);
        assert_eq!(large.parameters(), Some(7.6e9));
        // The setting beats everything.
        let forced = decide(ModelSize::Large, &reported(1.35e8), Some("default"), 2048);
        assert!(!forced.small);
        assert_eq!(forced.describe(), "large (model_size = \"large\")");
    }

    #[test]
    fn without_a_report_the_name_then_the_window_decides() {
        let none = ModelFacts::default();
        let named = decide(ModelSize::Auto, &none, Some("qwen2.5-coder:1.5b"), 2048);
        assert!(named.small);
        assert_eq!(
            named.describe(),
            "small (1.5B parameters, from the name \"qwen2.5-coder:1.5b\")"
        );
        assert!(!decide(ModelSize::Auto, &none, Some("llama3.1:8b"), 2048).small);
        let window = decide(ModelSize::Auto, &none, Some("default"), 4096);
        assert!(window.small);
        assert_eq!(window.describe(), "small (context window 4096)");
        let unknown = decide(ModelSize::Auto, &none, None, 8192);
        assert_eq!(
            unknown.describe(),
            "large (size unknown, context window 8192)"
        );
        // What seek learnt replaces the configured name and window.
        let learnt = ModelFacts {
            name: Some("smollm2-360m".into()),
            window: Some(32_768),
            ..ModelFacts::default()
        };
        assert!(decide(ModelSize::Auto, &learnt, Some("llama3.1:8b"), 8192).small);
        let learnt = ModelFacts {
            window: Some(2048),
            ..ModelFacts::default()
        };
        assert!(decide(ModelSize::Auto, &learnt, Some("default"), 8192).small);
    }

    #[test]
    fn auto_is_small_for_small_names_or_small_windows() {
        assert!(is_small(ModelSize::Auto, Some("smollm2-135m"), 8192));
        assert!(is_small(ModelSize::Auto, Some("qwen2.5-coder:1.5b"), 32768));
        assert!(!is_small(ModelSize::Auto, Some("llama3.1:8b"), 8192));
        assert!(!is_small(ModelSize::Auto, Some("gpt-4o"), 128_000));
        assert!(!is_small(ModelSize::Auto, None, 8192));
        assert!(is_small(ModelSize::Auto, Some("gpt-4o"), 4096));
        assert!(is_small(ModelSize::Small, Some("llama3.1:70b"), 128_000));
        assert!(!is_small(ModelSize::Large, Some("smollm2-135m"), 2048));
    }

    #[test]
    fn each_adaptation_is_its_own_switch() {
        let all = Adaptations::new(true, &[]);
        assert!(all.compact_prompt && all.one_block && all.nudge && all.short_feedback);
        assert!(all.resample && all.end_on_rerun && all.strict_loops && all.example_turns);
        assert_eq!(all.reply_cap, Some(SMALL_REPLY_TOKENS));
        assert_eq!(all.block_secs, Some(SMALL_BLOCK_SECS));
        assert!(all.refuse_repeats && all.refuse_no_code);
        let large = Adaptations::new(false, &[]);
        assert!(!large.compact_prompt && !large.one_block && !large.nudge && !large.short_feedback);
        assert!(!large.resample && !large.end_on_rerun && !large.strict_loops);
        assert!(!large.example_turns);
        assert_eq!(large.reply_cap, None);
        assert_eq!(large.block_secs, None);
        assert!(
            large.refuse_repeats && large.refuse_no_code,
            "every model is spared its repeated failures and its empty blocks"
        );
        let some = Adaptations::new(true, &["nudge".into(), "repeats".into()]);
        assert!(!some.nudge && !some.refuse_repeats && some.one_block && some.compact_prompt);
        let none = Adaptations::new(true, &["all".into()]);
        assert_eq!(
            none,
            Adaptations::new(false, &["repeats".into(), "no_code".into()])
        );
    }

    #[test]
    fn the_words_are_read_without_case_or_spaces() {
        assert_eq!(ModelSize::parse(" Small "), Some(ModelSize::Small));
        assert_eq!(ModelSize::parse("AUTO"), Some(ModelSize::Auto));
        assert_eq!(ModelSize::parse("tiny"), None);
    }
}

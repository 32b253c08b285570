//! Which tokens are special and which end generation, decided the way llama.cpp decides them:
//! from the file's token types and ids, and from token texts llama.cpp recognises.
//!
//! Owns the token attributes, the special ids (BOS, EOS, end-of-turn, fill-in-the-middle) and
//! the end-of-generation set. It must not encode or decode text.

use super::metadata::Metadata;

/// What a token is, from `tokenizer.ggml.token_type` (llama.cpp's token attributes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Normal,
    Unknown,
    Control,
    UserDefined,
    Unused,
    Byte,
    Undefined,
}

impl Kind {
    /// GGUF token types: 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte;
    /// anything else is undefined, as in llama.cpp.
    pub(super) fn from_gguf(token_type: i32) -> Self {
        match token_type {
            1 => Self::Normal,
            2 => Self::Unknown,
            3 => Self::Control,
            4 => Self::UserDefined,
            5 => Self::Unused,
            6 => Self::Byte,
            _ => Self::Undefined,
        }
    }

    /// Split out of the text before BPE (llama.cpp's special-token cache).
    pub(super) fn is_special(self) -> bool {
        matches!(self, Self::Control | Self::UserDefined | Self::Unknown)
    }

    /// Split out only when the caller asks for special tokens to be parsed.
    pub(super) fn needs_parse_special(self) -> bool {
        matches!(self, Self::Control | Self::Unknown)
    }
}

// Token texts llama.cpp recognises when the file does not name the token by id.
const EOT_TEXTS: &[&str] = &[
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "<|end_of_text|>",
    "<EOT>",
    "_<EOT>",
    "[EOT]",
    "<｜end▁of▁sentence｜>",
    "<end_of_utterance>",
];
const EOM_TEXTS: &[&str] = &["<|eom_id|>"];
const FIM_PRE_TEXTS: &[&str] = &[
    "<|fim_prefix|>",
    "<fim-prefix>",
    "<fim_prefix>",
    "<｜fim▁begin｜>",
    "<PRE>",
    "▁<PRE>",
    "<|code_prefix|>",
    "<|prefix|>",
];
const FIM_SUF_TEXTS: &[&str] = &[
    "<|fim_suffix|>",
    "<fim-suffix>",
    "<fim_suffix>",
    "<｜fim▁hole｜>",
    "<SUF>",
    "▁<SUF>",
    "<|code_suffix|>",
    "<|suffix|>",
];
const FIM_MID_TEXTS: &[&str] = &[
    "<|fim_middle|>",
    "<fim-middle>",
    "<fim_middle>",
    "<｜fim▁end｜>",
    "<MID>",
    "▁<MID>",
    "<|code_middle|>",
    "<|middle|>",
];
const FIM_PAD_TEXTS: &[&str] = &["<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"];
const FIM_REP_TEXTS: &[&str] = &[
    "<|fim_repo|>",
    "<|repo_name|>",
    "<fim-repo>",
    "<REPO>",
    "<reponame>",
];
const FIM_SEP_TEXTS: &[&str] = &["<|file_sep|>"];
/// Tokens that end generation wherever they are in the vocabulary.
const EOG_TEXTS: &[&str] = &[
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<|return|>",
    "<|call|>",
    "<|flush|>",
    "<|calls|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "</s>",
    "<|eom_id|>",
    "<EOT>",
    "_<EOT>",
    "[EOT]",
    "[EOS]",
    "<|end_of_text|>",
    "<end_of_utterance>",
    "<eos>",
    "<turn|>",
    "<|tool_response>",
    "<｜end▁of▁sentence｜>",
    "[e~[",
];
/// gpt-oss's structure tokens, which llama.cpp always shows as text.
const ALWAYS_SHOWN_TEXTS: &[&str] = &["<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"];

/// The special ids of a vocabulary and its end-of-generation set.
#[derive(Debug)]
pub(super) struct SpecialIds {
    pub(super) bos: Option<u32>,
    pub(super) eos: Option<u32>,
    /// Sorted, without repeats.
    pub(super) end_of_generation: Vec<u32>,
}

/// A role token: the file's id if it gives one, else the first token whose text llama.cpp
/// recognises (llama.cpp takes whichever its hash map yields first; the lowest id is the
/// deterministic choice). A recognised token becomes a control token, as in llama.cpp.
fn find_or_detect(
    given: Option<u32>,
    texts: &[&str],
    tokens: &[String],
    kinds: &mut [Kind],
) -> Option<u32> {
    if given.is_some() {
        return given;
    }
    let id = tokens.iter().position(|t| texts.contains(&t.as_str()))?;
    kinds[id] = Kind::Control;
    u32::try_from(id).ok()
}

/// Reads the special ids, marks the tokens llama.cpp treats as control tokens, and builds the
/// end-of-generation set. `kinds` is updated in place.
pub(super) fn resolve(
    meta: &Metadata<'_>,
    tokens: &[String],
    kinds: &mut [Kind],
) -> Result<SpecialIds, String> {
    let n = tokens.len();
    let id = |key: &str| meta.optional_token_id(&format!("tokenizer.ggml.{key}"), n);
    // llama.cpp's defaults for a byte-level BPE file that names no BOS or EOS: token 11.
    let default_11 = (n > 11).then_some(11);
    let bos = id("bos_token_id")?.or(default_11);
    let eos = id("eos_token_id")?.or(default_11);
    let eot = id("eot_token_id")?;
    let eom = id("eom_token_id")?;
    // The older key names, when present, win over the newer ones, as in llama.cpp.
    let fim_pre = id("prefix_token_id")?.or(id("fim_pre_token_id")?);
    let fim_suf = id("suffix_token_id")?.or(id("fim_suf_token_id")?);
    let fim_mid = id("middle_token_id")?.or(id("fim_mid_token_id")?);
    let fim_pad = id("fim_pad_token_id")?;
    let fim_rep = id("fim_rep_token_id")?;
    let fim_sep = id("fim_sep_token_id")?;

    let eot = find_or_detect(eot, EOT_TEXTS, tokens, kinds);
    let eom = find_or_detect(eom, EOM_TEXTS, tokens, kinds);
    find_or_detect(fim_pre, FIM_PRE_TEXTS, tokens, kinds);
    find_or_detect(fim_suf, FIM_SUF_TEXTS, tokens, kinds);
    find_or_detect(fim_mid, FIM_MID_TEXTS, tokens, kinds);
    let fim_pad = find_or_detect(fim_pad, FIM_PAD_TEXTS, tokens, kinds);
    let fim_rep = find_or_detect(fim_rep, FIM_REP_TEXTS, tokens, kinds);
    let fim_sep = find_or_detect(fim_sep, FIM_SEP_TEXTS, tokens, kinds);

    let mut eog: Vec<u32> = [fim_pad, fim_rep, fim_sep].into_iter().flatten().collect();
    for (i, text) in tokens.iter().enumerate() {
        if EOG_TEXTS.contains(&text.as_str()) {
            eog.push(i as u32);
            kinds[i] = Kind::Control;
        }
    }
    for (i, text) in tokens.iter().enumerate() {
        if ALWAYS_SHOWN_TEXTS.contains(&text.as_str()) {
            kinds[i] = Kind::UserDefined;
        }
    }
    eog.extend([eos, eot, eom].into_iter().flatten());
    eog.sort_unstable();
    eog.dedup();

    let text_of = |id: u32| tokens[id as usize].as_str();
    let has = |eog: &[u32], text: &str| eog.iter().any(|&id| text_of(id) == text);
    // gpt-oss and Solar Open end a message with "<|end|>" but go on generating after it.
    if let Some(end) = eog.iter().copied().find(|&id| text_of(id) == "<|end|>") {
        let has_call = has(&eog, "<|call|>") || has(&eog, "<|calls|>");
        if (has(&eog, "<|return|>") || has(&eog, "<|flush|>")) && has_call {
            eog.retain(|&id| id != end);
            kinds[end as usize] = Kind::UserDefined;
        }
    }
    // Gemma 4 and PLaMo 2 use "</s>" as ordinary text.
    if let Some(s) = eog.iter().copied().find(|&id| text_of(id) == "</s>")
        && (has(&eog, "<|tool_response>") || has(&eog, "<|plamo:eos|>"))
    {
        eog.retain(|&id| id != s);
        kinds[s as usize] = Kind::Normal;
    }
    Ok(SpecialIds {
        bos,
        eos,
        end_of_generation: eog,
    })
}

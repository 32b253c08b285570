//! What to do after a catalog model could not be downloaded: try again (a download resumes),
//! a mirror you can reach (`[local] mirror`), a `.gguf` file you already have, or the model you
//! were using. One wording for `/model`, a failed task and `seek pull`.
//!
//! Pure text; it must not download or look at the disk. URLs and paths stay whole on their
//! lines (never cut mid-word by seek: a terminal or the UI wraps them).

/// The next steps after `name` failed to download. `retry` is how to try again from where the
/// user is (`/model NAME`, `seek pull NAME`); `previous` is the model still in use, if any.
pub fn after_failed_download(name: &str, retry: &str, previous: Option<&str>) -> String {
    let mut text = String::new();
    if let Some(previous) = previous.filter(|p| *p != name) {
        text.push_str(&format!("still using {previous}. "));
    }
    text.push_str(&format!(
        "What to do: check the connection and try again with {retry} (the download resumes where it stopped); \
         or download from a mirror you can reach: set `mirror = \"http://host/path/\"` under [local] in the config file \
         (`seek config` shows where it is); or use a .gguf file you already have: `/model /path/to/model.gguf`, \
         or `--model /path/to/model.gguf`"
    ));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_advice_names_every_way_on_and_the_model_kept() {
        let text = after_failed_download(
            "qwen2.5-coder-1.5b",
            "`/model qwen2.5-coder-1.5b`",
            Some("smollm2-135m"),
        );
        assert!(text.starts_with("still using smollm2-135m. "), "{text}");
        for step in [
            "`/model qwen2.5-coder-1.5b`",
            "[local]",
            "mirror = ",
            "seek config",
            ".gguf",
        ] {
            assert!(text.contains(step), "{step}: {text}");
        }
        assert!(
            !text.contains('\n'),
            "one paragraph, wrapped by whoever shows it"
        );
        let alone = after_failed_download("x", "`seek pull x`", None);
        assert!(alone.starts_with("What to do"), "{alone}");
    }
}

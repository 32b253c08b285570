//! (being written)

/// Whether `model` names something the built-in engine runs: a catalog name or a `.gguf` file.
pub fn runs_locally(model: &str) -> bool {
    let m = model.trim();
    m.to_ascii_lowercase().ends_with(".gguf")
        || ["smollm2-135m", "qwen2.5-coder-1.5b", "qwen2.5-coder-7b"].contains(&m)
}

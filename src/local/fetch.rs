//! From the name a user typed to a model file on disk: a `.gguf` path as it is, a catalog name
//! through its download (reported as `Preparing` progress).
//!
//! Owns that mapping for the provider. It must not download by itself (`download` does).

use std::path::PathBuf;

use tokio_util::sync::CancellationToken;

use super::LocalError;
use crate::llm::Preparing;

/// Where catalog models live and come from.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    pub models_dir: PathBuf,
}

/// Progress reports, as the provider forwards them.
pub type Report = Box<dyn Fn(Preparing) + Send + Sync>;

/// The file for `model`, downloaded first when it is a catalog name not yet here. `None` when
/// `cancel` stopped it.
pub async fn model_file(
    model: &str,
    _settings: &Settings,
    _report: Report,
    _cancel: &CancellationToken,
) -> Result<Option<PathBuf>, LocalError> {
    let path = PathBuf::from(model.trim());
    if path.is_file() {
        return Ok(Some(path));
    }
    Err(LocalError::UnknownModel {
        name: model.to_owned(),
        catalog: String::new(),
    })
}

/// The file for `model` if it is already on disk.
pub fn present_file(model: &str, _settings: &Settings) -> Option<PathBuf> {
    let path = PathBuf::from(model.trim());
    path.is_file().then_some(path)
}

/// Names `list_models` offers.
pub fn known_models(_settings: &Settings) -> Vec<String> {
    Vec::new()
}

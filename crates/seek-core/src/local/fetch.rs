//! From the name a user typed to a model file on disk: a `.gguf` path as it is, a catalog name
//! through its download (reported as `Preparing` progress).
//!
//! Owns that mapping for the provider. It must not download by itself (`download` does).

use std::path::PathBuf;

use tokio_util::sync::CancellationToken;

use super::LocalError;
use super::catalog::{self, CATALOG, ModelRef};
use super::download::{self, DownloadSettings, OnDisk, Phase, Progress};
use crate::llm::Preparing;

/// Where catalog models live and come from (`[local]`).
pub type Settings = DownloadSettings;

/// Progress reports, as the provider forwards them.
pub(crate) type Report = Box<dyn Fn(Preparing) + Send + Sync>;

/// The file for `model`, downloaded first when it is a catalog name not yet here. `None` when
/// `cancel` stopped it.
pub async fn model_file(
    model: &str,
    settings: &Settings,
    report: Report,
    cancel: &CancellationToken,
) -> Result<Option<PathBuf>, LocalError> {
    let cwd = std::env::current_dir().unwrap_or_default();
    let entry = match catalog::resolve(model, &cwd)? {
        ModelRef::File(path) => return Ok(Some(path)),
        ModelRef::Catalog(entry) => entry,
    };
    let progress = |p: &Progress| {
        report(Preparing {
            stage: if p.phase == Phase::Verifying {
                "verify"
            } else {
                "download"
            },
            model: model.to_owned(),
            done_bytes: p.done,
            total_bytes: p.total,
            message: p.line(),
        });
    };
    match download::ensure_downloaded(entry, settings, progress, cancel).await {
        Ok(path) => Ok(Some(path)),
        Err(LocalError::Cancelled { .. }) => Ok(None),
        Err(err) => Err(err),
    }
}

/// The file for `model` if it is already on disk.
pub(crate) fn present_file(model: &str, settings: &Settings) -> Option<PathBuf> {
    let cwd = std::env::current_dir().ok()?;
    match catalog::resolve(model, &cwd).ok()? {
        ModelRef::File(path) => Some(path),
        ModelRef::Catalog(entry) => match download::on_disk(entry, settings) {
            OnDisk::Ready(path) | OnDisk::Unverified(path) => Some(path),
            OnDisk::Partial { .. } | OnDisk::Absent(_) => None,
        },
    }
}

/// Names `list_models` offers.
pub(crate) fn known_models(_settings: &Settings) -> Vec<String> {
    CATALOG.iter().map(|e| e.name.to_owned()).collect()
}

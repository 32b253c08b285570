//! `ListModels`: what a `/model` picker offers. The server's list, or with the built-in engine
//! its catalog, each entry with its size and whether it is downloaded.
//!
//! Owns gathering that list within a time bound, off the runtime's command loop, and answering
//! with one `ModelList` event whatever happens (a failure is its `error`, never an `Error`
//! event). It must not change the model in use.

use std::sync::Arc;
use std::time::Duration;

use super::events::EventSink;
use crate::config::{Config, Wire};
use crate::llm::ChatModel;
use crate::local::catalog::CATALOG;
use crate::local::download::{self, DownloadSettings, OnDisk, progress::human_bytes};
use crate::wire::{Event, ModelEntry};

/// How long the server gets to list its models.
const LIST_LIMIT: Duration = Duration::from_secs(10);
/// Models offered at most: a picker of more helps nobody, and a hostile server's 4 MB list of
/// tiny names would otherwise be hundreds of thousands of entries for the front end.
const MAX_MODELS: usize = 1_000;
/// A longer name is no real model's and is left out (cutting it would offer a wrong name).
const MAX_NAME_BYTES: usize = 256;

/// Answers `ListModels` with a `ModelList` event, from a task of its own: the command loop
/// goes on meanwhile. The event goes to the front end only (a list is no part of a session).
pub(super) fn answer(
    config: &Arc<Config>,
    model: &Arc<dyn ChatModel>,
    current: String,
    events: &EventSink,
) {
    let (config, model, front) = (Arc::clone(config), Arc::clone(model), events.front.clone());
    tokio::spawn(async move {
        let (models, error) = if config.provider.value.wire == Wire::InProcess {
            catalog(&config).await
        } else {
            server(model.as_ref()).await
        };
        // A front end that went away asked for nothing any more.
        let _ = front.send(Event::ModelList {
            current,
            models,
            error,
        });
    });
}

async fn server(model: &dyn ChatModel) -> (Vec<ModelEntry>, Option<String>) {
    match tokio::time::timeout(LIST_LIMIT, model.list_models()).await {
        Ok(Ok(names)) => (entries(names), None),
        Ok(Err(e)) => (Vec::new(), Some(e.to_string())),
        Err(_) => (
            Vec::new(),
            Some(format!(
                "the server did not list its models within {} s",
                LIST_LIMIT.as_secs()
            )),
        ),
    }
}

/// The server's names as entries: empty, overlong and control-character names (which no one
/// can type back, and which would drive a terminal) are left out, each name offered once, and
/// at most `MAX_MODELS`.
fn entries(names: Vec<String>) -> Vec<ModelEntry> {
    let mut seen = std::collections::HashSet::new();
    names
        .into_iter()
        .filter(|name| {
            !name.is_empty() && name.len() <= MAX_NAME_BYTES && !name.chars().any(char::is_control)
        })
        .filter(|name| seen.insert(name.clone()))
        .take(MAX_MODELS)
        .map(|name| ModelEntry {
            name,
            detail: String::new(),
        })
        .collect()
}

/// The built-in engine's catalog, each model's size and state (the models dir is looked at
/// off the async threads).
async fn catalog(config: &Config) -> (Vec<ModelEntry>, Option<String>) {
    let settings = DownloadSettings::from(&config.local);
    let looked = tokio::task::spawn_blocking(move || catalog_entries(&settings));
    match tokio::time::timeout(LIST_LIMIT, looked).await {
        Ok(Ok(models)) => (models, None),
        Ok(Err(e)) => (Vec::new(), Some(format!("listing the catalog failed: {e}"))),
        Err(_) => (
            Vec::new(),
            Some("the models dir did not answer in time".to_owned()),
        ),
    }
}

fn catalog_entries(settings: &DownloadSettings) -> Vec<ModelEntry> {
    CATALOG
        .iter()
        .map(|entry| {
            // What choosing it costs comes first: a download, and how big.
            let size = human_bytes(entry.size);
            let detail = match download::on_disk(entry, settings) {
                OnDisk::Ready(_) => format!("{size} · downloaded"),
                OnDisk::Unverified(_) => format!("{size} · downloaded, not checked yet"),
                OnDisk::Partial { bytes, .. } => format!(
                    "{size} download · {} of it here, resumed when chosen",
                    human_bytes(bytes)
                ),
                OnDisk::Absent(_) => format!("{size} download · not downloaded"),
            };
            ModelEntry {
                name: entry.name.to_owned(),
                detail,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hostile_servers_list_is_bounded_and_holds_no_control_characters() {
        let mut names: Vec<String> = (0..100_000).map(|i| format!("m{i}")).collect();
        names.insert(0, "evil\u{1b}]0;owned\u{7}".into());
        names.insert(1, "x".repeat(1 << 20));
        names.insert(2, String::new());
        names.insert(3, "m0".into());
        let models = entries(names);
        assert_eq!(models.len(), MAX_MODELS);
        assert_eq!(models[0].name, "m0", "the bad names are left out");
        assert_eq!(models[1].name, "m1", "a name listed twice is offered once");
        assert!(
            models
                .iter()
                .all(|m| m.name.len() <= MAX_NAME_BYTES && !m.name.chars().any(char::is_control))
        );
    }

    #[test]
    fn the_catalog_says_each_models_size_and_whether_it_is_here() {
        let dir = tempfile::tempdir().expect("tempdir");
        let settings = DownloadSettings {
            models_dir: dir.path().to_owned(),
            mirrors: Vec::new(),
            offline: true,
            stall: Duration::from_secs(1),
        };
        let first = &CATALOG[0];
        std::fs::write(dir.path().join(first.file_name), b"not the whole model").expect("write");
        let models = catalog_entries(&settings);
        assert_eq!(models.len(), CATALOG.len());
        assert_eq!(models[0].name, first.name);
        assert!(
            models[0].detail.ends_with("· downloaded, not checked yet"),
            "{}",
            models[0].detail
        );
        assert!(
            models[1].detail.ends_with(" download · not downloaded"),
            "{}",
            models[1].detail
        );
        assert!(models[1].detail.contains(" MB") || models[1].detail.contains(" GB"));
    }
}

//! `/model NAME`: switching the model. With the built-in engine, a catalog model that is not
//! downloaded yet is fetched first (its progress shown as `ModelPreparing`, Stop ends it), and
//! only a model in place is switched to: a model that cannot be fetched leaves the one in use
//! selected, and the error says what to do next.
//!
//! Owns the download that precedes a switch and its outcome's words. It must not run tasks; the
//! runtime applies the switch.

use std::sync::Arc;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::events::EventSink;
use crate::config::{Config, Wire};
use crate::local::LocalError;
use crate::local::catalog::{self, ModelRef};
use crate::local::download::DownloadSettings;
use crate::local::download::progress::human_bytes;
use crate::wire::Event;

/// A catalog model being fetched before the switch to it.
pub(super) struct Fetching {
    pub model: String,
    pub cancel: CancellationToken,
    /// `Ok(true)`: in place; `Ok(false)`: stopped; `Err`: why it could not be fetched.
    pub task: JoinHandle<Result<bool, LocalError>>,
}

/// Starts fetching `model` when the switch needs it (the built-in engine, a catalog model not
/// on disk); `None` when the model can be switched to at once.
pub(super) fn fetch_first(
    config: &Arc<Config>,
    model: &str,
    events: &EventSink,
) -> Option<Fetching> {
    if config.provider.value.wire != Wire::InProcess {
        return None;
    }
    let settings = DownloadSettings::from(&config.local);
    let cwd = std::env::current_dir().unwrap_or_default();
    let Ok(ModelRef::Catalog(entry)) = catalog::resolve(model, &cwd) else {
        return None;
    };
    if crate::local::fetch::present_file(model, &settings).is_some() {
        return None;
    }
    let cancel = CancellationToken::new();
    let front = events.front.clone();
    // Said at once: a 1 GB download is no surprise.
    let _ = front.send(Event::ModelPreparing {
        stage: "download".into(),
        model: model.to_owned(),
        done_bytes: 0,
        total_bytes: Some(entry.size),
        message: format!(
            "{model}: downloading {} before switching (Esc stops it)",
            human_bytes(entry.size)
        ),
    });
    let (name, stop) = (model.to_owned(), cancel.clone());
    let task = tokio::spawn(async move {
        // Progress is for the front end only: the session file keeps the switch, not its bytes.
        let report = move |p: crate::llm::Preparing| {
            let _ = front.send(Event::ModelPreparing {
                stage: p.stage.to_owned(),
                model: p.model,
                done_bytes: p.done_bytes,
                total_bytes: p.total_bytes,
                message: p.message,
            });
        };
        crate::local::fetch::model_file(&name, &settings, Box::new(report), &stop)
            .await
            .map(|path| path.is_some())
    });
    Some(Fetching {
        model: model.to_owned(),
        cancel,
        task,
    })
}

/// What the user is told when fetching `model` did not end in place; `current` stays in use.
pub(super) fn not_switched(model: &str, current: &str, outcome: &Result<bool, String>) -> String {
    let keep = (!current.is_empty()).then_some(current);
    match outcome {
        Ok(_) => format!(
            "the download of {model} stopped; still using {current} (`/model {model}` resumes it)"
        ),
        Err(why) => format!(
            "{why}\n{}",
            crate::local::advice::after_failed_download(model, &format!("`/model {model}`"), keep)
        ),
    }
}

impl super::Runtime {
    /// `SetModel`: checks the name, fetches the model first when it must be, else switches.
    pub(super) fn set_model(&mut self, model: &str) {
        let model = model.trim();
        if model.is_empty() {
            self.error("which model? /model NAME (seek models lists them)");
            return;
        }
        if let Err(refused) = self.ctx.model.check_model(model) {
            self.error(refused.to_string());
            return;
        }
        if let Some(fetching) = self.fetching.take() {
            if fetching.model == model {
                self.fetching = Some(fetching);
                return self.error(format!(
                    "{model} is already being downloaded (Esc stops it)"
                ));
            }
            // The last choice wins; what the other download fetched is kept for later.
            fetching.cancel.cancel();
        }
        match fetch_first(&self.ctx.config, model, &self.ctx.events) {
            Some(fetching) => self.fetching = Some(fetching),
            None => self.switch_to(model),
        }
    }

    /// A fetch before a switch ended: switch when the model is in place, else keep the one in
    /// use and say why and what next.
    pub(super) fn fetched(
        &mut self,
        ended: Result<Result<bool, LocalError>, tokio::task::JoinError>,
    ) {
        let Some(fetching) = self.fetching.take() else {
            return;
        };
        let outcome = match ended {
            Ok(Ok(true)) => return self.switch_to(&fetching.model),
            Ok(Ok(false)) => Ok(false),
            Ok(Err(error)) => Err(error.to_string()),
            Err(error) => Err(format!(
                "the download of {} stopped: {error}",
                fetching.model
            )),
        };
        let message = not_switched(&fetching.model, &self.model_name, &outcome);
        self.error(message);
    }

    /// Uses `model` from the next task on. A running task keeps the model it started with.
    fn switch_to(&mut self, model: &str) {
        self.ctx.model = self.ctx.model.with_model(model);
        model.clone_into(&mut self.model_name);
        self.ctx.context_window = Arc::default();
        self.ctx.sized = Arc::default();
        self.ctx.events.emit(Event::ModelChanged {
            description: self.ctx.model.describe(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stopped_or_failed_fetch_keeps_the_model_in_use_and_says_what_next() {
        let stopped = not_switched("big", "small", &Ok(false));
        assert!(stopped.contains("still using small"), "{stopped}");
        let failed = not_switched(
            "big",
            "small",
            &Err("could not download big: offline".into()),
        );
        assert!(
            failed.starts_with("could not download big: offline\nstill using small."),
            "{failed}"
        );
        assert!(failed.contains("`/model big`"), "{failed}");
    }
}

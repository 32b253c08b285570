//! `provider = "local"`: the built-in engine behind the same `ChatModel` trait as the HTTP
//! providers, so the agent, the TUI, headless mode, sessions and the context budget work on it
//! unchanged.
//!
//! Owns when a model is made ready (on the first reply that needs it, never on the UI thread:
//! resolving the name, downloading, loading, each reported as `Delta::Preparing`), and keeping
//! one loaded engine shared by every model handle of the process (`/model` swaps it). It must
//! not compute anything itself (`engine`) nor know how downloads work (`download`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::{Mutex, mpsc};
use tokio_util::sync::CancellationToken;

use super::LocalError;
use super::engine::Engine;
use crate::BoxFuture;
use crate::llm::{
    ChatModel, ChatRequest, ChatStream, Delta, LlmError, ModelRefused, ParametersUnknown,
    Preparing, WarmUp,
};

/// Where models come from and how they run.
#[derive(Debug, Clone)]
pub(crate) struct LocalOptions {
    /// Compute threads.
    pub threads: usize,
    /// What `super::download` needs to find and fetch catalog models.
    pub downloads: super::fetch::Settings,
    /// How much of what it read the engine keeps.
    pub prefixes: super::engine::PrefixLimits,
}

impl LocalOptions {
    pub(crate) fn from_config(config: &crate::config::Config) -> Self {
        Self {
            threads: config.local.thread_count(),
            downloads: super::fetch::Settings::from(&config.local),
            prefixes: super::engine::PrefixLimits {
                count: config.local.kept_prefixes.value as usize,
                bytes: usize::try_from(config.local.prefix_cache_mb.value << 20)
                    .unwrap_or(usize::MAX),
            },
        }
    }
}

/// The engine loaded now, and which file it runs (and under which name it was asked for).
struct Loaded {
    model: String,
    path: PathBuf,
    engine: Arc<Engine>,
}

/// A model of the built-in engine, named as the user typed it (catalog name or `.gguf` path).
#[derive(Clone)]
pub(crate) struct LocalChatModel {
    model: String,
    options: Arc<LocalOptions>,
    /// Shared by every handle: one model in memory at a time.
    loaded: Arc<Mutex<Option<Loaded>>>,
}

impl LocalChatModel {
    pub fn new(model: impl Into<String>, options: LocalOptions) -> Self {
        Self {
            model: model.into(),
            options: Arc::new(options),
            loaded: Arc::new(Mutex::new(None)),
        }
    }

    /// The engine for this handle's model: the loaded one, or this model made ready now.
    async fn engine(
        &self,
        tx: &mpsc::Sender<Result<Delta, LlmError>>,
        cancel: &CancellationToken,
    ) -> Result<Option<Arc<Engine>>, LocalError> {
        let path = {
            let tx = tx.clone();
            let model = self.model.clone();
            let report = move |p: Preparing| {
                // Progress is advisory: a full channel drops a report, never blocks the download.
                let _ = tx.try_send(Ok(Delta::Preparing(p)));
            };
            let report = Box::new(report) as Box<dyn Fn(Preparing) + Send + Sync>;
            match super::fetch::model_file(&model, &self.options.downloads, report, cancel).await? {
                Some(path) => path,
                None => return Ok(None),
            }
        };
        let mut loaded = self.loaded.lock().await;
        if let Some(l) = loaded.as_ref()
            && l.path == path
        {
            return Ok(Some(Arc::clone(&l.engine)));
        }
        // Free the old model before the new one takes its memory.
        *loaded = None;
        let _ = tx
            .send(Ok(Delta::Preparing(Preparing {
                stage: "load",
                model: self.model.clone(),
                done_bytes: 0,
                total_bytes: None,
                message: format!("loading {}", self.model),
            })))
            .await;
        let (threads, limits) = (self.options.threads, self.options.prefixes);
        let file = path.clone();
        let started = Instant::now();
        let engine = tokio::task::spawn_blocking(move || Engine::load_with(&file, threads, limits))
            .await
            .map_err(|e| LocalError::EngineGone {
                reason: format!("loading stopped: {e}"),
            })??;
        tracing::info!(
            "engine: loaded {} ({}, {} tokens of context, {} threads) in {:.2} s",
            path.display(),
            engine.info().architecture,
            engine.info().context_length,
            threads,
            started.elapsed().as_secs_f64()
        );
        let engine = Arc::new(engine);
        *loaded = Some(Loaded {
            model: self.model.clone(),
            path,
            engine: Arc::clone(&engine),
        });
        Ok(Some(engine))
    }
}

fn engine_error(error: LocalError) -> LlmError {
    let mut message = error.to_string();
    // A task whose model cannot be fetched says what to do next, not only what failed.
    if let LocalError::DownloadFailed { name, .. } | LocalError::HashMismatch { name, .. } = &error
    {
        message.push('\n');
        message.push_str(&super::advice::after_failed_download(
            name,
            &format!("`seek pull {name}`"),
            None,
        ));
    }
    LlmError::Engine { message }
}

impl ChatModel for LocalChatModel {
    // `request.json_schema` is ignored: the engine has no constrained decoding; a plan is parsed
    // from free text.
    fn stream(&self, request: ChatRequest, cancel: CancellationToken) -> ChatStream {
        let (tx, rx) = mpsc::channel(64);
        let (stream, cancel) = ChatStream::new(rx, &cancel);
        let this = self.clone();
        tokio::spawn(async move {
            let engine = tokio::select! {
                () = cancel.cancelled() => return,
                engine = this.engine(&tx, &cancel) => engine,
            };
            let engine = match engine {
                Ok(Some(engine)) => engine,
                Ok(None) => return,
                Err(error) => {
                    let _ = tx.send(Err(engine_error(error))).await;
                    return;
                }
            };
            let mut inner = engine.reply(request, &cancel);
            while let Some(item) = inner.next().await {
                if tx.send(item).await.is_err() {
                    return;
                }
            }
        });
        stream
    }

    fn list_models(&self) -> BoxFuture<'_, Result<Vec<String>, LlmError>> {
        Box::pin(async move { Ok(super::fetch::known_models(&self.options.downloads)) })
    }

    fn describe(&self) -> String {
        format!("{} @ local", self.model)
    }

    fn with_model(&self, model: &str) -> Arc<dyn ChatModel> {
        Arc::new(Self {
            model: model.to_owned(),
            options: Arc::clone(&self.options),
            loaded: Arc::clone(&self.loaded),
        })
    }

    /// A catalog name or an existing `.gguf` file; what else was typed is refused with the
    /// catalog listed. Nothing is downloaded or loaded yet: that happens at the next task.
    fn check_model(&self, model: &str) -> Result<(), ModelRefused> {
        let cwd = std::env::current_dir().unwrap_or_default();
        super::catalog::resolve(model, &cwd)
            .map(|_| ())
            .map_err(|e| ModelRefused {
                reason: e.to_string(),
            })
    }

    /// Only into the engine loaded now, and only when it runs this handle's model: a warm-up
    /// never loads (nor downloads) a model, and one busy loading is left alone.
    fn warm_up(&self, warm: WarmUp) {
        let Ok(loaded) = self.loaded.try_lock() else {
            return;
        };
        if let Some(l) = loaded.as_ref().filter(|l| l.model == self.model) {
            l.engine.warm(warm);
        }
    }

    fn reads_ahead(&self) -> bool {
        true
    }

    /// The engine writes a last assistant message into the prompt unclosed (`ChatTemplate::prompt`).
    fn continues_answer(&self) -> bool {
        true
    }

    /// The elements of the file's tensors, when the file is here (no download, no load).
    fn parameters(
        &self,
    ) -> BoxFuture<'_, Result<crate::config::model_size::Reported, ParametersUnknown>> {
        Box::pin(async move {
            let path = super::fetch::present_file(&self.model, &self.options.downloads)
                .ok_or(ParametersUnknown::NotDownloaded)?;
            let count = tokio::task::spawn_blocking(move || super::gguf::parameter_count(&path))
                .await
                .map_err(|e| ParametersUnknown::Failed(e.to_string()))?
                .ok_or(ParametersUnknown::Unreadable)?;
            Ok(crate::config::model_size::Reported {
                parameters: count as f64,
                source: "the model file".to_owned(),
            })
        })
    }

    /// Read from the file's header when the file is here (no download, no load).
    fn context_window(&self) -> BoxFuture<'_, Option<u64>> {
        Box::pin(async move {
            let path = super::fetch::present_file(&self.model, &self.options.downloads)?;
            tokio::task::spawn_blocking(move || super::gguf::context_length(&path))
                .await
                .ok()
                .flatten()
                .map(|n| n as u64)
        })
    }
}

//! The model's size: asked of the server (or the built-in engine's model file) once per model,
//! bounded in time, and the configuration the tasks run under once it is known.
//!
//! Owns the probe, its cache and the `model_size` event. It must not hold up Stop (the caller
//! asks inside the task, where Stop reaches it) nor decide the rule (`config::model_size`).

use std::sync::Arc;
use std::time::Duration;

use super::context::TurnContext;
use crate::config::model_size::{Decision, ModelFacts};
use crate::config::{Config, ModelSize};
use crate::wire::Event;

/// How long the server gets to say the model's size before the name decides.
const PROBE_LIMIT: Duration = Duration::from_secs(2);

/// The configuration for `model` (as named now) with what the server said of it: known
/// already, or asked now. Under `model_size = "auto"` the server is asked its parameter count
/// (at most `PROBE_LIMIT`) beside its window; a server that cannot say leaves the name to
/// decide. The decision goes to the front ends once per model (`model_size` event).
pub(super) async fn sized(ctx: &TurnContext, model: &str) -> Arc<Config> {
    let config = ctx
        .sized
        .get_or_init(|| async {
            let auto = ctx.config.model_size.value == ModelSize::Auto;
            let probe = async {
                if !auto {
                    return None;
                }
                match tokio::time::timeout(PROBE_LIMIT, ctx.model.parameters()).await {
                    Ok(Ok(reported)) => Some(reported),
                    Ok(Err(why)) => {
                        tracing::info!("model size: the server did not say ({why})");
                        None
                    }
                    Err(_) => {
                        tracing::info!(
                            "model size: the server did not say within {} s",
                            PROBE_LIMIT.as_secs()
                        );
                        None
                    }
                }
            };
            let (window, parameters) = tokio::join!(super::window::known(ctx), probe);
            let mut config = (*ctx.config).clone();
            config.model_facts = ModelFacts {
                name: (!model.is_empty()).then(|| model.to_owned()),
                parameters,
                window: Some(window),
            };
            let decision = config.size_decision();
            tracing::info!("model size: {}", decision.describe());
            announce(ctx, &decision);
            Arc::new(config)
        })
        .await;
    Arc::clone(config)
}

/// Tells the front ends what was decided. Not kept in session files: it describes this run's
/// model, not the conversation.
fn announce(ctx: &TurnContext, decision: &Decision) {
    // `as` saturates; a count is far below u64's range anyway.
    let parameters = decision.parameters().map(|n| n.round() as u64);
    let _ = ctx.events.front.send(Event::ModelSize {
        small: decision.small,
        parameters,
        reason: decision.why(),
    });
}

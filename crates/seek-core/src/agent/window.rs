//! The model's context window: asked of the server once per model, bounded in time, reconciled
//! with the configuration.
//!
//! Owns the probe and the rule for which number wins. It must not block the runtime's command
//! handling: the turn asks, inside its own task, where Stop still reaches it.

use std::time::Duration;

use super::context::TurnContext;
use crate::config::{Origin, Sourced, Wire};

/// How long the server gets to say its window before the configured one is used.
const PROBE_LIMIT: Duration = Duration::from_secs(3);

/// The window for `ctx`'s model: known already, or asked of the server now (at most
/// `PROBE_LIMIT`; a server that cannot say leaves the configured window).
pub(super) async fn known(ctx: &TurnContext) -> u64 {
    *ctx.context_window
        .get_or_init(|| async {
            let reported = tokio::time::timeout(PROBE_LIMIT, ctx.model.context_window())
                .await
                .ok()
                .flatten();
            let configured = &ctx.config.model_settings.context_window;
            let window = reconcile(reported, configured, ctx.config.provider.value.wire);
            tracing::info!(
                "context window: {window} tokens (configured {}, the server said {reported:?})",
                configured.value
            );
            window
        })
        .await
}

/// Which window holds. Ollama's window is the `num_ctx` seek sends, up to what the model allows;
/// other servers fix theirs at start-up, and the built-in engine reads the model file's, so
/// theirs is the truth unless the user asked for less.
fn reconcile(reported: Option<u64>, configured: &Sourced<u64>, wire: Wire) -> u64 {
    let fixed_by_model = matches!(wire, Wire::OpenAi | Wire::InProcess);
    match reported {
        Some(reported) if fixed_by_model && configured.origin == Origin::Default => reported,
        Some(reported) => reported.min(configured.value),
        None => configured.value,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setting(value: u64, origin: Origin) -> Sourced<u64> {
        Sourced { value, origin }
    }

    #[test]
    fn an_openai_server_s_window_wins_over_the_default() {
        let default = setting(8192, Origin::Default);
        assert_eq!(reconcile(Some(32_768), &default, Wire::OpenAi), 32_768);
        assert_eq!(reconcile(Some(4096), &default, Wire::OpenAi), 4096);
    }

    #[test]
    fn a_window_the_user_set_is_a_ceiling() {
        let chosen = setting(8192, Origin::Env("SEEK_CONTEXT_WINDOW"));
        assert_eq!(reconcile(Some(32_768), &chosen, Wire::OpenAi), 8192);
        assert_eq!(reconcile(Some(4096), &chosen, Wire::OpenAi), 4096);
    }

    #[test]
    fn ollama_s_window_is_at_most_the_configured_one() {
        let default = setting(8192, Origin::Default);
        assert_eq!(reconcile(Some(32_768), &default, Wire::Ollama), 8192);
    }

    #[test]
    fn a_silent_server_leaves_the_configured_window() {
        let default = setting(8192, Origin::Default);
        assert_eq!(reconcile(None, &default, Wire::OpenAi), 8192);
    }
}

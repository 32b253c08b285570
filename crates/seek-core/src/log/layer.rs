//! The `tracing` layer that writes seek.log: one line per event of seek's own crates, in the
//! format `<UTC timestamp> <LEVEL> [span{field=value …}: …]<message> [field=value …]`, masked and
//! terminal-safe. The spans an event happened in (a task's `task{turn=3 agent=coder}`) say which
//! task a warning belongs to.
//!
//! Owns turning an event into a line and handing it to the background writer; it must not
//! decide what is logged (call sites do, with `tracing::warn!` and its siblings) nor block.

use std::fmt::{self, Write as _};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

use crate::files::{FileWrite, in_background_unreported};
use crate::secrets::Masker;

/// The field that marks a panic's report (`tracing::error!(panic = true, …)`): written as the
/// level `PANIC`, the field itself left out.
pub const PANIC_FIELD: &str = "panic";

/// Writes each event it is given to the log file.
pub(crate) struct FileLayer {
    pub path: PathBuf,
    pub masker: Arc<Masker>,
}

impl<S> Layer<S> for FileLayer
where
    S: Subscriber + for<'lookup> LookupSpan<'lookup>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = SpanFields::default();
        attrs.record(&mut fields);
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(fields);
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id)
            && let Some(fields) = span.extensions_mut().get_mut::<SpanFields>()
        {
            values.record(fields);
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut text = Text::default();
        if let Some(scope) = ctx.event_scope(event) {
            for span in scope.from_root() {
                let _ = write!(text.message, "{}", span.name());
                if let Some(fields) = span.extensions().get::<SpanFields>()
                    && !fields.0.is_empty()
                {
                    let _ = write!(text.message, "{{{}}}", fields.0.trim_start());
                }
                text.message.push_str(": ");
            }
        }
        event.record(&mut text);
        let level = if text.panic {
            "PANIC"
        } else {
            level_name(*event.metadata().level())
        };
        // A failing log write is dropped: reporting it would log again.
        in_background_unreported(FileWrite::Append {
            path: self.path.clone(),
            text: super::line(SystemTime::now(), level, &text.message, &self.masker),
        });
    }
}

/// A span's fields as ` name=value …`, kept in the span's extensions for its events' lines.
#[derive(Default)]
struct SpanFields(String);

impl Visit for SpanFields {
    fn record_str(&mut self, field: &Field, value: &str) {
        let _ = write!(self.0, " {}={value}", field.name());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        let _ = write!(self.0, " {}={value:?}", field.name());
    }
}

fn level_name(level: Level) -> &'static str {
    match level {
        Level::ERROR => "ERROR",
        Level::WARN => "WARN",
        Level::INFO => "INFO",
        Level::DEBUG => "DEBUG",
        Level::TRACE => "TRACE",
    }
}

/// An event's message, then its other fields as ` name=value`.
#[derive(Default)]
struct Text {
    message: String,
    panic: bool,
}

impl Visit for Text {
    fn record_bool(&mut self, field: &Field, value: bool) {
        if field.name() == PANIC_FIELD {
            self.panic = value;
        } else {
            self.record_debug(field, &value);
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.message, "{value:?}");
        } else {
            let _ = write!(self.message, " {}={value:?}", field.name());
        }
    }
}

//! One MCP session: the handshake (seek's client info, the protocol version agreed), the tool
//! list (paginated, bounded against a hostile server) and the log lines a server sends.
//!
//! It must not spawn processes or keep state across sessions: the hub does.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};

#[allow(deprecated)] // servers on protocol versions before 2026-07-28 still send log messages
use rmcp::model::LoggingMessageNotificationParam;
use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, PaginatedRequestParams, ProtocolVersion,
};
use rmcp::service::{NotificationContext, RoleClient, RunningService};
use rmcp::{ClientHandler, Peer, ServiceExt};

use super::convert::{self, Listed};

/// Pages of `tools/list` followed before seek stops (a server that never ends its list).
pub(super) const MAX_TOOL_PAGES: usize = 64;
/// Tools kept per server.
pub(super) const MAX_TOOLS: usize = 2000;
/// Log notifications written to seek's log per server.
const MAX_LOGGED_NOTIFICATIONS: usize = 1000;

/// seek as an MCP client: no sampling, roots or elicitation offered; server log messages go to
/// seek's log.
pub(super) struct SeekClient {
    server: String,
    logged: AtomicUsize,
}

impl SeekClient {
    pub fn new(server: &str) -> Self {
        Self {
            server: server.to_owned(),
            logged: AtomicUsize::new(0),
        }
    }
}

impl ClientHandler for SeekClient {
    fn get_info(&self) -> ClientConfig {
        // The newest version that still has the `initialize` handshake: every server since the
        // first revision answers it, with this version or the older one it speaks.
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("seek", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    #[allow(deprecated)] // see the import: older servers' log messages are worth keeping
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let count = self.logged.fetch_add(1, Ordering::Relaxed);
        if count > MAX_LOGGED_NOTIFICATIONS {
            return;
        }
        let line = if count == MAX_LOGGED_NOTIFICATIONS {
            "(further log messages not logged)".to_owned()
        } else {
            let data = match &params.data {
                serde_json::Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            super::stderr::shorten(&data, 2000)
        };
        tracing::info!("mcp[{}] log: {line}", self.server);
    }
}

/// A connected session.
pub(super) type Session = RunningService<RoleClient, SeekClient>;

/// What the handshake told about the server.
#[derive(Debug, Clone, Default)]
pub(super) struct Handshake {
    pub protocol_version: Option<String>,
    pub server_info: Option<String>,
}

/// Runs the handshake over `transport`.
pub(super) async fn connect<T, E, A>(server: &str, transport: T) -> Result<Session, String>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    SeekClient::new(server)
        .serve(transport)
        .await
        .map_err(|e| describe_init_error(&e))
}

fn describe_init_error(error: &rmcp::service::ClientInitializeError) -> String {
    use rmcp::service::ClientInitializeError as E;
    match error {
        E::ConnectionClosed(_) => "it closed the connection during initialize".to_owned(),
        E::TransportError { error, context } => {
            let text = error_chain(error.error.as_ref());
            format!(
                "could not {context}: {}",
                super::stderr::shorten(&crate::terminal_safe::terminal_safe(&text), 300)
            )
        }
        E::JsonRpcError(data) => format!("it refused initialize: {}", data.message),
        other => {
            let text = error_chain(other);
            format!(
                "initialize failed: {}",
                super::stderr::shorten(&crate::terminal_safe::terminal_safe(&text), 300)
            )
        }
    }
}

/// The server's name, version and the protocol version agreed on.
pub(super) fn handshake(peer: &Peer<RoleClient>) -> Handshake {
    let Some(info) = peer.peer_info() else {
        return Handshake::default();
    };
    let server_info = info.server_info.as_ref().map(|implementation| {
        let text = format!("{} {}", implementation.name, implementation.version);
        super::stderr::shorten(&crate::terminal_safe::terminal_safe(text.trim()), 200)
    });
    Handshake {
        protocol_version: Some(info.protocol_version.to_string()),
        server_info,
    }
}

/// Every tool the server lists, following `nextCursor` within the bounds. A cursor seen twice,
/// `MAX_TOOL_PAGES` pages or `MAX_TOOLS` tools end the listing (what was listed is kept and the
/// log says why).
pub(super) async fn list_tools(server: &str, peer: &Peer<RoleClient>) -> Result<Listed, String> {
    let mut listed = Listed::default();
    let mut names = HashSet::new();
    let mut cursors = HashSet::new();
    let mut cursor: Option<String> = None;
    for _page in 0..MAX_TOOL_PAGES {
        let params = PaginatedRequestParams::default().with_cursor(cursor.take());
        let page = peer
            .list_tools(Some(params))
            .await
            .map_err(|e| format!("tools/list failed: {}", describe_service_error(&e)))?;
        convert::add_tools(server, page.tools, &mut names, &mut listed);
        if listed.tools.len() >= MAX_TOOLS {
            listed.tools.truncate(MAX_TOOLS);
            listed
                .dropped
                .push(format!("more than {MAX_TOOLS} tools: the rest not listed"));
            return Ok(listed);
        }
        match page.next_cursor {
            None => return Ok(listed),
            Some(next) if !cursors.insert(next.clone()) => {
                listed
                    .dropped
                    .push("tools/list repeated a cursor: the listing was stopped".to_owned());
                return Ok(listed);
            }
            Some(next) => cursor = Some(next),
        }
    }
    listed.dropped.push(format!(
        "tools/list had more than {MAX_TOOL_PAGES} pages: the rest not listed"
    ));
    Ok(listed)
}

/// A request's failure in words (the server's own message for a JSON-RPC error).
pub(super) fn describe_service_error(error: &rmcp::ServiceError) -> String {
    let text = match error {
        rmcp::ServiceError::McpError(data) => data.message.to_string(),
        rmcp::ServiceError::TransportClosed => "the connection closed".to_owned(),
        rmcp::ServiceError::UnexpectedResponse => "it answered with something else".to_owned(),
        rmcp::ServiceError::TransportSend(sent) => {
            format!("could not reach it: {}", error_chain(sent.error.as_ref()))
        }
        other => error_chain(other),
    };
    super::stderr::shorten(&crate::terminal_safe::terminal_safe(&text), 2000)
}

fn next_cause<'a>(
    error: &'a (dyn std::error::Error + 'static),
) -> Option<&'a (dyn std::error::Error + 'static)> {
    error.source().or_else(|| super::http::hidden_cause(error))
}

/// An error and its sources, each once: "error sending request: connection refused".
pub(super) fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut cause = next_cause(error);
    // Bounded: a cyclic chain (a broken Error impl) must not loop forever.
    for _ in 0..16 {
        let Some(current) = cause else { break };
        let cause_text = current.to_string();
        if !text.contains(&cause_text) {
            text = format!("{text}: {cause_text}");
        }
        cause = next_cause(current);
    }
    text
}

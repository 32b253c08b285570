//! The process's TLS crypto provider and the one way seek builds an HTTP client: reqwest is built
//! without a provider of its own (so seek and rmcp share one HTTP stack), and building a client
//! before rustls has a provider panics inside reqwest. Every client therefore starts from
//! `client_builder()`; clippy.toml forbids `reqwest::Client::builder`/`new` elsewhere.
//!
//! Owns that installation; it must not choose timeouts, redirects or certificates.

/// Installs ring as the process-wide rustls provider. Installing twice is harmless: the first
/// one stays.
fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// A reqwest client builder, with the TLS provider in place.
#[allow(clippy::disallowed_methods)] // The one place that may call it.
pub fn client_builder() -> reqwest::ClientBuilder {
    install_crypto_provider();
    reqwest::Client::builder()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_client_builds_without_anyone_installing_a_provider_first() {
        assert!(super::client_builder().build().is_ok());
    }
}

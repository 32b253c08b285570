//! The built-in model engine (`provider = "local"`): GGUF models run in this process, with no
//! model server.
//!
//! Owns loading GGUF files, their tokenizer and chat template, the transformer, the engine
//! thread that keeps the KV cache between rounds, the catalog of models by name and their
//! downloads. It must not know about tools, the agent loop or the terminal: it is one more
//! `ChatModel` behind the same trait as the HTTP providers.

pub mod catalog;
pub mod commands;
pub mod download;
pub mod engine;
pub mod error;
pub mod fetch;
pub mod gguf;
pub mod kernels;
pub mod linear;
pub mod model;
pub mod provider;
pub mod sampler;
pub mod template;
pub mod tokenizer;
pub mod utf8;

pub use error::LocalError;

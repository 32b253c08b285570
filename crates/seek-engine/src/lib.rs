//! seek's built-in model engine: GGUF files read and run in this process, with no model server.
//!
//! Owns reading GGUF files (header, metadata, tensors), their tokenizer and chat template
//! (rendered within bounds: a model file is untrusted), the transformer and its quantized
//! kernels, and sampling. It depends on nothing of seek's: it must not know about providers,
//! downloads, configuration, the agent or the terminal. seek's `local` module drives it.

pub mod chat;
pub mod error;
pub mod gguf;
pub mod kernels;
pub mod linear;
pub mod model;
pub mod sampler;
pub mod template;
pub mod tokenizer;
pub mod utf8;

pub use error::EngineError;

//! Credentials: which variables hold them, which variables blocks do not inherit, and the one
//! masker that keeps secret values and URL passwords out of session files and the log.
//!
//! Owns the rules; it must not read the process environment itself (callers hand it a snapshot)
//! nor write anything.

mod inherit;
mod masker;
mod names;
mod url;

pub use inherit::{SESSION_HANDLES, withheld_names};
pub use masker::{MASK, MIN_SECRET_LEN, Masker, URL_MASK, url_secrets};
pub use names::is_credential_name;

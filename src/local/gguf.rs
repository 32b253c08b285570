//! Opening a GGUF model file: map it, read its header, hand out its metadata and tensors.
//!
//! Owns the file's mapping and the checks that make a damaged or foreign file a clear
//! `LocalError` naming the file. It must not interpret what the tensors mean (that is
//! `model`'s job) nor keep the mapping longer than loading needs.

use std::io::Cursor;
use std::path::{Path, PathBuf};

use candle_core::Device;
use candle_core::quantized::{QTensor, gguf_file};

use super::LocalError;

/// A GGUF file, mapped, with its header read.
pub struct GgufFile {
    path: PathBuf,
    content: gguf_file::Content,
    map: memmap2::Mmap,
}

impl GgufFile {
    /// Maps `path` and reads its header and tensor table.
    pub fn open(path: &Path) -> Result<Self, LocalError> {
        let unreadable = |reason: String| LocalError::Unreadable {
            path: path.to_owned(),
            reason,
        };
        let file = std::fs::File::open(path).map_err(|e| unreadable(e.to_string()))?;
        let meta = file.metadata().map_err(|e| unreadable(e.to_string()))?;
        if !meta.is_file() {
            return Err(unreadable("not a regular file".into()));
        }
        // SAFETY: the map is read-only and private to this process. A file truncated by another
        // process while mapped would fault on access; model files are written once, renamed
        // into place, and never rewritten by seek.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| unreadable(e.to_string()))?;
        let not_gguf = |reason: String| LocalError::NotGguf {
            path: path.to_owned(),
            reason,
        };
        if map.len() < 8 || &map[..4] != b"GGUF" {
            return Err(not_gguf(format!(
                "it does not start with the GGUF magic bytes (found {:?})",
                String::from_utf8_lossy(&map[..map.len().min(4)])
            )));
        }
        // candle's reader sizes buffers from lengths written in the file; a damaged length can
        // make it panic (capacity overflow) rather than fail, so a panic is an error here.
        let read =
            std::panic::catch_unwind(|| gguf_file::Content::read(&mut Cursor::new(&map[..])));
        let content = match read {
            Ok(Ok(content)) => content,
            Ok(Err(e)) => return Err(not_gguf(e.to_string())),
            Err(_) => return Err(not_gguf("its header holds impossible lengths".into())),
        };
        check_tensors_fit(&content, map.len()).map_err(not_gguf)?;
        Ok(Self {
            path: path.to_owned(),
            content,
            map,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn content(&self) -> &gguf_file::Content {
        &self.content
    }

    /// The file's size in bytes.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// `general.architecture`.
    pub fn architecture(&self) -> Result<String, LocalError> {
        self.string("general.architecture")
    }

    fn incomplete(&self, what: String) -> LocalError {
        LocalError::Incomplete {
            path: self.path.clone(),
            what,
        }
    }

    pub fn has(&self, key: &str) -> bool {
        self.content.metadata.contains_key(key)
    }

    pub fn string(&self, key: &str) -> Result<String, LocalError> {
        match self.content.metadata.get(key) {
            Some(gguf_file::Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(self.incomplete(format!("{key} is {other:?}, not a string"))),
            None => Err(self.incomplete(format!("the metadata key {key}"))),
        }
    }

    /// An unsigned integer setting, whatever integer type the file stored it as.
    pub fn usize(&self, key: &str) -> Result<usize, LocalError> {
        use gguf_file::Value as V;
        let value = self
            .content
            .metadata
            .get(key)
            .ok_or_else(|| self.incomplete(format!("the metadata key {key}")))?;
        let n: Option<u64> = match value {
            V::U8(v) => Some(u64::from(*v)),
            V::U16(v) => Some(u64::from(*v)),
            V::U32(v) => Some(u64::from(*v)),
            V::U64(v) => Some(*v),
            V::I8(v) => u64::try_from(*v).ok(),
            V::I16(v) => u64::try_from(*v).ok(),
            V::I32(v) => u64::try_from(*v).ok(),
            V::I64(v) => u64::try_from(*v).ok(),
            _ => None,
        };
        n.and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| self.incomplete(format!("{key} is {value:?}, not a count")))
    }

    /// A float setting, or `default` when the file has none.
    pub fn f32_or(&self, key: &str, default: f32) -> Result<f32, LocalError> {
        match self.content.metadata.get(key) {
            None => Ok(default),
            Some(gguf_file::Value::F32(v)) => Ok(*v),
            Some(gguf_file::Value::F64(v)) => Ok(*v as f32),
            Some(other) => Err(self.incomplete(format!("{key} is {other:?}, not a number"))),
        }
    }

    pub fn has_tensor(&self, name: &str) -> bool {
        self.content.tensor_infos.contains_key(name)
    }

    /// Reads tensor `name` into memory (candle's CPU storage owns its blocks).
    pub fn tensor(&self, name: &str) -> Result<QTensor, LocalError> {
        if !self.has_tensor(name) {
            return Err(self.incomplete(format!("the tensor {name}")));
        }
        self.content
            .tensor(&mut Cursor::new(&self.map[..]), name, &Device::Cpu)
            .map_err(|e| self.incomplete(format!("the tensor {name} cannot be read: {e}")))
    }
}

/// Every tensor's data must lie inside the file: a truncated download is caught when the file
/// is opened, not half way through loading.
fn check_tensors_fit(content: &gguf_file::Content, file_len: usize) -> Result<(), String> {
    for (name, info) in &content.tensor_infos {
        let elements: usize = info.shape.elem_count();
        let block = info.ggml_dtype.block_size();
        if block == 0 || !elements.is_multiple_of(block) {
            return Err(format!(
                "tensor {name} has {elements} elements, not a whole number of {:?} blocks",
                info.ggml_dtype
            ));
        }
        let bytes = (elements / block)
            .checked_mul(info.ggml_dtype.type_size())
            .ok_or_else(|| format!("tensor {name} is impossibly large"))?;
        let start = (content.tensor_data_offset as usize)
            .checked_add(info.offset as usize)
            .ok_or_else(|| format!("tensor {name} starts past any file"))?;
        let end = start
            .checked_add(bytes)
            .ok_or_else(|| format!("tensor {name} ends past any file"))?;
        if end > file_len {
            return Err(format!(
                "the file is cut short: tensor {name} needs bytes up to {end}, the file has {file_len} (a partial download? delete it and pull it again)"
            ));
        }
    }
    Ok(())
}

/// The context window `path` declares, read from its header only; `None` if it cannot be read.
pub fn context_length(path: &Path) -> Option<usize> {
    let file = GgufFile::open(path).ok()?;
    let arch = file.architecture().ok()?;
    file.usize(&format!("{arch}.context_length")).ok()
}

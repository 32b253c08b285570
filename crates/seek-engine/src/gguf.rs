//! Opening a GGUF model file: map it, read its header, hand out its metadata and tensors.
//!
//! Owns the file's mapping and the checks that make a damaged or foreign file a clear
//! `EngineError` naming the file. It must not interpret what the tensors mean (that is
//! `model`'s job) nor keep the mapping longer than loading needs.
//!
//! A hostile file is read in two passes. `scan_header` walks the header on the mapping first,
//! allocating nothing, and refuses any length that does not fit the bytes left, any count
//! beyond what a real model has, and any value candle would divide by or multiply past
//! `usize`; only then does candle parse it (candle sizes its buffers from those lengths, and
//! an allocation failure aborts the process, which `catch_unwind` cannot stop). After the
//! parse, every tensor must lie inside the file and the tensors together must not claim more
//! bytes than the data section has, so loading never reads the same bytes many times over.

use std::io::Cursor;
use std::path::{Path, PathBuf};

use candle_core::Device;
use candle_core::quantized::{QTensor, gguf_file};

use crate::EngineError;

/// A GGUF file, mapped, with its header read.
pub struct GgufFile {
    path: PathBuf,
    content: gguf_file::Content,
    map: memmap2::Mmap,
}

impl GgufFile {
    /// Maps `path` and reads its header and tensor table.
    pub fn open(path: &Path) -> Result<Self, EngineError> {
        let unreadable = |reason: String| EngineError::Unreadable {
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
        let not_gguf = |reason: String| EngineError::NotGguf {
            path: path.to_owned(),
            reason,
        };
        if map.len() < 8 || &map[..4] != b"GGUF" {
            return Err(not_gguf(damaged(&format!(
                "it does not start with the GGUF magic bytes (found {:?})",
                String::from_utf8_lossy(&map[..map.len().min(4)])
            ))));
        }
        scan_header(&map).map_err(|reason| not_gguf(damaged(&reason)))?;
        // The scan leaves candle nothing known to panic on; should a panic remain, it is still
        // an error here rather than the end of the process.
        let read =
            std::panic::catch_unwind(|| gguf_file::Content::read(&mut Cursor::new(&map[..])));
        let content = match read {
            Ok(Ok(content)) => content,
            Ok(Err(e)) => return Err(not_gguf(damaged(&e.to_string()))),
            Err(_) => return Err(not_gguf(damaged("its header holds impossible lengths"))),
        };
        check_tensors_fit(&content, map.len()).map_err(|reason| not_gguf(damaged(&reason)))?;
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
    pub fn architecture(&self) -> Result<String, EngineError> {
        self.string("general.architecture")
    }

    fn incomplete(&self, what: String) -> EngineError {
        EngineError::Incomplete {
            path: self.path.clone(),
            what,
        }
    }

    pub fn has(&self, key: &str) -> bool {
        self.content.metadata.contains_key(key)
    }

    pub fn string(&self, key: &str) -> Result<String, EngineError> {
        match self.content.metadata.get(key) {
            Some(gguf_file::Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(self.incomplete(format!("{key} is {other:?}, not a string"))),
            None => Err(self.incomplete(format!("the metadata key {key}"))),
        }
    }

    /// An unsigned integer setting, whatever integer type the file stored it as.
    pub fn usize(&self, key: &str) -> Result<usize, EngineError> {
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
    pub fn f32_or(&self, key: &str, default: f32) -> Result<f32, EngineError> {
        match self.content.metadata.get(key) {
            None => Ok(default),
            Some(gguf_file::Value::F32(v)) => Ok(*v),
            Some(gguf_file::Value::F64(v)) => Ok(*v as f32),
            Some(other) => Err(self.incomplete(format!("{key} is {other:?}, not a number"))),
        }
    }

    /// How many tensors the file declares.
    pub fn tensor_count(&self) -> usize {
        self.content.tensor_infos.len()
    }

    /// Tensor `name`'s dimensions, the slowest-varying first (candle's order), if it exists.
    pub fn tensor_dims(&self, name: &str) -> Option<&[usize]> {
        self.content
            .tensor_infos
            .get(name)
            .map(|info| info.shape.dims())
    }

    pub fn has_tensor(&self, name: &str) -> bool {
        self.content.tensor_infos.contains_key(name)
    }

    /// Reads tensor `name` into memory (candle's CPU storage owns its blocks).
    pub fn tensor(&self, name: &str) -> Result<QTensor, EngineError> {
        if !self.has_tensor(name) {
            return Err(self.incomplete(format!("the tensor {name}")));
        }
        let tensor = self
            .content
            .tensor(&mut Cursor::new(&self.map[..]), name, &Device::Cpu)
            .map_err(|e| self.incomplete(format!("the tensor {name} cannot be read: {e}")))?;
        self.release(name);
        Ok(tensor)
    }

    /// Gives back the mapped pages of tensor `name` once candle has copied it: the file's
    /// pages would otherwise count in this process's memory beside the copy until loading ends,
    /// doubling the peak. Advisory; the pages come back from the page cache if read again.
    fn release(&self, name: &str) {
        let Some(info) = self.content.tensor_infos.get(name) else {
            return;
        };
        let start = self.content.tensor_data_offset.saturating_add(info.offset);
        let Ok(start) = usize::try_from(start) else {
            return;
        };
        let block = info.ggml_dtype.block_size().max(1);
        let len = info.shape.elem_count() / block * info.ggml_dtype.type_size();
        // Whole pages inside the tensor only: a page shared with the next tensor stays.
        // SAFETY: sysconf reads a constant of the system; it has no preconditions.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
            .ok()
            .filter(|p| *p > 0)
            .unwrap_or(4096);
        let first = start.div_ceil(page) * page;
        let end = (start + len) / page * page;
        if end > first && end <= self.map.len() {
            // SAFETY: MADV_DONTNEED on a private read-only file mapping drops the pages from
            // this process; later reads fault them back in from the file. No reference into
            // that range is kept: candle copied the bytes into its own storage above.
            let _ = unsafe {
                self.map.unchecked_advise_range(
                    memmap2::UncheckedAdvice::DontNeed,
                    first,
                    end - first,
                )
            };
        }
    }
}

/// What to do about a file whose bytes are wrong, after what is wrong.
fn damaged(reason: &str) -> String {
    format!(
        "{reason}; the file is damaged, cut short or not a model: download it again or use another file"
    )
}

/// Every tensor's data must lie inside the file (a truncated download is caught when the file
/// is opened, not half way through loading), and the tensors together must fit the data
/// section: tensors that share bytes would make loading read and copy them again and again.
fn check_tensors_fit(content: &gguf_file::Content, file_len: usize) -> Result<(), String> {
    let data_start = usize::try_from(content.tensor_data_offset)
        .map_err(|_| "the tensor data starts past any file".to_owned())?;
    let data_len = file_len.saturating_sub(data_start);
    let mut total = 0usize;
    for (name, info) in &content.tensor_infos {
        let bytes = tensor_bytes(info).ok_or_else(|| {
            format!(
                "tensor {name} has the shape {:?}, not a whole number of {:?} blocks that fits in memory",
                info.shape.dims(),
                info.ggml_dtype
            )
        })?;
        let end = usize::try_from(info.offset)
            .ok()
            .and_then(|offset| data_start.checked_add(offset))
            .and_then(|start| start.checked_add(bytes));
        match end {
            Some(end) if end <= file_len => {}
            _ => {
                return Err(format!(
                    "the file is cut short: tensor {name} needs {bytes} bytes from byte {} of the data, the file has {file_len} bytes in all",
                    info.offset
                ));
            }
        }
        total = total.saturating_add(bytes);
    }
    if total > data_len {
        return Err(format!(
            "its tensors claim {total} bytes, the data section has {data_len}: tensors overlap"
        ));
    }
    Ok(())
}

/// The bytes tensor `info` takes, `None` when its shape overflows or is not whole blocks.
fn tensor_bytes(info: &gguf_file::TensorInfo) -> Option<usize> {
    let elements = info
        .shape
        .dims()
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))?;
    let block = info.ggml_dtype.block_size();
    if block == 0 || !elements.is_multiple_of(block) {
        return None;
    }
    (elements / block).checked_mul(info.ggml_dtype.type_size())
}

/// The most elements one metadata array may have: 16 times the largest vocabulary of any
/// model we know of (Gemma 3's 262 144 tokens). candle keeps 32 bytes per element, so this
/// bounds one array at 128 MiB.
const MAX_ARRAY_ELEMENTS: u64 = 1 << 22;
/// The most metadata values in all (every array's elements counted): 256 MiB in candle.
const MAX_METADATA_VALUES: u64 = 1 << 23;
/// Real files nest one level (arrays of strings); candle recurses for each level.
const MAX_NESTING: usize = 4;
/// Large models have about a thousand tensors; this leaves room for experts stored apart.
const MAX_TENSORS: u64 = 1 << 16;
/// ggml's largest number of dimensions.
const MAX_DIMS: u32 = 4;

/// Walks a GGUF header in `bytes` without allocating from it: every length must fit the bytes
/// left, every count must be one a model has, `general.alignment` must be a power of two and
/// each tensor's element count must fit in a `usize`. The error says what is wrong.
fn scan_header(bytes: &[u8]) -> Result<(), String> {
    let mut scan = Scan {
        bytes,
        at: 0,
        wide: true,
        values: 0,
    };
    scan.take(4)?; // the magic, already checked
    let version = scan.u32()?;
    scan.wide = match version {
        1 => false,
        2 | 3 => true,
        other => {
            return Err(format!(
                "it is GGUF version {other}; versions 1 to 3 are read"
            ));
        }
    };
    let tensors = scan.length()?;
    let entries = scan.length()?;
    if tensors > MAX_TENSORS {
        return Err(format!(
            "its header declares {tensors} tensors (at most {MAX_TENSORS} are read)"
        ));
    }
    if entries > MAX_METADATA_VALUES {
        return Err(format!(
            "its header declares {entries} metadata entries (at most {MAX_METADATA_VALUES} are read)"
        ));
    }
    for _ in 0..entries {
        let key = scan.string()?;
        let kind = scan.u32()?;
        scan.count_values(1)?;
        if key == b"general.alignment" {
            scan.alignment(kind)?;
        } else {
            scan.value(kind, 0)?;
        }
    }
    for _ in 0..tensors {
        let name = scan.string()?;
        let dims = scan.u32()?;
        if dims > MAX_DIMS {
            return Err(format!(
                "tensor {} has {dims} dimensions (at most {MAX_DIMS})",
                String::from_utf8_lossy(name)
            ));
        }
        let mut elements = 1usize;
        for _ in 0..dims {
            let dim = if scan.wide {
                scan.u64()?
            } else {
                u64::from(scan.u32()?)
            };
            elements = usize::try_from(dim)
                .ok()
                .and_then(|d| elements.checked_mul(d))
                .ok_or_else(|| {
                    format!(
                        "tensor {} has more elements than memory can hold",
                        String::from_utf8_lossy(name)
                    )
                })?;
        }
        scan.take(4 + 8)?; // its type (candle checks it) and its offset (checked after)
    }
    Ok(())
}

/// A cursor over the header's bytes.
struct Scan<'a> {
    bytes: &'a [u8],
    at: usize,
    /// Lengths are 64-bit (versions 2 and 3), not 32-bit (version 1).
    wide: bool,
    /// Metadata values seen so far, array elements included.
    values: u64,
}

impl<'a> Scan<'a> {
    fn take(&mut self, n: u64) -> Result<&'a [u8], String> {
        let left = self.bytes.len() - self.at;
        let n = usize::try_from(n)
            .ok()
            .filter(|&n| n <= left)
            .ok_or_else(|| {
                format!(
                    "its header asks for {n} bytes at byte {}, only {left} are left",
                    self.at
                )
            })?;
        let taken = &self.bytes[self.at..self.at + n];
        self.at += n;
        Ok(taken)
    }

    fn u32(&mut self) -> Result<u32, String> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self) -> Result<u64, String> {
        let b = self.take(8)?;
        let mut word = [0u8; 8];
        word.copy_from_slice(b);
        Ok(u64::from_le_bytes(word))
    }

    fn length(&mut self) -> Result<u64, String> {
        if self.wide {
            self.u64()
        } else {
            self.u32().map(u64::from)
        }
    }

    fn string(&mut self) -> Result<&'a [u8], String> {
        let len = self.length()?;
        self.take(len)
    }

    fn count_values(&mut self, n: u64) -> Result<(), String> {
        self.values = self.values.saturating_add(n);
        if self.values > MAX_METADATA_VALUES {
            return Err(format!(
                "its metadata holds more than {MAX_METADATA_VALUES} values"
            ));
        }
        Ok(())
    }

    /// Skips one value of GGUF type `kind` (already counted by the caller).
    fn value(&mut self, kind: u32, depth: usize) -> Result<(), String> {
        if let Some(size) = fixed_size(kind) {
            return self.take(size).map(drop);
        }
        match kind {
            STRING => self.string().map(drop),
            ARRAY => {
                if depth >= MAX_NESTING {
                    return Err(format!(
                        "its metadata nests arrays deeper than {MAX_NESTING}"
                    ));
                }
                let inner = self.u32()?;
                let len = self.length()?;
                if len > MAX_ARRAY_ELEMENTS {
                    return Err(format!(
                        "a metadata array declares {len} elements (at most {MAX_ARRAY_ELEMENTS} are read)"
                    ));
                }
                self.count_values(len)?;
                match fixed_size(inner) {
                    Some(size) => self.take(len.saturating_mul(size)).map(drop),
                    None => {
                        for _ in 0..len {
                            self.value(inner, depth + 1)?;
                        }
                        Ok(())
                    }
                }
            }
            other => Err(format!("its metadata has a value of unknown type {other}")),
        }
    }

    /// `general.alignment`: candle divides by it when it is a 8-, 16- or 32-bit integer.
    fn alignment(&mut self, kind: u32) -> Result<(), String> {
        let value = match kind {
            0 | 1 => u64::from(self.take(1)?[0]),
            2 | 3 => {
                let b = self.take(2)?;
                u64::from(u16::from_le_bytes([b[0], b[1]]))
            }
            4 | 5 => u64::from(self.u32()?),
            other => return self.value(other, 0),
        };
        if !value.is_power_of_two() {
            return Err(format!("general.alignment is {value}, not a power of two"));
        }
        Ok(())
    }
}

const STRING: u32 = 8;
const ARRAY: u32 = 9;

/// The size of a value of GGUF type `kind` that has one, `None` for strings, arrays and
/// unknown types.
fn fixed_size(kind: u32) -> Option<u64> {
    match kind {
        0 | 1 | 7 => Some(1),
        2 | 3 => Some(2),
        4..=6 => Some(4),
        10..=12 => Some(8),
        _ => None,
    }
}

/// The context window `path` declares, read from its header only; `None` if it cannot be read.
pub fn context_length(path: &Path) -> Option<usize> {
    let file = GgufFile::open(path).ok()?;
    let arch = file.architecture().ok()?;
    file.usize(&format!("{arch}.context_length")).ok()
}

/// The parameter count of the model in `path`: the elements of all its tensors, read from its
/// header only; `None` if it cannot be read or holds no tensors.
pub fn parameter_count(path: &Path) -> Option<u64> {
    let file = GgufFile::open(path).ok()?;
    let count = file
        .content
        .tensor_infos
        .values()
        .map(|info| info.shape.elem_count() as u64)
        .fold(0u64, u64::saturating_add);
    (count > 0).then_some(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A header of `version` with one metadata entry (`key`, type `kind`, then `value` as
    /// bytes) and no tensors; lengths are 32-bit in version 1, 64-bit after.
    fn header(version: u32, key: &str, kind: u32, value: &[u8]) -> Vec<u8> {
        let length = |n: usize| -> Vec<u8> {
            if version == 1 {
                (n as u32).to_le_bytes().to_vec()
            } else {
                (n as u64).to_le_bytes().to_vec()
            }
        };
        let mut out = b"GGUF".to_vec();
        out.extend_from_slice(&version.to_le_bytes());
        out.extend(length(0));
        out.extend(length(1));
        out.extend(length(key.len()));
        out.extend_from_slice(key.as_bytes());
        out.extend_from_slice(&kind.to_le_bytes());
        out.extend_from_slice(value);
        out
    }

    #[test]
    fn version_one_lengths_are_32_bit() {
        let mut value = 5u32.to_le_bytes().to_vec();
        value.extend_from_slice(b"llama");
        assert_eq!(
            scan_header(&header(1, "general.architecture", STRING, &value)),
            Ok(())
        );
        let mut value = 5u64.to_le_bytes().to_vec();
        value.extend_from_slice(b"llama");
        assert_eq!(
            scan_header(&header(3, "general.architecture", STRING, &value)),
            Ok(())
        );
        let err = scan_header(&header(4, "k", STRING, &value)).expect_err("version 4");
        assert!(err.contains("version 4"), "{err}");
    }

    #[test]
    fn a_header_cut_anywhere_is_refused() {
        let mut value = STRING.to_le_bytes().to_vec();
        value.extend_from_slice(&2u64.to_le_bytes());
        for word in ["a", "bc"] {
            value.extend_from_slice(&(word.len() as u64).to_le_bytes());
            value.extend_from_slice(word.as_bytes());
        }
        let whole = header(3, "tokenizer.ggml.tokens", ARRAY, &value);
        assert_eq!(scan_header(&whole), Ok(()));
        for cut in 8..whole.len() {
            assert!(scan_header(&whole[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn nesting_and_unknown_types_are_refused() {
        // An array of arrays of arrays … deeper than any real file.
        let mut value = Vec::new();
        for _ in 0..=MAX_NESTING {
            value.extend_from_slice(&ARRAY.to_le_bytes());
            value.extend_from_slice(&1u64.to_le_bytes());
        }
        value.extend_from_slice(&0u32.to_le_bytes());
        value.extend_from_slice(&0u64.to_le_bytes());
        let err = scan_header(&header(3, "deep", ARRAY, &value)).expect_err("too deep");
        assert!(err.contains("nests"), "{err}");
        let err = scan_header(&header(3, "odd", 13, &[0; 8])).expect_err("type 13");
        assert!(err.contains("unknown type 13"), "{err}");
    }

    #[test]
    fn alignment_must_be_a_power_of_two() {
        let align = |v: u32| scan_header(&header(3, "general.alignment", 4, &v.to_le_bytes()));
        assert_eq!(align(32), Ok(()));
        assert!(align(0).is_err() && align(24).is_err());
    }
}

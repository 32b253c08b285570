//! The key/value cache: every computed position's keys and values, per layer, as plain `f32`
//! rows, and their saved form.
//!
//! Owns the layout (per layer, one row of `kv_heads × head_dim` values per position, positions
//! in order, so a new position is appended and `truncate` only moves the end), growing it, and
//! the byte form `to_bytes`/`from_bytes` (an untrusted input: any damage is refused, never a
//! panic). It must not compute anything: `model` writes the rows and reads them in attention.

use crate::EngineError;

/// The byte form's first bytes: the format and its version.
pub const MAGIC: &[u8; 8] = b"SEEKKV01";
/// The element type code for `f32` values (the only one so far).
const ELEMENT_F32: u32 = 0;
/// Magic, element type, layers, kv heads, head size (`u32` each) and positions (`u64`).
const HEADER_BYTES: usize = 8 + 4 * 4 + 8;
/// The fewest positions room is made for at once.
const MIN_CAPACITY: usize = 256;

fn no_header() -> EngineError {
    EngineError::CacheBytes {
        reason: "not a saved cache of this version (no SEEKKV01 header)".into(),
    }
}

fn truncated() -> EngineError {
    EngineError::CacheBytes {
        reason: "its keys and values end early".into(),
    }
}

/// The room a cache of `len` positions made whole at once (read back, or copied from another)
/// gets: a quarter more, at least [`MIN_CAPACITY`], since the conversation goes on at once.
/// With none, the first position written doubled every buffer, copying the whole cache again
/// (96 MB for 2,000 positions of SmolLM2), in the first reply after a resume or a switch.
/// The room is zeroed memory never touched until written, so it costs no time. An empty
/// cache gets none (nothing to copy).
fn room_after(len: usize) -> usize {
    if len == 0 {
        return 0;
    }
    len + (len / 4).max(MIN_CAPACITY)
}

/// The keys and values of every position computed so far.
#[derive(Clone)]
pub struct KvCache {
    /// Per layer, `capacity` rows of `width` values, of which the first `len` are valid.
    keys: Vec<Vec<f32>>,
    values: Vec<Vec<f32>>,
    kv_heads: usize,
    head_dim: usize,
    capacity: usize,
    len: usize,
    /// Positions whose memory is in use: all `capacity` once `reserve` zeroed them, only those
    /// written so far in a cache read back or copied (its room is memory never touched, which
    /// the prefixes' bound in bytes must not count, or a saved prefix near the bound would be
    /// read back only to be dropped).
    resident: usize,
}

impl std::fmt::Debug for KvCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KvCache({} of {} positions)", self.len, self.capacity)
    }
}

impl KvCache {
    /// A cache of its own holding the first `len` positions of this one (only those copied).
    pub fn fork(&self, len: usize) -> KvCache {
        let len = len.min(self.len);
        let valid = len * self.width();
        let capacity = room_after(len);
        let copy = |layers: &[Vec<f32>]| -> Vec<Vec<f32>> {
            layers
                .iter()
                .map(|l| {
                    let mut copy = vec![0f32; capacity * self.width()];
                    let valid = valid.min(l.len());
                    copy[..valid].copy_from_slice(&l[..valid]);
                    copy
                })
                .collect()
        };
        KvCache {
            keys: copy(&self.keys),
            values: copy(&self.values),
            kv_heads: self.kv_heads,
            head_dim: self.head_dim,
            capacity,
            len,
            resident: len,
        }
    }

    /// An empty cache for `layers` layers, whose head sizes the first forward pass sets; see
    /// [`KvCache::with_shape`] for a cache that knows them (needed by `to_bytes`).
    pub fn new(layers: usize) -> Self {
        Self::with_shape(layers, 0, 0)
    }

    /// An empty cache for `layers` layers of `kv_heads` key/value heads of `head_dim` values.
    pub fn with_shape(layers: usize, kv_heads: usize, head_dim: usize) -> Self {
        Self {
            keys: vec![Vec::new(); layers],
            values: vec![Vec::new(); layers],
            kv_heads,
            head_dim,
            capacity: 0,
            len: 0,
            resident: 0,
        }
    }

    /// Positions held.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Forgets every position from `len` on (their slots are overwritten later).
    pub fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }

    /// Bytes of memory the buffers use (see `resident`).
    pub fn bytes(&self) -> usize {
        2 * self.layer_count() * self.resident * self.width() * size_of::<f32>()
    }

    pub fn layer_count(&self) -> usize {
        self.keys.len()
    }

    /// `(kv_heads, head_dim)`.
    pub fn heads(&self) -> (usize, usize) {
        (self.kv_heads, self.head_dim)
    }

    /// Values per position and layer, for keys and for values alike.
    pub(crate) fn width(&self) -> usize {
        self.kv_heads * self.head_dim
    }

    /// Sets the head sizes of a cache that has never held a position (one made by
    /// [`KvCache::new`]), and refuses a used cache of another shape: its rows would be read
    /// with the wrong layout.
    pub(crate) fn adopt_shape(
        &mut self,
        layers: usize,
        kv_heads: usize,
        head_dim: usize,
    ) -> Result<(), String> {
        if self.is_empty() && self.capacity == 0 {
            self.kv_heads = kv_heads;
            self.head_dim = head_dim;
        }
        if (self.layer_count(), self.kv_heads, self.head_dim) != (layers, kv_heads, head_dim) {
            return Err(format!(
                "a cache of {} layers × {} heads × {} values used with a model of {layers} × {kv_heads} × {head_dim}",
                self.layer_count(),
                self.kv_heads,
                self.head_dim
            ));
        }
        Ok(())
    }

    /// Makes room for `needed` positions (at most `limit` unless more are needed), doubling
    /// so that a long conversation costs a few copies.
    pub(crate) fn reserve(&mut self, needed: usize, limit: usize) {
        if needed <= self.capacity {
            return;
        }
        let capacity = needed
            .max(self.capacity * 2)
            .max(MIN_CAPACITY)
            .min(limit.max(needed));
        let values = capacity * self.width();
        for layer in self.keys.iter_mut().chain(self.values.iter_mut()) {
            layer.resize(values, 0.0);
        }
        self.capacity = capacity;
        // `resize` wrote the zeros.
        self.resident = capacity;
    }

    /// Layer `layer`'s key and value rows (all `capacity` of them).
    #[cfg(test)]
    fn layer_mut(&mut self, layer: usize) -> Option<(&mut [f32], &mut [f32])> {
        Some((self.keys.get_mut(layer)?, self.values.get_mut(layer)?))
    }

    /// Every layer's key and value rows (all `capacity` of them), for the forward pass.
    pub(crate) fn layers_mut(&mut self) -> impl Iterator<Item = (&mut [f32], &mut [f32])> {
        self.keys
            .iter_mut()
            .zip(self.values.iter_mut())
            .map(|(k, v)| (k.as_mut_slice(), v.as_mut_slice()))
    }

    /// Records that the positions up to `len` are computed.
    pub(crate) fn set_len(&mut self, len: usize) {
        self.len = len.min(self.capacity);
        self.resident = self.resident.max(self.len);
    }

    /// The valid positions in a self-describing little-endian form: `SEEKKV01`, then `u32`
    /// element type (0: `f32`), layers, kv heads, head size, then `u64` positions, then per
    /// layer the keys and then the values, each `positions × kv heads × head size` values in
    /// position order.
    pub fn to_bytes(&self) -> Vec<u8> {
        let valid = self.len * self.width();
        let mut out = Vec::with_capacity(HEADER_BYTES + 2 * self.layer_count() * valid * 4);
        out.extend_from_slice(MAGIC);
        for field in [ELEMENT_F32, 0, 0, 0] {
            out.extend_from_slice(&field.to_le_bytes());
        }
        let dims = [self.layer_count(), self.kv_heads, self.head_dim];
        for (i, dim) in dims.iter().enumerate() {
            // The shape came from a GGUF file's metadata, which checked it fits the window.
            let dim = u32::try_from(*dim).unwrap_or(u32::MAX);
            out[12 + 4 * i..16 + 4 * i].copy_from_slice(&dim.to_le_bytes());
        }
        out.extend_from_slice(&(self.len as u64).to_le_bytes());
        for (keys, values) in self.keys.iter().zip(&self.values) {
            for v in keys[..valid].iter().chain(&values[..valid]) {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
        out
    }

    /// A cache from [`KvCache::to_bytes`]'s form, for a model of `expected` `(layers,
    /// kv_heads, head_dim)`; refuses another format, another shape, and missing or extra
    /// bytes.
    pub fn from_bytes(
        bytes: &[u8],
        expected: (usize, usize, usize),
    ) -> Result<KvCache, EngineError> {
        let header = bytes
            .get(..HEADER_BYTES)
            .and_then(|h| <&[u8; HEADER_BYTES]>::try_from(h).ok())
            .ok_or_else(no_header)?;
        let (mut cache, valid) = Self::unread(header, bytes.len() as u64, expected)?;
        // `unread` checked that the bytes after the header are exactly the buffers'.
        let mut body = &bytes[HEADER_BYTES..];
        for raw in cache.raw_buffers(valid) {
            let (part, rest) = body.split_at(raw.len());
            raw.copy_from_slice(part);
            body = rest;
        }
        cache.settle_byte_order();
        Ok(cache)
    }

    /// [`KvCache::from_bytes`] for the `size` bytes at `at` in `file`, read at their offsets by
    /// two threads, half the buffers each: reading 96 MB back (2,000 positions of SmolLM2)
    /// is mostly faulting in fresh memory and copying it, which one thread did at about 2 GB/s.
    /// `observe` is shown the header as part 0, then buffer `i` (in the byte form's order) as
    /// part `i + 1`, the two threads' parts interleaved in time.
    #[cfg(unix)]
    pub fn read_at(
        file: &std::fs::File,
        at: u64,
        size: u64,
        expected: (usize, usize, usize),
        observe: &(dyn Fn(usize, &[u8]) + Sync),
    ) -> Result<KvCache, EngineError> {
        use std::os::unix::fs::FileExt;
        let mut header = [0u8; HEADER_BYTES];
        if size < HEADER_BYTES as u64 || file.read_exact_at(&mut header, at).is_err() {
            return Err(no_header());
        }
        observe(0, &header);
        let (mut cache, valid) = Self::unread(&header, size, expected)?;
        let mut buffers: Vec<(usize, &mut [u8])> =
            cache.raw_buffers(valid).into_iter().enumerate().collect();
        let half = buffers.len().div_ceil(2);
        let (first, second) = buffers.split_at_mut(half);
        let buffer_bytes = (4 * valid) as u64;
        let read = |part: &mut [(usize, &mut [u8])]| -> Result<(), EngineError> {
            for (i, raw) in part.iter_mut() {
                let offset = at + HEADER_BYTES as u64 + *i as u64 * buffer_bytes;
                file.read_exact_at(raw, offset).map_err(|_| truncated())?;
                observe(*i + 1, raw);
            }
            Ok(())
        };
        std::thread::scope(|scope| {
            let other = std::thread::Builder::new().spawn_scoped(scope, || read(second));
            let mine = read(first);
            let theirs = match other {
                // A panic in the other thread (none is expected) is the same refusal.
                Ok(thread) => thread.join().unwrap_or_else(|_| Err(truncated())),
                // Not used then, as any refused cache: the conversation is read again.
                Err(e) => Err(EngineError::CacheBytes {
                    reason: format!("no second thread could be started to read it: {e}"),
                }),
            };
            mine.and(theirs)
        })?;
        drop(buffers);
        cache.settle_byte_order();
        Ok(cache)
    }

    /// The cache a saved form's `header` describes, its buffers allocated (with room) and not
    /// yet read, and the values each holds; refused unless the form's `size` is exactly what
    /// the header's positions need, so nothing is allocated for a damaged header.
    fn unread(
        header: &[u8; HEADER_BYTES],
        size: u64,
        expected: (usize, usize, usize),
    ) -> Result<(KvCache, usize), EngineError> {
        let len = parse_header(header, expected)?;
        let (layers, kv_heads, head_dim) = expected;
        let width = kv_heads * head_dim;
        let body = size - HEADER_BYTES as u64;
        let wanted = usize::try_from(len)
            .ok()
            .and_then(|len| len.checked_mul(width))
            .and_then(|v| v.checked_mul(2 * layers))
            .and_then(|v| v.checked_mul(size_of::<f32>()));
        if wanted.map(|w| w as u64) != Some(body) {
            return Err(EngineError::CacheBytes {
                reason: format!(
                    "{body} bytes of keys and values where {len} positions need {}",
                    wanted.map_or("more than memory holds".into(), |w| w.to_string())
                ),
            });
        }
        // Checked above: len · width · 2 · layers · 4 bytes fit in memory's size.
        let len = len as usize;
        let capacity = room_after(len);
        let mut cache = KvCache::with_shape(layers, kv_heads, head_dim);
        for buffer in cache.keys.iter_mut().chain(cache.values.iter_mut()) {
            *buffer = vec![0f32; capacity * width];
        }
        cache.capacity = capacity;
        cache.len = len;
        cache.resident = len;
        Ok((cache, len * width))
    }

    /// Each buffer's first `valid` values as bytes, in the byte form's order (layer by layer,
    /// keys then values).
    fn raw_buffers(&mut self, valid: usize) -> Vec<&mut [u8]> {
        self.keys
            .iter_mut()
            .zip(self.values.iter_mut())
            .flat_map(|(keys, values)| [keys, values])
            .map(|buffer| {
                assert!(buffer.len() >= valid, "a buffer holds its valid values");
                // SAFETY: the buffer's first `valid` f32 are `4 · valid` initialized bytes (the
                // assert above); any bytes are a valid f32, and u8 needs no alignment.
                unsafe {
                    std::slice::from_raw_parts_mut(buffer.as_mut_ptr().cast::<u8>(), 4 * valid)
                }
            })
            .collect()
    }

    /// The saved form's values are little-endian f32, the platform's own order almost always.
    fn settle_byte_order(&mut self) {
        #[cfg(target_endian = "big")]
        for buffer in self.keys.iter_mut().chain(self.values.iter_mut()) {
            for value in buffer.iter_mut() {
                *value = f32::from_bits(u32::from_le(value.to_bits()));
            }
        }
    }
}

/// The positions a saved cache's header says it holds, for a model of `expected` `(layers,
/// kv_heads, head_dim)`; refuses another format or shape.
fn parse_header(
    header: &[u8; HEADER_BYTES],
    expected: (usize, usize, usize),
) -> Result<u64, EngineError> {
    let bad = |reason: String| EngineError::CacheBytes { reason };
    if &header[..8] != MAGIC {
        return Err(bad(
            "not a saved cache of this version (no SEEKKV01 header)".into(),
        ));
    }
    let field = |i: usize| {
        let at = 8 + 4 * i;
        u32::from_le_bytes([header[at], header[at + 1], header[at + 2], header[at + 3]])
    };
    let element = field(0);
    if element != ELEMENT_F32 {
        return Err(bad(format!("an unknown element type {element}")));
    }
    let shape = (field(1) as usize, field(2) as usize, field(3) as usize);
    if shape != expected {
        return Err(bad(format!(
            "saved for {} layers × {} heads × {} values, the model has {} × {} × {}",
            shape.0, shape.1, shape.2, expected.0, expected.1, expected.2
        )));
    }
    let mut len = [0u8; 8];
    len.copy_from_slice(&header[HEADER_BYTES - 8..]);
    Ok(u64::from_le_bytes(len))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cache of `len` positions whose every value is distinct.
    fn filled(layers: usize, kv_heads: usize, head_dim: usize, len: usize) -> KvCache {
        let mut cache = KvCache::with_shape(layers, kv_heads, head_dim);
        cache.reserve(len, 4096);
        for layer in 0..layers {
            let (keys, values) = cache.layer_mut(layer).unwrap();
            for (i, v) in keys.iter_mut().enumerate() {
                *v = (layer * 100_000 + i) as f32 * 0.5;
            }
            for (i, v) in values.iter_mut().enumerate() {
                *v = -((layer * 100_000 + i) as f32);
            }
        }
        cache.set_len(len);
        cache
    }

    #[test]
    fn a_cache_survives_its_bytes() {
        let cache = filled(3, 2, 4, 5);
        let bytes = cache.to_bytes();
        assert_eq!(bytes.len(), HEADER_BYTES + 3 * 2 * 5 * 8 * 4);
        let back = KvCache::from_bytes(&bytes, (3, 2, 4)).unwrap();
        assert_eq!(back.len(), 5);
        assert_eq!(back.heads(), (2, 4));
        assert_eq!(back.layer_count(), 3);
        // Only the valid positions are saved, and they read back equal.
        assert_eq!(back.to_bytes(), bytes);
        let mut back = back;
        let mut original = cache.clone();
        for layer in 0..3 {
            let (k1, v1) = original.layer_mut(layer).unwrap();
            let (k1, v1) = (k1[..40].to_vec(), v1[..40].to_vec());
            let (k2, v2) = back.layer_mut(layer).unwrap();
            assert_eq!((k1.as_slice(), v1.as_slice()), (&k2[..40], &v2[..40]));
        }
    }

    #[test]
    fn a_truncated_cache_saves_only_its_positions() {
        let mut cache = filled(2, 1, 2, 10);
        cache.truncate(3);
        let back = KvCache::from_bytes(&cache.to_bytes(), (2, 1, 2)).unwrap();
        assert_eq!(back.len(), 3);
        let empty = KvCache::with_shape(2, 1, 2);
        let back = KvCache::from_bytes(&empty.to_bytes(), (2, 1, 2)).unwrap();
        assert!(back.is_empty());
    }

    /// Read at its offset in a file by two threads, a cache equals its bytes, every part is
    /// shown once under its index (in order, they are the bytes), and a file that ends early
    /// is refused.
    #[cfg(unix)]
    #[test]
    fn a_cache_read_at_an_offset_by_two_threads_equals_its_bytes() {
        use std::io::Write;
        let cache = filled(3, 2, 4, 5);
        let bytes = cache.to_bytes();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache.kv");
        let mut file = std::fs::File::create(&path).unwrap();
        file.write_all(b"0123456").unwrap();
        file.write_all(&bytes).unwrap();
        drop(file);
        let file = std::fs::File::open(&path).unwrap();
        let parts = std::sync::Mutex::new(std::collections::BTreeMap::new());
        let back = KvCache::read_at(&file, 7, bytes.len() as u64, (3, 2, 4), &|i, b| {
            assert!(
                parts.lock().unwrap().insert(i, b.to_vec()).is_none(),
                "part {i} once"
            );
        })
        .unwrap();
        assert_eq!(back.to_bytes(), bytes);
        let parts = parts.into_inner().unwrap();
        assert_eq!(parts.len(), 1 + 2 * 3, "the header and six buffers");
        assert_eq!(parts.into_values().flatten().collect::<Vec<u8>>(), bytes);
        // A file that ends one byte early (its last buffer's read fails).
        drop(file);
        let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        file.set_len(7 + bytes.len() as u64 - 1).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        let refused = KvCache::read_at(&file, 7, bytes.len() as u64, (3, 2, 4), &|_, _| {});
        assert!(
            matches!(refused, Err(EngineError::CacheBytes { reason }) if reason.contains("end early"))
        );
    }

    #[test]
    fn damaged_bytes_are_refused_without_panicking() {
        let bytes = filled(2, 2, 4, 3).to_bytes();
        let refused = |b: &[u8], expected| match KvCache::from_bytes(b, expected) {
            Err(EngineError::CacheBytes { reason }) => reason,
            Ok(_) => panic!("accepted {} bytes for {expected:?}", b.len()),
            Err(other) => panic!("another error: {other}"),
        };
        // Every truncation, including inside the header.
        for cut in 0..bytes.len() {
            refused(&bytes[..cut], (2, 2, 4));
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(refused(&longer, (2, 2, 4)).contains("bytes"));
        assert!(refused(&bytes, (3, 2, 4)).contains("layers"));
        assert!(refused(&bytes, (2, 1, 4)).contains("heads"));
        assert!(refused(&bytes, (2, 2, 8)).contains("values"));
        let mut other_type = bytes.clone();
        other_type[8] = 1;
        assert!(refused(&other_type, (2, 2, 4)).contains("element type"));
        let mut other_magic = bytes.clone();
        other_magic[7] = b'2';
        assert!(refused(&other_magic, (2, 2, 4)).contains("header"));
        // A position count whose size overflows is refused too.
        let mut huge = bytes.clone();
        huge[HEADER_BYTES - 8..HEADER_BYTES].copy_from_slice(&u64::MAX.to_le_bytes());
        refused(&huge, (2, 2, 4));
    }

    #[test]
    fn a_cache_of_another_shape_is_refused_and_a_new_one_adopts_the_models() {
        let mut fresh = KvCache::new(2);
        fresh.adopt_shape(2, 3, 8).unwrap();
        assert_eq!(fresh.heads(), (3, 8));
        // A cache that has held positions keeps its shape; an unused one takes the model's.
        let mut other = filled(2, 1, 8, 1);
        assert!(other.adopt_shape(2, 3, 8).is_err());
        other.truncate(0);
        assert!(other.adopt_shape(2, 3, 8).is_err());
        let mut unused = KvCache::with_shape(2, 1, 8);
        unused.adopt_shape(2, 3, 8).unwrap();
        assert!(KvCache::new(4).adopt_shape(2, 3, 8).is_err());
    }

    /// A cache read back or copied has room for what follows: the next positions are written
    /// into the same buffers, not into a copy of the whole cache twice the size.
    #[test]
    fn a_cache_read_back_or_copied_goes_on_without_a_copy() {
        let cache = filled(2, 1, 2, 40);
        let back = KvCache::from_bytes(&cache.to_bytes(), (2, 1, 2)).unwrap();
        let fork = cache.fork(30);
        for (mut made, len) in [(back, 40), (fork, 30)] {
            assert_eq!(made.capacity, room_after(len));
            assert_eq!(made.bytes(), 2 * 2 * len * 2 * 4, "the room is not counted");
            let before = made.keys[0].as_ptr();
            made.reserve(len + MIN_CAPACITY, 10_000);
            assert_eq!(made.capacity, room_after(len), "no growth");
            assert_eq!(made.keys[0].as_ptr(), before, "the same buffer");
            made.truncate(len);
            assert_eq!(made.to_bytes(), {
                let mut c = cache.clone();
                c.truncate(len);
                c.to_bytes()
            });
        }
        assert_eq!(
            KvCache::from_bytes(&KvCache::with_shape(2, 1, 2).to_bytes(), (2, 1, 2))
                .unwrap()
                .capacity,
            0
        );
    }

    #[test]
    fn room_grows_by_doubling_and_keeps_the_positions() {
        let mut cache = filled(1, 1, 2, 300);
        assert_eq!(cache.capacity, 300.max(MIN_CAPACITY));
        let before = cache.to_bytes();
        cache.reserve(301, 10_000);
        assert_eq!(cache.capacity, 600);
        assert_eq!(cache.to_bytes(), before);
        cache.reserve(5000, 1000);
        assert_eq!(cache.capacity, 5000, "what is needed even past the limit");
        assert_eq!(cache.bytes(), 2 * 5000 * 2 * 4);
    }
}

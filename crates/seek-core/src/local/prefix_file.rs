//! A session's read prompts on disk (`sessions/<id>.kv`, beside the session), so that `seek -c`
//! and `seek -r` continue where the engine was instead of reading the conversation again.
//!
//! The file is a cache: a prefix is used only when everything checks (the format, the model
//! file it was computed with, the size bound, the prefix's own CRC-32 checksum, the cache's
//! dimensions) and ignored otherwise, to be overwritten by the next save. Only the prefix the
//! resumed conversation continues is read back (the others' tokens are read to choose it,
//! their caches skipped): resuming costs reading one conversation's cache, not every agent's.
//! The file is written to a temporary file renamed over the old one, so a crash leaves the old
//! file or the new, never half of one.
//!
//! Owns the format and the model file's identity. It must not choose prefixes (`prefixes`)
//! nor know where sessions live (the agent passes the path).

use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::model::KvCache;
use super::prefixes::{Prefix, common_prefix};

/// The first bytes of the file (the digit is the format's version).
const MAGIC: &[u8; 8] = b"seekPF2\0";
/// Bytes hashed from each end of the model file for its identity.
const IDENTITY_SPAN: u64 = 4 << 20;
/// The magic, the model's identity and the prefix count.
const HEADER: usize = MAGIC.len() + 32 + 4;

/// Why the file was not used or not written (logged, never shown as an error: it is a cache).
#[derive(Debug, thiserror::Error)]
pub(crate) enum PrefixFileError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not usable: {why}")]
    Refused { path: PathBuf, why: String },
}

/// What identifies a model file: its size and a hash of its first and last bytes (the header,
/// metadata and tensor table, and the last tensor's data). A different file, or the same name
/// re-downloaded as another quantization, differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ModelIdentity([u8; 32]);

impl ModelIdentity {
    pub fn of(path: &Path) -> std::io::Result<Self> {
        let mut file = std::fs::File::open(path)?;
        let size = file.metadata()?.len();
        let mut hash = Sha256::new();
        hash.update(size.to_le_bytes());
        let mut buffer = vec![0u8; IDENTITY_SPAN.min(size) as usize];
        file.read_exact(&mut buffer)?;
        hash.update(&buffer);
        if size > IDENTITY_SPAN {
            let tail = IDENTITY_SPAN.min(size - IDENTITY_SPAN);
            file.seek(SeekFrom::Start(size - tail))?;
            buffer.truncate(tail as usize);
            file.read_exact(&mut buffer)?;
            hash.update(&buffer);
        }
        Ok(Self(hash.finalize().into()))
    }
}

/// Writes `prefixes` (most recently used last) to `path` for the model `identity`, newest
/// first until `max_bytes` is reached; returns the bytes written. Nothing is written when
/// `max_bytes` is 0. Each prefix is: its token count (`u64`), its tokens (`u32`), its cache's
/// byte count (`u64`), a CRC-32 of the tokens and cache bytes, then the cache
/// (`KvCache::to_bytes`); all little-endian.
pub(crate) fn save<'a>(
    path: &Path,
    identity: ModelIdentity,
    prefixes: impl DoubleEndedIterator<Item = &'a Prefix<KvCache>>,
    max_bytes: usize,
) -> Result<usize, PrefixFileError> {
    let io = |source| PrefixFileError::Io {
        path: path.to_owned(),
        source,
    };
    if max_bytes == 0 {
        return Ok(0);
    }
    let mut file = Vec::new();
    file.extend_from_slice(MAGIC);
    file.extend_from_slice(&identity.0);
    file.extend_from_slice(&0u32.to_le_bytes());
    let mut count = 0u32;
    for prefix in prefixes.rev() {
        let cache = prefix.cache.to_bytes();
        let tokens: Vec<u8> = prefix.tokens.iter().flat_map(|t| t.to_le_bytes()).collect();
        if file.len() + 8 + tokens.len() + 8 + 4 + cache.len() > max_bytes {
            break;
        }
        let mut crc = crc32fast::Hasher::new();
        crc.update(&tokens);
        crc.update(&cache);
        file.extend_from_slice(&(prefix.tokens.len() as u64).to_le_bytes());
        file.extend_from_slice(&tokens);
        file.extend_from_slice(&(cache.len() as u64).to_le_bytes());
        file.extend_from_slice(&crc.finalize().to_le_bytes());
        file.extend_from_slice(&cache);
        count += 1;
    }
    file[MAGIC.len() + 32..HEADER].copy_from_slice(&count.to_le_bytes());
    let temporary = path.with_extension("kv.partial");
    // A fresh file, never whatever is at that name: a link planted there is removed, not
    // followed (O_EXCL refuses to create through one).
    match std::fs::remove_file(&temporary) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io(e)),
        _ => {}
    }
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&temporary)
        .map_err(io)?;
    out.write_all(&file).map_err(io)?;
    drop(out);
    std::fs::rename(&temporary, path).map_err(io)?;
    Ok(file.len())
}

/// A prefix's place in the file, found by reading its tokens.
struct Entry {
    tokens: Vec<u32>,
    crc: u32,
    cache_at: u64,
    cache_len: u64,
}

/// Reads back from `path`, for the model `identity` with caches of `dims` (layers, key/value
/// heads, head size), the saved prefix sharing the most tokens with `wanted` (the conversation
/// being resumed); `None` when none shares any. Refuses the file on any mismatch.
pub(crate) fn load(
    path: &Path,
    identity: ModelIdentity,
    dims: (usize, usize, usize),
    max_bytes: usize,
    wanted: &[u32],
) -> Result<Option<Prefix<KvCache>>, PrefixFileError> {
    let refused = |why: &str| PrefixFileError::Refused {
        path: path.to_owned(),
        why: why.to_owned(),
    };
    let io = |source| PrefixFileError::Io {
        path: path.to_owned(),
        source,
    };
    // Not through a link, and never blocking on a FIFO put in the file's place: only a
    // regular file is read.
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(io)?;
    let metadata = file.metadata().map_err(io)?;
    if !metadata.is_file() {
        return Err(refused("it is not a regular file"));
    }
    let size = metadata.len();
    if size > max_bytes as u64 {
        return Err(refused(&format!(
            "it has {size} bytes, more than the {max_bytes} allowed ([local] prefix_cache_mb)"
        )));
    }
    let mut header = [0u8; HEADER];
    file.read_exact(&mut header)
        .map_err(|_| refused("it is too short"))?;
    if !header.starts_with(MAGIC) {
        return Err(refused("it is not a prefix file of this version"));
    }
    if header[MAGIC.len()..MAGIC.len() + 32] != identity.0 {
        return Err(refused("it was computed with another model file"));
    }
    let count = u32::from_le_bytes([header[40], header[41], header[42], header[43]]);
    let truncated = || refused("it is truncated");
    let mut at = HEADER as u64;
    let mut entries = Vec::new();
    for _ in 0..count {
        let token_count = read_u64(&mut file).map_err(|_| truncated())?;
        let token_bytes = token_count
            .checked_mul(4)
            .filter(|n| n.checked_add(8 + at).is_some_and(|end| end <= size))
            .ok_or_else(truncated)?;
        let mut raw = vec![0u8; token_bytes as usize];
        file.read_exact(&mut raw).map_err(|_| truncated())?;
        let cache_len = read_u64(&mut file).map_err(|_| truncated())?;
        let crc = read_u32(&mut file).map_err(|_| truncated())?;
        let cache_at = at + 8 + token_bytes + 8 + 4;
        let end = cache_at
            .checked_add(cache_len)
            .filter(|end| *end <= size)
            .ok_or_else(truncated)?;
        file.seek(SeekFrom::Start(end)).map_err(io)?;
        let tokens = raw
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        entries.push(Entry {
            tokens,
            crc,
            cache_at,
            cache_len,
        });
        at = end;
    }
    if at != size {
        return Err(refused("it has bytes after its last prefix"));
    }
    // The most tokens shared; the newest (saved first) among equals.
    let Some(best) = entries
        .into_iter()
        .rev()
        .max_by_key(|e| common_prefix(&e.tokens, wanted))
        .filter(|e| common_prefix(&e.tokens, wanted) > 0)
    else {
        return Ok(None);
    };
    let mut crc = crc32fast::Hasher::new();
    for token in &best.tokens {
        crc.update(&token.to_le_bytes());
    }
    // Read into the cache's own buffers by two threads, each part's checksum taken on the
    // way and the parts' combined in order; nothing is used before it matches. A damaged
    // header is refused before anything is allocated for it (its size must be the entry's,
    // which the file's size bounds).
    let parts = std::sync::Mutex::new(std::collections::BTreeMap::new());
    let cache = KvCache::read_at(
        &file,
        best.cache_at,
        best.cache_len,
        dims,
        &|part, bytes| {
            let mut hasher = crc32fast::Hasher::new();
            hasher.update(bytes);
            parts
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(part, hasher);
        },
    )
    .map_err(|e| refused(&e.to_string()))?;
    for part in parts
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .values()
    {
        crc.combine(part);
    }
    if crc.finalize() != best.crc {
        return Err(refused("its checksum does not match (damaged)"));
    }
    if cache.len() != best.tokens.len() {
        return Err(refused(&format!(
            "a cache of {} positions is saved for {} tokens",
            cache.len(),
            best.tokens.len()
        )));
    }
    Ok(Some(Prefix::read(best.tokens, cache)))
}

fn read_u32(file: &mut std::fs::File) -> std::io::Result<u32> {
    let mut word = [0u8; 4];
    file.read_exact(&mut word)?;
    Ok(u32::from_le_bytes(word))
}

fn read_u64(file: &mut std::fs::File) -> std::io::Result<u64> {
    let mut word = [0u8; 8];
    file.read_exact(&mut word)?;
    Ok(u64::from_le_bytes(word))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(len: usize) -> KvCache {
        // Layers 2, one key/value head of size 2: built through the byte format itself
        // (element type f32, then the shape, then the positions).
        let mut bytes = seek_engine::model::cache::MAGIC.to_vec();
        for n in [0u32, 2, 1, 2] {
            bytes.extend_from_slice(&n.to_le_bytes());
        }
        bytes.extend_from_slice(&(len as u64).to_le_bytes());
        for v in 0..(2 * 2 * len * 2) {
            bytes.extend_from_slice(&(v as f32).to_le_bytes());
        }
        KvCache::from_bytes(&bytes, (2, 1, 2)).unwrap()
    }

    fn prefix(tokens: &[u32]) -> Prefix<KvCache> {
        Prefix::read(tokens.to_vec(), cache(tokens.len()))
    }

    const ID: ModelIdentity = ModelIdentity([7; 32]);

    #[test]
    fn the_prefix_the_conversation_continues_comes_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.kv");
        let kept = [prefix(&[1, 2, 3]), prefix(&[1, 5])];
        let written = save(&path, ID, kept.iter(), 1 << 20).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len() as usize, written);
        let back = load(&path, ID, (2, 1, 2), 1 << 20, &[1, 2, 3, 4])
            .unwrap()
            .unwrap();
        assert_eq!(back.tokens, vec![1, 2, 3]);
        assert_eq!(back.cache.to_bytes(), kept[0].cache.to_bytes());
        let other = load(&path, ID, (2, 1, 2), 1 << 20, &[1, 5, 9])
            .unwrap()
            .unwrap();
        assert_eq!(other.tokens, vec![1, 5]);
        assert!(load(&path, ID, (2, 1, 2), 1 << 20, &[7]).unwrap().is_none());
        assert!(!path.with_extension("kv.partial").exists());
    }

    #[test]
    fn the_size_bound_keeps_the_newest() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.kv");
        let kept = [prefix(&[1; 40]), prefix(&[2; 40])];
        let one = save(&path, ID, kept[1..].iter(), 1 << 20).unwrap();
        save(&path, ID, kept.iter(), one + 10).unwrap();
        assert!(
            load(&path, ID, (2, 1, 2), 1 << 20, &[1; 40])
                .unwrap()
                .is_none()
        );
        let back = load(&path, ID, (2, 1, 2), 1 << 20, &[2; 41])
            .unwrap()
            .unwrap();
        assert_eq!(back.tokens, vec![2; 40]);
        save(&path, ID, kept.iter(), 0).unwrap();
        assert!(
            load(&path, ID, (2, 1, 2), 1 << 20, &[2; 41])
                .unwrap()
                .is_some(),
            "0 writes nothing"
        );
    }

    #[test]
    fn any_mismatch_refuses_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.kv");
        let tokens = [1, 2, 3];
        let written = save(&path, ID, [prefix(&tokens)].iter(), 1 << 20).unwrap();
        let load_it = |dims, max| load(&path, ID, dims, max, &tokens);
        let other = ModelIdentity([8; 32]);
        let e = load(&path, other, (2, 1, 2), 1 << 20, &tokens).unwrap_err();
        assert!(e.to_string().contains("another model file"), "{e}");
        let e = load_it((3, 1, 2), 1 << 20).unwrap_err();
        assert!(e.to_string().contains("the model has"), "{e}");
        let e = load_it((2, 1, 2), written - 1).unwrap_err();
        assert!(e.to_string().contains("more than"), "{e}");
        let good = std::fs::read(&path).unwrap();
        // Every byte counts: the header, a token, the lengths, the checksum, the cache.
        for at in [0, 9, 41, 45, 53, 60, 70, good.len() / 2, good.len() - 1] {
            let mut bad = good.clone();
            bad[at] ^= 1;
            std::fs::write(&path, &bad).unwrap();
            assert!(
                !matches!(load_it((2, 1, 2), 1 << 20), Ok(Some(p)) if p.tokens == tokens),
                "flipped byte {at} went unnoticed"
            );
        }
        for cut in [0, 10, HEADER, good.len() - 33, good.len() - 1] {
            std::fs::write(&path, &good[..cut]).unwrap();
            assert!(load_it((2, 1, 2), 1 << 20).is_err(), "cut at {cut}");
        }
        let mut longer = good.clone();
        longer.push(0);
        std::fs::write(&path, &longer).unwrap();
        assert!(load_it((2, 1, 2), 1 << 20).is_err());
        // A token count whose byte count overflows once the offset is added: refused, no
        // panic (in a debug build the addition overflowed).
        let mut huge = good.clone();
        huge[HEADER..HEADER + 8].copy_from_slice(&(u64::MAX / 4).to_le_bytes());
        std::fs::write(&path, &huge).unwrap();
        let e = load_it((2, 1, 2), 1 << 20).unwrap_err();
        assert!(e.to_string().contains("truncated"), "{e}");
        assert!(load(&dir.path().join("none.kv"), ID, (2, 1, 2), 1 << 20, &tokens).is_err());
    }

    #[test]
    fn links_and_fifos_are_neither_followed_nor_waited_on() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.kv");
        let outside = dir.path().join("outside");
        std::fs::write(&outside, b"keep").unwrap();
        // A link at the temporary name is replaced, the file it names left alone.
        std::os::unix::fs::symlink(&outside, path.with_extension("kv.partial")).unwrap();
        save(&path, ID, [prefix(&[1, 2])].iter(), 1 << 20).unwrap();
        assert_eq!(std::fs::read(&outside).unwrap(), b"keep");
        // A link at the file's name is not read through.
        let saved = dir.path().join("saved.kv");
        std::fs::rename(&path, &saved).unwrap();
        std::os::unix::fs::symlink(&saved, &path).unwrap();
        assert!(load(&path, ID, (2, 1, 2), 1 << 20, &[1, 2]).is_err());
        // A FIFO is refused at once rather than blocking the engine's thread.
        std::fs::remove_file(&path).unwrap();
        nix::unistd::mkfifo(&path, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let e = load(&path, ID, (2, 1, 2), 1 << 20, &[1, 2]).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
    }

    #[test]
    fn a_model_file_is_identified_by_its_size_and_ends() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        let mut data = vec![3u8; (IDENTITY_SPAN as usize) * 3];
        std::fs::write(&a, &data).unwrap();
        std::fs::write(&b, &data).unwrap();
        assert_eq!(
            ModelIdentity::of(&a).unwrap(),
            ModelIdentity::of(&b).unwrap()
        );
        let last = data.len() - 1;
        data[last] = 4;
        std::fs::write(&b, &data).unwrap();
        assert_ne!(
            ModelIdentity::of(&a).unwrap(),
            ModelIdentity::of(&b).unwrap()
        );
        std::fs::write(&b, &data[..100]).unwrap();
        assert_ne!(
            ModelIdentity::of(&a).unwrap(),
            ModelIdentity::of(&b).unwrap()
        );
    }
}

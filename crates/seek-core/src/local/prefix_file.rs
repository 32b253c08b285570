//! A session's read prompts on disk (`sessions/<id>.kv`, beside the session), so that `seek -c`
//! and `seek -r` continue where the engine was instead of reading the conversation again.
//!
//! The file is a cache: it is used only when everything checks (its format, the model file it
//! was computed with, its size bound, its checksum, each cache's dimensions) and silently
//! ignored otherwise, to be overwritten by the next save. It is written to a temporary file and
//! renamed over the old one, so a crash leaves the old file or the new, never half of one.
//!
//! Owns the format and the model file's identity. It must not choose prefixes (`prefixes`)
//! nor know where sessions live (the agent passes the path).

use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::model::KvCache;
use super::prefixes::Prefix;

/// The first bytes of the file (the digit is the format's version).
const MAGIC: &[u8; 8] = b"seekPF1\0";
/// Bytes hashed from each end of the model file for its identity.
const IDENTITY_SPAN: u64 = 4 << 20;

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
            use std::io::Seek;
            let tail = IDENTITY_SPAN.min(size - IDENTITY_SPAN);
            file.seek(std::io::SeekFrom::Start(size - tail))?;
            buffer.truncate(tail as usize);
            file.read_exact(&mut buffer)?;
            hash.update(&buffer);
        }
        Ok(Self(hash.finalize().into()))
    }
}

/// Writes `prefixes` (most recently used last) to `path` for the model `identity`, newest
/// first until `max_bytes` is reached; returns the bytes written. Nothing is written when
/// `max_bytes` is 0.
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
    let mut body = Vec::new();
    let mut count = 0u32;
    for prefix in prefixes.rev() {
        let cache = prefix.cache.to_bytes();
        let size = 8 + prefix.tokens.len() * 4 + 8 + cache.len();
        if MAGIC.len() + 32 + 4 + body.len() + size + 32 > max_bytes {
            break;
        }
        body.extend_from_slice(&(prefix.tokens.len() as u64).to_le_bytes());
        for token in &prefix.tokens {
            body.extend_from_slice(&token.to_le_bytes());
        }
        body.extend_from_slice(&(cache.len() as u64).to_le_bytes());
        body.extend_from_slice(&cache);
        count += 1;
    }
    let mut file = Vec::with_capacity(MAGIC.len() + 32 + 4 + body.len() + 32);
    file.extend_from_slice(MAGIC);
    file.extend_from_slice(&identity.0);
    file.extend_from_slice(&count.to_le_bytes());
    file.extend_from_slice(&body);
    let checksum: [u8; 32] = Sha256::digest(&file).into();
    file.extend_from_slice(&checksum);
    let temporary = path.with_extension("kv.partial");
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&temporary)
        .map_err(io)?;
    out.write_all(&file).map_err(io)?;
    drop(out);
    std::fs::rename(&temporary, path).map_err(io)?;
    Ok(file.len())
}

/// Reads `path` back for the model `identity` with caches of `dims` (layers, key/value heads,
/// head size), the least recently used first; refuses the whole file on any mismatch.
pub(crate) fn load(
    path: &Path,
    identity: ModelIdentity,
    dims: (usize, usize, usize),
    max_bytes: usize,
) -> Result<Vec<Prefix<KvCache>>, PrefixFileError> {
    let refused = |why: String| PrefixFileError::Refused {
        path: path.to_owned(),
        why,
    };
    let file = std::fs::File::open(path).map_err(|source| PrefixFileError::Io {
        path: path.to_owned(),
        source,
    })?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(u64::MAX);
    if size > max_bytes as u64 {
        return Err(refused(format!(
            "it has {size} bytes, more than the {max_bytes} allowed ([local] prefix_cache_mb)"
        )));
    }
    let mut bytes = Vec::with_capacity(size as usize);
    file.take(max_bytes as u64)
        .read_to_end(&mut bytes)
        .map_err(|source| PrefixFileError::Io {
            path: path.to_owned(),
            source,
        })?;
    let fixed = MAGIC.len() + 32 + 4;
    if bytes.len() < fixed + 32 || !bytes.starts_with(MAGIC) {
        return Err(refused("it is not a prefix file of this version".into()));
    }
    let (content, checksum) = bytes.split_at(bytes.len() - 32);
    if Sha256::digest(content).as_slice() != checksum {
        return Err(refused("its checksum does not match (damaged)".into()));
    }
    if content[MAGIC.len()..MAGIC.len() + 32] != identity.0 {
        return Err(refused("it was computed with another model file".into()));
    }
    let count = read_u32(content, MAGIC.len() + 32).unwrap_or(0);
    let mut at = fixed;
    let mut prefixes = Vec::new();
    for _ in 0..count {
        let (tokens, after) =
            read_tokens(content, at).ok_or_else(|| refused("truncated".into()))?;
        let cache_len = read_u64(content, after).ok_or_else(|| refused("truncated".into()))?;
        let start = after + 8;
        let end = usize::try_from(cache_len)
            .ok()
            .and_then(|n| start.checked_add(n))
            .filter(|end| *end <= content.len())
            .ok_or_else(|| refused("truncated".into()))?;
        let cache =
            KvCache::from_bytes(&content[start..end], dims).map_err(|e| refused(e.to_string()))?;
        if cache.len() != tokens.len() {
            return Err(refused(format!(
                "a cache of {} positions is saved for {} tokens",
                cache.len(),
                tokens.len()
            )));
        }
        prefixes.push(Prefix { tokens, cache });
        at = end;
    }
    if at != content.len() {
        return Err(refused("it has bytes after its last prefix".into()));
    }
    // Saved newest first.
    prefixes.reverse();
    Ok(prefixes)
}

fn read_u32(bytes: &[u8], at: usize) -> Option<u32> {
    let b = bytes.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

fn read_u64(bytes: &[u8], at: usize) -> Option<u64> {
    let b = bytes.get(at..at.checked_add(8)?)?;
    let mut word = [0u8; 8];
    word.copy_from_slice(b);
    Some(u64::from_le_bytes(word))
}

/// A token count and the tokens from `at`; the position after them.
fn read_tokens(bytes: &[u8], at: usize) -> Option<(Vec<u32>, usize)> {
    let count = usize::try_from(read_u64(bytes, at)?).ok()?;
    let start = at + 8;
    let end = start.checked_add(count.checked_mul(4)?)?;
    let tokens = bytes
        .get(start..end)?
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    Some((tokens, end))
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
        Prefix {
            tokens: tokens.to_vec(),
            cache: cache(tokens.len()),
        }
    }

    const ID: ModelIdentity = ModelIdentity([7; 32]);

    #[test]
    fn saved_prefixes_come_back_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.kv");
        let kept = [prefix(&[1, 2, 3]), prefix(&[1, 5])];
        let written = save(&path, ID, kept.iter(), 1 << 20).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len() as usize, written);
        let back = load(&path, ID, (2, 1, 2), 1 << 20).unwrap();
        let tokens: Vec<_> = back.iter().map(|p| p.tokens.clone()).collect();
        assert_eq!(tokens, vec![vec![1, 2, 3], vec![1, 5]]);
        assert_eq!(back[0].cache.to_bytes(), kept[0].cache.to_bytes());
        assert!(!path.with_extension("kv.partial").exists());
    }

    #[test]
    fn the_size_bound_keeps_the_newest() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.kv");
        let kept = [prefix(&[1; 40]), prefix(&[2; 40])];
        let one = save(&path, ID, kept[1..].iter(), 1 << 20).unwrap();
        save(&path, ID, kept.iter(), one + 10).unwrap();
        let back = load(&path, ID, (2, 1, 2), 1 << 20).unwrap();
        assert_eq!(back.len(), 1);
        assert_eq!(back[0].tokens, vec![2; 40]);
        save(&path, ID, kept.iter(), 0).unwrap();
        assert_eq!(
            load(&path, ID, (2, 1, 2), 1 << 20).unwrap().len(),
            1,
            "0 writes nothing"
        );
    }

    #[test]
    fn any_mismatch_refuses_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.kv");
        let written = save(&path, ID, [prefix(&[1, 2, 3])].iter(), 1 << 20).unwrap();
        let other = ModelIdentity([8; 32]);
        let e = load(&path, other, (2, 1, 2), 1 << 20).unwrap_err();
        assert!(e.to_string().contains("another model file"), "{e}");
        let e = load(&path, ID, (3, 1, 2), 1 << 20).unwrap_err();
        assert!(e.to_string().contains("the model has"), "{e}");
        let e = load(&path, ID, (2, 1, 2), written - 1).unwrap_err();
        assert!(e.to_string().contains("more than"), "{e}");
        let good = std::fs::read(&path).unwrap();
        for at in [0, 9, 45, good.len() / 2, good.len() - 1] {
            let mut bad = good.clone();
            bad[at] ^= 1;
            std::fs::write(&path, &bad).unwrap();
            assert!(
                load(&path, ID, (2, 1, 2), 1 << 20).is_err(),
                "flipped byte {at}"
            );
        }
        for cut in [0, 10, good.len() - 33, good.len() - 1] {
            std::fs::write(&path, &good[..cut]).unwrap();
            assert!(load(&path, ID, (2, 1, 2), 1 << 20).is_err(), "cut at {cut}");
        }
        assert!(load(&dir.path().join("none.kv"), ID, (2, 1, 2), 1 << 20).is_err());
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

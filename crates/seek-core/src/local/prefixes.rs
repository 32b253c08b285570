//! The conversations whose prompt the engine has read, kept so that none is read twice.
//!
//! An agent switch changes the system prompt, the very start of the conversation: with one
//! cache, switching from the coder to the casual agent and back read the whole conversation
//! twice. Several prefixes are kept instead (one per agent, typically), bounded in number and
//! in bytes, the least recently used dropped first; a request continues from the one that
//! shares the most tokens with it.
//!
//! Owns choosing, forking and evicting prefixes. It must not compute (the engine thread does)
//! nor read or write files (`prefix_file`).

/// A cache of computed positions, as the set needs it (the engine's `KvCache`; a fake in
/// tests).
pub(crate) trait Positions: Sized {
    /// Bytes of memory held.
    fn bytes(&self) -> usize;
    /// Forgets the positions from `len` on.
    fn truncate(&mut self, len: usize);
    /// A copy holding the first `len` positions, sharing nothing; `None` if it cannot be made.
    fn fork(&self, len: usize) -> Option<Self>;
}

impl Positions for seek_engine::model::KvCache {
    fn bytes(&self) -> usize {
        seek_engine::model::KvCache::bytes(self)
    }
    fn truncate(&mut self, len: usize) {
        seek_engine::model::KvCache::truncate(self, len);
    }
    fn fork(&self, len: usize) -> Option<Self> {
        Some(seek_engine::model::KvCache::fork(self, len))
    }
}

/// A prefix: the tokens read and their cache.
#[derive(Debug)]
pub(crate) struct Prefix<C> {
    pub tokens: Vec<u32>,
    pub cache: C,
}

/// Where a request starts from.
pub(crate) struct Start<C> {
    pub prefix: Prefix<C>,
    /// Tokens of the request already computed in `prefix`.
    pub reused: usize,
}

/// The kept prefixes, most recently used last.
pub(crate) struct Prefixes<C> {
    kept: Vec<Prefix<C>>,
    max_count: usize,
    max_bytes: usize,
}

impl<C: Positions> Prefixes<C> {
    /// At most `max_count` prefixes (at least one) taking at most `max_bytes` together (the
    /// one in use is kept whatever its size).
    pub fn new(max_count: usize, max_bytes: usize) -> Self {
        Self {
            kept: Vec::new(),
            max_count: max_count.max(1),
            max_bytes,
        }
    }

    /// Prefixes kept.
    pub fn len(&self) -> usize {
        self.kept.len()
    }

    /// The kept prefixes, least recently used first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &Prefix<C>> {
        self.kept.iter()
    }

    /// Forgets every prefix (after a failure that may have left a cache half written).
    pub fn clear(&mut self) {
        self.kept.clear();
    }

    /// The prefix to compute `ids` on, taken out of the set (give it back with `keep`):
    /// the one sharing the most tokens with `ids` (the most recent among equals). When the two
    /// part in its second half (a regenerated reply, a trimmed last turn) it is continued in
    /// place; when they part in its first half (another agent's conversation, whose system
    /// prompt differs) it is kept as it is and a copy of the shared part is continued, so that
    /// switching back finds it. `empty` makes a new cache when nothing is shared or a copy fails. At least
    /// the last token of `ids` is left to compute: its logits choose the reply's first token.
    pub fn start(&mut self, ids: &[u32], empty: impl FnOnce() -> C) -> Start<C> {
        let limit = ids.len().saturating_sub(1);
        let best = self
            .kept
            .iter()
            .enumerate()
            .map(|(i, p)| (common_prefix(&p.tokens, ids).min(limit), i))
            .max();
        let Some((shared, at)) = best.filter(|(shared, _)| *shared > 0) else {
            return Start {
                prefix: Prefix {
                    tokens: Vec::new(),
                    cache: empty(),
                },
                reused: 0,
            };
        };
        if shared * 2 < self.kept[at].tokens.len()
            && let Some(cache) = self.kept[at].cache.fork(shared)
        {
            return Start {
                prefix: Prefix {
                    tokens: ids[..shared].to_vec(),
                    cache,
                },
                reused: shared,
            };
        }
        let mut prefix = self.kept.remove(at);
        prefix.tokens.truncate(shared);
        prefix.cache.truncate(shared);
        Start {
            prefix,
            reused: shared,
        }
    }

    /// Puts `prefix` back as the most recently used, then drops the least recently used ones
    /// beyond the bounds. A prefix whose tokens another one starts with adds nothing and goes.
    pub fn keep(&mut self, prefix: Prefix<C>) {
        self.kept
            .retain(|p| !p.tokens.is_empty() && !prefix.tokens.starts_with(&p.tokens));
        self.kept.push(prefix);
        while self.kept.len() > 1
            && (self.kept.len() > self.max_count || self.bytes() > self.max_bytes)
        {
            self.kept.remove(0);
        }
    }

    /// Adds `prefix` as less recently used than every one kept (a saved session's, read back
    /// at resume: what this process computed since is newer), within the bounds.
    pub fn keep_oldest(&mut self, prefix: Prefix<C>) {
        if prefix.tokens.is_empty()
            || self.kept.len() >= self.max_count
            || self.bytes() + prefix.cache.bytes() > self.max_bytes
            || self
                .kept
                .iter()
                .any(|p| p.tokens.starts_with(&prefix.tokens))
        {
            return;
        }
        self.kept.insert(0, prefix);
    }

    /// Bytes held by every kept prefix.
    pub fn bytes(&self) -> usize {
        self.kept.iter().map(|p| p.cache.bytes()).sum()
    }
}

pub(crate) fn common_prefix(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cache that is only its length; each position weighs 10 bytes.
    #[derive(Debug, Clone, PartialEq)]
    struct Fake(usize);

    impl Positions for Fake {
        fn bytes(&self) -> usize {
            self.0 * 10
        }
        fn truncate(&mut self, len: usize) {
            self.0 = self.0.min(len);
        }
        fn fork(&self, len: usize) -> Option<Self> {
            Some(Fake(self.0.min(len)))
        }
    }

    /// A conversation: a system prompt of its own (`agent`) followed by `body` tokens.
    fn conversation(agent: u32, body: std::ops::Range<u32>) -> Vec<u32> {
        let mut ids = vec![1, 100 + agent, 100 + agent, 100 + agent];
        ids.extend(body);
        ids
    }

    fn computed(set: &mut Prefixes<Fake>, ids: &[u32]) -> usize {
        let start = set.start(ids, || Fake(0));
        let reused = start.reused;
        let mut prefix = start.prefix;
        assert_eq!(prefix.tokens, ids[..reused]);
        assert_eq!(prefix.cache.0, reused);
        prefix.tokens = ids.to_vec();
        prefix.cache = Fake(ids.len());
        set.keep(prefix);
        ids.len() - reused
    }

    #[test]
    fn a_follow_up_computes_only_what_is_new() {
        let mut set = Prefixes::new(4, usize::MAX);
        assert_eq!(computed(&mut set, &conversation(0, 0..500)), 504);
        assert_eq!(computed(&mut set, &conversation(0, 0..520)), 20);
        assert_eq!(set.len(), 1);
    }

    #[test]
    fn switching_agents_and_back_reads_only_what_came_since() {
        let mut set = Prefixes::new(4, usize::MAX);
        computed(&mut set, &conversation(0, 0..1000));
        // The casual agent: a new system prompt, nothing shared past the first token.
        assert_eq!(computed(&mut set, &conversation(1, 0..1100)), 1103);
        assert_eq!(set.len(), 2, "the coder's prefix survives the switch");
        // Back to the coder: its 1000 tokens are still there.
        assert_eq!(computed(&mut set, &conversation(0, 0..1200)), 200);
        assert_eq!(computed(&mut set, &conversation(1, 0..1300)), 200);
    }

    #[test]
    fn a_regenerated_reply_continues_in_place() {
        let mut set = Prefixes::new(4, usize::MAX);
        computed(&mut set, &conversation(0, 0..300));
        let mut retry = conversation(0, 0..280);
        retry.extend(900..950);
        assert_eq!(computed(&mut set, &retry), 50);
        assert_eq!(
            set.len(),
            1,
            "the last 20 tokens discarded in place, no copy"
        );
    }

    #[test]
    fn the_least_recently_used_goes_first() {
        let mut set = Prefixes::new(2, usize::MAX);
        computed(&mut set, &conversation(0, 0..10));
        computed(&mut set, &conversation(1, 0..10));
        computed(&mut set, &conversation(0, 0..20));
        computed(&mut set, &conversation(2, 0..10));
        // Agent 1 was the least recently used.
        assert_eq!(set.len(), 2);
        assert_eq!(computed(&mut set, &conversation(0, 0..30)), 10);
        assert_eq!(computed(&mut set, &conversation(1, 0..10)), 13);
    }

    #[test]
    fn memory_bounds_the_set_but_never_the_prefix_in_use() {
        let mut set = Prefixes::new(8, 15_000);
        computed(&mut set, &conversation(0, 0..1000)); // 10,040 bytes
        computed(&mut set, &conversation(1, 0..1000));
        assert_eq!(set.len(), 1, "two would take 20,080 bytes");
        assert_eq!(set.iter().next().map(|p| p.tokens[1]), Some(101));
        let mut small = Prefixes::new(8, 10);
        computed(&mut small, &conversation(0, 0..1000));
        assert_eq!(small.len(), 1, "the one in use is kept whatever its size");
    }

    #[test]
    fn the_last_token_is_always_computed() {
        let mut set = Prefixes::new(4, usize::MAX);
        let ids = conversation(0, 0..10);
        computed(&mut set, &ids);
        assert_eq!(computed(&mut set, &ids), 1);
    }

    #[test]
    fn a_restored_prefix_is_the_oldest_and_within_bounds() {
        let mut set = Prefixes::new(2, usize::MAX);
        computed(&mut set, &conversation(0, 0..10));
        set.keep_oldest(Prefix {
            tokens: conversation(1, 0..10),
            cache: Fake(14),
        });
        set.keep_oldest(Prefix {
            tokens: conversation(2, 0..10),
            cache: Fake(14),
        });
        assert_eq!(set.len(), 2, "the third is beyond the count");
        computed(&mut set, &conversation(3, 0..10));
        // The restored one was the least recently used.
        assert_eq!(computed(&mut set, &conversation(0, 0..12)), 2);
    }

    #[test]
    fn the_common_prefix_stops_at_the_first_difference() {
        assert_eq!(common_prefix(&[1, 2, 3], &[1, 2, 4, 5]), 2);
        assert_eq!(common_prefix(&[], &[1]), 0);
        assert_eq!(common_prefix(&[1, 2], &[1, 2, 3]), 2);
    }
}

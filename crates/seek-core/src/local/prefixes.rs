//! The conversations whose prompt the engine has read, kept so that none is read twice.
//!
//! An agent switch changes the system prompt, the very start of the conversation: with one
//! cache, switching from the coder to the casual agent and back read the whole conversation
//! twice. Several prefixes are kept instead (one per agent, typically), bounded in number and
//! in bytes, the least recently used dropped first; a request continues from the one that
//! shares the most tokens with it.
//!
//! A warm-up (`engine/warm.rs`) adds prefixes the next request may need while the engine is
//! idle: it pins the prefix of the reply that just ended, keeps what it reads below that one, and
//! evicts only prefixes it has not pinned; what does not fit without evicting a pinned one is
//! not kept (the budget is full).
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
    /// Read by a warm-up and continued by no reply since (not saved beside the session).
    pub warmed: bool,
}

impl<C> Prefix<C> {
    /// A prefix a reply reads (or a saved one read back).
    pub fn read(tokens: Vec<u32>, cache: C) -> Self {
        Self {
            tokens,
            cache,
            warmed: false,
        }
    }
}

/// A kept prefix, and whether the warm-up under way must not evict it.
struct Entry<C> {
    prefix: Prefix<C>,
    pinned: bool,
}

impl<C> Entry<C> {
    fn new(prefix: Prefix<C>) -> Self {
        Self {
            prefix,
            pinned: false,
        }
    }
}

/// Where a request starts from.
pub(crate) struct Start<C> {
    pub prefix: Prefix<C>,
    /// Tokens of the request already computed in `prefix`.
    pub reused: usize,
    /// `prefix` was taken out of the set in place from a pinned one (`keep_warmed` puts it back
    /// on top).
    pub was_pinned: bool,
}

/// The kept prefixes, most recently used last.
pub(crate) struct Prefixes<C> {
    kept: Vec<Entry<C>>,
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
        self.kept.iter().map(|e| &e.prefix)
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
        self.take(ids, limit, false, empty)
    }

    /// `start` for a warm-up, which needs no logits: every token of `ids` may be reused, and a
    /// copy is marked `warmed`. `None` when a kept prefix holds all of `ids` already.
    pub fn start_warm(&mut self, ids: &[u32], empty: impl FnOnce() -> C) -> Option<Start<C>> {
        let whole = self.kept.iter().any(|e| e.prefix.tokens.starts_with(ids));
        (!whole && !ids.is_empty()).then(|| self.take(ids, ids.len(), true, empty))
    }

    fn take(
        &mut self,
        ids: &[u32],
        limit: usize,
        warm: bool,
        empty: impl FnOnce() -> C,
    ) -> Start<C> {
        let best = self
            .kept
            .iter()
            .enumerate()
            .map(|(i, e)| (common_prefix(&e.prefix.tokens, ids).min(limit), i))
            .max();
        let Some((shared, at)) = best.filter(|(shared, _)| *shared > 0) else {
            return Start {
                prefix: Prefix {
                    tokens: Vec::new(),
                    cache: empty(),
                    warmed: warm,
                },
                reused: 0,
                was_pinned: false,
            };
        };
        if shared * 2 < self.kept[at].prefix.tokens.len()
            && let Some(cache) = self.kept[at].prefix.cache.fork(shared)
        {
            return Start {
                prefix: Prefix {
                    tokens: ids[..shared].to_vec(),
                    cache,
                    warmed: warm,
                },
                reused: shared,
                was_pinned: false,
            };
        }
        let Entry { mut prefix, pinned } = self.kept.remove(at);
        prefix.tokens.truncate(shared);
        prefix.cache.truncate(shared);
        Start {
            prefix,
            reused: shared,
            was_pinned: pinned,
        }
    }

    /// Puts `prefix` back as the most recently used, then drops the least recently used ones
    /// beyond the bounds. A prefix whose tokens another one starts with adds nothing and goes.
    pub fn keep(&mut self, prefix: Prefix<C>) {
        self.drop_covered_by(&prefix.tokens);
        self.kept.push(Entry::new(prefix));
        while self.kept.len() > 1
            && (self.kept.len() > self.max_count || self.bytes() > self.max_bytes)
        {
            self.kept.remove(0);
        }
    }

    /// Drops the kept prefixes `tokens` starts with (and empty ones).
    fn drop_covered_by(&mut self, tokens: &[u32]) {
        self.kept
            .retain(|e| !e.prefix.tokens.is_empty() && !tokens.starts_with(&e.prefix.tokens));
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
                .any(|e| e.prefix.tokens.starts_with(&prefix.tokens))
        {
            return;
        }
        self.kept.insert(0, Entry::new(prefix));
    }

    /// Pins the most recently used prefix (the reply that just ended: the likely follow-up's),
    /// at the start of a warm-up.
    pub fn pin_newest(&mut self) {
        if let Some(newest) = self.kept.last_mut() {
            newest.pinned = true;
        }
    }

    /// Ends a warm-up: every prefix may be evicted again.
    pub fn unpin_all(&mut self) {
        for entry in &mut self.kept {
            entry.pinned = false;
        }
    }

    /// Whether one more pinned prefix of about `bytes` fits beside the pinned ones (evicting
    /// only unpinned ones): a warm-up asks before reading, and stops when it does not.
    pub fn fits_warmed(&self, bytes: usize) -> bool {
        let (count, held) = self.pinned();
        count < self.max_count && held.saturating_add(bytes) <= self.max_bytes
    }

    /// Keeps a warmed `prefix`, pinned: on top when it was taken from a pinned prefix in place
    /// (`Start::was_pinned`, the follow-up's own, continued), else just below the pinned ones
    /// (the warm-up keeps its most likely first). Unpinned prefixes are evicted, least recently
    /// used first, to make room; when there is none left to evict, `prefix` is dropped and
    /// `false` returned (the budget is full).
    pub fn keep_warmed(&mut self, prefix: Prefix<C>, on_top: bool) -> bool {
        if prefix.tokens.is_empty() {
            return true;
        }
        self.drop_covered_by(&prefix.tokens);
        let (count, held) = self.pinned();
        if count >= self.max_count || held.saturating_add(prefix.cache.bytes()) > self.max_bytes {
            return false;
        }
        let entry = Entry {
            prefix,
            pinned: true,
        };
        let below_pinned = self
            .kept
            .iter()
            .position(|e| e.pinned)
            .unwrap_or(self.kept.len());
        if on_top {
            self.kept.push(entry);
        } else {
            self.kept.insert(below_pinned, entry);
        }
        while self.kept.len() > self.max_count || self.bytes() > self.max_bytes {
            let Some(oldest) = self.kept.iter().position(|e| !e.pinned) else {
                break;
            };
            self.kept.remove(oldest);
        }
        true
    }

    /// The pinned prefixes' count and bytes.
    fn pinned(&self) -> (usize, usize) {
        self.kept
            .iter()
            .filter(|e| e.pinned)
            .fold((0, 0), |(n, b), e| (n + 1, b + e.prefix.cache.bytes()))
    }

    /// Bytes held by every kept prefix.
    pub fn bytes(&self) -> usize {
        self.kept.iter().map(|e| e.prefix.cache.bytes()).sum()
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
        set.keep_oldest(Prefix::read(conversation(1, 0..10), Fake(14)));
        set.keep_oldest(Prefix::read(conversation(2, 0..10), Fake(14)));
        assert_eq!(set.len(), 2, "the third is beyond the count");
        computed(&mut set, &conversation(3, 0..10));
        // The restored one was the least recently used.
        assert_eq!(computed(&mut set, &conversation(0, 0..12)), 2);
    }

    /// Warms `ids` as the engine does (unless held already, or beyond the budget); returns the
    /// tokens computed, `None` when it was not kept.
    fn warmed(set: &mut Prefixes<Fake>, ids: &[u32]) -> Option<usize> {
        if !set.fits_warmed(ids.len() * 10) {
            return None;
        }
        let Some(start) = set.start_warm(ids, || Fake(0)) else {
            return Some(0);
        };
        let mut prefix = start.prefix;
        prefix.tokens = ids.to_vec();
        prefix.cache = Fake(ids.len());
        set.keep_warmed(prefix, start.was_pinned)
            .then_some(ids.len() - start.reused)
    }

    fn agents_kept(set: &Prefixes<Fake>) -> Vec<u32> {
        set.iter().map(|p| p.tokens[1] - 100).collect()
    }

    #[test]
    fn a_warmed_agent_s_first_switch_computes_only_the_new_message() {
        let mut set = Prefixes::new(4, usize::MAX);
        computed(&mut set, &conversation(0, 0..1000));
        set.pin_newest();
        // The casual agent's prompt and the same history, read while the user is idle.
        assert_eq!(warmed(&mut set, &conversation(1, 0..1000)), Some(1004 - 1));
        set.unpin_all();
        assert_eq!(computed(&mut set, &conversation(1, 0..1010)), 10);
        assert_eq!(computed(&mut set, &conversation(0, 0..1020)), 20);
    }

    #[test]
    fn warming_never_evicts_the_follow_up_s_prefix_and_stops_when_full() {
        let mut set = Prefixes::new(3, usize::MAX);
        computed(&mut set, &conversation(5, 0..10)); // an older agent's
        computed(&mut set, &conversation(0, 0..100)); // the reply that just ended
        set.pin_newest();
        assert!(warmed(&mut set, &conversation(1, 0..100)).is_some());
        assert!(warmed(&mut set, &conversation(2, 0..100)).is_some());
        // Three pinned now: the fourth does not fit and nothing pinned is evicted.
        assert_eq!(warmed(&mut set, &conversation(3, 0..100)), None);
        set.unpin_all();
        assert_eq!(
            agents_kept(&set),
            [2, 1, 0],
            "the older agent's went first; the follow-up's stays the most recent"
        );
        assert_eq!(computed(&mut set, &conversation(0, 0..110)), 10);
    }

    #[test]
    fn warming_stops_at_the_byte_budget_without_touching_pinned_prefixes() {
        // 1,040 bytes a conversation: two fit in 2,500, three do not.
        let mut set = Prefixes::new(8, 2_500);
        computed(&mut set, &conversation(0, 0..100));
        set.pin_newest();
        assert!(warmed(&mut set, &conversation(1, 0..100)).is_some());
        assert_eq!(warmed(&mut set, &conversation(2, 0..100)), None);
        // Even past the estimate, a prefix that does not fit is dropped, not the pinned ones.
        let start = set
            .start_warm(&conversation(3, 0..100), || Fake(0))
            .map(|s| s.prefix);
        let mut prefix = start.expect("nothing holds agent 3's conversation");
        prefix.tokens = conversation(3, 0..100);
        prefix.cache = Fake(104);
        assert!(!set.keep_warmed(prefix, false));
        assert_eq!(agents_kept(&set), [1, 0]);
    }

    #[test]
    fn warming_continues_a_kept_prefix_and_the_follow_up_s_stays_on_top() {
        let mut set = Prefixes::new(4, usize::MAX);
        computed(&mut set, &conversation(1, 0..50)); // casual, used earlier
        computed(&mut set, &conversation(0, 0..100)); // the coder just answered
        set.pin_newest();
        // The coder's own conversation (a note came since): continued in place, kept on top.
        assert_eq!(warmed(&mut set, &conversation(0, 0..104)), Some(4));
        // Casual's: its 54 tokens kept are continued, not copied.
        assert_eq!(warmed(&mut set, &conversation(1, 0..104)), Some(54));
        assert_eq!(set.len(), 2);
        set.unpin_all();
        assert_eq!(agents_kept(&set), [1, 0]);
        assert_eq!(
            warmed(&mut set, &conversation(1, 0..104)),
            Some(0),
            "held already"
        );
    }

    #[test]
    fn only_prefixes_a_reply_used_are_not_marked_warmed() {
        let mut set = Prefixes::new(4, usize::MAX);
        computed(&mut set, &conversation(0, 0..100));
        set.pin_newest();
        warmed(&mut set, &conversation(0, 0..104));
        warmed(&mut set, &conversation(1, 0..104));
        let flags: Vec<bool> = set.iter().map(|p| p.warmed).collect();
        assert_eq!(
            flags,
            [true, false],
            "the reply's own prefix, continued, stays a reply's"
        );
    }

    #[test]
    fn one_prefix_kept_leaves_no_room_to_warm() {
        let mut set = Prefixes::new(1, usize::MAX);
        computed(&mut set, &conversation(0, 0..100));
        set.pin_newest();
        assert_eq!(warmed(&mut set, &conversation(1, 0..100)), None);
        assert_eq!(agents_kept(&set), [0]);
    }

    #[test]
    fn the_common_prefix_stops_at_the_first_difference() {
        assert_eq!(common_prefix(&[1, 2, 3], &[1, 2, 4, 5]), 2);
        assert_eq!(common_prefix(&[], &[1]), 0);
        assert_eq!(common_prefix(&[1, 2], &[1, 2, 3]), 2);
    }
}

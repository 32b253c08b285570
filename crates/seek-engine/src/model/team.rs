//! The threads of the current rayon pool working through one forward pass together, as
//! llama.cpp's thread pool does: every thread runs the same sequence of steps, each step's work
//! is shared out as numbered items, and a spinning barrier separates a step from the next.
//!
//! Why: a rayon parallel region per matrix product (seven per layer, over two hundred per token
//! on a small model) costs each time the wake-up of sleeping threads; here the threads are woken
//! once per forward pass and wait for each other by spinning, which costs a fraction of a
//! microsecond when they all run.
//!
//! Owns the barrier, the sharing of items and [`Shared`], the buffer several threads write at
//! disjoint places between two barriers. It must not know what is computed: `forward` does.

use std::cell::Cell;
use std::marker::PhantomData;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Spins before yielding the processor to another thread while waiting at the barrier: the
/// machine may have fewer free cores than the pool has threads, and the thread waited for may
/// need this one's core.
const SPINS_BEFORE_YIELD: u32 = 200;

/// The state the threads share during one pass.
pub struct Team {
    threads: usize,
    arrived: AtomicUsize,
    generation: AtomicUsize,
    poisoned: AtomicBool,
    /// One item counter per step that shares items; used once each, so never reset.
    counters: Vec<AtomicUsize>,
}

/// One thread's view of the team.
pub struct Member<'a> {
    team: &'a Team,
    index: usize,
    /// The next step's counter: every thread takes steps in the same order, so the same number.
    step: Cell<usize>,
}

/// Marks the team poisoned if its thread unwinds, so that the others stop waiting for it.
struct PoisonOnUnwind<'a>(&'a Team);

impl Drop for PoisonOnUnwind<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.poisoned.store(true, Ordering::Release);
        }
    }
}

impl Team {
    /// Runs `work` on every thread of the current rayon pool (the global one outside a pool)
    /// and returns when all are done; `steps` bounds how many [`Member::items`] calls each
    /// makes (more are shared out statically, which is correct but balances worse).
    pub fn run(steps: usize, work: impl Fn(&Member<'_>) + Sync) {
        let team = Team {
            threads: rayon::current_num_threads().max(1),
            arrived: AtomicUsize::new(0),
            generation: AtomicUsize::new(0),
            poisoned: AtomicBool::new(false),
            counters: (0..steps).map(|_| AtomicUsize::new(0)).collect(),
        };
        let body = |index: usize| {
            let _guard = PoisonOnUnwind(&team);
            work(&Member {
                team: &team,
                index,
                step: Cell::new(0),
            });
        };
        if team.threads == 1 {
            body(0);
        } else {
            // Every thread of the pool takes exactly one copy, so all `threads` members run at
            // once and the barrier is reached by each.
            rayon::broadcast(|context| body(context.index()));
        }
    }
}

impl Member<'_> {
    pub fn threads(&self) -> usize {
        self.team.threads
    }

    /// Whether this is the one thread that does what only one should (index 0).
    pub fn is_first(&self) -> bool {
        self.index == 0
    }

    /// Waits until every thread has reached this point: what any wrote before is then visible
    /// to all.
    pub fn barrier(&self) {
        let team = self.team;
        if team.threads == 1 {
            return;
        }
        let generation = team.generation.load(Ordering::Acquire);
        if team.arrived.fetch_add(1, Ordering::AcqRel) + 1 == team.threads {
            team.arrived.store(0, Ordering::Relaxed);
            team.generation.fetch_add(1, Ordering::AcqRel);
            return;
        }
        let mut spins = 0u32;
        while team.generation.load(Ordering::Acquire) == generation {
            if team.poisoned.load(Ordering::Acquire) {
                panic!("another compute thread panicked");
            }
            if spins < SPINS_BEFORE_YIELD {
                spins += 1;
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }

    /// The items of `0..count` this thread computes in the current step: taken one at a time
    /// from a shared counter, so a thread slowed by the rest of the machine takes fewer. Every
    /// thread must call this for every step, in the same order.
    pub fn items(&self, count: usize) -> impl Iterator<Item = usize> + '_ {
        let step = self.step.get();
        self.step.set(step + 1);
        let counter = self.team.counters.get(step);
        let (first, stride) = (self.index, self.team.threads);
        let mut static_next = first;
        std::iter::from_fn(move || {
            let item = match counter {
                Some(counter) => counter.fetch_add(1, Ordering::Relaxed),
                None => {
                    let item = static_next;
                    static_next += stride;
                    item
                }
            };
            (item < count).then_some(item)
        })
    }
}

/// A buffer that the team's threads write at disjoint places between two barriers, and read
/// after the barrier that follows.
pub struct Shared<'a, T> {
    start: *mut T,
    len: usize,
    _borrow: PhantomData<&'a mut [T]>,
}

// SAFETY: the buffer is only reached through the `unsafe` methods below, whose callers
// guarantee that no two threads touch the same element at once unless both only read.
unsafe impl<T: Send> Sync for Shared<'_, T> {}
unsafe impl<T: Send> Send for Shared<'_, T> {}

impl<'a, T> Shared<'a, T> {
    pub fn new(buffer: &'a mut [T]) -> Self {
        Self {
            start: buffer.as_mut_ptr(),
            len: buffer.len(),
            _borrow: PhantomData,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// The elements in `range`, to write.
    ///
    /// # Safety
    /// No other thread reads or writes any of them until the next barrier.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn slice_mut(&self, range: Range<usize>) -> &mut [T] {
        assert!(
            range.start <= range.end && range.end <= self.len,
            "{range:?} within {}",
            self.len
        );
        // SAFETY: in bounds (checked above); exclusive by the caller's guarantee.
        unsafe { std::slice::from_raw_parts_mut(self.start.add(range.start), range.len()) }
    }

    /// The elements in `range`, to read.
    ///
    /// # Safety
    /// No thread writes any of them until the next barrier.
    pub unsafe fn slice(&self, range: Range<usize>) -> &[T] {
        assert!(
            range.start <= range.end && range.end <= self.len,
            "{range:?} within {}",
            self.len
        );
        // SAFETY: in bounds (checked above); not written meanwhile by the caller's guarantee.
        unsafe { std::slice::from_raw_parts(self.start.add(range.start), range.len()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(threads: usize) -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
    }

    #[test]
    fn every_item_is_taken_once_and_barriers_order_the_steps() {
        for threads in [1, 2, 3] {
            let mut first = vec![0usize; 1000];
            let mut second = vec![0usize; 1000];
            {
                let (a, b) = (Shared::new(&mut first), Shared::new(&mut second));
                pool(threads).install(|| {
                    // Two counted steps and one past the counters (shared statically).
                    Team::run(2, |member| {
                        for _round in 0..3 {
                            for i in member.items(1000) {
                                // SAFETY: item i is this thread's alone in this step.
                                unsafe { a.slice_mut(i..i + 1)[0] += i + 1 };
                            }
                            member.barrier();
                        }
                        // Each reads what all wrote before the barrier.
                        for i in member.items(1000) {
                            // SAFETY: `a` is only read in this step; item i of `b` is ours.
                            let before = unsafe { a.slice(0..1000) }.iter().sum::<usize>();
                            unsafe { b.slice_mut(i..i + 1)[0] = before };
                        }
                        member.barrier();
                    });
                });
            }
            assert!(first.iter().enumerate().all(|(i, v)| *v == 3 * (i + 1)));
            assert!(second.iter().all(|v| *v == 3 * 1000 * 1001 / 2));
        }
    }

    #[test]
    fn a_panicking_thread_does_not_leave_the_others_waiting() {
        let result = std::panic::catch_unwind(|| {
            pool(2).install(|| {
                Team::run(1, |member| {
                    if member.is_first() {
                        panic!("a bug");
                    }
                    member.barrier();
                })
            })
        });
        assert!(result.is_err());
    }
}

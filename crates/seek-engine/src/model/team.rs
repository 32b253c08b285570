//! The threads of the current rayon pool working through one forward pass together, as
//! llama.cpp's thread pool does: every thread runs the same sequence of steps, each step's work
//! is shared out as numbered items, and a thread starts the next step once every item of the
//! step is done.
//!
//! Why: a rayon parallel region per matrix product (seven per layer, over two hundred per token
//! on a small model) costs each time the wake-up of sleeping threads; here the threads are woken
//! once per forward pass and wait for each other by spinning, which costs a fraction of a
//! microsecond when they all run. A step ends when its items are done, not when every thread
//! has arrived: on a busy machine a thread the system has paused holds up the others only for
//! an item it took, and the others take the rest, as rayon's work stealing would.
//!
//! Owns the waiting, the sharing of items and [`Shared`], the buffer several threads write at
//! disjoint places during a step. It must not know what is computed: `forward` does.

use std::cell::Cell;
use std::marker::PhantomData;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Spins before yielding the processor to another thread while waiting: the machine may have
/// fewer free cores than the pool has threads, and the thread waited for may need this one's
/// core.
const SPINS_BEFORE_YIELD: u32 = 200;

/// One step's item counters: taken, and done.
#[derive(Default)]
struct Step {
    taken: AtomicUsize,
    done: AtomicUsize,
}

/// The state the threads share during one pass.
pub struct Team {
    threads: usize,
    arrived: AtomicUsize,
    generation: AtomicUsize,
    poisoned: AtomicBool,
    /// One pair of counters per step; used once each, so never reset.
    steps: Vec<Step>,
}

/// One thread's view of the team.
pub struct Member<'a> {
    team: &'a Team,
    index: usize,
    /// The next step's number: every thread takes steps in the same order, so the same number.
    step: Cell<usize>,
    /// The last step taken and its item count, which [`Member::wait`] waits for.
    last: Cell<Option<(usize, usize)>>,
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
    /// makes (more are computed by the first thread alone, which is correct but slower).
    pub fn run(steps: usize, work: impl Fn(&Member<'_>) + Sync) {
        let team = Team {
            threads: rayon::current_num_threads().max(1),
            arrived: AtomicUsize::new(0),
            generation: AtomicUsize::new(0),
            poisoned: AtomicBool::new(false),
            steps: (0..steps).map(|_| Step::default()).collect(),
        };
        let body = |index: usize| {
            let _guard = PoisonOnUnwind(&team);
            work(&Member {
                team: &team,
                index,
                step: Cell::new(0),
                last: Cell::new(None),
            });
        };
        if team.threads == 1 {
            body(0);
        } else {
            // Every thread of the pool takes exactly one copy, so all `threads` members run.
            rayon::broadcast(|context| body(context.index()));
        }
    }
}

impl Member<'_> {
    pub fn threads(&self) -> usize {
        self.team.threads
    }

    /// Waits until every item of this thread's last step is done (by whichever thread took
    /// it): what they wrote is then visible to this thread.
    pub fn wait(&self) {
        match self.last.get() {
            Some((step, count)) if step < self.team.steps.len() => {
                let done = &self.team.steps[step].done;
                self.spin_until(|| done.load(Ordering::Acquire) >= count);
            }
            _ => self.barrier(),
        }
    }

    /// Waits until every thread has reached this point (for steps past the counted ones).
    fn barrier(&self) {
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
        self.spin_until(|| team.generation.load(Ordering::Acquire) != generation);
    }

    fn spin_until(&self, ready: impl Fn() -> bool) {
        let mut spins = 0u32;
        while !ready() {
            if self.team.poisoned.load(Ordering::Acquire) {
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

    /// The items of `0..count` this thread computes in a new step: taken one at a time from a
    /// shared counter, so a thread slowed by the rest of the machine takes fewer. An item
    /// counts as done when the next is asked for (or the iterator is dropped). Every thread
    /// must call this for every step, in the same order, and [`Member::wait`] before reading
    /// what the step wrote.
    pub fn items(&self, count: usize) -> Items<'_> {
        let step = self.step.get();
        self.step.set(step + 1);
        self.last.set(Some((step, count)));
        let counters = self.team.steps.get(step);
        // Past the counted steps, the first thread computes every item.
        let next_static = if self.index == 0 { 0 } else { count };
        Items {
            counters,
            count,
            held: false,
            next_static,
        }
    }
}

/// The items a thread takes in one step; see [`Member::items`].
pub struct Items<'a> {
    counters: Option<&'a Step>,
    count: usize,
    /// Whether an item was handed out and is not yet counted as done.
    held: bool,
    next_static: usize,
}

impl Iterator for Items<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        let Some(counters) = self.counters else {
            let item = self.next_static;
            self.next_static += 1;
            return (item < self.count).then_some(item);
        };
        if std::mem::take(&mut self.held) {
            counters.done.fetch_add(1, Ordering::Release);
        }
        if counters.taken.load(Ordering::Relaxed) >= self.count {
            return None;
        }
        let item = counters.taken.fetch_add(1, Ordering::Relaxed);
        self.held = item < self.count;
        self.held.then_some(item)
    }
}

impl Drop for Items<'_> {
    fn drop(&mut self) {
        if let (true, Some(counters)) = (self.held, self.counters) {
            counters.done.fetch_add(1, Ordering::Release);
        }
    }
}

/// A buffer that the team's threads write at disjoint places during a step, and read after
/// waiting for the step.
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
    /// No other thread reads or writes any of them during this step.
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
    /// No thread writes any of them during this step.
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
                    // Two counted steps and two past the counters (on the first thread).
                    Team::run(2, |member| {
                        for round in 0..3 {
                            for i in member.items(1000) {
                                // SAFETY: item i is this thread's alone in this step.
                                unsafe { a.slice_mut(i..i + 1)[0] += i + 1 };
                                if round == 0 && i % 100 == 7 {
                                    // Slow items: the step must still wait for them.
                                    std::thread::yield_now();
                                }
                            }
                            member.wait();
                        }
                        // Each reads what all wrote before the barrier.
                        for i in member.items(1000) {
                            // SAFETY: `a` is only read in this step; item i of `b` is ours.
                            let before = unsafe { a.slice(0..1000) }.iter().sum::<usize>();
                            unsafe { b.slice_mut(i..i + 1)[0] = before };
                        }
                        member.wait();
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
                    for item in member.items(2) {
                        if item == 0 {
                            panic!("a bug");
                        }
                    }
                    member.wait();
                })
            })
        });
        assert!(result.is_err());
    }
}

//! Graph construction with dependency inference, apart from the event clock.
//!
//! The [`Builder`] checks each task's region arguments against their tensors, finds in the
//! tensor map the earlier tasks the task must follow (its *candidates*), and records the task's
//! accesses. It reads nothing of the simulation: which candidates are still pending when the
//! task is admitted is the runtime's question, and those become the task's edges. A task
//! `task_window` or more submissions older than this one has retired before this one is
//! admitted, so the builder drops its entries by sequence arithmetic alone; the runtime may
//! free entries sooner as tasks retire ([`Builder::retire_to`]). So what the builder produces
//! is a function of the submissions only, and it can run on its own: [`crate::Runtime`] drives
//! one per run, and a builder alone constructs a graph without timing it.

use crate::api::{malformed_dimension, Arg, Region, TensorId, MAX_RANK};
use crate::engine::{api, RuntimeError, MAX_STREAMS, MAX_WINDOW};
use crate::tensormap::{Access, TensorMap, MAX_POOL, MAX_TENSORS};

/// What the builder knows of a tensor.
#[derive(Clone, Copy)]
pub(crate) struct TensorMeta {
    pub(crate) elem_size: u64,
    pub(crate) rank: usize,
    pub(crate) dims: [i64; MAX_RANK],
    /// Its buffer exists: tasks already submitted may run on it.
    pub(crate) live: bool,
    /// New tasks may name it (false once its scope has ended, and once freed).
    pub(crate) open: bool,
}

/// A task's arguments as checked by [`Builder::prepare`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Prepared {
    /// Tensor-map entries the task takes once committed.
    pub entries: u64,
    /// Bytes the task reads and writes.
    pub in_bytes: u64,
    pub out_bytes: u64,
}

/// Graph construction: see the module documentation.
pub struct Builder {
    tensors: Vec<TensorMeta>,
    free_tensors: Vec<u32>,
    tmap: TensorMap,
    /// The prepared task's arguments as the tensor map sees them.
    accesses: Vec<Access>,
    /// The prepared task's candidates (low 32 bits of their sequence numbers, possibly
    /// repeated).
    cands: Vec<u32>,
    window: u64,
    /// The tensor map's entries.
    pool: u64,
    /// Entries the prepared task takes.
    need: u64,
    next: u64,
    /// Each task's first tensor-map generation, by `seq & fmask` (the window rounded up to a
    /// power of two: every task that may hold entries).
    firsts: Vec<u32>,
    fmask: u64,
    /// Per stream (`streams(n)`): the newest task submitted on it.
    streams_last: Vec<u64>,
}

/// Argument `n`'s dimension `d` is malformed or leaves its tensor (of extent `dim` there).
#[cold]
#[inline(never)]
fn bad_dimension<T>(n: usize, d: usize, r: &Region, dim: i64) -> Result<T, RuntimeError> {
    let (o, e, s) = (r.offsets[d], r.extents[d], r.strides[d]);
    if let Some(m) = malformed_dimension(d, o, e, s) {
        return api(format!("argument {n}: {m}"));
    }
    let last = (e - 1).saturating_mul(s).saturating_add(o);
    api(format!(
        "argument {n}: dimension {d} reaches index {last} but the tensor has {dim}"
    ))
}

/// Argument `n` names tensor `t`, which is not open to new tasks (`meta`, if it was ever
/// added).
#[cold]
#[inline(never)]
fn closed_tensor<T>(n: usize, t: u32, meta: Option<&TensorMeta>) -> Result<T, RuntimeError> {
    match meta {
        Some(m) if m.live => api(format!(
            "argument {n}: tensor {t} was allocated in a scope that has ended; a task submitted after the scope cannot use it"
        )),
        _ => api(format!("argument {n}: unknown tensor id {t}")),
    }
}

impl Builder {
    /// A builder for a task window of `window` (1 to [`MAX_WINDOW`]), a tensor map of
    /// `tensormap_pool` entries (1 to [`MAX_POOL`]) and `streams` streams (0: none; at most
    /// [`MAX_STREAMS`]).
    pub fn new(window: u32, tensormap_pool: u32, streams: usize) -> Result<Builder, RuntimeError> {
        if window == 0 || tensormap_pool == 0 {
            return api(format!(
                "task_window and tensormap_pool must be ≥ 1; found {window} and {tensormap_pool}"
            ));
        }
        if window > MAX_WINDOW {
            return api(format!(
                "task_window({window}) is above the largest window, {MAX_WINDOW}"
            ));
        }
        if tensormap_pool > MAX_POOL {
            return api(format!(
                "tensormap_pool {tensormap_pool} is above the largest pool, {MAX_POOL}"
            ));
        }
        if streams > MAX_STREAMS as usize {
            return api(format!(
                "streams({streams}) is above the most streams, {MAX_STREAMS}"
            ));
        }
        let window = window as u64;
        let size = window.next_power_of_two();
        Ok(Builder {
            tensors: Vec::new(),
            free_tensors: Vec::new(),
            tmap: TensorMap::new(tensormap_pool),
            accesses: Vec::new(),
            cands: Vec::new(),
            window,
            pool: tensormap_pool as u64,
            need: 0,
            next: 0,
            firsts: vec![0; size as usize],
            fmask: size - 1,
            streams_last: vec![u64::MAX; streams],
        })
    }

    /// Checks a tensor's shape and element size: its bytes.
    pub(crate) fn tensor_bytes(elem_size: u64, dims: &[i64]) -> Result<u64, RuntimeError> {
        if dims.is_empty() || dims.len() > MAX_RANK || dims.iter().any(|d| *d < 1) {
            return api(format!(
                "a tensor has 1 to {MAX_RANK} dimensions, each ≥ 1; found {dims:?}"
            ));
        }
        if !(1..=16).contains(&elem_size) {
            return api(format!("element size {elem_size} is not 1 to 16 bytes"));
        }
        let too_large = || RuntimeError::Api(format!("tensor of {dims:?} is too large"));
        let elems = dims
            .iter()
            .try_fold(1u64, |a, d| a.checked_mul(*d as u64))
            .ok_or_else(too_large)?;
        elems.checked_mul(elem_size).ok_or_else(too_large)
    }

    /// Adds a tensor of `dims` elements of `elem_size` bytes.
    pub fn add_tensor(&mut self, elem_size: u64, dims: &[i64]) -> Result<TensorId, RuntimeError> {
        Self::tensor_bytes(elem_size, dims)?;
        let mut t = TensorMeta {
            elem_size,
            rank: dims.len(),
            dims: [1; MAX_RANK],
            live: true,
            open: true,
        };
        t.dims[..dims.len()].copy_from_slice(dims);
        let id = if let Some(id) = self.free_tensors.pop() {
            self.tensors[id as usize] = t;
            id
        } else {
            if self.tensors.len() as u32 >= MAX_TENSORS {
                return api(format!("more than {MAX_TENSORS} tensors"));
            }
            self.tensors.push(t);
            self.tensors.len() as u32 - 1
        };
        self.tmap.add_tensor(id, dims.len());
        Ok(TensorId(id))
    }

    /// A live tensor.
    pub(crate) fn tensor(&self, t: TensorId) -> Option<&TensorMeta> {
        self.tensors.get(t.0 as usize).filter(|t| t.live)
    }

    /// Closes tensor `t` to new tasks: those already submitted may still run on it.
    pub(crate) fn close_tensor(&mut self, t: u32) {
        if let Some(tt) = self.tensors.get_mut(t as usize) {
            tt.open = false;
        }
    }

    /// Frees tensor `t` (its id may be reused). The caller guarantees that every task that
    /// accesses it has retired.
    pub(crate) fn free_tensor(&mut self, t: u32) {
        if let Some(tt) = self.tensors.get_mut(t as usize) {
            tt.live = false;
            tt.open = false;
            self.free_tensors.push(t);
        }
    }

    /// The sequence number the next committed task gets.
    pub fn next_seq(&self) -> u64 {
        self.next
    }

    /// Task `seq`'s first tensor-map generation, or the next to be allocated when `seq` is
    /// not committed yet: a task's entries end where the next task's begin.
    fn first_gen(&self, seq: u64) -> u32 {
        if seq < self.next {
            self.firsts[(seq & self.fmask) as usize]
        } else {
            self.tmap.next_gen()
        }
    }

    /// Frees the entries of every task before `seq` (they have retired).
    pub fn retire_to(&mut self, seq: u64) {
        let to = self.first_gen(seq);
        if self.tmap.is_ahead(to) {
            self.tmap.retire_to(to);
        }
    }

    /// Entries held by the tasks from `seq` on: what the pool holds while `seq` is the oldest
    /// task that has not retired.
    pub fn entries_from(&self, seq: u64) -> u64 {
        self.tmap.next_gen().wrapping_sub(self.first_gen(seq)) as u64
    }

    /// Checks the next task's region arguments and finds its candidates
    /// ([`Builder::candidates`]), on stream `stream` when there are streams. The task is not
    /// recorded until [`Builder::commit`].
    pub fn prepare(&mut self, args: &[Arg], stream: i64) -> Result<Prepared, RuntimeError> {
        let seq = self.next;
        // Every task `window` or more older has retired by the time this one is admitted.
        let oldest = (seq + 1).saturating_sub(self.window);
        self.retire_to(oldest);
        self.accesses.clear();
        self.cands.clear();
        let (mut need, mut i, mut o) = (0, 0, 0);
        for (n, a) in args.iter().enumerate() {
            let r = &a.region;
            let Some(ten) = self.tensors.get(r.tensor.0 as usize).filter(|t| t.open) else {
                return closed_tensor(n, r.tensor.0, self.tensors.get(r.tensor.0 as usize));
            };
            if r.rank as usize != ten.rank {
                return api(format!(
                    "argument {n}: region of rank {} on a tensor of rank {}",
                    r.rank, ten.rank
                ));
            }
            let write = a.dir.writes();
            // One cell of a tiled grid is inside the tensor (the usual tile: no loop).
            let (acc, elems) = match self.tmap.tile_access(r, write) {
                Some(acc) => {
                    // Whole along dimensions 2 on (if any): a cell proves it in bounds.
                    let mut elems = (r.extents[0] * r.extents[1]) as u64;
                    for d in 2..ten.rank {
                        elems *= r.extents[d] as u64;
                    }
                    (acc, elems)
                }
                None => {
                    // Region fields are public, so a region may not have come from
                    // `Region::new`: every dimension is checked here (`Region::elements` is
                    // taken in the same loop; a second loop over the rank costs about 40
                    // instructions a task).
                    let mut elems = 1u64;
                    for d in 0..ten.rank {
                        // Unsigned: a negative offset or an extent below 1 is out of range too.
                        // A region inside its tensor has at most the tensor's elements, so
                        // `elems` cannot wrap.
                        let dim = ten.dims[d] as u64;
                        let (o, span, s) = (
                            r.offsets[d] as u64,
                            (r.extents[d] as u64).wrapping_sub(1),
                            r.strides[d],
                        );
                        let inside = span < dim
                            && if s == 1 {
                                o < dim - span
                            } else {
                                s > 1 && (span as u128 * s as u128 + o as u128) < dim as u128
                            };
                        if !inside {
                            return bad_dimension(n, d, r, ten.dims[d]);
                        }
                        elems *= span + 1;
                    }
                    (self.tmap.access(r, &ten.dims[..ten.rank], write), elems)
                }
            };
            // At most the tensor's bytes, which `add_tensor` checked fit a u64.
            let b = elems * ten.elem_size;
            need += TensorMap::entries_for(&acc) as u64;
            self.accesses.push(acc);
            i += if a.dir.reads() { b } else { 0 };
            o += if write { b } else { 0 };
        }
        // A second pass, so that each loop keeps its values in registers.
        for (a, acc) in args.iter().zip(&self.accesses) {
            self.tmap.deps(acc, &a.region, oldest, &mut self.cands);
        }
        if !self.streams_last.is_empty() {
            let n = self.streams_last.len() as i64;
            let last = self.streams_last[stream.rem_euclid(n) as usize];
            if last != u64::MAX && last >= oldest {
                self.cands.push(last as u32);
            }
        }
        self.need = need;
        Ok(Prepared {
            entries: need,
            in_bytes: i,
            out_bytes: o,
        })
    }

    /// The prepared task's candidates: the tasks (low 32 bits of their sequence numbers,
    /// possibly repeated, all inside the window) it must follow if they are still pending
    /// when it is admitted.
    pub fn candidates(&self) -> &[u32] {
        &self.cands
    }

    /// Records the prepared task (`args` and `stream` as prepared) as task
    /// [`Builder::next_seq`], and returns that number. The runtime admits a task only when
    /// its entries fit the pool; a builder used alone refuses one whose entries do not fit
    /// beside those of the window's tasks.
    pub fn commit(&mut self, args: &[Arg], stream: i64) -> Result<u64, RuntimeError> {
        if self.tmap.used() as u64 + self.need > self.pool {
            return api(format!(
                "the tensor map's {} entries cannot hold this task's {} beside the {} of the tasks in the window: raise tensormap_pool",
                self.pool,
                self.need,
                self.tmap.used()
            ));
        }
        let seq = self.next;
        self.firsts[(seq & self.fmask) as usize] = self.tmap.next_gen();
        for (a, acc) in args.iter().zip(&self.accesses) {
            self.tmap.insert(acc, &a.region, seq);
        }
        self.tmap.sweep_due();
        if !self.streams_last.is_empty() {
            let n = self.streams_last.len() as i64;
            self.streams_last[stream.rem_euclid(n) as usize] = seq;
        }
        self.next += 1;
        Ok(seq)
    }

    /// A live entry that writes tensor `t` for a task that is `pending` (by the low 32 bits
    /// of its sequence number). A walk over every live entry: for waits, not for submission.
    pub(crate) fn pending_writer(&self, t: TensorId, pending: impl Fn(u32) -> bool) -> Option<u32> {
        self.tmap.pending_writer(t.0, pending)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Direction;

    fn arg(t: TensorId, o: [i64; 2], e: [i64; 2], dir: Direction) -> Arg {
        Arg {
            region: Region::dense(t, &o, &e).unwrap(),
            dir,
        }
    }

    /// Prepares and commits a task: its candidates, sorted, without repeats.
    fn task(b: &mut Builder, args: &[Arg], stream: i64) -> Vec<u32> {
        b.prepare(args, stream).unwrap();
        let mut c = b.candidates().to_vec();
        c.sort_unstable();
        c.dedup();
        b.commit(args, stream).unwrap();
        c
    }

    #[test]
    fn candidates_follow_conflicts_alone() {
        use Direction::*;
        let mut b = Builder::new(16, 64, 0).unwrap();
        let x = b.add_tensor(4, &[8, 8]).unwrap();
        let y = b.add_tensor(4, &[8, 8]).unwrap();
        let t0 = |d| arg(x, [0, 0], [4, 4], d);
        assert_eq!(task(&mut b, &[t0(Out)], 0), Vec::<u32>::new());
        // Read after write.
        assert_eq!(task(&mut b, &[t0(In)], 0), vec![0]);
        // Another tile, another tensor: no conflict.
        assert_eq!(
            task(
                &mut b,
                &[arg(x, [4, 4], [4, 4], In), arg(y, [0, 0], [4, 4], Out)],
                0
            ),
            Vec::<u32>::new()
        );
        // Write after read and after write; the reader of the other tile is not one.
        assert_eq!(task(&mut b, &[t0(InOut)], 0), vec![0, 1]);
        // A read of the whole tensor meets both writers of the first tile: the newer (task 3)
        // does not contain the read, so the walk goes on to task 0.
        assert_eq!(task(&mut b, &[arg(x, [0, 0], [8, 8], In)], 0), vec![0, 3]);
        assert_eq!(b.next_seq(), 5);
    }

    #[test]
    fn the_window_bounds_candidates_and_entries() {
        use Direction::*;
        let w = 4u32;
        let mut b = Builder::new(w, 4 * w, 0).unwrap();
        let x = b.add_tensor(4, &[64, 8]).unwrap();
        let tile = |i: i64, d| arg(x, [8 * (i % 8), 0], [8, 8], d);
        for i in 0..200i64 {
            // Each task reads the tile written 3 tasks before (inside the window) and the one
            // written 5 before (outside: it retired before this task is admitted).
            let c = task(&mut b, &[tile(i, Out), tile(i + 5, In), tile(i + 3, In)], 0);
            let mut want = vec![];
            if i >= 5 {
                // tile(i + 3) is tile(i − 5): written 5 tasks ago, outside the window.
                assert!(!c.contains(&((i - 5) as u32)), "task {i}: {c:?}");
            }
            if i >= 3 {
                // tile(i + 5) is tile(i − 3): written 3 tasks ago.
                want.push((i - 3) as u32);
            }
            assert_eq!(c, want, "task {i}");
            // The map holds the entries of the window's tasks only.
            assert!(
                b.tmap.used() <= 3 * w,
                "task {i}: {} entries",
                b.tmap.used()
            );
        }
        assert_eq!(b.entries_from(b.next_seq() - w as u64), 3 * w as u64);
    }

    #[test]
    fn streams_chain_their_tasks_inside_the_window() {
        let mut b = Builder::new(3, 8, 2).unwrap();
        assert_eq!(task(&mut b, &[], 0), Vec::<u32>::new());
        assert_eq!(task(&mut b, &[], 1), Vec::<u32>::new());
        assert_eq!(task(&mut b, &[], 0), vec![0]);
        assert_eq!(task(&mut b, &[], 1), vec![1]);
        assert_eq!(task(&mut b, &[], 1), vec![3]);
        // Stream 0's last task (2) is 3 submissions older than task 5: it has retired.
        assert_eq!(task(&mut b, &[], 0), Vec::<u32>::new());
    }

    #[test]
    fn bad_input_is_an_api_error() {
        assert!(Builder::new(0, 8, 0).is_err());
        assert!(Builder::new(8, 0, 0).is_err());
        let mut b = Builder::new(8, 8, 0).unwrap();
        assert!(b.add_tensor(0, &[4]).is_err());
        assert!(b.add_tensor(4, &[0, 4]).is_err());
        let x = b.add_tensor(4, &[4, 4]).unwrap();
        let bad = [
            arg(TensorId(7), [0, 0], [1, 1], Direction::In),
            arg(x, [2, 2], [4, 4], Direction::In),
        ];
        for a in bad {
            assert!(matches!(b.prepare(&[a], 0), Err(RuntimeError::Api(_))));
        }
        // Nothing was committed.
        assert_eq!(b.next_seq(), 0);
        b.free_tensor(x.0);
        let a = arg(x, [0, 0], [1, 1], Direction::In);
        assert!(b.prepare(&[a], 0).is_err());
        // The window's entries overflow a small pool: refused, not overwritten.
        let mut b = Builder::new(4, 6, 0).unwrap();
        let x = b.add_tensor(4, &[8, 8]).unwrap();
        let two = [
            arg(x, [0, 0], [4, 4], Direction::In),
            arg(x, [4, 4], [4, 4], Direction::Out),
        ];
        for _ in 0..3 {
            b.prepare(&two, 0).unwrap();
            b.commit(&two, 0).unwrap();
        }
        b.prepare(&two, 0).unwrap();
        let e = b.commit(&two, 0).unwrap_err();
        assert!(e.to_string().contains("raise tensormap_pool"), "{e}");
        assert_eq!(b.next_seq(), 3);
    }
}

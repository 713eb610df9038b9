//! The floor of the runtime's design: a minimal engine that computes the same `total_cycles`
//! and edges as [`wsp_runtime::Runtime`] for the LLaMA layer pattern and the empty-kernel
//! graphs (the bench checks both), with nothing they do not need — one-cell tile regions only
//! (checked), work stealing, FIFO ready queues, immediate issue, no validation beyond the tile
//! check, no statistics, no backpressure but the task window, no traces, no kernel runs. Not a
//! runtime: it panics on anything else.
//!
//! It comes in two halves, so that construction can run on one core and the simulation on
//! another:
//! - [`Build`] is graph construction with dependency inference. It reads nothing of the
//!   simulation: for each task it lists every earlier task *inside the window* whose entry in
//!   the tensor map the task depends on (its candidates). A producer `task_window` or more
//!   tasks older cannot be pending (the window admitted this task only after it retired), so
//!   the builder drops its entries by sequence arithmetic alone.
//! - [`Sim`] is the discrete-event simulation. It admits each built task at its semantic
//!   submission time, keeps the candidates that have not completed by then (those are the
//!   edges, the same set the runtime finds), and runs a core-end and a completion event per
//!   task on a heap and a FIFO.
//!
//! [`Floor`] runs both on one thread, task by task; [`Split`] runs the builder on the calling
//! thread and the simulation on a second one, joined by a single-producer, single-consumer ring
//! of built tasks. Both give the same cycles and edges as the runtime (the bench asserts it).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::Arc;
use wsp_runtime::{Arch, Arg, CoreClass, Region, TensorId};

const NIL: u32 = u32::MAX;

#[derive(Clone, Copy, Default)]
struct Ten {
    dims: [i64; 2],
    shift: [u32; 2],
    buckets: [u64; 2],
    b1_bits: u32,
    /// Write entries of this tensor inside the window.
    writers: u32,
    init: bool,
}

/// A tensor-map entry: chain link (older), task, tensor << 1 | write, cell.
#[derive(Clone, Copy, Default)]
struct Entry {
    next: u32,
    task: u32,
    tw: u32,
    cell: u32,
}

/// Graph construction with dependency inference: appends each task to `out` as its duration,
/// `class | candidates << 1`, then its candidate producers' sequence numbers.
pub struct Build {
    mask: u64,
    next: u64,
    tens: Vec<Ten>,
    table: Vec<u32>,
    hshift: u32,
    entries: Vec<Entry>,
    emask: u32,
    tail: u32,
    alloc: u32,
    /// Each in-window task's first entry.
    firsts: Vec<u32>,
    acc: Vec<(u32, u32, u32, bool)>,
    arch: Arch,
    io: Vec<(u8, u64, u64, u64)>,
}

impl Build {
    pub fn new(arch: Arch, window: u64) -> Build {
        assert!(window.is_power_of_two());
        Build {
            mask: window - 1,
            next: 0,
            tens: Vec::new(),
            table: vec![NIL; 4 * window as usize],
            hshift: 64 - (2 * window).trailing_zeros(),
            entries: vec![Entry::default(); 8 * window as usize],
            emask: 8 * window as u32 - 1,
            tail: 0,
            alloc: 0,
            firsts: vec![0; window as usize],
            acc: Vec::new(),
            arch,
            io: vec![(u8::MAX, 0, 0, 0); 64],
        }
    }

    pub fn tensor(&mut self, rows: i64, cols: i64) -> TensorId {
        self.tens.push(Ten {
            dims: [rows, cols],
            ..Ten::default()
        });
        TensorId(self.tens.len() as u32 - 1)
    }

    fn live(&self, g: u32) -> bool {
        g.wrapping_sub(self.tail) < self.alloc.wrapping_sub(self.tail)
    }

    fn head_of(&self, t: u32, cell: u32) -> usize {
        let k = (t as u64) << 40 ^ cell as u64;
        ((k.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> self.hshift) << 1) as usize
    }

    /// The region's grid cell (the grid comes from the tensor's first region).
    #[inline(always)]
    fn cell(&mut self, r: &Region) -> (u32, u32) {
        let t = r.tensor.0;
        let g = &mut self.tens[t as usize];
        if !g.init {
            g.init = true;
            for d in 0..2 {
                let e = r.extents[d];
                assert!(e.count_ones() == 1, "the floor takes power-of-two tiles");
                g.shift[d] = e.trailing_zeros();
                g.buckets[d] = ((g.dims[d] + e - 1) / e) as u64;
            }
            g.b1_bits = 64 - (g.buckets[1] - 1).leading_zeros();
        }
        let b0 = (r.offsets[0] >> g.shift[0]) as u64;
        let b1 = (r.offsets[1] >> g.shift[1]) as u64;
        let one_cell = r.rank == 2
            && b0 < g.buckets[0]
            && b1 < g.buckets[1]
            && (b0 << g.shift[0]) as i64 == r.offsets[0]
            && (b1 << g.shift[1]) as i64 == r.offsets[1]
            && r.extents[0] == 1 << g.shift[0]
            && r.extents[1] == 1 << g.shift[1];
        assert!(one_cell, "the floor takes one-cell regions only");
        (t, (b0 << g.b1_bits | b1) as u32)
    }

    /// Walks a chain newest first, appending matches to `out`; writers: stops at the first
    /// match (a cell contains itself) and returns its task; readers: stops at tasks older than
    /// `stop`.
    fn walk(
        &self,
        out: &mut Vec<u32>,
        h: usize,
        tw: u32,
        cell: u32,
        readers: bool,
        stop: u32,
    ) -> u32 {
        let mut g = self.table[h];
        while self.live(g) {
            let e = self.entries[(g & self.emask) as usize];
            if readers && stop != NIL && (e.task.wrapping_sub(stop) as i32) < 0 {
                return NIL;
            }
            if e.tw == tw && e.cell == cell && e.task != stop {
                out.push(e.task);
                if !readers {
                    return e.task;
                }
            }
            g = e.next;
        }
        NIL
    }

    /// Builds a task of the vector (`cube` false) or cube class into `out`.
    pub fn submit(&mut self, out: &mut Vec<u32>, cube: bool, args: &[Arg], cycles: u64) {
        let seq = self.next;
        let w = self.mask + 1;
        if seq >= w {
            // Task seq - window has retired before this one is admitted: its entries go.
            let old = ((seq - w) & self.mask) as usize;
            let end = if w == 1 {
                self.alloc
            } else {
                self.firsts[((seq - w + 1) & self.mask) as usize]
            };
            let mut g = self.firsts[old];
            while g != end {
                let en = self.entries[(g & self.emask) as usize];
                self.tens[(en.tw >> 1) as usize].writers -= en.tw & 1;
                g = g.wrapping_add(1);
            }
            self.tail = end;
        }
        self.firsts[(seq & self.mask) as usize] = self.alloc;
        let at = out.len();
        out.extend([0, 0]);
        self.acc.clear();
        let (mut ib, mut ob) = (0u64, 0u64);
        for a in args {
            let (t, cell) = self.cell(&a.region);
            let w = a.dir.writes();
            let b = (a.region.extents[0] * a.region.extents[1]) as u64 * 2;
            ib += if a.dir.reads() { b } else { 0 };
            ob += if w { b } else { 0 };
            let h = self.head_of(t, cell);
            self.acc.push((t, cell, h as u32, w));
            if !w && self.tens[t as usize].writers == 0 {
                continue;
            }
            let stop = self.walk(out, h + 1, t << 1 | 1, cell, false, NIL);
            if w {
                self.walk(out, h, t << 1, cell, true, stop);
            }
        }
        let class = cube as u8;
        let k = ((ib ^ ob.rotate_left(29)).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 58) as usize;
        let io = match self.io[k] {
            (c, i, o, v) if c == class && i == ib && o == ob => v,
            _ => {
                let cl = if cube {
                    CoreClass::Cube
                } else {
                    CoreClass::Vector
                };
                let v = self.arch.task_io_cycles(cl, ib, ob).expect("io cycles");
                self.io[k] = (class, ib, ob, v);
                v
            }
        };
        out[at] = u32::try_from(cycles + io).expect("a short task");
        out[at + 1] = class as u32 | ((out.len() - at - 2) as u32) << 1;
        self.next += 1;
        for i in 0..self.acc.len() {
            let (t, cell, h, w) = self.acc[i];
            let h = h as usize + w as usize;
            let g = self.alloc;
            assert!(
                self.alloc.wrapping_sub(self.tail) <= self.emask,
                "the floor's entries overflow"
            );
            self.entries[(g & self.emask) as usize] = Entry {
                next: self.table[h],
                task: seq as u32,
                tw: t << 1 | w as u32,
                cell,
            };
            self.table[h] = g;
            self.alloc = g.wrapping_add(1);
            self.tens[t as usize].writers += w as u32;
        }
    }
}

#[derive(Clone, Copy)]
struct Slot {
    dur: u32,
    preds_left: u32,
    succ: u32,
    class: u8,
    core: u8,
    done: bool,
}

#[derive(Clone, Copy)]
struct Timed {
    t: u64,
    order: u64,
    seq: u64,
}

struct Class {
    queue: VecDeque<u64>,
    idle: u64,
}

/// The discrete-event simulation of built tasks.
pub struct Sim {
    ring: Vec<Slot>,
    mask: u64,
    head: u64,
    next: u64,
    edges: Vec<(u32, u32)>,
    edge_free: u32,
    heap: Vec<Timed>,
    fifo: VecDeque<(u64, u64, u64)>,
    order: u64,
    now: u64,
    classes: [Class; 2],
    due: bool,
    deps: Vec<u32>,
    dispatch: u64,
    resolve: u64,
    pub makespan: u64,
    pub edges_total: u64,
}

impl Sim {
    /// A simulation over `arch` (its vector and cube cores, at most 64 each) with a task window
    /// of `window` (a power of two).
    pub fn new(arch: &Arch, window: u64) -> Sim {
        let cores = |c: CoreClass| {
            let n = arch.core_count(c) as usize;
            assert!(
                (1..=64).contains(&n),
                "the floor models up to 64 cores a class"
            );
            u64::MAX >> (64 - n)
        };
        let (vector, cube) = (cores(CoreClass::Vector), cores(CoreClass::Cube));
        let o = arch.overheads;
        Sim {
            ring: vec![
                Slot {
                    dur: 0,
                    preds_left: 0,
                    succ: NIL,
                    class: 0,
                    core: 0,
                    done: true,
                };
                window as usize
            ],
            mask: window - 1,
            head: 0,
            next: 0,
            edges: Vec::new(),
            edge_free: NIL,
            heap: Vec::new(),
            fifo: VecDeque::new(),
            order: 0,
            now: 0,
            classes: [
                Class {
                    queue: VecDeque::new(),
                    idle: vector,
                },
                Class {
                    queue: VecDeque::new(),
                    idle: cube,
                },
            ],
            due: false,
            deps: Vec::new(),
            dispatch: o.dispatch,
            resolve: o.complete + o.resolve,
            makespan: 0,
            edges_total: 0,
        }
    }

    /// Admits one built task (`rec`: duration, class and count, candidates) once the window
    /// has room for it; its edges are the candidates still pending then.
    pub fn admit(&mut self, rec: &[u32]) {
        let seq = self.next;
        while seq - self.head > self.mask {
            assert!(self.advance(), "the window cannot drain");
        }
        self.deps.clear();
        for &c in &rec[2..] {
            if !self.ring[(c as u64 & self.mask) as usize].done {
                self.deps.push(c);
            }
        }
        if self.deps.len() > 1 {
            let h = self.head as u32;
            self.deps.sort_unstable_by_key(|d| d.wrapping_sub(h));
            self.deps.dedup();
        }
        let class = (rec[1] & 1) as u8;
        self.ring[(seq & self.mask) as usize] = Slot {
            dur: rec[0],
            preds_left: self.deps.len() as u32,
            succ: NIL,
            class,
            core: 0,
            done: false,
        };
        self.next += 1;
        for i in 0..self.deps.len() {
            let ps = (self.deps[i] as u64 & self.mask) as usize;
            let e = (seq as u32, self.ring[ps].succ);
            let id = if self.edge_free != NIL {
                let id = self.edge_free;
                self.edge_free = self.edges[id as usize].1;
                self.edges[id as usize] = e;
                id
            } else {
                self.edges.push(e);
                self.edges.len() as u32 - 1
            };
            self.ring[ps].succ = id;
        }
        self.edges_total += self.deps.len() as u64;
        if self.deps.is_empty() {
            self.classes[class as usize].queue.push_back(seq);
            self.due = true;
        }
        if self.due {
            self.dispatch();
        }
    }

    fn dispatch(&mut self) {
        self.due = false;
        for ci in 0..2 {
            loop {
                let c = &mut self.classes[ci];
                if c.idle == 0 {
                    break;
                }
                let Some(seq) = c.queue.pop_front() else {
                    break;
                };
                let k = c.idle.trailing_zeros();
                c.idle &= !(1 << k);
                let s = &mut self.ring[(seq & self.mask) as usize];
                s.core = k as u8;
                let end = self.now + self.dispatch + s.dur as u64;
                self.push(end, seq);
            }
        }
    }

    fn push(&mut self, t: u64, seq: u64) {
        self.order += 1;
        let x = Timed {
            t,
            order: self.order,
            seq,
        };
        let h = &mut self.heap;
        let mut i = h.len();
        h.push(x);
        while i > 0 {
            let p = (i - 1) / 2;
            if (h[p].t, h[p].order) <= (t, x.order) {
                break;
            }
            h[i] = h[p];
            i = p;
        }
        h[i] = x;
    }

    fn pop_heap(&mut self) -> Timed {
        let h = &mut self.heap;
        let last = h.pop().expect("an event");
        let Some(&top) = h.first() else {
            return last;
        };
        let n = h.len();
        let mut i = 0;
        loop {
            let mut c = 2 * i + 1;
            if c >= n {
                break;
            }
            if c + 1 < n && (h[c + 1].t, h[c + 1].order) < (h[c].t, h[c].order) {
                c += 1;
            }
            if (last.t, last.order) <= (h[c].t, h[c].order) {
                break;
            }
            h[i] = h[c];
            i = c;
        }
        h[i] = last;
        top
    }

    /// Handles every event at the earliest time, then dispatches. False when none is pending.
    pub fn advance(&mut self) -> bool {
        let mut at = None;
        loop {
            let h = self.heap.first().map(|x| (x.t, x.order));
            let f = self.fifo.front().map(|x| (x.0, x.2));
            let (t, from_heap) = match (h, f) {
                (Some(a), Some(b)) if a <= b => (a.0, true),
                (Some(a), None) => (a.0, true),
                (_, Some(b)) => (b.0, false),
                (None, None) => break,
            };
            match at {
                None => {
                    at = Some(t);
                    self.now = t;
                }
                Some(t0) if t > t0 => break,
                _ => {}
            }
            if from_heap {
                // The core ends the task: it is free, and the completion is handled later.
                let x = self.pop_heap();
                self.makespan = x.t;
                let s = self.ring[(x.seq & self.mask) as usize];
                self.classes[s.class as usize].idle |= 1 << s.core;
                self.order += 1;
                self.fifo.push_back((x.t + self.resolve, x.seq, self.order));
                self.due = true;
            } else {
                let (_, seq, _) = self.fifo.pop_front().expect("an event");
                self.complete(seq);
            }
        }
        if at.is_none() {
            return false;
        }
        if self.due {
            self.dispatch();
        }
        true
    }

    fn complete(&mut self, seq: u64) {
        let si = (seq & self.mask) as usize;
        self.ring[si].done = true;
        let mut e = std::mem::replace(&mut self.ring[si].succ, NIL);
        if e != NIL {
            let list = e;
            loop {
                let (succ, next) = self.edges[e as usize];
                let s = &mut self.ring[(succ as u64 & self.mask) as usize];
                s.preds_left -= 1;
                if s.preds_left == 0 {
                    let c = s.class as usize;
                    let succ = self.head + succ.wrapping_sub(self.head as u32) as u64;
                    self.classes[c].queue.push_back(succ);
                    self.due = true;
                }
                if next == NIL {
                    break;
                }
                e = next;
            }
            self.edges[e as usize].1 = self.edge_free;
            self.edge_free = list;
        }
        if seq == self.head {
            while self.head < self.next && self.ring[(self.head & self.mask) as usize].done {
                self.head += 1;
            }
        }
    }

    /// Runs every event; the makespan is then the run's `total_cycles`.
    pub fn finish(&mut self) {
        while self.advance() {}
    }
}

/// Both halves on one thread, task by task.
pub struct Floor {
    build: Build,
    sim: Sim,
    rec: Vec<u32>,
}

impl Floor {
    pub fn new(arch: Arch, window: u64) -> Floor {
        Floor {
            sim: Sim::new(&arch, window),
            build: Build::new(arch, window),
            rec: Vec::new(),
        }
    }

    pub fn tensor(&mut self, rows: i64, cols: i64) -> TensorId {
        self.build.tensor(rows, cols)
    }

    pub fn submit(&mut self, cube: bool, args: &[Arg], cycles: u64) {
        self.rec.clear();
        self.build.submit(&mut self.rec, cube, args, cycles);
        self.sim.admit(&self.rec);
    }

    /// Runs every event: the run's `total_cycles` and edges.
    pub fn finish(mut self) -> (u64, u64) {
        self.sim.finish();
        (self.sim.makespan, self.sim.edges_total)
    }
}

/// A bounded single-producer, single-consumer ring of `u32` words. Each side publishes its
/// position in batches, and the producer publishes only whole records.
struct Ring {
    words: Box<[AtomicU32]>,
    mask: usize,
    written: Padded,
    read: Padded,
}

#[repr(align(128))]
struct Padded(AtomicUsize);

const BATCH: usize = 256;
const END: u32 = u32::MAX;

fn wait(spins: &mut u32) {
    *spins += 1;
    if *spins < 64 {
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}

/// The builder on the calling thread, the simulation on a second one.
pub struct Split {
    build: Build,
    ring: Arc<Ring>,
    rec: Vec<u32>,
    w: usize,
    published: usize,
    read_seen: usize,
    sim: Option<std::thread::JoinHandle<(u64, u64)>>,
}

impl Split {
    pub fn new(arch: Arch, window: u64) -> Split {
        let words = 1 << 16;
        let ring = Arc::new(Ring {
            words: (0..words).map(|_| AtomicU32::new(0)).collect(),
            mask: words - 1,
            written: Padded(AtomicUsize::new(0)),
            read: Padded(AtomicUsize::new(0)),
        });
        let mut sim = Sim::new(&arch, window);
        let r = ring.clone();
        let handle = std::thread::spawn(move || {
            let (mut pos, mut seen, mut rec) = (0usize, 0usize, Vec::new());
            let mut spins = 0;
            loop {
                if pos == seen {
                    r.read.0.store(pos, Ordering::Release);
                    loop {
                        seen = r.written.0.load(Ordering::Acquire);
                        if seen != pos {
                            break;
                        }
                        wait(&mut spins);
                    }
                    spins = 0;
                }
                let word = |i: usize| r.words[i & r.mask].load(Ordering::Relaxed);
                let dur = word(pos);
                if dur == END {
                    break;
                }
                let meta = word(pos + 1);
                let n = (meta >> 1) as usize;
                rec.clear();
                rec.extend((0..n + 2).map(|i| word(pos + i)));
                pos += n + 2;
                sim.admit(&rec);
                if pos & (BATCH - 1) < n + 2 {
                    r.read.0.store(pos, Ordering::Release);
                }
            }
            sim.finish();
            (sim.makespan, sim.edges_total)
        });
        Split {
            build: Build::new(arch, window),
            ring,
            rec: Vec::new(),
            w: 0,
            published: 0,
            read_seen: 0,
            sim: Some(handle),
        }
    }

    pub fn tensor(&mut self, rows: i64, cols: i64) -> TensorId {
        self.build.tensor(rows, cols)
    }

    fn put(&mut self, words: &[u32]) {
        let cap = self.ring.mask + 1;
        if self.w + words.len() - self.read_seen > cap {
            self.publish();
            let mut spins = 0;
            while self.w + words.len() - self.read_seen > cap {
                wait(&mut spins);
                self.read_seen = self.ring.read.0.load(Ordering::Acquire);
            }
        }
        for (i, &x) in words.iter().enumerate() {
            self.ring.words[(self.w + i) & self.ring.mask].store(x, Ordering::Relaxed);
        }
        self.w += words.len();
        if self.w - self.published >= BATCH {
            self.publish();
        }
    }

    fn publish(&mut self) {
        self.ring.written.0.store(self.w, Ordering::Release);
        self.published = self.w;
    }

    pub fn submit(&mut self, cube: bool, args: &[Arg], cycles: u64) {
        let mut rec = std::mem::take(&mut self.rec);
        rec.clear();
        self.build.submit(&mut rec, cube, args, cycles);
        self.put(&rec);
        self.rec = rec;
    }

    /// Ends the stream and waits for the simulation: the run's `total_cycles` and edges.
    pub fn finish(mut self) -> (u64, u64) {
        self.put(&[END]);
        self.publish();
        self.sim
            .take()
            .expect("one finish")
            .join()
            .expect("the simulation thread")
    }
}

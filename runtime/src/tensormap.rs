//! The tensor map: which in-flight task wrote, or reads, which region of a tensor.
//!
//! Layout, chosen so that a submission touches a handful of cache lines and memory depends on
//! the live entries only (not on tensor shapes or the task count):
//! - Each tensor gets a 2-D bucket grid over its dimensions 0 and 1, sized from the first
//!   region seen (the tile shape). The grid costs no memory (buckets live in one shared hash
//!   table of chain heads, keyed by tensor, bucket and reader/writer), so it is as fine as that
//!   region. A region argument becomes one entry per bucket it touches (at most
//!   [`WIDE_SPAN`]); a region spanning more buckets becomes one entry in its tensor's wide
//!   chain. A scan whose region spans more buckets than there are live entries walks the
//!   entries instead.
//! - Entries are numbered by a 32-bit *generation* in allocation order, which is submission
//!   order, and live in chunks of [`CHUNK`] indexed by generation. A chain links generations,
//!   newest first. Entries are freed in order when their task retires, so the live entries are
//!   exactly the generations in `[tail, alloc)`: a link outside that range is stale, and so is
//!   everything after it in its chain (older still), so a walk ends there; no entry is ever
//!   unlinked. A link is never more than 2^31 generations old when it is read (heads are swept
//!   every [`SWEEP_EVERY`] allocations, and an entry lives for fewer than [`MAX_POOL`]), so a
//!   stale one never passes for live after the 32-bit wrap.
//! - A scan walks newest first and stops early: once it meets a writer whose region contains
//!   the scanned one, every older conflicting entry is ordered before that writer (it overlaps
//!   it, and that writer's own scan ordered it), so it needs no edge of its own.
//! - Entries are 16 bytes: chain link, task, tensor and flags, and the region as its bucket
//!   cell when it is exactly one cell of the grid (the usual tile; a region of higher rank
//!   also has to be whole along its other dimensions). Other dense regions of rank
//!   ≤ 2 with `i32` coordinates live in a side table of 16-byte compact forms, the rest (larger
//!   ranks, strides, larger coordinates) in a side table of full regions.

use crate::api::{Region, MAX_RANK};
use crate::region::{covers, overlaps, progressions_meet};

/// Buckets per tensor at most (keeps bucket arithmetic far from overflow).
const MAX_BUCKETS: i64 = 1 << 40;
/// Regions spanning more buckets than this go to the tensor's wide chain.
pub(crate) const WIDE_SPAN: i64 = 4;
/// Entries per storage chunk.
pub(crate) const CHUNK: usize = 64;
const CHUNK_BITS: u32 = CHUNK.trailing_zeros();
/// The largest tensor-map pool: generations of live entries and their links stay far from the
/// 32-bit wrap.
pub const MAX_POOL: u32 = 1 << 24;
/// Chain heads are checked for staleness this often (in allocations), long before a stale
/// head's generation could come round again.
const SWEEP_EVERY: u32 = 1 << 30;
/// Tensor ids fit in an entry beside its flags.
pub(crate) const MAX_TENSORS: u32 = 1 << 28;

const F_WRITE: u32 = 1;
/// The first entry of its argument (it alone frees the argument's side-table region).
const F_PRIMARY: u32 = 2;
/// The region is a compact form in `smalls` (`d[0]` is its index).
const F_SMALL: u32 = 4;
/// The region is in `bigs` (`d[0]` is its index).
const F_BIG: u32 = 8;
const F_BITS: u32 = 4;
/// Flags that do not take part in matching an entry to a scan.
const F_REPR: u32 = F_PRIMARY | F_SMALL | F_BIG;

#[derive(Clone, Copy, Default)]
struct Geo {
    rank: u8,
    init: bool,
    /// Bucket size along dimensions 0 and 1 (a power of two gives a shift).
    bsize: [i64; 2],
    shift: [u32; 2],
    nb: [i64; 2],
    /// Extents of dimensions 0 and 1 (1 past the rank).
    dims: [i64; 2],
    /// Extents of dimensions 2 on (1 past the rank): a region whole along them and one cell
    /// of the grid along dimensions 0 and 1 is a cell too.
    rest: [i64; MAX_RANK - 2],
    /// Bits of a cell's bucket index along dimension 1 (the low bits of `Entry::d`).
    b1_bits: u32,
    /// The sequence number of the newest task that writes the tensor, plus 1 (0: none has):
    /// a read skips the scan when that task is older than any that may still be pending.
    last_write: u64,
    /// Rank 2 or more with power-of-two buckets whose cells fit an entry: [`TensorMap::tile`]
    /// applies.
    tiled: bool,
    /// With `tiled`: the bucket size less 1 along dimensions 0 and 1, and how many offsets
    /// there start a whole (unclipped) bucket inside the tensor, counted from 0 (0 when none
    /// does or the grid is not tiled): the interior cells' cheap test.
    mask: [i64; 2],
    inner: [u64; 2],
    /// An entry has gone to the tensor's wide chains (since it was declared): only then do
    /// scans look at them.
    wide: bool,
}

#[derive(Clone, Copy, Default)]
struct Entry {
    /// The next (older) entry of the chain, by generation.
    next: u32,
    /// The task's sequence number (low 32 bits).
    task: u32,
    /// Tensor id << `F_BITS` | flags.
    tf: u32,
    /// The bucket cell that is the region (bucket 0 << `Geo::b1_bits` | bucket 1), or
    /// (`F_SMALL`, `F_BIG`) the region's index in its side table.
    d: u32,
}

/// A region argument as the map sees it, worked out once for its scan and its insert (small:
/// one per argument is kept while the task is submitted). The bucket rectangle of a region
/// spanning several buckets is worked out again where needed.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Access {
    t: u32,
    /// With one bucket: its table pair (readers at `slot`, writers at `slot + 1`).
    slot: u32,
    /// The region as a grid cell (`u32::MAX`: it is not one).
    cell: u32,
    /// Buckets spanned (saturating).
    n: u32,
    write: bool,
}

/// The writer entry that contains a scanned region: older entries are ordered before it.
#[derive(Clone, Copy)]
struct Stop {
    /// Its task (low 32 bits of the sequence number) and its generation.
    task: u32,
    gen: u32,
}

/// A chain head: a hash-table slot, or a tensor's wide chain (`[readers, writers]`).
#[derive(Clone, Copy)]
enum Head {
    Table(usize),
    Wide(usize, usize),
}

pub(crate) struct TensorMap {
    geo: Vec<Geo>,
    table: Vec<u32>,
    /// 64 − log2(pairs of heads): a multiplicative hash's top bits pick the pair.
    hshift: u32,
    wide: Vec<[u32; 2]>,
    /// Storage by generation: chunk `(gen >> CHUNK_BITS) & cmask`; chunks of retired
    /// generations are freed (one is kept for reuse).
    chunks: Vec<Box<[Entry]>>,
    cmask: u32,
    spare: Option<Box<[Entry]>>,
    tail: u32,
    alloc: u32,
    /// Compact regions (offset 0, extent 0, offset 1, extent 1) and full ones, by index.
    smalls: Vec<[i32; 4]>,
    small_free: Vec<u32>,
    bigs: Vec<Region>,
    big_free: Vec<u32>,
    /// Live entries with a side-table region.
    nside: u32,
    /// `alloc` at the last sweep of stale heads.
    swept: u32,
}

/// The compact form of a dense rank ≤ 2 region whose coordinates fit `i32`.
fn compact(r: &Region) -> Option<[i32; 4]> {
    if r.rank > 2 {
        return None;
    }
    let mut d = [0i32, 1, 0, 1];
    for k in 0..r.rank as usize {
        if r.strides[k] != 1 && r.extents[k] != 1 {
            return None;
        }
        d[2 * k] = i32::try_from(r.offsets[k]).ok()?;
        d[2 * k + 1] = i32::try_from(r.extents[k]).ok()?;
        i32::try_from(r.offsets[k] + r.extents[k]).ok()?;
    }
    Some(d)
}

impl TensorMap {
    /// A map for `pool` live entries (at most [`MAX_POOL`]).
    pub(crate) fn new(pool: u32) -> TensorMap {
        let pool = pool.clamp(1, MAX_POOL);
        // A head per pool entry (a reader and a writer head per two): keys that share a pair
        // of heads walk each other's entries, and at half a head per entry that was 40% of the
        // steps of a graph that fits its window (8 bytes more per in-flight task).
        let size = (pool as usize).next_power_of_two().max(128);
        let nchunks = (pool as usize / CHUNK + 2).next_power_of_two();
        TensorMap {
            geo: Vec::new(),
            table: vec![u32::MAX; size],
            hshift: 64 - (size as u64 / 2).trailing_zeros(),
            wide: Vec::new(),
            chunks: (0..nchunks).map(|_| Box::default()).collect(),
            cmask: nchunks as u32 - 1,
            spare: None,
            tail: 0,
            alloc: 0,
            smalls: Vec::new(),
            small_free: Vec::new(),
            bigs: Vec::new(),
            big_free: Vec::new(),
            nside: 0,
            swept: 0,
        }
    }

    /// Live entries (what the pool limits).
    #[inline]
    pub(crate) fn used(&self) -> u32 {
        self.alloc.wrapping_sub(self.tail)
    }

    /// Whether generation `to` is after the oldest live entry and not after the next to be
    /// allocated: [`TensorMap::retire_to`] it frees something.
    #[inline]
    pub(crate) fn is_ahead(&self, to: u32) -> bool {
        to != self.tail && to.wrapping_sub(self.tail) <= self.used()
    }

    /// The generation the next entry gets.
    #[inline]
    pub(crate) fn next_gen(&self) -> u32 {
        self.alloc
    }

    /// (Re)declares tensor `t` of `rank`: no grid yet. The caller guarantees that no live
    /// entry names `t`.
    pub(crate) fn add_tensor(&mut self, t: u32, rank: usize) {
        let i = t as usize;
        if self.geo.len() <= i {
            self.geo.resize(i + 1, Geo::default());
            self.wide.resize(i + 1, [u32::MAX; 2]);
        }
        self.geo[i] = Geo {
            rank: rank as u8,
            ..Geo::default()
        };
        let stale = self.tail.wrapping_sub(1);
        self.wide[i] = [stale; 2];
    }

    /// A live entry that writes tensor `t` for a task that is `pending` (its task, as the low
    /// 32 bits of its sequence number). A walk over every live entry: for waits, not for
    /// submission.
    pub(crate) fn pending_writer(&self, t: u32, pending: impl Fn(u32) -> bool) -> Option<u32> {
        let mut g = self.tail;
        while g != self.alloc {
            let e = self.entry(g);
            if e.tf >> F_BITS == t && e.tf & F_WRITE != 0 && pending(e.task) {
                return Some(e.task);
            }
            g = g.wrapping_add(1);
        }
        None
    }

    #[inline(always)]
    fn live(&self, g: u32) -> bool {
        g.wrapping_sub(self.tail) < self.alloc.wrapping_sub(self.tail)
    }

    #[inline(always)]
    fn entry(&self, g: u32) -> &Entry {
        &self.chunks[((g >> CHUNK_BITS) & self.cmask) as usize][g as usize & (CHUNK - 1)]
    }

    #[inline(always)]
    fn entry_mut(&mut self, g: u32) -> &mut Entry {
        &mut self.chunks[((g >> CHUNK_BITS) & self.cmask) as usize][g as usize & (CHUNK - 1)]
    }

    #[inline(always)]
    fn head(&self, h: Head) -> u32 {
        match h {
            Head::Table(i) => self.table[i],
            Head::Wide(t, w) => self.wide[t][w],
        }
    }

    #[inline(always)]
    fn head_mut(&mut self, h: Head) -> &mut u32 {
        match h {
            Head::Table(i) => &mut self.table[i],
            Head::Wide(t, w) => &mut self.wide[t][w],
        }
    }

    fn init_grid(&mut self, r: &Region, dims: &[i64]) {
        let g = &mut self.geo[r.tensor.0 as usize];
        let n = (g.rank as usize).min(2);
        let mut bs = [1i64; 2];
        let mut nb = [1i64; 2];
        for (d, b) in bs.iter_mut().enumerate().take(n) {
            *b = (r.last(d) - r.offsets[d] + 1).max(1);
        }
        loop {
            for ((count, size), dim) in nb.iter_mut().zip(bs).zip(dims).take(n) {
                *count = (dim + size - 1) / size;
            }
            if nb[0].saturating_mul(nb[1]) <= MAX_BUCKETS {
                break;
            }
            let d = usize::from(nb[0] < nb[1]);
            bs[d] = bs[d].saturating_mul(2);
        }
        g.bsize = bs;
        g.nb = nb;
        g.dims = [dims[0], dims.get(1).copied().unwrap_or(1)];
        g.rest = [1; MAX_RANK - 2];
        for (x, d) in g.rest.iter_mut().zip(dims.iter().skip(2)) {
            *x = *d;
        }
        g.b1_bits = 64 - ((nb[1] - 1) as u64).leading_zeros();
        g.shift = bs.map(|b| {
            if b > 0 && (b as u64).is_power_of_two() {
                b.trailing_zeros()
            } else {
                u32::MAX
            }
        });
        let top = ((nb[0] - 1) as u64) << g.b1_bits | (nb[1] - 1) as u64;
        g.tiled = g.rank >= 2 && !g.shift.contains(&u32::MAX) && top <= u32::MAX as u64;
        if g.tiled {
            g.mask = bs.map(|b| b - 1);
            g.inner = [0, 1].map(|d| (g.dims[d] - bs[d] + 1).max(0) as u64);
        }
        g.init = true;
    }

    /// One past the last index along `d` of the bucket starting at `lo` (the grid's last
    /// bucket is clipped by the tensor's edge).
    #[inline(always)]
    fn bucket_end(g: &Geo, lo: i64, d: usize) -> i64 {
        (lo + g.bsize[d]).min(g.dims[d])
    }

    /// Along `d`, `r` is exactly the bucket starting at `lo` (dense, or a single index).
    #[inline(always)]
    fn is_bucket(g: &Geo, r: &Region, lo: i64, d: usize) -> bool {
        let n = Self::bucket_end(g, lo, d) - lo;
        // A stride below 1 is malformed even where one index makes it moot.
        r.offsets[d] == lo
            && r.extents[d] == n
            && (r.strides[d] == 1 || (n == 1 && r.strides[d] > 1))
    }

    /// Along every dimension past the first two, `r` is the whole tensor (dense, or a single
    /// index of a dimension of extent 1): with one cell of the grid along the first two, it
    /// meets another such region exactly when the cells are the same.
    #[inline(always)]
    fn whole_rest(g: &Geo, r: &Region) -> bool {
        (2..(g.rank as usize).min(MAX_RANK)).all(|d| {
            r.offsets[d] == 0
                && r.extents[d] == g.rest[d - 2]
                && (r.strides[d] == 1 || (r.extents[d] == 1 && r.strides[d] > 1))
        })
    }

    /// The bucket of `r` when it is exactly one cell of a tiled grid (the usual tile): the
    /// cheap case of [`TensorMap::span`] and [`TensorMap::cell`].
    ///
    /// A cell of the grid lies inside the tensor, so a region that is one is in bounds.
    #[inline(always)]
    fn tile(g: &Geo, r: &Region) -> Option<(i64, i64)> {
        if g.rank > 2 && !Self::whole_rest(g, r) {
            return None;
        }
        // An interior cell: dense, a whole bucket, at a bucket's start, before the clipped
        // ones (`inner` is 0 unless the grid is tiled).
        let (o, e, s) = (&r.offsets, &r.extents, &r.strides);
        let off = (o[0] & g.mask[0])
            | (o[1] & g.mask[1])
            | (e[0] ^ g.bsize[0])
            | (e[1] ^ g.bsize[1])
            | (s[0] ^ 1)
            | (s[1] ^ 1);
        if off == 0 && (o[0] as u64) < g.inner[0] && (o[1] as u64) < g.inner[1] {
            return Some((o[0] >> g.shift[0], o[1] >> g.shift[1]));
        }
        Self::edge_tile(g, r)
    }

    /// [`TensorMap::tile`] for the other cells, clipped by the tensor's edge or of extent 1
    /// with a stride.
    #[inline(never)]
    fn edge_tile(g: &Geo, r: &Region) -> Option<(i64, i64)> {
        if !g.tiled {
            return None;
        }
        let b = [r.offsets[0] >> g.shift[0], r.offsets[1] >> g.shift[1]];
        let whole = |d: usize| {
            (b[d] as u64) < g.nb[d] as u64 && Self::is_bucket(g, r, b[d] << g.shift[d], d)
        };
        (whole(0) && whole(1)).then_some((b[0], b[1]))
    }

    /// The bucket rectangle of `r`: inclusive (first, last) along dimensions 0 and 1.
    #[inline(always)]
    fn span(g: &Geo, r: &Region) -> [(i64, i64); 2] {
        #[inline(always)]
        fn dim(g: &Geo, r: &Region, d: usize) -> (i64, i64) {
            let top = g.nb[d] - 1;
            let last = r.last(d);
            let (lo, hi) = if g.shift[d] != u32::MAX {
                (r.offsets[d] >> g.shift[d], last >> g.shift[d])
            } else {
                (r.offsets[d] / g.bsize[d], last / g.bsize[d])
            };
            (lo.min(top), hi.min(top))
        }
        let first = dim(g, r, 0);
        let second = if g.rank >= 2 { dim(g, r, 1) } else { (0, 0) };
        [first, second]
    }

    #[inline]
    fn count(q: &[(i64, i64); 2]) -> i64 {
        (q[0].1 - q[0].0 + 1).saturating_mul(q[1].1 - q[1].0 + 1)
    }

    /// The table slot of a bucket's readers (`w` false) or writers: the two are adjacent, so
    /// one cache line serves a task's scan of one chain and its insert into the other.
    #[inline(always)]
    fn slot_of(&self, t: u32, key: u64, w: bool) -> usize {
        let k = key ^ (t as u64) << 40;
        let pair = k.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> self.hshift;
        (pair << 1 | w as u64) as usize
    }

    /// Bucket (`b0`, `b1`) as one number: bucket 0 << `Geo::b1_bits` | bucket 1 (below 2^41;
    /// for a tiled grid below 2^32, the cell of [`Entry::d`]).
    #[inline(always)]
    fn key(g: &Geo, b0: i64, b1: i64) -> u64 {
        (b0 as u64) << g.b1_bits | b1 as u64
    }

    /// Prepares region argument `r` when it is exactly one cell of its tensor's tiled grid
    /// (the usual tile), which proves it in bounds: the caller may skip checking it. `r` has
    /// the tensor's rank.
    #[inline(always)]
    pub(crate) fn tile_access(&self, r: &Region, write: bool) -> Option<Access> {
        let t = r.tensor.0;
        let g = &self.geo[t as usize];
        let (b0, b1) = Self::tile(g, r)?;
        let key = Self::key(g, b0, b1);
        Some(Access {
            t,
            slot: self.slot_of(t, key, false) as u32,
            cell: key as u32,
            n: 1,
            write,
        })
    }

    /// Prepares region argument `r`, which is inside its tensor (`dims`: the tensor's shape;
    /// the tensor's grid comes from the first region it sees).
    #[inline(always)]
    pub(crate) fn access(&mut self, r: &Region, dims: &[i64], write: bool) -> Access {
        let t = r.tensor.0;
        if !self.geo[t as usize].init {
            self.init_grid(r, dims);
        }
        if let Some(a) = self.tile_access(r, write) {
            return a;
        }
        let g = &self.geo[t as usize];
        let q = Self::span(g, r);
        let n = Self::count(&q);
        let cell = if n == 1 {
            Self::cell(g, r, &q).unwrap_or(u32::MAX)
        } else {
            u32::MAX
        };
        Access {
            t,
            slot: self.slot_of(t, Self::key(g, q[0].0, q[1].0), false) as u32,
            cell,
            n: n.clamp(0, u32::MAX as i64) as u32,
            write,
        }
    }

    /// Entries `insert` will take for `a`.
    pub(crate) fn entries_for(a: &Access) -> u32 {
        if a.n as i64 > WIDE_SPAN {
            1
        } else {
            a.n
        }
    }

    /// The entry's region along dimensions 0 and 1 as dense intervals [lo, hi], when it has
    /// that form (bucket cells and compact regions).
    #[inline(always)]
    fn intervals(&self, g: &Geo, e: &Entry) -> Option<[(i64, i64); 2]> {
        if e.tf & F_BIG != 0 {
            return None;
        }
        if e.tf & F_SMALL != 0 {
            let [o0, n0, o1, n1] = self.smalls[e.d as usize];
            let (o0, n0, o1, n1) = (o0 as i64, n0 as i64, o1 as i64, n1 as i64);
            return Some([(o0, o0 + n0 - 1), (o1, o1 + n1 - 1)]);
        }
        let mut iv = [(0, 0); 2];
        let cell = [
            (e.d as u64 >> g.b1_bits) as i64,
            (e.d as u64 & ((1u64 << g.b1_bits) - 1)) as i64,
        ];
        for (d, v) in iv.iter_mut().enumerate() {
            let b = cell[d];
            let lo = if g.shift[d] != u32::MAX {
                b << g.shift[d]
            } else {
                b * g.bsize[d]
            };
            *v = (lo, Self::bucket_end(g, lo, d) - 1);
        }
        Some(iv)
    }

    /// (overlaps, contains): does the entry's region meet `r`, and contain all of it?
    #[inline(always)]
    fn meet(&self, e: &Entry, r: &Region) -> (bool, bool) {
        let Some(iv) = self.intervals(&self.geo[r.tensor.0 as usize], e) else {
            let b = &self.bigs[e.d as usize];
            return (overlaps(r, b), covers(b, r));
        };
        let mut cv = true;
        for (d, &(o, e_last)) in iv.iter().enumerate().take((r.rank as usize).min(2)) {
            let (a, t, m) = (r.offsets[d], r.strides[d], r.extents[d]);
            let r_last = a + (m - 1) * t;
            if t == 1 || m == 1 {
                if o > r_last || a > e_last {
                    return (false, false);
                }
            } else if !progressions_meet(a, t, m, o, 1, e_last - o + 1) {
                return (false, false);
            }
            cv &= a >= o && r_last <= e_last;
        }
        (true, cv)
    }

    /// Walks the chain at `h` newest first. Writer entries of `r`'s tensor that overlap it
    /// are pushed, and the walk stops at one that contains `r` (returning it). With
    /// `readers`, reader entries newer than the `stop` entry (of other tasks than its) are
    /// pushed too. The walk ends at a stale link, or at one older than the `stop` entry
    /// (every entry from there on is of its task or older), without reading that entry.
    #[inline(always)]
    fn walk(
        &mut self,
        h: Head,
        r: &Region,
        cell: u32,
        readers: bool,
        stop: Option<Stop>,
        out: &mut Vec<u32>,
    ) -> Option<Stop> {
        let want = r.tensor.0 << F_BITS | if readers { 0 } else { F_WRITE };
        // Links from `floor` on are live (the stop entry is live, so not older than `tail`).
        let floor = stop.map_or(self.tail, |s| s.gen);
        let span = self.alloc.wrapping_sub(floor);
        let mut g = self.head(h);
        while g.wrapping_sub(floor) < span {
            let e = *self.entry(g);
            if e.tf & !F_REPR == want {
                // Two cells of one grid meet only if they are the same cell.
                let (ov, cv) = if cell != u32::MAX && e.tf & (F_SMALL | F_BIG) == 0 {
                    (e.d == cell, e.d == cell)
                } else {
                    self.meet(&e, r)
                };
                if ov && stop.map(|s| s.task) != Some(e.task) {
                    out.push(e.task);
                    if cv && !readers {
                        return Some(Stop {
                            task: e.task,
                            gen: g,
                        });
                    }
                }
            }
            g = e.next;
        }
        None
    }

    /// The candidates access `a` of `r` must follow, pushed (as low 32 bits of their
    /// sequence numbers, possibly repeated) into `out`: live entries' tasks that write a
    /// region overlapping it, and for a write also those that read one. Older entries that a
    /// pushed writer containing `r` follows are left out: the edges order them already.
    ///
    /// The scan reads nothing of the tasks' progress: a candidate may have completed, and the
    /// caller keeps only those that have not (the edges). `oldest` is the oldest task that may
    /// still be pending; a read of a tensor no task since then writes has no candidate.
    #[inline(always)]
    pub(crate) fn deps(&mut self, a: &Access, r: &Region, oldest: u64, out: &mut Vec<u32>) {
        let (t, write) = (a.t, a.write);
        let g = &self.geo[t as usize];
        // A read meets only writers, and one older than `oldest` has completed.
        if !write && g.last_write <= oldest {
            return;
        }
        if a.n == 1 && !g.wide {
            // The usual access: one bucket's chains.
            let stop = self.walk(
                Head::Table(a.slot as usize + 1),
                r,
                a.cell,
                false,
                None,
                out,
            );
            if write {
                self.walk(Head::Table(a.slot as usize), r, a.cell, true, stop, out);
            }
            return;
        }
        self.deps_spread(a, r, out);
    }

    /// [`TensorMap::deps`] for an access over several buckets, or of a tensor with wide
    /// entries.
    #[inline(never)]
    fn deps_spread(&mut self, a: &Access, r: &Region, out: &mut Vec<u32>) {
        let (t, write) = (a.t, a.write);
        if a.n > 1 && a.n > self.used() {
            // Cheaper to look at every live entry than at every bucket (one bucket is never
            // dearer than the live entries, even none).
            let mut gen = self.tail;
            while gen != self.alloc {
                let e = *self.entry(gen);
                if e.tf >> F_BITS == t && (write || e.tf & F_WRITE != 0) && self.meet(&e, r).0 {
                    out.push(e.task);
                }
                gen = gen.wrapping_add(1);
            }
            return;
        }
        let newer = |a: Option<Stop>, b: Option<Stop>| match (a, b) {
            (Some(x), Some(y)) => Some(if (x.gen.wrapping_sub(y.gen) as i32) > 0 {
                x
            } else {
                y
            }),
            (x, y) => x.or(y),
        };
        let mut stop = if a.n == 1 {
            self.walk(
                Head::Table(a.slot as usize + 1),
                r,
                a.cell,
                false,
                None,
                out,
            )
        } else {
            let mut stop = None;
            let q = Self::span(&self.geo[t as usize], r);
            for b0 in q[0].0..=q[0].1 {
                for b1 in q[1].0..=q[1].1 {
                    let h = Head::Table(self.slot_of(
                        t,
                        Self::key(&self.geo[t as usize], b0, b1),
                        true,
                    ));
                    let s = self.walk(h, r, a.cell, false, None, out);
                    stop = newer(stop, s);
                }
            }
            stop
        };
        let wide = if self.geo[t as usize].wide {
            self.wide[t as usize]
        } else {
            [self.tail.wrapping_sub(1); 2]
        };
        if self.live(wide[1]) {
            let s = self.walk(Head::Wide(t as usize, 1), r, a.cell, false, None, out);
            stop = newer(stop, s);
        }
        if !write {
            return;
        }
        if a.n == 1 {
            self.walk(Head::Table(a.slot as usize), r, a.cell, true, stop, out);
        } else {
            let q = Self::span(&self.geo[t as usize], r);
            for b0 in q[0].0..=q[0].1 {
                for b1 in q[1].0..=q[1].1 {
                    let h = Head::Table(self.slot_of(
                        t,
                        Self::key(&self.geo[t as usize], b0, b1),
                        false,
                    ));
                    self.walk(h, r, a.cell, true, stop, out);
                }
            }
        }
        if self.live(wide[0]) {
            self.walk(Head::Wide(t as usize, 0), r, a.cell, true, stop, out);
        }
    }

    #[inline(always)]
    fn push(&mut self, e: Entry, h: Head) {
        let g = self.alloc;
        if g & (CHUNK as u32 - 1) == 0 {
            let c = self
                .spare
                .take()
                .unwrap_or_else(|| vec![Entry::default(); CHUNK].into_boxed_slice());
            self.chunks[((g >> CHUNK_BITS) & self.cmask) as usize] = c;
        }
        let next = std::mem::replace(self.head_mut(h), g);
        *self.entry_mut(g) = Entry { next, ..e };
        self.alloc = g.wrapping_add(1);
    }

    /// Resets heads that went stale when it is time to: called once per task, after its
    /// entries (at most [`MAX_POOL`] of them) went in.
    #[inline(always)]
    pub(crate) fn sweep_due(&mut self) {
        if self.alloc.wrapping_sub(self.swept) >= SWEEP_EVERY {
            self.sweep();
        }
    }

    /// Resets heads that went stale, so none lives long enough for its generation to come
    /// round again.
    #[cold]
    fn sweep(&mut self) {
        self.swept = self.alloc;
        let cut = self.tail.wrapping_sub(1);
        for i in 0..self.table.len() {
            if !self.live(self.table[i]) {
                self.table[i] = cut;
            }
        }
        for t in 0..self.wide.len() {
            for w in 0..2 {
                if !self.live(self.wide[t][w]) {
                    self.wide[t][w] = cut;
                }
            }
        }
    }

    /// Records access `a` of region `r` by task `seq`. The caller has checked that
    /// [`TensorMap::entries_for`] entries are free.
    #[inline(always)]
    pub(crate) fn insert(&mut self, a: &Access, r: &Region, seq: u64) {
        if a.cell == u32::MAX {
            return self.insert_region(a, r, seq);
        }
        // A grid cell: one entry, which holds the region.
        let write = a.write;
        if write {
            self.geo[a.t as usize].last_write = seq + 1;
        }
        let e = Entry {
            next: 0,
            task: seq as u32,
            tf: a.t << F_BITS | (write as u32 * F_WRITE) | F_PRIMARY,
            d: a.cell,
        };
        self.push(e, Head::Table(a.slot as usize + write as usize));
    }

    /// [`TensorMap::insert`] for a region that is not a grid cell.
    #[inline(never)]
    fn insert_region(&mut self, a: &Access, r: &Region, seq: u64) {
        let (t, write, task) = (a.t, a.write, seq as u32);
        let mut flags = if write { F_WRITE } else { 0 };
        let d = if let Some(c) = compact(r) {
            flags |= F_SMALL;
            self.nside += 1;
            side(&mut self.smalls, &mut self.small_free, c)
        } else {
            flags |= F_BIG;
            self.nside += 1;
            side(&mut self.bigs, &mut self.big_free, *r)
        };
        if write {
            self.geo[t as usize].last_write = seq + 1;
        }
        let mut e = Entry {
            next: 0,
            task,
            tf: t << F_BITS | flags | F_PRIMARY,
            d,
        };
        if a.n == 1 {
            self.push(e, Head::Table(a.slot as usize + write as usize));
            return;
        }
        if a.n as i64 > WIDE_SPAN {
            self.geo[t as usize].wide = true;
            self.push(e, Head::Wide(t as usize, write as usize));
            return;
        }
        // One entry per bucket; the first is the argument's own (it alone frees the
        // side-table region).
        let q = Self::span(&self.geo[t as usize], r);
        for b0 in q[0].0..=q[0].1 {
            for b1 in q[1].0..=q[1].1 {
                let h =
                    Head::Table(self.slot_of(t, Self::key(&self.geo[t as usize], b0, b1), write));
                self.push(e, h);
                e.tf &= !F_PRIMARY;
            }
        }
    }

    /// `r` as a bucket cell: a dense region that is exactly one cell of its tensor's grid
    /// along dimensions 0 and 1 (`q`: its span) and whole along the others.
    #[inline(always)]
    fn cell(g: &Geo, r: &Region, q: &[(i64, i64); 2]) -> Option<u32> {
        if (r.rank > 2 && !Self::whole_rest(g, r)) || q[0].0 != q[0].1 || q[1].0 != q[1].1 {
            return None;
        }
        let exact = |d: usize| Self::is_bucket(g, r, q[d].0 * g.bsize[d], d);
        if !exact(0) || (r.rank >= 2 && !exact(1)) {
            return None;
        }
        u32::try_from(Self::key(g, q[0].0, q[1].0)).ok()
    }

    /// Frees every entry before generation `to` (their tasks have retired).
    #[inline(always)]
    pub(crate) fn retire_to(&mut self, to: u32) {
        // Usually a task's few entries, in the chunk of the oldest live one.
        if self.nside == 0 && (self.tail ^ to) >> CHUNK_BITS == 0 {
            self.tail = to;
        } else {
            self.retire_chunks_to(to);
        }
    }

    /// [`TensorMap::retire_to`] when side-table regions or whole chunks go too.
    #[inline(never)]
    fn retire_chunks_to(&mut self, to: u32) {
        if self.nside > 0 {
            let mut g = self.tail;
            while g != to {
                let e = *self.entry(g);
                if e.tf & F_PRIMARY != 0 {
                    if e.tf & F_SMALL != 0 {
                        self.small_free.push(e.d);
                        self.nside -= 1;
                    } else if e.tf & F_BIG != 0 {
                        self.big_free.push(e.d);
                        self.nside -= 1;
                    }
                }
                g = g.wrapping_add(1);
            }
        }
        // Chunks wholly before `to` go (one is kept for reuse).
        let (from_c, to_c) = (self.tail >> CHUNK_BITS, to >> CHUNK_BITS);
        let mut c = from_c;
        while c != to_c {
            let b = std::mem::take(&mut self.chunks[(c & self.cmask) as usize]);
            if self.spare.is_none() && !b.is_empty() {
                self.spare = Some(b);
            }
            c = c.wrapping_add(1) & (u32::MAX >> CHUNK_BITS);
        }
        self.tail = to;
    }
}

/// Stores `x` in a side table, reusing a freed index.
fn side<T>(v: &mut Vec<T>, free: &mut Vec<u32>, x: T) -> u32 {
    match free.pop() {
        Some(i) => {
            v[i as usize] = x;
            i
        }
        None => {
            v.push(x);
            v.len() as u32 - 1
        }
    }
}

const _: () = assert!(MAX_RANK >= 2);
const _: () = assert!(std::mem::size_of::<Entry>() == 16);

#[cfg(test)]
mod tests;

//! The tensor map: which in-flight task last wrote, or still reads, which region of a tensor.
//!
//! Layout, chosen so that memory depends on the configured pool size only (not on tensor
//! shapes or the task count) and a submission touches a handful of cache lines:
//! - Each tensor gets a 2-D bucket grid over its dimensions 0 and 1, sized from the first
//!   region seen (the tile shape). The grid costs no memory (buckets live in the shared
//!   table), so it is as fine as that region; a scan whose region spans more buckets than the
//!   map has entries walks the entries instead.
//! - One open hash table of list heads, keyed by (tensor, bucket, reader/writer), sized from
//!   the pool. A region argument becomes one entry per bucket it touches (at most
//!   [`WIDE_SPAN`]); a region spanning more buckets becomes one entry in the tensor's wide
//!   list. Entries sit in intrusive doubly-linked lists, so unlinking is O(1).
//! - Entries hold their region compactly (`i32` per dimension for ranks ≤ 2; larger ranks or
//!   coordinates spill to a side table).
//! - Reclamation is eager: when a task completes, the engine releases its entries through the
//!   task's own chain. A later write that covers an entry unlinks it at once (the write is
//!   ordered after it); its storage returns to the pool when its task completes.
//!
//! The pool counts region arguments (one per argument, whatever its bucket count).

use crate::api::{Region, MAX_RANK};
use crate::region::{covers, overlaps, progression_covers, progressions_meet};

pub(crate) const NIL: u32 = u32::MAX;

/// Buckets per tensor at most (keeps bucket arithmetic far from overflow).
const MAX_BUCKETS: i64 = 1 << 40;
/// Regions spanning more buckets than this go to the tensor's wide list.
pub(crate) const WIDE_SPAN: i64 = 4;

/// A list head: a hash-table slot, or a tensor's wide list (high bit set).
const WIDE_BIT: u32 = 1 << 31;

#[derive(Clone, Copy, Default)]
struct Geo {
    rank: u8,
    init: bool,
    /// Bucket size along dimensions 0 and 1 (a power of two gives a shift).
    bsize: [i64; 2],
    shift: [u32; 2],
    nb: [i64; 2],
    /// Linked entries that write the tensor (for `wait_tensor`), and all linked entries.
    writers: u32,
    linked: u32,
}

/// A region in the compact form, or a reference to the side table.
#[derive(Clone, Copy)]
struct Compact {
    /// Per dimension 0..2: offset, extent, stride.
    d: [[i32; 3]; 2],
}

#[derive(Clone, Copy)]
struct Entry {
    /// The task's ring slot; `NIL`: free.
    slot: u32,
    tensor: u32,
    next: u32,
    prev: u32,
    /// The list this entry sits in (`NIL`: unlinked).
    head: u32,
    /// The next entry of the same task (or the next free entry).
    tnext: u32,
    /// Index into the side table of full regions, or `NIL`.
    big: u32,
    rank: u8,
    write: bool,
    /// Counts against the pool (the first entry of its argument).
    primary: bool,
    c: Compact,
}

/// One entry seen by a scan.
pub(crate) struct Hit {
    pub id: u32,
    pub slot: u32,
    pub write: bool,
    /// The scanned region overlaps the entry's.
    pub overlaps: bool,
    /// The scanned region contains the entry's.
    pub covered: bool,
}

pub(crate) struct TensorMap {
    geo: Vec<Geo>,
    table: Vec<u32>,
    mask: u32,
    /// Per tensor: wide-list heads [readers, writers].
    wide: Vec<[u32; 2]>,
    entries: Vec<Entry>,
    free: u32,
    bigs: Vec<Region>,
    big_free: Vec<u32>,
    /// Region arguments held (what the pool limits).
    used: u32,
}

fn mix(x: u64) -> u64 {
    let x = (x ^ (x >> 31)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    x ^ (x >> 29)
}

impl Compact {
    fn of(r: &Region) -> Option<Compact> {
        if r.rank > 2 {
            return None;
        }
        let mut d = [[0i32, 1, 1]; 2];
        for (k, dd) in d.iter_mut().enumerate().take(r.rank as usize) {
            *dd = [
                i32::try_from(r.offsets[k]).ok()?,
                i32::try_from(r.extents[k]).ok()?,
                i32::try_from(r.strides[k]).ok()?,
            ];
        }
        Some(Compact { d })
    }
}

impl TensorMap {
    /// A map for `pool` live region arguments.
    pub(crate) fn new(pool: u32) -> TensorMap {
        let size = (pool as usize).next_power_of_two().clamp(64, 1 << 24);
        TensorMap {
            geo: Vec::new(),
            table: vec![NIL; size],
            mask: size as u32 - 1,
            wide: Vec::new(),
            entries: Vec::new(),
            free: NIL,
            bigs: Vec::new(),
            big_free: Vec::new(),
            used: 0,
        }
    }

    /// Region arguments held.
    pub(crate) fn used(&self) -> u32 {
        self.used
    }

    /// (Re)declares tensor `t` of `rank`: no entries, no grid yet.
    pub(crate) fn add_tensor(&mut self, t: u32, rank: usize) {
        let i = t as usize;
        if self.geo.len() <= i {
            self.geo.resize(i + 1, Geo::default());
            self.wide.resize(i + 1, [NIL; 2]);
        }
        self.geo[i] = Geo {
            rank: rank as u8,
            ..Geo::default()
        };
        self.wide[i] = [NIL; 2];
    }

    /// Live entries writing tensor `t`.
    pub(crate) fn writers(&self, t: u32) -> u32 {
        self.geo.get(t as usize).map_or(0, |g| g.writers)
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
        g.shift = bs.map(|b| {
            if b > 0 && (b as u64).is_power_of_two() {
                b.trailing_zeros()
            } else {
                u32::MAX
            }
        });
        g.init = true;
    }

    /// The bucket rectangle of `r`: inclusive (first, last) along dimensions 0 and 1.
    #[inline]
    fn span(g: &Geo, r: &Region) -> [(i64, i64); 2] {
        let mut s = [(0, 0); 2];
        for (d, sd) in s.iter_mut().enumerate().take((g.rank as usize).min(2)) {
            let top = g.nb[d] - 1;
            let (lo, hi) = if g.shift[d] != u32::MAX {
                (r.offsets[d] >> g.shift[d], r.last(d) >> g.shift[d])
            } else {
                (r.offsets[d] / g.bsize[d], r.last(d) / g.bsize[d])
            };
            *sd = (lo.min(top), hi.min(top));
        }
        s
    }

    #[inline]
    fn slot_of(&self, t: u32, b0: i64, b1: i64, w: bool) -> u32 {
        let k = ((t as u64) << 1 | w as u64)
            ^ (b0 as u64).wrapping_mul(0x1000_0000_01b3)
            ^ (b1 as u64).wrapping_mul(0x9e37_79b9);
        (mix(k) as u32) & self.mask
    }

    fn head_mut(&mut self, h: u32) -> &mut u32 {
        if h & WIDE_BIT != 0 {
            let i = (h & !WIDE_BIT) as usize;
            &mut self.wide[i >> 1][i & 1]
        } else {
            &mut self.table[h as usize]
        }
    }

    /// (overlaps, covered): does `r` meet the entry's region, and contain it?
    fn entry_overlaps(&self, e: &Entry, r: &Region) -> (bool, bool) {
        if e.big != NIL {
            let b = &self.bigs[e.big as usize];
            return (overlaps(r, b), covers(r, b));
        }
        let mut cv = true;
        for d in 0..e.rank as usize {
            let [o, n, s] = e.c.d[d];
            let (o, n, s) = (o as i64, n as i64, s as i64);
            let (a, t, m) = (r.offsets[d], r.strides[d], r.extents[d]);
            // Both in bounds of one tensor, so the last indices do not overflow.
            let (e_last, r_last) = (o + (n - 1) * s, a + (m - 1) * t);
            if (t == 1 || m == 1) && (s == 1 || n == 1) {
                // Dense intervals (the common case).
                if o > r_last || a > e_last {
                    return (false, false);
                }
                cv &= o >= a && e_last <= r_last;
            } else {
                if !progressions_meet(a, t, m, o, s, n) {
                    return (false, false);
                }
                cv = cv && progression_covers(a, t, m, o, s, n);
            }
        }
        (true, cv)
    }

    fn scan_list(&self, head: u32, t: u32, w: bool, r: &Region, f: &mut impl FnMut(Hit)) {
        let mut id = head;
        while id != NIL {
            let e = &self.entries[id as usize];
            if e.tensor == t && e.write == w {
                let (ov, cv) = self.entry_overlaps(e, r);
                f(Hit {
                    id,
                    slot: e.slot,
                    write: w,
                    overlaps: ov,
                    covered: cv,
                });
            }
            id = e.next;
        }
    }

    /// Visits the entries of `r`'s tensor that may overlap it: writers, then readers when
    /// asked. An entry in several buckets may be visited more than once.
    pub(crate) fn scan(&self, r: &Region, readers: bool, mut f: impl FnMut(Hit)) {
        let t = r.tensor.0;
        let Some(g) = self.geo.get(t as usize).filter(|g| g.init) else {
            return;
        };
        // Nothing to meet: no entries at all, or only readers and a read (weights, inputs).
        if g.linked == 0 || (!readers && g.writers == 0) {
            return;
        }
        let q = Self::span(g, r);
        let buckets = (q[0].1 - q[0].0 + 1).saturating_mul(q[1].1 - q[1].0 + 1);
        if buckets > self.entries.len() as i64 {
            // Cheaper to look at every entry than at every bucket.
            for (id, e) in self.entries.iter().enumerate() {
                if e.head != NIL && e.tensor == t && (e.write || readers) {
                    let (ov, cv) = self.entry_overlaps(e, r);
                    f(Hit {
                        id: id as u32,
                        slot: e.slot,
                        write: e.write,
                        overlaps: ov,
                        covered: cv,
                    });
                }
            }
            return;
        }
        for w in [true, false] {
            if !w && !readers {
                break;
            }
            for b0 in q[0].0..=q[0].1 {
                for b1 in q[1].0..=q[1].1 {
                    let h = self.table[self.slot_of(t, b0, b1, w) as usize];
                    self.scan_list(h, t, w, r, &mut f);
                }
            }
            self.scan_list(self.wide[t as usize][w as usize], t, w, r, &mut f);
        }
    }

    fn alloc(&mut self, e: Entry) -> u32 {
        if self.free != NIL {
            let id = self.free;
            self.free = self.entries[id as usize].tnext;
            self.entries[id as usize] = e;
            id
        } else {
            self.entries.push(e);
            self.entries.len() as u32 - 1
        }
    }

    fn link(&mut self, id: u32, h: u32) {
        let old = *self.head_mut(h);
        {
            let e = &mut self.entries[id as usize];
            e.head = h;
            e.prev = NIL;
            e.next = old;
        }
        if old != NIL {
            self.entries[old as usize].prev = id;
        }
        *self.head_mut(h) = id;
        let e = &self.entries[id as usize];
        let g = &mut self.geo[e.tensor as usize];
        g.linked += 1;
        g.writers += e.write as u32;
    }

    /// Takes entry `id` out of its list (a later write covers it); its storage stays with its
    /// task until [`TensorMap::release`].
    pub(crate) fn unlink(&mut self, id: u32) {
        let e = self.entries[id as usize];
        if e.head == NIL {
            return;
        }
        if e.prev != NIL {
            self.entries[e.prev as usize].next = e.next;
        } else {
            *self.head_mut(e.head) = e.next;
        }
        if e.next != NIL {
            self.entries[e.next as usize].prev = e.prev;
        }
        let g = &mut self.geo[e.tensor as usize];
        g.linked -= 1;
        g.writers -= e.write as u32;
        let m = &mut self.entries[id as usize];
        m.head = NIL;
        m.next = NIL;
        m.prev = NIL;
    }

    /// Records region argument `r` (`dims`: its tensor's shape) of the task in `slot`,
    /// prepending its entries to the task's chain `chain`.
    pub(crate) fn insert(
        &mut self,
        r: &Region,
        dims: &[i64],
        write: bool,
        slot: u32,
        chain: &mut u32,
    ) {
        let t = r.tensor.0;
        if !self.geo[t as usize].init {
            self.init_grid(r, dims);
        }
        let (c, big) = match Compact::of(r) {
            Some(c) => (c, NIL),
            None => {
                let b = match self.big_free.pop() {
                    Some(b) => {
                        self.bigs[b as usize] = *r;
                        b
                    }
                    None => {
                        self.bigs.push(*r);
                        self.bigs.len() as u32 - 1
                    }
                };
                (Compact { d: [[0; 3]; 2] }, b)
            }
        };
        let q = Self::span(&self.geo[t as usize], r);
        let count = (q[0].1 - q[0].0 + 1).saturating_mul(q[1].1 - q[1].0 + 1);
        let mut heads = [NIL; WIDE_SPAN as usize];
        let n = if count > WIDE_SPAN {
            heads[0] = WIDE_BIT | (t << 1 | write as u32);
            1
        } else {
            let mut n = 0;
            for b0 in q[0].0..=q[0].1 {
                for b1 in q[1].0..=q[1].1 {
                    heads[n] = self.slot_of(t, b0, b1, write);
                    n += 1;
                }
            }
            n
        };
        // One entry per list; the first counts against the pool and owns the side-table
        // region, which the others share.
        for (i, &h) in heads[..n].iter().enumerate() {
            let id = self.alloc(Entry {
                slot,
                tensor: t,
                next: NIL,
                prev: NIL,
                head: NIL,
                tnext: *chain,
                big,
                rank: r.rank,
                write,
                primary: i == 0,
                c,
            });
            *chain = id;
            self.link(id, h);
        }
        self.used += 1;
    }

    /// Frees a completed task's entries (its chain from `head`).
    pub(crate) fn release(&mut self, mut id: u32) {
        while id != NIL {
            self.unlink(id);
            let e = self.entries[id as usize];
            if e.primary {
                self.used -= 1;
                if e.big != NIL {
                    self.big_free.push(e.big);
                }
            }
            let next = e.tnext;
            let m = &mut self.entries[id as usize];
            m.slot = NIL;
            m.tnext = self.free;
            self.free = id;
            id = next;
        }
    }
}

const _: () = assert!(MAX_RANK >= 2);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::TensorId;

    fn reg(o: &[i64], e: &[i64]) -> Region {
        Region::dense(TensorId(0), o, e).unwrap()
    }

    fn hits(m: &TensorMap, r: &Region, readers: bool) -> Vec<(u32, bool, bool)> {
        let mut v = Vec::new();
        m.scan(r, readers, |h| {
            if h.overlaps {
                v.push((h.slot, h.write, h.covered))
            }
        });
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Random inserts, cover-unlinks and releases against a plain list of live regions: every
    /// scan reports exactly the live entries that overlap (and which of them are covered),
    /// whatever the grid, the bucket spans or the hash collisions.
    mod oracle {
        use super::*;
        use crate::region;
        use proptest::prelude::*;

        #[derive(Clone, Debug)]
        enum Op {
            Insert(u8, [i64; 2], [i64; 2], [i64; 2], bool),
            Release(u8),
            Unlink(u8),
        }

        fn op() -> impl Strategy<Value = Op> {
            prop_oneof![
                4 => (0u8..3, [0i64..40, 0i64..24], [1i64..9, 1i64..9], [1i64..3, 1i64..3], any::<bool>())
                    .prop_map(|(t, o, e, s, w)| Op::Insert(t, o, e, s, w)),
                1 => any::<u8>().prop_map(Op::Release),
                1 => any::<u8>().prop_map(Op::Unlink),
            ]
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(300))]
            #[test]
            fn scans_match_a_brute_force_list(ops in proptest::collection::vec(op(), 1..60),
                                              query in ([0i64..48, 0i64..32], [1i64..20, 1i64..12], [1i64..3, 1i64..3])) {
                let dims = [64i64, 40];
                // A small pool: a 64-slot table, so lists share slots.
                let mut m = TensorMap::new(8);
                for t in 0..3 {
                    m.add_tensor(t, 2);
                }
                // (slot, region, write, entries of its chain, linked)
                let mut live: Vec<(u32, Region, bool, u32, bool)> = Vec::new();
                let mut next_slot = 0u32;
                for o in ops {
                    match o {
                        Op::Insert(t, off, ext, st, w) => {
                            let ext = [ext[0].min((dims[0] - off[0] - 1) / st[0] + 1), ext[1].min((dims[1] - off[1] - 1) / st[1] + 1)];
                            let r = Region::new(TensorId(t as u32), &off, &ext, &st).unwrap();
                            let mut chain = NIL;
                            m.insert(&r, &dims, w, next_slot, &mut chain);
                            live.push((next_slot, r, w, chain, true));
                            next_slot += 1;
                        }
                        Op::Release(i) if !live.is_empty() => {
                            let (_, _, _, chain, _) = live.remove(i as usize % live.len());
                            m.release(chain);
                        }
                        Op::Unlink(i) if !live.is_empty() => {
                            let k = i as usize % live.len();
                            // Unlink every entry of that argument, as a covering write does.
                            let mut id = live[k].3;
                            while id != NIL {
                                m.unlink(id);
                                id = m.entries[id as usize].tnext;
                            }
                            live[k].4 = false;
                        }
                        _ => {}
                    }
                }
                prop_assert_eq!(m.used() as usize, live.len());
                for t in 0..3u32 {
                    let writers = live.iter().filter(|l| l.4 && l.2 && l.1.tensor.0 == t).count();
                    prop_assert_eq!(m.writers(t) as usize > 0, writers > 0);
                }
                let (qo, qe, qs) = query;
                let qe = [qe[0].min((dims[0] - qo[0] - 1) / qs[0] + 1), qe[1].min((dims[1] - qo[1] - 1) / qs[1] + 1)];
                for t in 0..3u32 {
                    let q = Region::new(TensorId(t), &qo, &qe, &qs).unwrap();
                    for readers in [false, true] {
                        let got = hits(&m, &q, readers);
                        let mut want: Vec<(u32, bool, bool)> = live
                            .iter()
                            .filter(|l| l.4 && l.1.tensor.0 == t && (l.2 || readers))
                            .filter(|l| region::overlaps(&q, &l.1))
                            .map(|l| (l.0, l.2, region::covers(&q, &l.1)))
                            .collect();
                        want.sort_unstable();
                        prop_assert_eq!(got, want);
                    }
                }
            }
        }
    }

    #[test]
    fn insert_scan_unlink_release() {
        let mut m = TensorMap::new(16);
        m.add_tensor(0, 2);
        let dims = [256, 128];
        let (mut c0, mut c1) = (NIL, NIL);
        m.insert(&reg(&[0, 0], &[64, 128]), &dims, true, 0, &mut c0);
        m.insert(&reg(&[64, 0], &[64, 128]), &dims, false, 1, &mut c1);
        assert_eq!(m.used(), 2);
        assert_eq!(m.writers(0), 1);
        // A read of rows 32..96 meets the writer only when readers are not asked for.
        assert_eq!(
            hits(&m, &reg(&[32, 0], &[64, 8]), false),
            vec![(0, true, false)]
        );
        assert_eq!(
            hits(&m, &reg(&[0, 0], &[128, 128]), true),
            vec![(0, true, true), (1, false, true)]
        );
        m.unlink(c0);
        assert_eq!(m.writers(0), 0);
        assert_eq!(hits(&m, &reg(&[0, 0], &[64, 128]), true), vec![]);
        m.release(c0);
        m.release(c1);
        assert_eq!(m.used(), 0);
        assert!(hits(&m, &reg(&[0, 0], &[256, 128]), true).is_empty());
    }

    #[test]
    fn unaligned_and_wide_and_big_regions() {
        let mut m = TensorMap::new(64);
        m.add_tensor(0, 2);
        let dims = [1 << 20, 64];
        let mut c = NIL;
        // The grid comes from the first region: 8 × 8 buckets.
        m.insert(&reg(&[0, 0], &[8, 8]), &dims, true, 0, &mut c);
        // Straddles four buckets: four entries, one pool unit.
        m.insert(&reg(&[4, 4], &[8, 8]), &dims, false, 1, &mut c);
        assert_eq!(m.used(), 2);
        // Spans many buckets: the wide list.
        m.insert(&reg(&[0, 0], &[1 << 19, 64]), &dims, false, 2, &mut c);
        assert_eq!(
            hits(&m, &reg(&[11, 11], &[1, 1]), true),
            vec![(1, false, false), (2, false, false)]
        );
        assert_eq!(hits(&m, &reg(&[600_000, 0], &[1, 1]), true), vec![]);
        // A scan over more buckets than there are entries walks the entries.
        assert_eq!(
            hits(&m, &reg(&[0, 0], &[1 << 20, 64]), true),
            vec![(0, true, true), (1, false, true), (2, false, true)]
        );
        assert_eq!(hits(&m, &reg(&[1 << 19, 0], &[1 << 19, 64]), true), vec![]);
        // Coordinates beyond i32 spill to the side table.
        let big = Region::dense(TensorId(0), &[0], &[1]).unwrap();
        let mut m2 = TensorMap::new(8);
        m2.add_tensor(0, 1);
        let mut c2 = NIL;
        let far = Region::dense(TensorId(0), &[3_000_000_000], &[2]).unwrap();
        m2.insert(&big, &[1 << 40], true, 0, &mut c2);
        m2.insert(&far, &[1 << 40], true, 1, &mut c2);
        assert_eq!(
            hits(
                &m2,
                &Region::dense(TensorId(0), &[3_000_000_001], &[1]).unwrap(),
                false
            ),
            vec![(1, true, false)]
        );
        m2.release(c2);
        assert_eq!(m2.used(), 0);
        assert_eq!(m2.bigs.len(), 1);
        assert_eq!(m2.big_free.len(), 1);
    }
}

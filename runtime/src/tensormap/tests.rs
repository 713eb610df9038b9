//! The tensor map's tests: the region forms (cells, compact and full side-table entries,
//! wide chains) keep their regions, the tile shortcut agrees with the general path, a
//! containing write ends a walk, generations survive the 32-bit wrap, and (`oracle`) random
//! submissions, completions and retirements against the definition: every candidate
//! conflicts, and every conflicting earlier task is ordered before.

use super::*;
use crate::api::TensorId;

fn reg(o: &[i64], e: &[i64]) -> Region {
    Region::dense(TensorId(0), o, e).unwrap()
}

impl TensorMap {
    /// A map whose generations start at `gen` (as if `gen` entries had come and gone,
    /// their heads swept): for runs across the 32-bit wrap.
    fn starting_at(pool: u32, gen: u32) -> TensorMap {
        let mut m = TensorMap::new(pool);
        (m.tail, m.alloc, m.swept) = (gen, gen, gen);
        m.table.fill(gen.wrapping_sub(1));
        m.chunks[((gen >> CHUNK_BITS) & m.cmask) as usize] =
            vec![Entry::default(); CHUNK].into_boxed_slice();
        m
    }

    /// Test shorthands: prepare and insert / scan in one call.
    fn put(&mut self, r: &Region, dims: &[i64], write: bool, task: u32) {
        let a = self.access(r, dims, write);
        self.insert(&a, r, task as u64);
    }
    fn scan(&mut self, r: &Region, dims: &[i64], write: bool, oldest: u64, out: &mut Vec<u32>) {
        let a = self.access(r, dims, write);
        self.deps(&a, r, oldest, out);
    }
}

/// A scan of a tensor whose grid exists.
fn deps(m: &mut TensorMap, r: &Region, write: bool) -> Vec<u32> {
    assert!(m.geo[r.tensor.0 as usize].init);
    let mut v = Vec::new();
    m.scan(r, &[], write, 0, &mut v);
    v.sort_unstable();
    v.dedup();
    v
}

/// A region of higher rank is a cell when it is one along dimensions 0 and 1 and whole
/// along the others (the attention state `M[i]` of a `[T, 64, 1]` tensor), and only then.
#[test]
fn higher_rank_cells_are_whole_past_dimension_1() {
    let dims = [8i64, 64, 4];
    let mut m = TensorMap::new(64);
    m.add_tensor(0, 3);
    let r3 = |o: [i64; 3], e: [i64; 3]| Region::dense(TensorId(0), &o, &e).unwrap();
    m.access(&r3([0, 0, 0], [1, 64, 4]), &dims, false);
    let g = m.geo[0];
    assert!(g.tiled);
    for i in 0..8 {
        let whole = r3([i, 0, 0], [1, 64, 4]);
        let q = TensorMap::span(&g, &whole);
        let b = TensorMap::tile(&g, &whole).expect("a cell");
        assert_eq!(b, (i, 0));
        assert_eq!(
            TensorMap::cell(&g, &whole, &q),
            Some(TensorMap::key(&g, i, 0) as u32)
        );
        for (o2, e2) in [(0, 3), (1, 3), (2, 1)] {
            let part = r3([i, 0, o2], [1, 64, e2]);
            let q = TensorMap::span(&g, &part);
            assert_eq!(TensorMap::tile(&g, &part), None, "{part:?}");
            assert_eq!(TensorMap::cell(&g, &part, &q), None, "{part:?}");
        }
    }
    // Cells of one grid meet only when they are the same; a part meets its cell.
    m.put(&r3([2, 0, 0], [1, 64, 4]), &dims, true, 0);
    m.put(&r3([3, 0, 0], [1, 64, 4]), &dims, true, 1);
    assert_eq!(deps(&mut m, &r3([3, 0, 0], [1, 64, 4]), false), vec![1]);
    assert_eq!(deps(&mut m, &r3([2, 0, 1], [1, 64, 2]), false), vec![0]);
    assert_eq!(deps(&mut m, &r3([2, 0, 0], [2, 64, 1]), false), vec![0, 1]);
}

/// The whole-tile shortcut agrees with the general span and cell on every small region of
/// a tiled grid whose last row and column of cells are clipped by the tensor's edge.
#[test]
fn tile_shortcut_matches_span_and_cell() {
    let dims = [70i64, 37];
    let mut m = TensorMap::new(64);
    m.add_tensor(0, 2);
    m.access(&reg(&[0, 0], &[16, 8]), &dims, false);
    let g = m.geo[0];
    assert!(g.tiled);
    let mut hits = 0;
    for o0 in 0..dims[0] {
        for o1 in 0..dims[1] {
            for (e0, e1) in [(16, 8), (6, 8), (16, 5), (6, 5), (1, 1), (15, 8), (16, 4)] {
                for s in [1, 2] {
                    if o0 + s * (e0 - 1) >= dims[0] || o1 + s * (e1 - 1) >= dims[1] {
                        continue;
                    }
                    let r = Region::new(TensorId(0), &[o0, o1], &[e0, e1], &[s, s]).unwrap();
                    let q = TensorMap::span(&g, &r);
                    let general = if TensorMap::count(&q) == 1 {
                        TensorMap::cell(&g, &r, &q).map(|c| (q[0].0, q[1].0, c))
                    } else {
                        None
                    };
                    let fast = TensorMap::tile(&g, &r)
                        .map(|(b0, b1)| (b0, b1, ((b0 as u64) << g.b1_bits | b1 as u64) as u32));
                    if let Some(f) = fast {
                        assert_eq!(Some(f), general, "{r:?}");
                        hits += 1;
                    }
                }
            }
        }
    }
    // Every cell, the clipped ones included, takes the shortcut exactly once.
    assert_eq!(hits, 5 * 5);
    // Regions built by hand (fields are public) that leave the tensor or are malformed
    // are never cells: the shortcut is what proves a tile in bounds.
    let mut r = reg(&[0, 0], &[16, 8]);
    let edges = [-64, -16, -1, 0, 16, 64, 80, i64::MIN, i64::MAX - 15];
    for o0 in edges {
        for o1 in [-8, 0, 8, 32, 40, i64::MIN] {
            for (e0, e1, s) in [(16, 8, 1), (0, 8, 1), (-16, 8, 1), (16, 8, 0), (16, 8, -1)] {
                (r.offsets[0], r.offsets[1]) = (o0, o1);
                (r.extents[0], r.extents[1]) = (e0, e1);
                (r.strides[0], r.strides[1]) = (s, s);
                let inside = (0..2).all(|d| {
                    let (o, e) = (r.offsets[d], r.extents[d]);
                    o >= 0 && e >= 1 && s >= 1 && o.checked_add(s * (e - 1)) < Some(dims[d])
                });
                if TensorMap::tile(&g, &r).is_some() {
                    assert!(inside, "{r:?}");
                }
            }
        }
    }
}

/// Random tasks (one access each), completions and in-order retirements against the
/// definition: every candidate conflicts with the access, and every conflicting earlier
/// task is ordered before it: by an edge (a candidate that has not completed), by having
/// completed when it was submitted, or transitively.
mod oracle {
    use super::*;
    use crate::region;
    use proptest::prelude::*;

    #[derive(Clone, Debug)]
    enum Op {
        /// Tensor, offsets, extents and strides along dimensions 0 and 1, write, and along
        /// dimension 2 of the rank-3 tensor (3) an (offset, extent), or the whole.
        Submit(u8, [i64; 2], [i64; 2], [i64; 2], bool, Option<(i64, i64)>),
        Complete(u8),
        Retire,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            5 => (
                0u8..4,
                [0i64..40, 0i64..24],
                [1i64..9, 1i64..9],
                [1i64..3, 1i64..3],
                any::<bool>(),
                prop_oneof![2 => Just(None), 1 => (0i64..3, 1i64..4).prop_map(Some)],
            )
                .prop_map(|(t, o, e, s, w, third)| Op::Submit(t, o, e, s, w, third)),
            2 => any::<u8>().prop_map(Op::Complete),
            1 => Just(Op::Retire),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]
        #[test]
        #[allow(clippy::needless_range_loop)]
        fn deps_order_every_conflict(
            ops in proptest::collection::vec(op(), 1..80),
            // Generations from 0, or from just before the 32-bit wrap.
            start in prop_oneof![Just(0u32), (u32::MAX - 100)..=u32::MAX],
        ) {
            // Tensors 0 to 2 of rank 2, tensor 3 of rank 3 (its cells are whole along
            // dimension 2).
            let dims3 = [64i64, 40, 3];
            let dims_of = |t: u8| if t == 3 { &dims3[..] } else { &dims3[..2] };
            let dims = dims3;
            // A small pool: a 64-slot table, so chains share slots.
            let mut m = TensorMap::starting_at(48, start);
            for t in 0..4 {
                m.add_tensor(t, if t == 3 { 3 } else { 2 });
            }
            // Per task: region, write, first generation, preds, done, done-before list.
            struct T { r: Region, w: bool, first: u32, preds: Vec<usize>, done: bool, done_before: Vec<bool> }
            let mut ts: Vec<T> = Vec::new();
            let mut head = 0usize;
            for o in ops {
                match o {
                    Op::Submit(t, off, ext, st, w, third) => {
                        let ext = [ext[0].min((dims[0] - off[0] - 1) / st[0] + 1), ext[1].min((dims[1] - off[1] - 1) / st[1] + 1)];
                        let r = if t == 3 {
                            let (o2, e2) = third.map_or((0, 3), |(o, e)| (o, e.min(3 - o)));
                            Region::new(TensorId(3), &[off[0], off[1], o2], &[ext[0], ext[1], e2], &[st[0], st[1], 1]).unwrap()
                        } else {
                            Region::new(TensorId(t as u32), &off, &ext, &st).unwrap()
                        };
                        let dims = dims_of(t);
                        if 48 - m.used() < TensorMap::entries_for(&m.access(&r, dims, w)) {
                            continue;
                        }
                        let seq = ts.len();
                        let mut v = Vec::new();
                        let done: Vec<bool> = ts.iter().map(|x| x.done).collect();
                        m.scan(&r, dims, w, head as u64, &mut v);
                        v.sort_unstable();
                        v.dedup();
                        for &p in &v {
                            let p = p as usize;
                            prop_assert!(p < seq && p >= head, "a candidate that retired: {p}");
                            prop_assert!((w || ts[p].w) && region::overlaps(&r, &ts[p].r), "false edge {p} -> {seq}");
                        }
                        v.retain(|&p| !ts[p as usize].done);
                        let first = m.next_gen();
                        m.put(&r, dims, w, seq as u32);
                        ts.push(T { r, w, first, preds: v.iter().map(|p| *p as usize).collect(), done: false, done_before: done });
                    }
                    Op::Complete(i) => {
                        // A task whose preds have all completed.
                        let cands: Vec<usize> = (head..ts.len()).filter(|&k| !ts[k].done && ts[k].preds.iter().all(|&p| ts[p].done)).collect();
                        if !cands.is_empty() {
                            let k = cands[i as usize % cands.len()];
                            ts[k].done = true;
                        }
                    }
                    Op::Retire => {
                        while head < ts.len() && ts[head].done {
                            head += 1;
                        }
                        let to = if head < ts.len() { ts[head].first } else { m.next_gen() };
                        m.retire_to(to);
                    }
                }
            }
            let n = ts.len();
            // ordered[i][j]: i is ordered before j.
            let mut ord = vec![vec![false; n]; n];
            for j in 0..n {
                for &p in &ts[j].preds {
                    ord[p][j] = true;
                }
                for i in 0..j {
                    if ts[j].done_before[i] {
                        ord[i][j] = true;
                    }
                }
            }
            crate::tests::close(&mut ord);
            for j in 0..n {
                for i in 0..j {
                    if (ts[i].w || ts[j].w) && region::overlaps(&ts[i].r, &ts[j].r) {
                        prop_assert!(ord[i][j], "missed ordering {} -> {}", i, j);
                    }
                }
            }
            for t in 0..4u32 {
                let pending = ts.iter().any(|x| !x.done && x.w && x.r.tensor.0 == t);
                let found = m.pending_writer(t, |task| !ts[task as usize].done);
                prop_assert_eq!(found.is_some(), pending);
                if let Some(task) = found {
                    prop_assert!(ts[task as usize].w && ts[task as usize].r.tensor.0 == t);
                }
            }
        }
    }
}

#[test]
fn a_containing_write_ends_the_walk() {
    let mut m = TensorMap::new(16);
    m.add_tensor(0, 2);
    let dims = [256, 128];
    m.put(&reg(&[0, 0], &[64, 128]), &dims, true, 0);
    m.put(&reg(&[0, 0], &[64, 128]), &dims, false, 1);
    m.put(&reg(&[0, 0], &[64, 128]), &dims, true, 2);
    assert_eq!(m.pending_writer(0, |_| true), Some(0));
    assert_eq!(m.pending_writer(0, |task| task > 0), Some(2));
    assert_eq!(m.pending_writer(1, |_| true), None);
    // A read of part of the tile follows the newest writer only.
    assert_eq!(deps(&mut m, &reg(&[32, 0], &[16, 8]), false), vec![2]);
    // A write follows it and nothing older (the reader and the first writer precede it).
    assert_eq!(deps(&mut m, &reg(&[0, 0], &[64, 128]), true), vec![2]);
    // A read reaching past the tile is not contained by the newest writer, so the walk
    // goes on to the first (a redundant edge: it precedes the newest).
    assert_eq!(deps(&mut m, &reg(&[32, 0], &[64, 8]), false), vec![0, 2]);
    assert_eq!(m.pending_writer(0, |task| task != 0 && task != 2), None);
    m.retire_to(3);
    assert_eq!(m.used(), 0);
    assert!(deps(&mut m, &reg(&[0, 0], &[256, 128]), true).is_empty());
}

#[test]
fn cells_small_and_big_entries_keep_their_regions() {
    let mut m = TensorMap::new(64);
    m.add_tensor(0, 2);
    let dims = [100, 10];
    // Grid of 64 × 10: rows 64..100 are the last, partial cell.
    m.put(&reg(&[0, 0], &[64, 10]), &dims, true, 0);
    m.put(&reg(&[64, 0], &[36, 10]), &dims, true, 1);
    // Not a cell (a part of one): the compact side table.
    m.put(&reg(&[70, 2], &[3, 3]), &dims, true, 2);
    // Strided: the full side table.
    let strided = Region::new(TensorId(0), &[1, 0], &[3, 1], &[20, 1]).unwrap();
    m.put(&strided, &dims, true, 3);
    assert_eq!((m.smalls.len(), m.bigs.len()), (1, 1));
    assert_eq!(deps(&mut m, &reg(&[99, 9], &[1, 1]), false), vec![1]);
    // The newest writer contains the point: the walk stops there.
    assert_eq!(deps(&mut m, &reg(&[72, 4], &[1, 1]), false), vec![2]);
    assert_eq!(deps(&mut m, &reg(&[63, 9], &[1, 1]), false), vec![0]);
    // Rows 1, 21, 41 of column 0.
    assert_eq!(deps(&mut m, &reg(&[21, 0], &[1, 1]), false), vec![3]);
    assert_eq!(deps(&mut m, &reg(&[22, 0], &[1, 1]), false), vec![0]);
    m.retire_to(4);
    assert_eq!((m.small_free.len(), m.big_free.len(), m.nside), (1, 1, 0));
}

#[test]
fn unaligned_and_wide_and_big_regions() {
    let mut m = TensorMap::new(64);
    m.add_tensor(0, 2);
    let dims = [1 << 20, 64];
    // The grid comes from the first region: 8 × 8 buckets.
    m.put(&reg(&[0, 0], &[8, 8]), &dims, true, 0);
    // Straddles four buckets: four entries.
    assert_eq!(
        TensorMap::entries_for(&m.access(&reg(&[4, 4], &[8, 8]), &dims, false)),
        4
    );
    m.put(&reg(&[4, 4], &[8, 8]), &dims, false, 1);
    assert_eq!(m.used(), 5);
    // Spans many buckets: the wide chain.
    m.put(&reg(&[0, 0], &[1 << 19, 64]), &dims, false, 2);
    assert_eq!(m.used(), 6);
    assert_eq!(deps(&mut m, &reg(&[11, 11], &[1, 1]), true), vec![1, 2]);
    assert_eq!(
        deps(&mut m, &reg(&[600_000, 0], &[1, 1]), true),
        Vec::<u32>::new()
    );
    // A scan over more buckets than there are entries walks the entries.
    assert_eq!(
        deps(&mut m, &reg(&[0, 0], &[1 << 20, 64]), true),
        vec![0, 1, 2]
    );
    assert_eq!(
        deps(&mut m, &reg(&[1 << 19, 0], &[1 << 19, 64]), true),
        Vec::<u32>::new()
    );
    // Coordinates beyond i32 spill to the side table, freed at retirement.
    let mut m2 = TensorMap::new(8);
    m2.add_tensor(0, 1);
    m2.put(
        &Region::dense(TensorId(0), &[0], &[1]).unwrap(),
        &[1 << 40],
        true,
        0,
    );
    let far = Region::dense(TensorId(0), &[3_000_000_000], &[2]).unwrap();
    m2.put(&far, &[1 << 40], true, 1);
    let probe = Region::dense(TensorId(0), &[3_000_000_001], &[1]).unwrap();
    assert_eq!(deps(&mut m2, &probe, false), vec![1]);
    // Two buckets (of one element): two entries.
    assert_eq!(m2.used(), 3);
    m2.retire_to(3);
    assert_eq!(m2.used(), 0);
    assert_eq!(m2.bigs.len(), 1);
    assert_eq!(m2.big_free.len(), 1);
}

#[test]
fn generations_wrap() {
    let mut m = TensorMap::new(8);
    m.add_tensor(0, 2);
    let dims = [64, 64];
    m.tail = u32::MAX - 63;
    m.alloc = m.tail;
    m.swept = m.tail;
    m.add_tensor(0, 2);
    for i in 0..40u32 {
        let r = reg(&[(i % 4) as i64 * 8, 0], &[8, 8]);
        let mut d = Vec::new();
        m.scan(&r, &dims, true, 0, &mut d);
        if i >= 4 {
            assert_eq!(d, vec![i - 4], "task {i}");
        }
        let first = m.next_gen();
        m.put(&r, &dims, true, i);
        assert_eq!(m.next_gen(), first.wrapping_add(1));
        if m.used() >= 6 {
            let to = m.tail.wrapping_add(1);
            m.retire_to(to);
        }
    }
}

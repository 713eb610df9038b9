//! Dependency inference: the edges against a brute-force oracle (every conflicting pair
//! ordered, every edge between a conflicting pair), exact edges through the wide index and a
//! wavefront, and the region checks at submission.

use super::{arch, arg, close, noop, task};
use crate::*;
use proptest::prelude::*;

#[test]
fn submit_rejects_bad_regions() {
    let mut rt = Runtime::new(Config::new(arch("ascend910b"))).unwrap();
    let k = rt.register_kernel("k", CoreClass::Vector, noop());
    let x = rt.add_tensor(4, &[8, 8]).unwrap();
    let a = [arg(x, &[4, 0], &[8, 8], Direction::In)];
    let e = rt.submit(&task(k, &[], &a, 1)).unwrap_err();
    assert!(e.to_string().contains("reaches index 11"), "{e}");
    let a = [arg(TensorId(9), &[0, 0], &[1, 1], Direction::In)];
    assert!(rt.submit(&task(k, &[], &a, 1)).is_err());
    let a = [arg(x, &[0], &[1], Direction::In)];
    assert!(rt.submit(&task(k, &[], &a, 1)).is_err());
    assert!(rt.submit(&task(KernelId(7), &[], &[], 1)).is_err());
    assert!(Region::new(x, &[0], &[0], &[]).is_err());
    assert!(rt.scope_end().is_err());
    // Region fields are public: a region built by hand is checked at submission too, and an
    // overflowing reach is an error, not a wrap or a panic.
    let good = Region::dense(x, &[0, 0], &[4, 4]).unwrap();
    let cases: [(usize, i64, i64, i64, &str); 5] = [
        (0, -4, 4, 1, "offset -4 must be ≥ 0"),
        (1, 0, 0, 1, "extent 0 ≥ 1"),
        (1, 0, 2, 0, "stride 0 ≥ 1"),
        (0, 1, 2, i64::MAX, "reaches index 9223372036854775807"),
        (1, i64::MAX, 2, 1, "reaches index 9223372036854775807"),
    ];
    let check = |rt: &mut Runtime| {
        for (d, o, e, st, msg) in cases {
            let mut r = good;
            (r.offsets[d], r.extents[d], r.strides[d]) = (o, e, st);
            for dir in [Direction::In, Direction::Out] {
                let a = [Arg { region: r, dir }];
                let err = rt.submit(&task(k, &[], &a, 1)).unwrap_err();
                assert!(err.to_string().contains(msg), "{err}");
            }
        }
    };
    check(&mut rt);
    // Again once the tensor has a grid of 4 × 4 tiles (from the first region seen), whose
    // cells skip the bounds check: `[-4, 0] + [4, 4]` has the shape of a cell before the
    // first, and these have the shape of cells past the last.
    rt.submit(&task(
        k,
        &[],
        &[arg(x, &[0, 0], &[4, 4], Direction::Out)],
        1,
    ))
    .unwrap();
    check(&mut rt);
    for (offsets, extents) in [([8, 0], [0, 4]), ([8, 0], [4, 4]), ([0, 8], [4, 4])] {
        let mut r = good;
        r.offsets[..2].copy_from_slice(&offsets);
        r.extents[..2].copy_from_slice(&extents);
        let a = [Arg {
            region: r,
            dir: Direction::In,
        }];
        assert!(rt.submit(&task(k, &[], &a, 1)).is_err(), "{r:?}");
    }
    assert_eq!(rt.finish().unwrap().tasks, 1);
}

/// Dependency inference against the brute-force oracle: every conflicting pair is ordered by
/// the edges (transitively) and every edge joins a conflicting pair.
/// (tensor, offsets, extents, strides, direction)
type Access = (u8, [i64; 2], [i64; 2], [i64; 2], u8);

#[allow(clippy::needless_range_loop)]
fn check_deps(regions: Vec<Access>) {
    let mut cfg = Config::new(arch("ascend910b")).with_window(1024);
    cfg.execute = false;
    cfg.record = true;
    let mut rt = Runtime::new(cfg).unwrap();
    let k = rt.register_kernel("k", CoreClass::Vector, noop());
    let ts = [
        rt.add_tensor(4, &[40, 40]).unwrap(),
        rt.add_tensor(4, &[40, 40]).unwrap(),
    ];
    let mut descs = Vec::new();
    for (t, o, e, s, d) in &regions {
        let region = Region::new(ts[(*t % 2) as usize], o, e, s).unwrap();
        let dir = match d % 3 {
            0 => Direction::In,
            1 => Direction::Out,
            _ => Direction::InOut,
        };
        descs.push(Arg { region, dir });
    }
    for (i, a) in descs.iter().enumerate() {
        rt.submit(&task(k, &[i as i64], std::slice::from_ref(a), 10))
            .unwrap();
    }
    let n = descs.len();
    let conflict = |i: usize, j: usize| {
        let (a, b) = (&descs[i], &descs[j]);
        (a.dir.writes() || b.dir.writes()) && region::overlaps(&a.region, &b.region)
    };
    let mut reach = vec![vec![false; n]; n];
    for (a, b) in &rt.graph_edges_for_tests() {
        let (a, b) = (*a as usize, *b as usize);
        assert!(a < b && conflict(a, b), "false edge {a} -> {b}");
        reach[a][b] = true;
    }
    close(&mut reach);
    for j in 0..n {
        for i in 0..j {
            if conflict(i, j) {
                assert!(reach[i][j], "missed ordering {i} -> {j}");
            }
        }
    }
    // The recorded graph keeps the dependencies on tasks that had retired too: the same
    // oracle, over all of them, each edge of the kind its accesses make.
    let g = rt.task_graph();
    let mut all = vec![vec![false; n]; n];
    for e in &g.data {
        let (a, b) = (e.from as usize, e.to as usize);
        assert!(a < b && conflict(a, b), "false recorded edge {a} -> {b}");
        let (x, y) = (descs[a].dir, descs[b].dir);
        let fits = match e.kind {
            DepKind::Raw => x.writes() && y.reads(),
            DepKind::Waw => x.writes() && y.writes(),
            DepKind::War => x.reads() && y.writes(),
        };
        assert!(fits, "{a} -> {b} is not {:?}", e.kind);
        all[a][b] = true;
    }
    close(&mut all);
    for j in 0..n {
        for i in 0..j {
            if conflict(i, j) {
                assert!(all[i][j], "recorded graph misses ordering {i} -> {j}");
            }
        }
    }
    rt.finish().unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn dependency_inference_matches_oracle(
        regions in proptest::collection::vec(
            (0u8..2, [0i64..20, 0i64..20], [1i64..6, 1i64..6], [1i64..4, 1i64..4], 0u8..3),
            1..40)
    ) {
        check_deps(regions);
    }
}

#[test]
fn wide_regions_use_the_wide_index() {
    let mut cfg = Config::new(arch("ascend910b"));
    cfg.execute = false;
    cfg.record = true;
    let mut rt = Runtime::new(cfg).unwrap();
    let k = rt.register_kernel("k", CoreClass::Vector, noop());
    let x = rt.add_tensor(4, &[1 << 20, 4]).unwrap();
    let w = [arg(x, &[0, 0], &[1 << 20, 4], Direction::Out)];
    let r = [arg(x, &[500_000, 0], &[1, 1], Direction::In)];
    let r2 = [arg(x, &[900_000, 0], &[8, 1], Direction::InOut)];
    rt.submit(&task(k, &[0], &w, 1)).unwrap();
    rt.submit(&task(k, &[1], &r, 1)).unwrap();
    rt.submit(&task(k, &[2], &r2, 1)).unwrap();
    assert_eq!(rt.graph_edges_for_tests(), vec![(0, 1), (0, 2)]);
    rt.finish().unwrap();
}

/// A 2-D wavefront on single elements of a wide tensor (the grid index buckets both
/// dimensions): each task depends exactly on its north and west neighbours.
#[test]
fn wavefront_edges_are_exact() {
    let mut cfg = Config::new(arch("ascend910b"));
    cfg.execute = false;
    cfg.record = true;
    let mut rt = Runtime::new(cfg).unwrap();
    let k = rt.register_kernel("k", CoreClass::Vector, noop());
    let n = 12i64;
    let x = rt.add_tensor(1, &[4096, 512]).unwrap();
    let mut want = Vec::new();
    for i in 0..n {
        for j in 0..n {
            let mut a = vec![arg(x, &[i, j], &[1, 1], Direction::Out)];
            if i > 0 {
                a.push(arg(x, &[i - 1, j], &[1, 1], Direction::In));
                want.push((((i - 1) * n + j) as u64, (i * n + j) as u64));
            }
            if j > 0 {
                a.push(arg(x, &[i, j - 1], &[1, 1], Direction::In));
                want.push(((i * n + j - 1) as u64, (i * n + j) as u64));
            }
            rt.submit(&task(k, &[i, j], &a, 1_000_000)).unwrap();
        }
    }
    let mut got = rt.graph_edges_for_tests();
    got.sort_unstable();
    want.sort_unstable();
    assert_eq!(got, want);
    rt.finish().unwrap();
}

#[test]
fn a_one_index_region_with_a_stride_below_one_is_refused() {
    let mut rt = Runtime::new(Config::new(arch("ascend910b"))).unwrap();
    let k = rt.register_kernel("k", CoreClass::Vector, noop());
    let x = rt.add_tensor(4, &[4, 4]).unwrap();
    // The first region sets a grid of 1×1 cells.
    rt.submit(&task(
        k,
        &[0],
        &[arg(x, &[0, 0], &[1, 1], Direction::Out)],
        10,
    ))
    .unwrap();
    for s in [0, -7] {
        let mut a = arg(x, &[1, 1], &[1, 1], Direction::Out);
        a.region.strides[0] = s;
        assert!(rt.submit(&task(k, &[1], &[a], 10)).is_err(), "stride {s}");
    }
}

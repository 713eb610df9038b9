//! Kernel pipes: `cube`/`vector` sections, talloc/tpush/tpop/tfree through the rings, the
//! interpreter's errors on misuse, and queues too large to bound.

use crate::common::{args_for, check_all, check_mode, f32t, tt, Data, ALL};
use wsp_ir::interp::run_kernel;
use wsp_ir::kernel::*;
use wsp_ir::typing::KernelBuilder;
use wsp_ir::{DType, ScalarValue};
use wsp_jit::Jit;

fn region(r0: KIndex, rows: u32, c0: KIndex, cols: u32) -> Region {
    Region {
        row_start: r0,
        rows,
        col_start: c0,
        cols,
    }
}

fn at(i: ValueId, coeff: i64, constant: i64) -> KIndex {
    KIndex {
        constant,
        terms: vec![(i, coeff)],
    }
}

/// Wraps consecutive runs of `k`'s top-level statements into sections: `parts[j]` takes the
/// next `n` statements; the sections then appear in program order `order` (indices of
/// `parts`). The kernel is validated again.
fn sectioned(mut k: Kernel, parts: &[(SectionKind, usize)], order: &[usize]) -> Kernel {
    let mut body = k.body.take().unwrap().into_iter();
    let total: usize = parts.iter().map(|p| p.1).sum();
    assert_eq!(total, body.len(), "{}: section sizes", k.name);
    let secs: Vec<Stmt> = parts
        .iter()
        .map(|(kind, n)| Stmt::Section {
            kind: *kind,
            body: body.by_ref().take(*n).collect(),
        })
        .collect();
    k.body = Some(order.iter().map(|j| secs[*j].clone()).collect());
    wsp_ir::typing::validate(&k).unwrap_or_else(|e| panic!("{e}"));
    k
}

/// [`check_all`], and the full-extent run succeeds in both engines (agreement on an error would
/// hide a broken pipe).
fn check_all_ok(k: &Kernel) {
    assert!(
        check_mode(k, 1, None, Data::Small),
        "{}: both failed",
        k.name
    );
    assert!(
        check_mode(k, 2, None, Data::Wide),
        "{}: both failed",
        k.name
    );
    check_all(k);
}

/// Both engines fail on `k` with the same message.
fn same_error(k: &Kernel) -> String {
    let ck = Jit::new().compile(k).unwrap_or_else(|e| panic!("{e}"));
    let mut a = args_for(k, 1, None);
    let mut b = a.clone();
    let ri = run_kernel(k, &mut a).expect_err("interpreter succeeded");
    let rj = ck.run(&mut b).expect_err("JIT succeeded");
    assert_eq!(ri, rj);
    rj.message
}

#[test]
fn cube_matmul_halves_through_a_pipe_to_a_vector_softmax_step() {
    use SectionKind::*;
    // cube { s = talloc(p); s[:, 0..6] = a @ b[:, 0..6]; s[:, 6..12] = a @ b[:, 6..12];
    //        tpush(p, s) }
    // vector { t = tpop(p); out = exp(t - rowmax(t)); tfree(p, t) }
    // in both program orders (the cube section runs first either way).
    let mut b = KernelBuilder::new("cube_vector");
    let a = b.partial_tile_param("a", Direction::In, f32t(8, 16), [true, true]);
    let bm = b.partial_tile_param("b", Direction::In, f32t(16, 12), [true, false]);
    let o = b.partial_tile_param("out", Direction::Out, f32t(8, 12), [true, true]);
    let p = b.pipe("p", f32t(8, 12), 2);
    let s = b.var("s", Type::Tile(f32t(8, 12)));
    let av = b.load(a).unwrap();
    let bv = b.load(bm).unwrap();
    b.stmt(Stmt::TAlloc { pipe: p, slot: s });
    for half in 0..2i64 {
        let c0 = KIndex::constant(6 * half);
        let bh = b
            .op(Op::Slice {
                x: bv,
                region: region(KIndex::constant(0), 16, c0.clone(), 6),
            })
            .unwrap();
        let m = b
            .op(Op::Matmul {
                a: av,
                b: bh,
                acc: None,
            })
            .unwrap();
        b.stmt(Stmt::Assign {
            var: s,
            region: Some(region(KIndex::constant(0), 8, c0, 6)),
            value: m,
        });
    }
    b.stmt(Stmt::TPush { pipe: p, slot: s });
    let t = b.op(Op::TPop { pipe: p }).unwrap();
    let mx = b
        .op(Op::Reduce {
            op: ReduceOp::RowMax,
            x: t,
        })
        .unwrap();
    let d = b.binary(BinaryOp::Sub, t, mx).unwrap();
    let e = b.unary(UnaryOp::Exp, d).unwrap();
    b.store(o, e);
    b.stmt(Stmt::TFree { pipe: p, value: t });
    let k = b.finish().unwrap();
    for order in [[0, 1], [1, 0]] {
        let k = sectioned(k.clone(), &[(Cube, 10), (Vector, 6)], &order);
        check_all_ok(&k);
    }
}

#[test]
fn loops_push_and_pop_several_slots_in_order() {
    use SectionKind::*;
    // cube { for i in 0..4 { s = talloc(p); s = x[4i.., :] * 2; tpush(p, s) } }
    // vector { for i in 0..4 { t = tpop(p); out[4i.., :] = exp(t); tfree(p, t) } }
    for c in [3u32, 8] {
        let mut b = KernelBuilder::new("loops");
        let x = b.partial_tile_param("x", Direction::In, f32t(16, c), [true, true]);
        let o = b.partial_tile_param("out", Direction::Out, f32t(16, c), [true, true]);
        let p = b.pipe("p", f32t(4, c), 2);
        let s = b.var("s", Type::Tile(f32t(4, c)));
        let xv = b.load(x).unwrap();
        let i = b.begin_for(0, 4);
        b.stmt(Stmt::TAlloc { pipe: p, slot: s });
        let sl = b
            .op(Op::Slice {
                x: xv,
                region: region(at(i, 4, 0), 4, KIndex::constant(0), c),
            })
            .unwrap();
        let y = b.binary(BinaryOp::Add, sl, sl).unwrap();
        b.stmt(Stmt::Assign {
            var: s,
            region: None,
            value: y,
        });
        b.stmt(Stmt::TPush { pipe: p, slot: s });
        b.end_for().unwrap();
        let i = b.begin_for(0, 4);
        let t = b.op(Op::TPop { pipe: p }).unwrap();
        let e = b.unary(UnaryOp::Exp, t).unwrap();
        b.stmt(Stmt::Store {
            param: o,
            region: Some(region(at(i, 4, 0), 4, KIndex::constant(0), c)),
            value: e,
        });
        b.stmt(Stmt::TFree { pipe: p, value: t });
        b.end_for().unwrap();
        let k = b.finish().unwrap();
        for order in [[0, 1], [1, 0]] {
            check_all_ok(&sectioned(k.clone(), &[(Cube, 2), (Vector, 1)], &order));
        }
    }
}

#[test]
fn interleaved_pushes_and_pops_wrap_the_ring() {
    // vector { for i in 0..5 { push x[2i]; push x[2i+1]; out[i] = pop } ;
    //          for i in 0..5 { out[5 + i] = pop } }: rows come out in push order.
    let mut b = KernelBuilder::new("ring");
    let x = b.tile_param("x", Direction::In, f32t(10, 5));
    let o = b.tile_param("out", Direction::Out, f32t(10, 5));
    let p = b.pipe("p", f32t(1, 5), 2);
    let s = b.var("s", Type::Tile(f32t(1, 5)));
    let xv = b.load(x).unwrap();
    let i = b.begin_for(0, 5);
    for j in 0..2 {
        b.stmt(Stmt::TAlloc { pipe: p, slot: s });
        let row = b
            .op(Op::Slice {
                x: xv,
                region: region(at(i, 2, j), 1, KIndex::constant(0), 5),
            })
            .unwrap();
        b.stmt(Stmt::Assign {
            var: s,
            region: None,
            value: row,
        });
        b.stmt(Stmt::TPush { pipe: p, slot: s });
    }
    let t = b.op(Op::TPop { pipe: p }).unwrap();
    b.stmt(Stmt::Store {
        param: o,
        region: Some(region(at(i, 1, 0), 1, KIndex::constant(0), 5)),
        value: t,
    });
    b.stmt(Stmt::TFree { pipe: p, value: t });
    b.end_for().unwrap();
    let i = b.begin_for(0, 5);
    let t = b.op(Op::TPop { pipe: p }).unwrap();
    b.stmt(Stmt::Store {
        param: o,
        region: Some(region(at(i, 1, 5), 1, KIndex::constant(0), 5)),
        value: t,
    });
    b.stmt(Stmt::TFree { pipe: p, value: t });
    b.end_for().unwrap();
    let k = sectioned(b.finish().unwrap(), &[(SectionKind::Vector, 3)], &[0]);
    check_all_ok(&k);
    let mut args = args_for(&k, 3, None);
    let x = args[0].clone();
    Jit::new().compile(&k).unwrap().run(&mut args).unwrap();
    assert_eq!(args[1], x);
}

#[test]
fn pipe_slots_of_every_dtype_keep_talloc_zeros_outside_sub_range_writes() {
    // s = talloc(p); s[:, 1..5] = x[:, 0..4]; tpush; out = tpop (column 0 stays zero).
    for d in ALL {
        let mut b = KernelBuilder::new("dtypes");
        let x = b.partial_tile_param("x", Direction::In, tt(d, 3, 5), [true, true]);
        let o = b.partial_tile_param("out", Direction::Out, tt(d, 3, 5), [true, true]);
        let p = b.pipe("p", tt(d, 3, 5), 1);
        let s = b.var("s", Type::Tile(tt(d, 3, 5)));
        let xv = b.load(x).unwrap();
        b.stmt(Stmt::TAlloc { pipe: p, slot: s });
        let sl = b
            .op(Op::Slice {
                x: xv,
                region: region(KIndex::constant(0), 3, KIndex::constant(0), 4),
            })
            .unwrap();
        b.stmt(Stmt::Assign {
            var: s,
            region: Some(region(KIndex::constant(0), 3, KIndex::constant(1), 4)),
            value: sl,
        });
        b.stmt(Stmt::TPush { pipe: p, slot: s });
        let t = b.op(Op::TPop { pipe: p }).unwrap();
        b.store(o, t);
        b.stmt(Stmt::TFree { pipe: p, value: t });
        let k = sectioned(
            b.finish().unwrap(),
            &[(SectionKind::Cube, 5), (SectionKind::Vector, 3)],
            &[0, 1],
        );
        check_all_ok(&k);
    }
}

#[test]
fn pipe_misuse_fails_with_the_interpreters_errors() {
    use SectionKind::*;
    let base = |name: &str| {
        let mut b = KernelBuilder::new(name);
        let o = b.tile_param("out", Direction::Out, f32t(2, 4));
        let p = b.pipe("p", f32t(2, 4), 2);
        let s = b.var("s", Type::Tile(f32t(2, 4)));
        (b, o, p, s)
    };
    // tpop on an empty pipe (nothing pushes).
    let (mut b, o, p, _) = base("empty");
    let t = b.op(Op::TPop { pipe: p }).unwrap();
    b.store(o, t);
    let k = sectioned(b.finish().unwrap(), &[(Vector, 2)], &[0]);
    assert!(same_error(&k).contains("tpop on empty pipe `p`"));
    // One more pop than pushes, inside a loop.
    let (mut b, o, p, s) = base("short");
    let _ = b.begin_for(0, 3);
    b.stmt(Stmt::TAlloc { pipe: p, slot: s });
    b.stmt(Stmt::TPush { pipe: p, slot: s });
    b.end_for().unwrap();
    let _ = b.begin_for(0, 4);
    let t = b.op(Op::TPop { pipe: p }).unwrap();
    b.store(o, t);
    b.stmt(Stmt::TFree { pipe: p, value: t });
    b.end_for().unwrap();
    let k = sectioned(b.finish().unwrap(), &[(Cube, 1), (Vector, 1)], &[0, 1]);
    assert!(same_error(&k).contains("tpop on empty pipe `p`"));
    // tpush of a slot never reserved, and a second tpush of one slot.
    for twice in [false, true] {
        let (mut b, _, p, s) = base("unreserved");
        if twice {
            b.stmt(Stmt::TAlloc { pipe: p, slot: s });
            b.stmt(Stmt::TPush { pipe: p, slot: s });
        }
        b.stmt(Stmt::TPush { pipe: p, slot: s });
        let n = if twice { 3 } else { 1 };
        let k = sectioned(b.finish().unwrap(), &[(Cube, n)], &[0]);
        assert!(same_error(&k).contains("not reserved by talloc"));
    }
    // tfree without a tpop.
    let (mut b, o, p, s) = base("free");
    b.stmt(Stmt::TAlloc { pipe: p, slot: s });
    b.stmt(Stmt::TPush { pipe: p, slot: s });
    let t = b.op(Op::TPop { pipe: p }).unwrap();
    b.store(o, t);
    b.stmt(Stmt::TFree { pipe: p, value: t });
    b.stmt(Stmt::TFree { pipe: p, value: t });
    let k = sectioned(b.finish().unwrap(), &[(Vector, 6)], &[0]);
    assert!(same_error(&k).contains("without a matching tpop"));
    // A slot read or written in part after its tpush.
    for read in [true, false] {
        let (mut b, o, p, s) = base("moved");
        b.stmt(Stmt::TAlloc { pipe: p, slot: s });
        b.stmt(Stmt::TPush { pipe: p, slot: s });
        if read {
            let v = b.op(Op::VarRead { var: s }).unwrap();
            b.store(o, v);
        } else {
            let z = b.constant(ScalarValue::Float(1.0), DType::F32).unwrap();
            let f = b
                .op(Op::Full {
                    shape: [1, 4],
                    dtype: DType::F32,
                    value: z,
                })
                .unwrap();
            b.stmt(Stmt::Assign {
                var: s,
                region: Some(region(KIndex::constant(1), 1, KIndex::constant(0), 4)),
                value: f,
            });
        }
        let n = if read { 4 } else { 5 };
        let k = sectioned(b.finish().unwrap(), &[(Cube, n)], &[0]);
        let m = same_error(&k);
        assert!(m.contains("`s`"), "{m}");
    }
}

#[test]
fn pipe_queues_too_large_to_bound_are_refused() {
    let mut b = KernelBuilder::new("huge");
    let p = b.pipe("p", f32t(64, 64), 2);
    let s = b.var("s", Type::Tile(f32t(64, 64)));
    let _ = b.begin_for(0, 1 << 20);
    b.stmt(Stmt::TAlloc { pipe: p, slot: s });
    b.stmt(Stmt::TPush { pipe: p, slot: s });
    b.end_for().unwrap();
    let k = sectioned(b.finish().unwrap(), &[(SectionKind::Cube, 1)], &[0]);
    let e = Jit::new().compile(&k).err().unwrap();
    assert_eq!(e.kind, wsp_jit::JitErrorKind::Unsupported);
    assert!(e.message.contains("pipe `p`"), "{e}");
}

//! Every kernel IR op through the emitter, the stand-in and g++, against the interpreter:
//! each dtype family, broadcasting, partial tiles (valid extents), loops with affine regions,
//! variables, pipes and scalars. Also the diagnostics of what the emitter refuses.

mod common;

use wsp_ascend::kernel::{emit_kernel, Arch};
use wsp_ir::kernel::*;
use wsp_ir::typing::KernelBuilder;
use wsp_ir::workload::SrcSpan;
use wsp_ir::{DType, ScalarValue};

fn tt(d: DType, r: u32, c: u32) -> TileType {
    TileType::new(d, r, c)
}

const FLOATS: [DType; 3] = [DType::F32, DType::F16, DType::Bf16];

/// `out = f(x, y)` with partial parameters.
fn k2(
    name: String,
    xs: TileType,
    ys: TileType,
    out: TileType,
    body: impl FnOnce(&mut KernelBuilder, ValueId, ValueId) -> ValueId,
) -> Kernel {
    let mut b = KernelBuilder::new(&name);
    let x = b.partial_tile_param("x", Direction::In, xs, [true, true]);
    let y = b.partial_tile_param("y", Direction::In, ys, [ys.rows() > 1, ys.cols() > 1]);
    let o = b.partial_tile_param("out", Direction::Out, out, [true, true]);
    let xv = b.load(x).expect("load");
    let yv = b.load(y).expect("load");
    let r = body(&mut b, xv, yv);
    b.store(o, r);
    b.finish().unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn elementwise() -> Vec<Kernel> {
    use BinaryOp::*;
    let mut ks = Vec::new();
    for d in FLOATS {
        for op in [Add, Sub, Mul, Div, Max, Min, Pow, Rem] {
            for (i, ys) in [tt(d, 6, 9), tt(d, 6, 1), tt(d, 1, 9), tt(d, 1, 1)]
                .into_iter()
                .enumerate()
            {
                ks.push(k2(
                    format!("bin_{d}_{op:?}_{i}"),
                    tt(d, 6, 9),
                    ys,
                    tt(d, 6, 9),
                    |b, x, y| b.binary(op, x, y).expect("binary"),
                ));
            }
        }
        for op in [
            UnaryOp::Exp,
            UnaryOp::Log,
            UnaryOp::Sqrt,
            UnaryOp::Rsqrt,
            UnaryOp::Recip,
            UnaryOp::Tanh,
            UnaryOp::Sigmoid,
            UnaryOp::Sin,
            UnaryOp::Cos,
            UnaryOp::Relu,
            UnaryOp::Gelu,
            UnaryOp::Silu,
            UnaryOp::Abs,
            UnaryOp::Neg,
        ] {
            ks.push(k2(
                format!("un_{d}_{op:?}"),
                tt(d, 5, 11),
                tt(d, 5, 11),
                tt(d, 5, 11),
                |b, x, y| {
                    let s = b.binary(Mul, x, y).expect("mul");
                    let u = b.unary(op, s).expect("unary");
                    b.binary(Add, u, x).expect("add")
                },
            ));
        }
    }
    for d in [DType::I32, DType::I8, DType::U16, DType::I64] {
        for op in [Add, Sub, Mul, Max, Min] {
            for (i, ys) in [tt(d, 4, 7), tt(d, 4, 1), tt(d, 1, 7)]
                .into_iter()
                .enumerate()
            {
                ks.push(k2(
                    format!("ibin_{d}_{op:?}_{i}"),
                    tt(d, 4, 7),
                    ys,
                    tt(d, 4, 7),
                    |b, x, y| b.binary(op, x, y).expect("binary"),
                ));
            }
        }
        for op in [UnaryOp::Neg, UnaryOp::Abs, UnaryOp::Relu] {
            ks.push(k2(
                format!("iun_{d}_{op:?}"),
                tt(d, 4, 7),
                tt(d, 4, 7),
                tt(d, 4, 7),
                |b, x, _| b.unary(op, x).expect("unary"),
            ));
        }
    }
    ks
}

fn compare_select() -> Vec<Kernel> {
    use CmpOp::*;
    let mut ks = Vec::new();
    for d in [DType::F32, DType::F16, DType::I32] {
        for op in [Eq, Ne, Lt, Le, Gt, Ge] {
            let mut b = KernelBuilder::new(&format!("sel_{d}_{op:?}"));
            let x = b.partial_tile_param("x", Direction::In, tt(d, 7, 10), [true, true]);
            let s = b.scalar_param("s", d, None);
            let c = b.tile_param("c", Direction::In, tt(d, 7, 1));
            let o = b.partial_tile_param("out", Direction::Out, tt(d, 7, 10), [true, true]);
            let xv = b.load(x).expect("x");
            let sv = b.load(s).expect("s");
            let cv = b.load(c).expect("c");
            let m = b
                .op(Op::Cmp {
                    op,
                    lhs: xv,
                    rhs: sv,
                })
                .expect("cmp");
            let m1 = b
                .op(Op::Cmp {
                    op,
                    lhs: cv,
                    rhs: xv,
                })
                .expect("cmp");
            let nm = b.unary(UnaryOp::Not, m).expect("not");
            let m2 = b.binary(BinaryOp::Or, nm, m1).expect("or");
            let m3 = b.binary(BinaryOp::And, m2, m).expect("and");
            let neg = b.unary(UnaryOp::Neg, xv).expect("neg");
            let r = b
                .op(Op::Select {
                    cond: m3,
                    on_true: xv,
                    on_false: neg,
                })
                .expect("select");
            let r2 = b
                .op(Op::Select {
                    cond: m1,
                    on_true: r,
                    on_false: sv,
                })
                .expect("select");
            b.store(o, r2);
            ks.push(b.finish().expect("kernel"));
        }
    }
    ks
}

fn reductions() -> Vec<Kernel> {
    use ReduceOp::*;
    let mut ks = Vec::new();
    for d in [DType::F32, DType::F16, DType::Bf16, DType::I32, DType::I8] {
        for op in [RowSum, RowMax, RowMin, RowMean, ColSum, ColMax, ColMin] {
            if op == RowMean && !d.is_float() || pto_lacks(op, d) {
                continue;
            }
            let acc = d.accumulator();
            let out = if op.is_row() {
                tt(acc, 9, 1)
            } else {
                tt(acc, 1, 13)
            };
            ks.push(k2(
                format!("red_{d}_{op:?}"),
                tt(d, 9, 13),
                tt(d, 9, 13),
                out,
                |b, x, y| {
                    let s = b.binary(BinaryOp::Sub, x, y).expect("sub");
                    b.op(Op::Reduce { op, x: s }).expect("reduce")
                },
            ));
        }
    }
    ks
}

/// The reductions PTO-ISA's headers reject at compile time (static assertions on the dtype),
/// which the emitter refuses.
fn pto_lacks(op: ReduceOp, d: DType) -> bool {
    matches!(
        (op, d),
        (ReduceOp::ColSum | ReduceOp::ColMax, DType::I32)
            | (ReduceOp::ColSum | ReduceOp::RowSum, DType::I8)
    )
}

fn casts() -> Vec<Kernel> {
    use DType::*;
    let mut ks = Vec::new();
    let pairs = [
        (F32, F16),
        (F16, F32),
        (F32, Bf16),
        (F16, Bf16),
        (F32, I32),
        (F16, I8),
        (I32, F32),
        (I32, F16),
        (I64, Bf16),
        (I32, I8),
        (U16, I32),
        (F32, Bool),
        (I32, Bool),
        (Bool, F32),
        (Bool, I32),
        (F32, F64),
        (F64, F16),
    ];
    for (from, to) in pairs {
        let mut b = KernelBuilder::new(&format!("cast_{from}_{to}"));
        let x = b.partial_tile_param("x", Direction::In, tt(from, 6, 8), [true, false]);
        let o = b.partial_tile_param("out", Direction::Out, tt(to, 6, 8), [true, false]);
        let xv = b.load(x).expect("x");
        let c = b.op(Op::Cast { x: xv, dtype: to }).expect("cast");
        b.store(o, c);
        ks.push(b.finish().expect("kernel"));
    }
    // Stores round to the parameter's dtype.
    let mut b = KernelBuilder::new("store_rounds");
    let x = b.tile_param("x", Direction::In, tt(F32, 4, 16));
    let o = b.tile_param("out", Direction::Out, tt(F16, 4, 16));
    let xv = b.load(x).expect("x");
    let c = b.op(Op::Cast { x: xv, dtype: F16 }).expect("cast");
    let c32 = b.op(Op::Cast { x: c, dtype: F32 }).expect("cast");
    let s = b.binary(BinaryOp::Add, c32, xv).expect("add");
    let s16 = b.op(Op::Cast { x: s, dtype: F16 }).expect("cast");
    b.store(o, s16);
    ks.push(b.finish().expect("kernel"));
    ks
}

fn cube_and_movement() -> Vec<Kernel> {
    let mut ks = Vec::new();
    for d in [DType::F32, DType::F16, DType::Bf16] {
        for with_acc in [false, true] {
            let mut b = KernelBuilder::new(&format!("mm_{d}_{with_acc}"));
            let a = b.partial_tile_param("a", Direction::In, tt(d, 12, 20), [true, true]);
            let bb = b.partial_tile_param("b", Direction::In, tt(d, 20, 9), [true, false]);
            let c =
                b.partial_tile_param("c", Direction::InOut, tt(DType::F32, 12, 9), [true, false]);
            let (av, bv) = (b.load(a).expect("a"), b.load(bb).expect("b"));
            let acc = if with_acc {
                Some(b.load(c).expect("c"))
            } else {
                None
            };
            let m = b.op(Op::Matmul { a: av, b: bv, acc }).expect("matmul");
            b.store(c, m);
            ks.push(b.finish().expect("kernel"));
        }
    }
    // transpose, full, iota, slice and stores into regions inside loops, vars.
    for d in [DType::F32, DType::F16, DType::I32] {
        let mut b = KernelBuilder::new(&format!("move_{d}"));
        let x = b.partial_tile_param("x", Direction::In, tt(d, 8, 12), [true, true]);
        let s = b.scalar_param("s", d, None);
        let o = b.partial_tile_param("out", Direction::InOut, tt(d, 12, 8), [true, true]);
        let o2 = b.tile_param("out2", Direction::Out, tt(d, 4, 12));
        let xv = b.load(x).expect("x");
        let sv = b.load(s).expect("s");
        let t = b.op(Op::Transpose { x: xv }).expect("transpose");
        let io = b
            .op(Op::Iota {
                shape: [12, 8],
                dtype: d,
            })
            .expect("iota");
        let sum = b.binary(BinaryOp::Add, t, io).expect("add");
        b.store(o, sum);
        let acc = b.var("acc", Type::Tile(tt(d, 4, 12)));
        let f = b
            .op(Op::Full {
                shape: [4, 12],
                dtype: d,
                value: sv,
            })
            .expect("full");
        b.stmt(Stmt::Assign {
            var: acc,
            region: None,
            value: f,
        });
        let i = b.begin_for(0, 2);
        let reg = |rows, cols, r: i64| Region {
            row_start: KIndex {
                constant: r,
                terms: vec![(i, 4)],
            },
            rows,
            col_start: KIndex::constant(0),
            cols,
        };
        let sl = b
            .op(Op::Slice {
                x: xv,
                region: reg(4, 12, 0),
            })
            .expect("slice");
        let cur = b.op(Op::VarRead { var: acc }).expect("read");
        let nx = b.binary(BinaryOp::Max, cur, sl).expect("max");
        b.stmt(Stmt::Assign {
            var: acc,
            region: None,
            value: nx,
        });
        let part = b
            .op(Op::Slice {
                x: sl,
                region: reg(2, 6, 0),
            })
            .expect("slice");
        let part = b
            .op(Op::Slice {
                x: part,
                region: Region {
                    row_start: KIndex::constant(0),
                    rows: 2,
                    col_start: KIndex::constant(0),
                    cols: 6,
                },
            })
            .expect("slice");
        b.stmt(Stmt::Assign {
            var: acc,
            region: Some(Region {
                row_start: KIndex {
                    constant: 1,
                    terms: vec![(i, 1)],
                },
                rows: 2,
                col_start: KIndex::constant(3),
                cols: 6,
            }),
            value: part,
        });
        let t2 = b.op(Op::Transpose { x: part }).expect("transpose");
        b.stmt(Stmt::Store {
            param: o,
            region: Some(Region {
                row_start: KIndex {
                    constant: 2,
                    terms: vec![(i, 3)],
                },
                rows: 6,
                col_start: KIndex::constant(1),
                cols: 2,
            }),
            value: t2,
        });
        b.end_for().expect("for");
        let fin = b.op(Op::VarRead { var: acc }).expect("read");
        b.store(o2, fin);
        ks.push(b.finish().expect("kernel"));
    }
    for d in [DType::F32, DType::F16, DType::I32] {
        for k in [1u32, 3, 10] {
            let mut b = KernelBuilder::new(&format!("topk_{d}_{k}"));
            let x = b.partial_tile_param("x", Direction::In, tt(d, 5, 10), [true, true]);
            let ov = b.partial_tile_param("vals", Direction::Out, tt(d, 5, k), [true, false]);
            let oi =
                b.partial_tile_param("idx", Direction::Out, tt(DType::I32, 5, k), [true, false]);
            let xv = b.load(x).expect("x");
            let r = b.op_n(Op::RowTopK { x: xv, k }).expect("topk");
            b.store(ov, r[0]);
            b.store(oi, r[1]);
            ks.push(b.finish().expect("kernel"));
        }
    }
    ks
}

fn scalars_and_pipes() -> Vec<Kernel> {
    let mut ks = Vec::new();
    for d in [
        DType::F32,
        DType::F16,
        DType::Bf16,
        DType::F64,
        DType::I32,
        DType::I8,
        DType::U32,
    ] {
        let mut b = KernelBuilder::new(&format!("scalar_{d}"));
        let s = b.scalar_param("s", d, None);
        let t = b.scalar_param("t", d, None);
        let o = b.tile_param("out", Direction::Out, tt(DType::F32, 1, 16));
        let (sv, tv) = (b.load(s).expect("s"), b.load(t).expect("t"));
        let mut outs = Vec::new();
        let ops: &[BinaryOp] = if d.is_float() {
            &[
                BinaryOp::Add,
                BinaryOp::Sub,
                BinaryOp::Mul,
                BinaryOp::Div,
                BinaryOp::Max,
                BinaryOp::Min,
                BinaryOp::Pow,
                BinaryOp::Rem,
            ]
        } else {
            &[
                BinaryOp::Add,
                BinaryOp::Sub,
                BinaryOp::Mul,
                BinaryOp::Div,
                BinaryOp::Rem,
                BinaryOp::Max,
                BinaryOp::Min,
            ]
        };
        for op in ops {
            outs.push(b.binary(*op, sv, tv).expect("binary"));
        }
        let uops: &[UnaryOp] = if d.is_float() {
            &[
                UnaryOp::Exp,
                UnaryOp::Gelu,
                UnaryOp::Sigmoid,
                UnaryOp::Rsqrt,
                UnaryOp::Sin,
                UnaryOp::Relu,
                UnaryOp::Neg,
            ]
        } else {
            &[UnaryOp::Neg, UnaryOp::Abs, UnaryOp::Relu]
        };
        for op in uops {
            outs.push(b.unary(*op, sv).expect("unary"));
        }
        let c = b
            .op(Op::Cmp {
                op: CmpOp::Lt,
                lhs: sv,
                rhs: tv,
            })
            .expect("cmp");
        outs.push(
            b.op(Op::Select {
                cond: c,
                on_true: sv,
                on_false: tv,
            })
            .expect("select"),
        );
        let zero = b.constant(ScalarValue::Int(0), DType::F32).expect("zero");
        let mut acc = b
            .op(Op::Full {
                shape: [1, 16],
                dtype: DType::F32,
                value: zero,
            })
            .expect("full");
        let io = b
            .op(Op::Iota {
                shape: [1, 16],
                dtype: DType::F32,
            })
            .expect("iota");
        for (j, v) in outs.into_iter().enumerate() {
            let f = b
                .op(Op::Cast {
                    x: v,
                    dtype: DType::F32,
                })
                .expect("cast");
            let jj = b
                .constant(ScalarValue::Float(j as f64), DType::F32)
                .expect("j");
            let m = b
                .op(Op::Cmp {
                    op: CmpOp::Eq,
                    lhs: io,
                    rhs: jj,
                })
                .expect("cmp");
            acc = b
                .op(Op::Select {
                    cond: m,
                    on_true: f,
                    on_false: acc,
                })
                .expect("select");
        }
        b.store(o, acc);
        ks.push(b.finish().expect("kernel"));
    }
    // cube -> vector through a pipe, sections in either program order: built flat (producer
    // loop, then consumer loop), then each loop wrapped in its section.
    for consumer_first in [false, true] {
        let mut b = KernelBuilder::new(&format!("pipe_{consumer_first}"));
        let a = b.tile_param("a", Direction::In, tt(DType::F16, 16, 32));
        let w = b.tile_param("w", Direction::In, tt(DType::F16, 32, 16));
        let o = b.tile_param("out", Direction::Out, tt(DType::F32, 48, 16));
        let p = b.pipe("p", tt(DType::F32, 16, 16), 2);
        let slot = b.var("slot", Type::Tile(tt(DType::F32, 16, 16)));
        let i = b.begin_for(0, 3);
        let av = b.load(a).expect("a");
        let wv = b.load(w).expect("w");
        let m = b
            .op(Op::Matmul {
                a: av,
                b: wv,
                acc: None,
            })
            .expect("mm");
        b.stmt(Stmt::TAlloc { pipe: p, slot });
        b.stmt(Stmt::Assign {
            var: slot,
            region: None,
            value: m,
        });
        let ii = b
            .op(Op::Cast {
                x: i,
                dtype: DType::F32,
            })
            .expect("cast");
        let f = b
            .op(Op::Full {
                shape: [4, 16],
                dtype: DType::F32,
                value: ii,
            })
            .expect("full");
        b.stmt(Stmt::Assign {
            var: slot,
            region: Some(Region {
                row_start: KIndex::constant(4),
                rows: 4,
                col_start: KIndex::constant(0),
                cols: 16,
            }),
            value: f,
        });
        b.stmt(Stmt::TPush { pipe: p, slot });
        b.end_for().expect("for");
        let j = b.begin_for(0, 3);
        let v = b.op(Op::TPop { pipe: p }).expect("pop");
        let e = b.unary(UnaryOp::Exp, v).expect("exp");
        store_rows(&mut b, o, j, 16, 16, e);
        b.stmt(Stmt::TFree { pipe: p, value: v });
        b.end_for().expect("for");
        let k = b.finish().expect("kernel");
        ks.push(in_sections(k, SectionKind::Cube, consumer_first));
    }
    // Pipes in both directions whose slots are fewer than the tiles pushed (the producer waits
    // for the consumer to free a slot: the cores run side by side), and a consumer that pops
    // one slot more than is ever pushed (the interpreter rejects the task; the entry must
    // return an error, not hang).
    for (name, producer, slots, pops) in [
        ("pipe_v2c_one_slot", SectionKind::Vector, 1, 4),
        ("pipe_c2v_two_slots", SectionKind::Cube, 2, 4),
        ("pipe_pops_too_many", SectionKind::Cube, 2, 5),
    ] {
        ks.push(pipe_kernel(name, producer, slots, 4, pops));
    }
    ks
}

/// `pushes` tiles `x + i` through a pipe of `slots` slots from a `producer` section to the
/// other one, which pops `pops` of them into rows `8j..8j+8` of `out`.
fn pipe_kernel(name: &str, producer: SectionKind, slots: u32, pushes: i64, pops: i64) -> Kernel {
    let t = tt(DType::F32, 8, 16);
    let mut b = KernelBuilder::new(name);
    let x = b.tile_param("x", Direction::In, t);
    let o = b.tile_param("out", Direction::Out, tt(DType::F32, 8 * pops as u32, 16));
    let p = b.pipe("p", t, slots);
    let slot = b.var("slot", Type::Tile(t));
    let i = b.begin_for(0, pushes);
    let xv = b.load(x).expect("x");
    let fi = b
        .op(Op::Cast {
            x: i,
            dtype: DType::F32,
        })
        .expect("cast");
    let f = b
        .op(Op::Full {
            shape: [8, 16],
            dtype: DType::F32,
            value: fi,
        })
        .expect("full");
    let v = b.binary(BinaryOp::Add, xv, f).expect("add");
    b.stmt(Stmt::TAlloc { pipe: p, slot });
    b.stmt(Stmt::Assign {
        var: slot,
        region: None,
        value: v,
    });
    b.stmt(Stmt::TPush { pipe: p, slot });
    b.end_for().expect("for");
    let j = b.begin_for(0, pops);
    let v = b.op(Op::TPop { pipe: p }).expect("pop");
    store_rows(&mut b, o, j, 8, 16, v);
    b.stmt(Stmt::TFree { pipe: p, value: v });
    b.end_for().expect("for");
    in_sections(b.finish().expect("kernel"), producer, false)
}

/// `out[j*rows .. j*rows + rows, 0..cols] = value`.
fn store_rows(b: &mut KernelBuilder, o: ParamId, j: ValueId, rows: u32, cols: u32, value: ValueId) {
    b.stmt(Stmt::Store {
        param: o,
        region: Some(Region {
            row_start: KIndex {
                constant: 0,
                terms: vec![(j, i64::from(rows))],
            },
            rows,
            col_start: KIndex::constant(0),
            cols,
        }),
        value,
    });
}

/// A kernel built flat as a producer loop then a consumer loop, with the producer in a
/// `producer` section and the consumer in the other unit's, in program order or (with
/// `consumer_first`) the other way round.
fn in_sections(mut k: Kernel, producer: SectionKind, consumer_first: bool) -> Kernel {
    let mut body = k.body.take().unwrap_or_default();
    assert_eq!(body.len(), 2, "a producer loop and a consumer loop");
    let consumer_loop = body.pop().expect("consumer");
    let producer_loop = body.pop().expect("producer");
    let consumer = match producer {
        SectionKind::Cube => SectionKind::Vector,
        SectionKind::Vector => SectionKind::Cube,
    };
    let p = Stmt::Section {
        kind: producer,
        body: vec![producer_loop],
    };
    let c = Stmt::Section {
        kind: consumer,
        body: vec![consumer_loop],
    };
    k.body = Some(if consumer_first {
        vec![c, p]
    } else {
        vec![p, c]
    });
    k
}

#[test]
fn every_op_agrees_with_the_interpreter_on_the_standin() {
    let inc = common::standin_dir("ops");
    let groups = [
        ("elementwise", elementwise()),
        ("compare_select", compare_select()),
        ("reductions", reductions()),
        ("casts", casts()),
        ("cube_and_movement", cube_and_movement()),
        ("scalars_and_pipes", scalars_and_pipes()),
    ];
    let mut jobs = Vec::new();
    for (name, ks) in groups {
        for (i, chunk) in ks.chunks(40).enumerate() {
            jobs.push((format!("{name}_{i}"), chunk.to_vec()));
        }
    }
    let failures = common::run_jobs(&jobs, &[], &inc, &common::gxx(), "ops");
    let _ = std::fs::remove_dir_all(inc.parent().expect("parent"));
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn what_cannot_be_lowered_is_a_diagnostic_naming_it_with_the_kernel_span() {
    let at = Some(SrcSpan {
        file: "k.wsp".into(),
        start: 3,
        end: 9,
    });
    let mut k = k2(
        "idiv".into(),
        tt(DType::I32, 4, 8),
        tt(DType::I32, 4, 8),
        tt(DType::I32, 4, 8),
        |b, x, y| b.binary(BinaryOp::Div, x, y).expect("div"),
    );
    k.at = at.clone();
    let d = emit_kernel(&k, Arch::Ascend910b).expect_err("integer tile division is refused");
    assert!(
        d.message.contains("`/`") && d.message.contains("idiv"),
        "{}",
        d.message
    );
    assert_eq!(d.at, at);

    // Reductions PTO-ISA has no instruction for.
    for d in [DType::I32, DType::I8] {
        for op in [ReduceOp::RowSum, ReduceOp::ColSum, ReduceOp::ColMax] {
            let k = k2(
                "ired".into(),
                tt(d, 4, 8),
                tt(d, 4, 8),
                if op.is_row() {
                    tt(d, 4, 1)
                } else {
                    tt(d, 1, 8)
                },
                |b, x, y| {
                    let s = b.binary(BinaryOp::Add, x, y).expect("add");
                    b.op(Op::Reduce { op, x: s }).expect("reduce")
                },
            );
            match emit_kernel(&k, Arch::Ascend910b) {
                Err(e) => {
                    assert!(pto_lacks(op, d), "{op:?} on {d}: {}", e.message);
                    assert!(
                        e.message.contains("no PTO-ISA instruction"),
                        "{}",
                        e.message
                    );
                }
                Ok(_) => assert!(!pto_lacks(op, d), "{op:?} on {d} was emitted"),
            }
        }
    }

    // Masks stay a byte per element: no PTO-ISA compare or select instruction (their packed
    // bit masks disagree with each other across rows; docs/backends.md).
    for k in compare_select() {
        let src = emit_kernel(&k, Arch::Ascend910b).expect("emits").code;
        for inst in ["TCMP(", "TCMPS(", "TSEL("] {
            assert!(!src.contains(inst), "{}: {inst}", k.name);
        }
    }

    // Tiles that do not fit the unified buffer.
    let mut k = k2(
        "huge".into(),
        tt(DType::F32, 256, 512),
        tt(DType::F32, 256, 512),
        tt(DType::F32, 256, 512),
        |b, x, y| b.binary(BinaryOp::Add, x, y).expect("add"),
    );
    k.at = at.clone();
    let d = emit_kernel(&k, Arch::Ascend910b).expect_err("too big for UB");
    assert!(
        d.message.contains("UB") && d.message.contains("196608"),
        "{}",
        d.message
    );

    // Tile coordinates are 16-bit.
    let k = k2(
        "wide".into(),
        tt(DType::U8, 1, 70000),
        tt(DType::U8, 1, 70000),
        tt(DType::U8, 1, 70000),
        |b, x, y| b.binary(BinaryOp::Add, x, y).expect("add"),
    );
    let d = emit_kernel(&k, Arch::Ascend910b).expect_err("too wide");
    assert!(d.message.contains("65535"), "{}", d.message);

    // A kernel with only extern implementations has nothing to lower.
    let mut k = k2(
        "ext".into(),
        tt(DType::F32, 4, 8),
        tt(DType::F32, 4, 8),
        tt(DType::F32, 4, 8),
        |b, x, y| b.binary(BinaryOp::Add, x, y).expect("add"),
    );
    k.body = None;
    k.externs = vec![ExternImpl {
        target: "ascend".into(),
        path: "k.cpp".into(),
    }];
    let d = emit_kernel(&k, Arch::Ascend950).expect_err("extern only");
    assert!(d.message.contains("extern"), "{}", d.message);

    // A pipe whose two sides are in one section, and a value crossing the sections: the
    // cores share only their pipes.
    let mut k = pipe_kernel("same_side", SectionKind::Cube, 2, 2, 2);
    let mut body = k.body.take().unwrap_or_default();
    let stmts: Vec<Stmt> = body
        .drain(..)
        .flat_map(|s| match s {
            Stmt::Section { body, .. } => body,
            s => vec![s],
        })
        .collect();
    k.body = Some(vec![Stmt::Section {
        kind: SectionKind::Vector,
        body: stmts,
    }]);
    k.at = at.clone();
    let d = emit_kernel(&k, Arch::Ascend910b).expect_err("one-section pipe");
    assert!(
        d.message
            .contains("pipe `p` is written and read in the `vector` section"),
        "{}",
        d.message
    );
    assert_eq!(d.at, at);

    let mut k = pipe_kernel("crossing", SectionKind::Cube, 2, 2, 2);
    if let Some(body) = &mut k.body {
        // The consumer also stores the producer's `x` load.
        let x_load = match &body[0] {
            Stmt::Section { body, .. } => match &body[0] {
                Stmt::For { body, .. } => match &body[0] {
                    Stmt::Op { results, .. } => results[0],
                    s => panic!("{s:?}"),
                },
                s => panic!("{s:?}"),
            },
            s => panic!("{s:?}"),
        };
        if let Stmt::Section { body, .. } = &mut body[1] {
            body.push(Stmt::Store {
                param: ParamId(1),
                region: Some(Region {
                    row_start: KIndex::constant(0),
                    rows: 8,
                    col_start: KIndex::constant(0),
                    cols: 16,
                }),
                value: x_load,
            });
        }
    }
    let d = emit_kernel(&k, Arch::Ascend910b).expect_err("crossing value");
    assert!(
        d.message
            .contains("a value computed in the `cube` section is read in the `vector` section"),
        "{}",
        d.message
    );
}

//! f32 kernels: elementwise operations with broadcasting, fused unary chains, compare and
//! select, row and column reductions, softmax and rmsnorm, matmul, transpose, full and iota,
//! `for` loops with variables, slices and region stores.

use crate::common::{check_all, f32t, kernel2, SHAPES};
use wsp_ir::kernel::*;
use wsp_ir::typing::KernelBuilder;
use wsp_ir::{DType, ScalarValue};

#[test]
fn binary_ops_with_broadcasting() {
    use BinaryOp::*;
    for op in [Add, Sub, Mul, Div, Max, Min, Pow, Rem] {
        for [r, c] in SHAPES {
            for (ys, part) in [(f32t(r, c), true), (f32t(r, 1), false), (f32t(1, c), true)] {
                let k = kernel2("bin", f32t(r, c), ys, f32t(r, c), part, |b, x, y| {
                    b.binary(op, x, y).unwrap()
                });
                check_all(&k);
            }
        }
    }
}

#[test]
fn unary_ops_fused_chain() {
    use UnaryOp::*;
    for op in [
        Exp, Log, Sqrt, Rsqrt, Recip, Tanh, Sigmoid, Sin, Cos, Relu, Gelu, Silu, Abs, Neg,
    ] {
        for [r, c] in SHAPES {
            let k = kernel2("un", f32t(r, c), f32t(r, c), f32t(r, c), true, |b, x, y| {
                let s = b.binary(BinaryOp::Mul, x, y).unwrap();
                let u = b.unary(op, s).unwrap();
                b.binary(BinaryOp::Add, u, x).unwrap()
            });
            check_all(&k);
        }
    }
}

#[test]
fn compare_and_select_with_scalar_param() {
    use CmpOp::*;
    for op in [Eq, Ne, Lt, Le, Gt, Ge] {
        for [r, c] in SHAPES {
            let mut b = KernelBuilder::new("sel");
            let x = b.tile_param("x", Direction::In, f32t(r, c));
            let s = b.scalar_param("s", DType::F32, None);
            let o = b.tile_param("out", Direction::Out, f32t(r, c));
            let xv = b.load(x).unwrap();
            let sv = b.load(s).unwrap();
            let m = b
                .op(Op::Cmp {
                    op,
                    lhs: xv,
                    rhs: sv,
                })
                .unwrap();
            let neg = b.unary(UnaryOp::Neg, xv).unwrap();
            let nm = b.unary(UnaryOp::Not, m).unwrap();
            let m2 = b.binary(BinaryOp::Or, nm, m).unwrap();
            let m3 = b.binary(BinaryOp::And, m2, m).unwrap();
            let r = b
                .op(Op::Select {
                    cond: m3,
                    on_true: xv,
                    on_false: neg,
                })
                .unwrap();
            b.store(o, r);
            check_all(&b.finish().unwrap());
        }
    }
}

#[test]
fn reductions_row_and_column() {
    use ReduceOp::*;
    for op in [RowSum, RowMax, RowMin, RowMean, ColSum, ColMax, ColMin] {
        for [r, c] in SHAPES {
            let out = if op.is_row() { f32t(r, 1) } else { f32t(1, c) };
            let k = kernel2("red", f32t(r, c), f32t(r, c), out, true, |b, x, y| {
                let s = b.binary(BinaryOp::Sub, x, y).unwrap();
                b.op(Op::Reduce { op, x: s }).unwrap()
            });
            check_all(&k);
        }
    }
}

#[test]
fn softmax_and_rmsnorm() {
    for [r, c] in SHAPES {
        let k = kernel2(
            "softmax",
            f32t(r, c),
            f32t(r, c),
            f32t(r, c),
            true,
            |b, x, _| {
                let m = b
                    .op(Op::Reduce {
                        op: ReduceOp::RowMax,
                        x,
                    })
                    .unwrap();
                let d = b.binary(BinaryOp::Sub, x, m).unwrap();
                let e = b.unary(UnaryOp::Exp, d).unwrap();
                let s = b
                    .op(Op::Reduce {
                        op: ReduceOp::RowSum,
                        x: e,
                    })
                    .unwrap();
                b.binary(BinaryOp::Div, e, s).unwrap()
            },
        );
        check_all(&k);
        let k = kernel2(
            "rmsnorm",
            f32t(r, c),
            f32t(r, c),
            f32t(r, c),
            true,
            |b, x, _| {
                let sq = b.binary(BinaryOp::Mul, x, x).unwrap();
                let m = b
                    .op(Op::Reduce {
                        op: ReduceOp::RowMean,
                        x: sq,
                    })
                    .unwrap();
                let eps = b.constant(ScalarValue::Float(1e-6), DType::F32).unwrap();
                let me = b.binary(BinaryOp::Add, m, eps).unwrap();
                let rs = b.unary(UnaryOp::Rsqrt, me).unwrap();
                b.binary(BinaryOp::Mul, x, rs).unwrap()
            },
        );
        check_all(&k);
    }
}

#[test]
fn matmul_shapes_and_accumulator() {
    for (m, kk, n) in [
        (1, 1, 1),
        (4, 4, 4),
        (3, 5, 7),
        (16, 16, 16),
        (8, 3, 33),
        (5, 17, 20),
    ] {
        let k = kernel2(
            "mm",
            f32t(m, kk),
            f32t(kk, n),
            f32t(m, n),
            true,
            |b, x, y| {
                b.op(Op::Matmul {
                    a: x,
                    b: y,
                    acc: None,
                })
                .unwrap()
            },
        );
        check_all(&k);
        // Elementwise operands (materialised) and an accumulator expression.
        let k = kernel2(
            "mm_acc",
            f32t(m, kk),
            f32t(kk, n),
            f32t(m, n),
            false,
            |b, x, y| {
                let xa = b.unary(UnaryOp::Abs, x).unwrap();
                let c = b
                    .op(Op::Matmul {
                        a: xa,
                        b: y,
                        acc: None,
                    })
                    .unwrap();
                let c2 = b.unary(UnaryOp::Neg, c).unwrap();
                b.op(Op::Matmul {
                    a: x,
                    b: y,
                    acc: Some(c2),
                })
                .unwrap()
            },
        );
        check_all(&k);
    }
}

#[test]
fn transpose_full_iota() {
    for [r, c] in SHAPES {
        let k = kernel2("tr", f32t(r, c), f32t(c, r), f32t(c, r), true, |b, x, y| {
            let t = b.op(Op::Transpose { x }).unwrap();
            let i = b
                .op(Op::Iota {
                    shape: [c, r],
                    dtype: DType::F32,
                })
                .unwrap();
            let v = b.constant(ScalarValue::Float(0.5), DType::F32).unwrap();
            let f = b
                .op(Op::Full {
                    shape: [c, r],
                    dtype: DType::F32,
                    value: v,
                })
                .unwrap();
            let s = b.binary(BinaryOp::Add, t, i).unwrap();
            let s = b.binary(BinaryOp::Mul, s, f).unwrap();
            b.binary(BinaryOp::Add, s, y).unwrap()
        });
        check_all(&k);
    }
}

#[test]
fn for_loop_var_slice_and_region_store() {
    // acc = 0; for i in 0..4 { acc = acc + x[i*2..i*2+2, :] }; out[1..3, :] = acc
    for c in [3u32, 4, 9] {
        let mut b = KernelBuilder::new("loop");
        let x = b.partial_tile_param("x", Direction::In, f32t(8, c), [true, true]);
        let o = b.partial_tile_param("out", Direction::InOut, f32t(4, c), [true, true]);
        let acc = b.var("acc", Type::Tile(f32t(2, c)));
        let z = b.constant(ScalarValue::Float(0.0), DType::F32).unwrap();
        let f = b
            .op(Op::Full {
                shape: [2, c],
                dtype: DType::F32,
                value: z,
            })
            .unwrap();
        b.stmt(Stmt::Assign {
            var: acc,
            region: None,
            value: f,
        });
        let xv = b.load(x).unwrap();
        let i = b.begin_for(0, 4);
        let region = Region {
            row_start: KIndex {
                constant: 0,
                terms: vec![(i, 2)],
            },
            rows: 2,
            col_start: KIndex::constant(0),
            cols: c,
        };
        let sl = b.op(Op::Slice { x: xv, region }).unwrap();
        let a = b.op(Op::VarRead { var: acc }).unwrap();
        let s = b.binary(BinaryOp::Add, a, sl).unwrap();
        b.stmt(Stmt::Assign {
            var: acc,
            region: None,
            value: s,
        });
        b.end_for().unwrap();
        let a = b.op(Op::VarRead { var: acc }).unwrap();
        let ov = b.load(o).unwrap();
        let r2 = Region {
            row_start: KIndex::constant(0),
            rows: 2,
            col_start: KIndex::constant(0),
            cols: c,
        };
        let top = b.op(Op::Slice { x: ov, region: r2 }).unwrap();
        let sum = b.binary(BinaryOp::Add, a, top).unwrap();
        b.stmt(Stmt::Store {
            param: o,
            region: Some(Region {
                row_start: KIndex::constant(1),
                rows: 2,
                col_start: KIndex::constant(0),
                cols: c,
            }),
            value: sum,
        });
        check_all(&b.finish().unwrap());
    }
}

/// `exp`, `log`, `tanh` and the functions built from them are generated inline, four lanes
/// at a time with a scalar tail; over a sweep of the whole f32 range (every 4093rd bit
/// pattern, so every binade, the specials and subnormals) they are the interpreter's bit for
/// bit, in the vector lanes and in the tail.
#[test]
fn transcendentals_agree_with_the_interpreter_over_the_f32_range() {
    use wsp_ir::interp::{KernelArg, Tile};
    use wsp_ir::num::float_unary_in;
    use UnaryOp::*;
    let (rows, cols) = (32u32, 1023u32);
    let n = (rows * cols) as u64;
    let jit = wsp_jit::Jit::new();
    for op in [Exp, Log, Tanh, Sigmoid, Silu, Gelu, Rsqrt] {
        let mut b = KernelBuilder::new("f");
        let x = b.tile_param("x", Direction::In, f32t(rows, cols));
        let o = b.tile_param("out", Direction::Out, f32t(rows, cols));
        let xv = b.load(x).unwrap();
        let u = b.unary(op, xv).unwrap();
        b.store(o, u);
        let ck = jit.compile(&b.finish().unwrap()).unwrap();
        let mut start = 0u64;
        while start <= u64::from(u32::MAX) {
            let xs: Vec<f32> = (0..n)
                .map(|i| f32::from_bits(((start + i * 4093) & 0xFFFF_FFFF) as u32))
                .collect();
            let wide: Vec<f64> = xs.iter().map(|v| f64::from(*v)).collect();
            let mut args = vec![
                KernelArg::Tile(Tile::from_f64(DType::F32, rows, cols, &wide)),
                KernelArg::Tile(Tile::zeros(f32t(rows, cols))),
            ];
            ck.run(&mut args).unwrap();
            let KernelArg::Tile(out) = &args[1] else {
                unreachable!()
            };
            for (i, (x, got)) in xs.iter().zip(out.valid_f64()).enumerate() {
                let want = float_unary_in(op, *x).unwrap();
                let got = got as f32;
                assert!(
                    (want.is_nan() && got.is_nan()) || want.to_bits() == got.to_bits(),
                    "{}({x:e}) (column {}): interpreter {want:e} vs JIT {got:e}",
                    op.name(),
                    i as u32 % cols
                );
            }
            start += n * 4093;
        }
    }
}

/// A parameter the kernel stores to is read in place when every read comes before the store
/// or in the store's own loop at the position written, and from a snapshot otherwise: reads
/// after the store (directly or through a lazy value), and slices of it that the store's loop
/// reads at other positions.
#[test]
fn inout_parameters_read_in_place_or_from_a_snapshot() {
    type Body = fn(&mut KernelBuilder, ValueId, ValueId, ParamId, ParamId);
    let cases: [(&str, Body); 5] = [
        ("acc = acc + y*2", |b, a, y, p, _| {
            let two = b.constant(ScalarValue::Float(2.0), DType::F32).unwrap();
            let t = b.binary(BinaryOp::Mul, y, two).unwrap();
            let s = b.binary(BinaryOp::Add, a, t).unwrap();
            b.store(p, s);
        }),
        ("read after the store", |b, a, _, p, q| {
            let two = b.constant(ScalarValue::Float(2.0), DType::F32).unwrap();
            let s = b.binary(BinaryOp::Mul, a, two).unwrap();
            b.store(p, s);
            let t = b.binary(BinaryOp::Add, a, two).unwrap();
            b.store(q, t);
        }),
        ("a lazy value read after the store", |b, a, y, p, q| {
            let s = b.binary(BinaryOp::Sub, a, y).unwrap();
            b.store(p, s);
            b.store(q, s);
        }),
        ("a column of it broadcast", |b, a, _, p, _| {
            let region = Region {
                row_start: KIndex::constant(0),
                rows: 4,
                col_start: KIndex::constant(0),
                cols: 1,
            };
            let col = b.op(Op::Slice { x: a, region }).unwrap();
            let s = b.binary(BinaryOp::Add, a, col).unwrap();
            b.store(p, s);
        }),
        ("reduced before the store", |b, a, _, p, q| {
            let m = b
                .op(Op::Reduce {
                    op: ReduceOp::RowMax,
                    x: a,
                })
                .unwrap();
            let s = b.binary(BinaryOp::Sub, a, m).unwrap();
            b.store(p, s);
            let e = b.unary(UnaryOp::Exp, a).unwrap();
            let _ = (e, q);
        }),
    ];
    for (name, body) in cases {
        for c in [3u32, 8, 21] {
            let mut b = KernelBuilder::new(name);
            let p = b.partial_tile_param("p", Direction::InOut, f32t(4, c), [true, true]);
            let y = b.partial_tile_param("y", Direction::In, f32t(4, c), [true, true]);
            let q = b.partial_tile_param("q", Direction::Out, f32t(4, c), [true, true]);
            let a = b.load(p).unwrap();
            let yv = b.load(y).unwrap();
            body(&mut b, a, yv, p, q);
            check_all(&b.finish().unwrap());
        }
    }
}

/// A store of `full` of zero is a memset of the rows (one call when they are contiguous):
/// whole and into a region, of every element layout, with partial extents.
#[test]
fn zero_fills_whole_and_into_regions() {
    use crate::common::{tt, ALL};
    for d in ALL {
        for c in [1u32, 5, 16] {
            for region in [false, true] {
                let mut b = KernelBuilder::new("zero");
                let o = b.partial_tile_param("out", Direction::InOut, tt(d, 4, c), [true, true]);
                let zero = match d {
                    DType::Bool => ScalarValue::Bool(false),
                    DType::I32 => ScalarValue::Int(0),
                    _ => ScalarValue::Float(0.0),
                };
                let z = b.constant(zero, d).unwrap();
                let rows = if region { 2 } else { 4 };
                let f = b
                    .op(Op::Full {
                        shape: [rows, c],
                        dtype: d,
                        value: z,
                    })
                    .unwrap();
                if region {
                    b.stmt(Stmt::Store {
                        param: o,
                        region: Some(Region {
                            row_start: KIndex::constant(1),
                            rows: 2,
                            col_start: KIndex::constant(0),
                            cols: c,
                        }),
                        value: f,
                    });
                } else {
                    b.store(o, f);
                }
                check_all(&b.finish().unwrap());
            }
        }
    }
}

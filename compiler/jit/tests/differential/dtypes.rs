//! f16, bf16, i32 and bool: operations rounded per operation, casts between every pair of
//! dtypes, comparisons and bool logic, reductions, f16/bf16 matmul, `rowtopk`, constants,
//! scalars and variables, integer division.

use crate::common::{args_mode, check_all, check_mode, f32t, kernel2, tt, Data, ALL, HALF, SHAPES};
use wsp_ir::interp::{run_kernel, KernelArg};
use wsp_ir::kernel::*;
use wsp_ir::tensor::El;
use wsp_ir::typing::KernelBuilder;
use wsp_ir::{DType, ScalarValue};
use wsp_jit::Jit;

#[test]
fn half_and_int_binary_ops_with_broadcasting_round_per_op() {
    use BinaryOp::*;
    for d in [DType::F16, DType::Bf16, DType::I32] {
        let ops: &[BinaryOp] = if d.is_int() {
            &[Add, Sub, Mul, Div, Rem, Max, Min]
        } else {
            &[Add, Sub, Mul, Div, Max, Min, Pow, Rem]
        };
        for &op in ops {
            for [r, c] in SHAPES {
                for (ys, part) in [
                    (tt(d, r, c), true),
                    (tt(d, r, 1), false),
                    (tt(d, 1, c), true),
                ] {
                    // (x op y) op x: the inner result is rounded to the dtype before the outer.
                    let k = kernel2("bin", tt(d, r, c), ys, tt(d, r, c), part, |b, x, y| {
                        let t = b.binary(op, x, y).unwrap();
                        b.binary(op, t, x).unwrap()
                    });
                    check_all(&k);
                    if d.is_int() && matches!(op, Div | Rem) {
                        // Without zero divisors every division runs.
                        assert!(check_mode(&k, 3, None, Data::Small));
                    }
                }
            }
        }
    }
}

#[test]
fn half_and_int_unary_ops() {
    use UnaryOp::*;
    for d in [DType::F16, DType::Bf16, DType::I32] {
        let ops: &[UnaryOp] = if d.is_int() {
            &[Neg, Abs, Relu]
        } else {
            &[
                Exp, Log, Sqrt, Rsqrt, Recip, Tanh, Sigmoid, Sin, Cos, Relu, Gelu, Silu, Abs, Neg,
            ]
        };
        for &op in ops {
            for [r, c] in SHAPES {
                let k = kernel2(
                    "un",
                    tt(d, r, c),
                    tt(d, r, c),
                    tt(d, r, c),
                    true,
                    |b, x, y| {
                        let s = b.binary(BinaryOp::Mul, x, y).unwrap();
                        let u = b.unary(op, s).unwrap();
                        b.binary(BinaryOp::Add, u, x).unwrap()
                    },
                );
                check_all(&k);
            }
        }
    }
}

#[test]
fn casts_between_every_pair_of_dtypes_and_round_on_store() {
    for from in ALL {
        for to in ALL {
            for [r, c] in SHAPES {
                let k = kernel2(
                    "cast",
                    tt(from, r, c),
                    tt(from, r, c),
                    tt(to, r, c),
                    true,
                    |b, x, _| b.op(Op::Cast { x, dtype: to }).unwrap(),
                );
                check_all(&k);
                // A store converts like a cast (without one in the kernel).
                let mut b = KernelBuilder::new("store");
                let x = b.tile_param("x", Direction::In, tt(from, r, c));
                let o = b.tile_param("out", Direction::Out, tt(to, r, c));
                let xv = b.load(x).unwrap();
                b.store(o, xv);
                if let Ok(k) = b.finish() {
                    check_all(&k);
                }
            }
        }
    }
}

#[test]
fn compare_select_and_bool_logic_on_every_dtype() {
    use CmpOp::*;
    for d in ALL {
        for op in [Eq, Ne, Lt, Le, Gt, Ge] {
            for [r, c] in SHAPES {
                let mut b = KernelBuilder::new("sel");
                let x = b.tile_param("x", Direction::In, tt(d, r, c));
                let y = b.tile_param("y", Direction::In, tt(d, 1, c));
                let s = b.scalar_param("s", d, None);
                let o = b.tile_param("out", Direction::Out, tt(d, r, c));
                let m_out = b.tile_param("m", Direction::Out, tt(DType::Bool, r, c));
                let xv = b.load(x).unwrap();
                let yv = b.load(y).unwrap();
                let sv = b.load(s).unwrap();
                let m = b
                    .op(Op::Cmp {
                        op,
                        lhs: xv,
                        rhs: sv,
                    })
                    .unwrap();
                let m1 = b
                    .op(Op::Cmp {
                        op,
                        lhs: yv,
                        rhs: xv,
                    })
                    .unwrap();
                let nm = b.unary(UnaryOp::Not, m).unwrap();
                let m2 = b.binary(BinaryOp::Or, nm, m1).unwrap();
                let m3 = b.binary(BinaryOp::And, m2, m).unwrap();
                let r1 = b
                    .op(Op::Select {
                        cond: m3,
                        on_true: xv,
                        on_false: yv,
                    })
                    .unwrap();
                let r2 = b
                    .op(Op::Select {
                        cond: m1,
                        on_true: sv,
                        on_false: r1,
                    })
                    .unwrap();
                b.store(o, r2);
                b.store(m_out, m2);
                check_all(&b.finish().unwrap());
            }
        }
    }
}

#[test]
fn reductions_of_half_and_int_tiles() {
    use ReduceOp::*;
    for d in [DType::F16, DType::Bf16, DType::I32] {
        for op in [RowSum, RowMax, RowMin, RowMean, ColSum, ColMax, ColMin] {
            if d.is_int() && op == RowMean {
                continue;
            }
            let acc = d.accumulator();
            for [r, c] in SHAPES {
                let out = if op.is_row() {
                    tt(acc, r, 1)
                } else {
                    tt(acc, 1, c)
                };
                let k = kernel2("red", tt(d, r, c), tt(d, r, c), out, true, |b, x, y| {
                    let s = b.binary(BinaryOp::Sub, x, y).unwrap();
                    b.op(Op::Reduce { op, x: s }).unwrap()
                });
                check_all(&k);
            }
        }
    }
}

#[test]
fn half_matmul_accumulates_in_f32() {
    for d in HALF {
        for (m, kk, n) in [
            (1, 1, 1),
            (4, 4, 4),
            (3, 5, 7),
            (16, 16, 16),
            (8, 3, 33),
            (5, 17, 20),
        ] {
            // bgemm's kernel: c += a · b with f16 operands and an f32 inout accumulator.
            let mut b = KernelBuilder::new("gemm");
            let a = b.partial_tile_param("a", Direction::In, tt(d, m, kk), [true, true]);
            let bm = b.partial_tile_param("b", Direction::In, tt(d, kk, n), [true, true]);
            let c = b.partial_tile_param("c", Direction::InOut, f32t(m, n), [true, true]);
            let av = b.load(a).unwrap();
            let bv = b.load(bm).unwrap();
            let cv = b.load(c).unwrap();
            let r = b
                .op(Op::Matmul {
                    a: av,
                    b: bv,
                    acc: Some(cv),
                })
                .unwrap();
            b.store(c, r);
            check_all(&b.finish().unwrap());
            // An elementwise half operand and a half result (rounded on store).
            let k = kernel2(
                "mm",
                tt(d, m, kk),
                tt(d, kk, n),
                tt(d, m, n),
                false,
                |b, x, y| {
                    let xa = b.unary(UnaryOp::Abs, x).unwrap();
                    b.op(Op::Matmul {
                        a: xa,
                        b: y,
                        acc: None,
                    })
                    .unwrap()
                },
            );
            check_all(&k);
        }
    }
}

#[test]
fn rowtopk_of_every_dtype_keeps_the_interpreters_tie_order() {
    for d in [DType::F32, DType::F16, DType::Bf16, DType::I32, DType::Bool] {
        for [r, c] in [[1, 1], [1, 8], [3, 7], [8, 13], [4, 64]] {
            for kk in [1, c.min(2), c / 2 + 1, c] {
                let mut b = KernelBuilder::new("topk");
                let x = b.partial_tile_param("x", Direction::In, tt(d, r, c), [true, true]);
                let vo = b.partial_tile_param("vals", Direction::Out, tt(d, r, kk), [true, false]);
                let io = b.partial_tile_param(
                    "idx",
                    Direction::Out,
                    tt(DType::I32, r, kk),
                    [true, false],
                );
                let xv = b.load(x).unwrap();
                // Through an elementwise op (materialised) and straight from the parameter.
                let src = if d == DType::Bool {
                    b.unary(UnaryOp::Not, xv).unwrap()
                } else {
                    b.unary(UnaryOp::Neg, xv).unwrap()
                };
                let res = b.op_n(Op::RowTopK { x: src, k: kk }).unwrap();
                let res2 = b.op_n(Op::RowTopK { x: xv, k: kk }).unwrap();
                b.store(vo, res[0]);
                let sum = b.binary(BinaryOp::Add, res[1], res2[1]).unwrap();
                b.store(io, sum);
                let k = b.finish().unwrap();
                check_all(&k);
                // Fewer valid columns than k: both engines fail.
                if kk > 1 {
                    assert!(!check_mode(&k, 1, Some([r, kk - 1]), Data::Small));
                }
            }
        }
    }
}

#[test]
fn iota_full_scalars_and_vars_of_every_dtype() {
    for d in [DType::F32, DType::F16, DType::Bf16, DType::I32] {
        for [r, c] in SHAPES {
            let mut b = KernelBuilder::new("iota");
            let s = b.scalar_param("s", d, None);
            let n = b.scalar_param("n", DType::I32, None);
            let flag = b.scalar_param("flag", DType::Bool, None);
            let o = b.tile_param("out", Direction::Out, tt(d, r, c));
            let mo = b.tile_param("mask", Direction::Out, tt(DType::Bool, r, c));
            let acc = b.var("acc", Type::Tile(tt(d, r, c)));
            let sv = b.load(s).unwrap();
            let nv = b.load(n).unwrap();
            let fv = b.load(flag).unwrap();
            let it = b
                .op(Op::Iota {
                    shape: [r, c],
                    dtype: d,
                })
                .unwrap();
            let ii = b
                .op(Op::Iota {
                    shape: [1, c],
                    dtype: DType::I32,
                })
                .unwrap();
            let keep = b
                .op(Op::Cmp {
                    op: CmpOp::Lt,
                    lhs: ii,
                    rhs: nv,
                })
                .unwrap();
            let keep = b.binary(BinaryOp::Or, keep, fv).unwrap();
            // Scalar arithmetic in the dtype, then a full tile of it.
            let s2 = b.binary(BinaryOp::Mul, sv, sv).unwrap();
            let s3 = b.binary(BinaryOp::Sub, s2, sv).unwrap();
            let f = b
                .op(Op::Full {
                    shape: [r, c],
                    dtype: d,
                    value: s3,
                })
                .unwrap();
            b.stmt(Stmt::Assign {
                var: acc,
                region: None,
                value: f,
            });
            let i = b.begin_for(0, 3);
            let ic = b.op(Op::Cast { x: i, dtype: d }).unwrap();
            let a = b.op(Op::VarRead { var: acc }).unwrap();
            let t = b.binary(BinaryOp::Add, a, it).unwrap();
            let t = b.binary(BinaryOp::Add, t, ic).unwrap();
            b.stmt(Stmt::Assign {
                var: acc,
                region: None,
                value: t,
            });
            b.end_for().unwrap();
            let a = b.op(Op::VarRead { var: acc }).unwrap();
            let sel = b
                .op(Op::Select {
                    cond: keep,
                    on_true: a,
                    on_false: it,
                })
                .unwrap();
            b.store(o, sel);
            let full_keep = b
                .op(Op::Cmp {
                    op: CmpOp::Ne,
                    lhs: sel,
                    rhs: a,
                })
                .unwrap();
            let tr = b.op(Op::Transpose { x: full_keep }).unwrap();
            let back = b.op(Op::Transpose { x: tr }).unwrap();
            b.store(mo, back);
            check_all(&b.finish().unwrap());
        }
    }
}

#[test]
fn integer_division_by_zero_fails_and_min_by_minus_one_wraps() {
    use BinaryOp::*;
    for op in [Div, Rem] {
        let mut b = KernelBuilder::new("div");
        let x = b.tile_param("x", Direction::In, tt(DType::I32, 3, 9));
        let s = b.scalar_param("s", DType::I32, None);
        let o = b.tile_param("out", Direction::Out, tt(DType::I32, 3, 9));
        let xv = b.load(x).unwrap();
        let sv = b.load(s).unwrap();
        let y = b
            .op(Op::Full {
                shape: [3, 9],
                dtype: DType::I32,
                value: sv,
            })
            .unwrap();
        let q = b.binary(op, xv, y).unwrap();
        b.store(o, q);
        let k = b.finish().unwrap();
        let ck = Jit::new().compile(&k).unwrap();
        for (div, ok) in [
            (0i64, false),
            (-1, true),
            (7, true),
            (i64::from(i32::MIN), true),
        ] {
            let mut a = args_mode(&k, 2, None, Data::Wide);
            a[1] = KernelArg::Scalar(ScalarValue::Int(div));
            if let KernelArg::Tile(t) = &mut a[0] {
                t.data.set(0, El::I(i128::from(i32::MIN)));
            }
            let mut j = a.clone();
            let ri = run_kernel(&k, &mut a);
            let rj = ck.run(&mut j);
            assert_eq!(ri.is_ok(), ok, "{op:?} by {div}: {ri:?}");
            assert_eq!(rj.is_ok(), ok, "{op:?} by {div}: {rj:?}");
            if ok {
                assert_eq!(a, j, "{op:?} by {div}");
            } else {
                assert!(rj.unwrap_err().message.contains("by zero"));
            }
        }
    }
}

/// Columns (`[R, 1]` tiles) go four rows at a time: elementwise results, casts, `iota` and
/// stores of every dtype over column parameters (their rows a stride apart) and scratch
/// columns, with partial extents and row counts that leave a tail.
#[test]
fn columns_of_every_dtype_four_rows_at_a_time() {
    for d in ALL {
        for rows in [1u32, 3, 4, 7, 16] {
            let mut b = KernelBuilder::new("col");
            // Partial rows; one column always (a partial column has no constant extent).
            let x = b.partial_tile_param("x", Direction::In, tt(d, rows, 1), [true, false]);
            let y = b.partial_tile_param("y", Direction::In, tt(d, rows, 1), [true, false]);
            let o = b.partial_tile_param("out", Direction::Out, tt(d, rows, 1), [true, false]);
            let f =
                b.partial_tile_param("f", Direction::Out, tt(DType::F32, rows, 1), [true, false]);
            let xv = b.load(x).unwrap();
            let yv = b.load(y).unwrap();
            let v = match d {
                DType::Bool => {
                    let n = b.unary(UnaryOp::Not, xv).unwrap();
                    b.binary(BinaryOp::Or, n, yv).unwrap()
                }
                DType::I32 => {
                    let i = b
                        .op(Op::Iota {
                            shape: [rows, 1],
                            dtype: DType::I32,
                        })
                        .unwrap();
                    let s = b.binary(BinaryOp::Add, xv, i).unwrap();
                    b.binary(BinaryOp::Max, s, yv).unwrap()
                }
                _ => {
                    let e = b.unary(UnaryOp::Exp, xv).unwrap();
                    b.binary(BinaryOp::Sub, e, yv).unwrap()
                }
            };
            b.store(o, v);
            let c = b
                .op(Op::Cast {
                    x: v,
                    dtype: DType::F32,
                })
                .unwrap();
            let i = b
                .op(Op::Iota {
                    shape: [rows, 1],
                    dtype: DType::F32,
                })
                .unwrap();
            let s = b.binary(BinaryOp::Add, c, i).unwrap();
            b.store(f, s);
            check_all(&b.finish().unwrap());
        }
    }
}

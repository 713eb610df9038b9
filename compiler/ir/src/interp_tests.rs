//! Unit tests of the reference kernel interpreter, with hand-computed expectations.

use crate::dtype::{DType, ScalarValue};
use crate::interp::{run_kernel, KernelArg, Tile};
use crate::kernel::*;
use crate::tensor::El;
use crate::typing::KernelBuilder;

const F32: DType = DType::F32;

fn tt(d: DType, r: u32, c: u32) -> TileType {
    TileType::new(d, r, c)
}

fn out_tile(args: &[KernelArg], i: usize) -> &Tile {
    match &args[i] {
        KernelArg::Tile(t) => t,
        KernelArg::Scalar(_) => panic!("argument {i} is not a tile"),
    }
}

/// Builds `out = f(a, b)` over tiles of the given types and runs it.
fn run_binary_kernel(
    a: Tile,
    b: Tile,
    out: TileType,
    f: impl FnOnce(&mut KernelBuilder, ValueId, ValueId) -> ValueId,
) -> Tile {
    let mut kb = KernelBuilder::new("t");
    let pa = kb.tile_param("a", Direction::In, tt(a.dtype, a.shape[0], a.shape[1]));
    let pb = kb.tile_param("b", Direction::In, tt(b.dtype, b.shape[0], b.shape[1]));
    let po = kb.tile_param("out", Direction::Out, out);
    let va = kb.load(pa).unwrap();
    let vb = kb.load(pb).unwrap();
    let r = f(&mut kb, va, vb);
    kb.store(po, r);
    let k = kb.finish().unwrap();
    let mut args = vec![
        KernelArg::Tile(a),
        KernelArg::Tile(b),
        KernelArg::Tile(Tile::zeros(out)),
    ];
    run_kernel(&k, &mut args).unwrap();
    out_tile(&args, 2).clone()
}

fn unary_kernel(
    x: Tile,
    out: TileType,
    f: impl FnOnce(&mut KernelBuilder, ValueId) -> ValueId,
) -> Tile {
    let mut kb = KernelBuilder::new("u");
    let px = kb.tile_param("x", Direction::In, tt(x.dtype, x.shape[0], x.shape[1]));
    let po = kb.tile_param("out", Direction::Out, out);
    let vx = kb.load(px).unwrap();
    let r = f(&mut kb, vx);
    kb.store(po, r);
    let k = kb.finish().unwrap();
    let mut args = vec![KernelArg::Tile(x), KernelArg::Tile(Tile::zeros(out))];
    run_kernel(&k, &mut args).unwrap();
    out_tile(&args, 1).clone()
}

fn f32s(r: u32, c: u32, v: &[f64]) -> Tile {
    Tile::from_f64(F32, r, c, v)
}

#[test]
fn binary_float_ops() {
    let a = f32s(1, 4, &[1.0, -2.0, 7.5, 0.0]);
    let b = f32s(1, 4, &[2.0, 3.0, 2.0, -0.0]);
    let cases: [(BinaryOp, [f64; 4]); 8] = [
        (BinaryOp::Add, [3.0, 1.0, 9.5, 0.0]),
        (BinaryOp::Sub, [-1.0, -5.0, 5.5, 0.0]),
        (BinaryOp::Mul, [2.0, -6.0, 15.0, -0.0]),
        (BinaryOp::Div, [0.5, -2.0 / 3.0, 3.75, f64::NAN]),
        (BinaryOp::Rem, [1.0, -2.0, 1.5, f64::NAN]),
        (BinaryOp::Max, [2.0, 3.0, 7.5, 0.0]),
        (BinaryOp::Min, [1.0, -2.0, 2.0, -0.0]),
        (BinaryOp::Pow, [1.0, -8.0, 56.25, 1.0]),
    ];
    for (op, want) in cases {
        let out = run_binary_kernel(a.clone(), b.clone(), tt(F32, 1, 4), |kb, x, y| {
            kb.binary(op, x, y).unwrap()
        });
        for (i, w) in want.iter().enumerate() {
            let got = out.get(0, i).as_f64();
            let w32 = *w as f32 as f64;
            assert!(
                got.to_bits() == w32.to_bits() || (got.is_nan() && w.is_nan()),
                "{op:?}[{i}]: got {got}, want {w32}"
            );
        }
    }
}

#[test]
fn max_min_propagate_nan_and_order_zeros() {
    let a = f32s(1, 3, &[f64::NAN, -0.0, 0.0]);
    let b = f32s(1, 3, &[1.0, 0.0, -0.0]);
    let mx = run_binary_kernel(a.clone(), b.clone(), tt(F32, 1, 3), |kb, x, y| {
        kb.binary(BinaryOp::Max, x, y).unwrap()
    });
    assert!(mx.get(0, 0).as_f64().is_nan());
    assert!(mx.get(0, 1).as_f64().is_sign_positive());
    assert!(mx.get(0, 2).as_f64().is_sign_positive());
    let mn = run_binary_kernel(a, b, tt(F32, 1, 3), |kb, x, y| {
        kb.binary(BinaryOp::Min, x, y).unwrap()
    });
    assert!(mn.get(0, 0).as_f64().is_nan());
    assert!(mn.get(0, 1).as_f64().is_sign_negative());
    assert!(mn.get(0, 2).as_f64().is_sign_negative());
}

#[test]
fn broadcasting_rows_columns_and_scalars() {
    // [2,3] + [2,1] then * [1,3] then + scalar 1.
    let a = f32s(2, 3, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let col = f32s(2, 1, &[10.0, 20.0]);
    let out = run_binary_kernel(a, col, tt(F32, 2, 3), |kb, x, c| {
        let s = kb.binary(BinaryOp::Add, x, c).unwrap();
        let one = kb.constant(ScalarValue::Float(1.0), F32).unwrap();
        let r = kb
            .op(Op::Iota {
                shape: [1, 3],
                dtype: F32,
            })
            .unwrap();
        let m = kb.binary(BinaryOp::Mul, s, r).unwrap();
        kb.binary(BinaryOp::Add, m, one).unwrap()
    });
    assert_eq!(out.valid_f64(), vec![1.0, 13.0, 27.0, 1.0, 26.0, 53.0]);
}

#[test]
fn shapes_that_do_not_broadcast_are_rejected() {
    let mut kb = KernelBuilder::new("bad");
    let pa = kb.tile_param("a", Direction::In, tt(F32, 2, 3));
    let pb = kb.tile_param("b", Direction::In, tt(F32, 3, 2));
    let a = kb.load(pa).unwrap();
    let b = kb.load(pb).unwrap();
    let e = kb.binary(BinaryOp::Add, a, b).unwrap_err();
    assert!(e.contains("do not broadcast"), "{e}");
    let pc = kb.tile_param("c", Direction::In, tt(DType::F16, 2, 3));
    let c = kb.load(pc).unwrap();
    let e = kb.binary(BinaryOp::Add, a, c).unwrap_err();
    assert!(e.contains("mixes f32 and f16"), "{e}");
}

#[test]
fn integer_ops_wrap_truncate_and_reject_zero_division() {
    let i8t = |v: &[f64]| Tile::from_f64(DType::I8, 1, 3, v);
    let out = run_binary_kernel(
        i8t(&[127.0, -7.0, -128.0]),
        i8t(&[1.0, 2.0, -1.0]),
        tt(DType::I8, 1, 3),
        |kb, a, b| kb.binary(BinaryOp::Add, a, b).unwrap(),
    );
    assert_eq!(out.valid_f64(), vec![-128.0, -5.0, 127.0]);
    let out = run_binary_kernel(
        i8t(&[-7.0, 7.0, -128.0]),
        i8t(&[2.0, -2.0, -1.0]),
        tt(DType::I8, 1, 3),
        |kb, a, b| kb.binary(BinaryOp::Div, a, b).unwrap(),
    );
    assert_eq!(out.valid_f64(), vec![-3.0, -3.0, -128.0]);
    let out = run_binary_kernel(
        i8t(&[-7.0, 7.0, 5.0]),
        i8t(&[2.0, -2.0, 5.0]),
        tt(DType::I8, 1, 3),
        |kb, a, b| kb.binary(BinaryOp::Rem, a, b).unwrap(),
    );
    assert_eq!(out.valid_f64(), vec![-1.0, 1.0, 0.0]);

    let mut kb = KernelBuilder::new("div0");
    let pa = kb.tile_param("a", Direction::In, tt(DType::I32, 1, 2));
    let po = kb.tile_param("o", Direction::Out, tt(DType::I32, 1, 2));
    let a = kb.load(pa).unwrap();
    let z = kb.constant(ScalarValue::Int(0), DType::I32).unwrap();
    let d = kb.binary(BinaryOp::Div, a, z).unwrap();
    kb.store(po, d);
    let k = kb.finish().unwrap();
    let mut args = vec![
        KernelArg::Tile(Tile::from_f64(DType::I32, 1, 2, &[1.0, 2.0])),
        KernelArg::Tile(Tile::zeros(tt(DType::I32, 1, 2))),
    ];
    let e = run_kernel(&k, &mut args).unwrap_err();
    assert_eq!(e.kernel, "div0");
    assert!(e.message.contains("division by zero"), "{e}");
}

#[test]
fn comparisons_select_and_logic() {
    let a = f32s(1, 4, &[1.0, 2.0, 3.0, f64::NAN]);
    let b = f32s(1, 4, &[2.0, 2.0, 2.0, 2.0]);
    let out = run_binary_kernel(a, b, tt(F32, 1, 4), |kb, x, y| {
        let lt = kb
            .op(Op::Cmp {
                op: CmpOp::Lt,
                lhs: x,
                rhs: y,
            })
            .unwrap();
        let eq = kb
            .op(Op::Cmp {
                op: CmpOp::Eq,
                lhs: x,
                rhs: y,
            })
            .unwrap();
        let either = kb.binary(BinaryOp::Or, lt, eq).unwrap();
        let not = kb.unary(UnaryOp::Not, either).unwrap();
        let both = kb.binary(BinaryOp::And, not, not).unwrap();
        kb.op(Op::Select {
            cond: both,
            on_true: x,
            on_false: y,
        })
        .unwrap()
    });
    // x <= y → y; otherwise (including NaN) → x.
    let v = out.valid_f64();
    assert_eq!(&v[..3], &[2.0, 2.0, 3.0]);
    assert!(v[3].is_nan());
}

#[test]
fn unary_ops() {
    let x = f32s(1, 3, &[0.0, 1.0, -2.0]);
    let cases: [(UnaryOp, [f64; 3]); 14] = [
        (UnaryOp::Exp, [1.0, std::f64::consts::E, (-2.0f64).exp()]),
        (UnaryOp::Log, [f64::NEG_INFINITY, 0.0, f64::NAN]),
        (UnaryOp::Sqrt, [0.0, 1.0, f64::NAN]),
        (UnaryOp::Rsqrt, [f64::INFINITY, 1.0, f64::NAN]),
        (UnaryOp::Recip, [f64::INFINITY, 1.0, -0.5]),
        (UnaryOp::Tanh, [0.0, 1.0f64.tanh(), (-2.0f64).tanh()]),
        (
            UnaryOp::Sigmoid,
            [
                0.5,
                1.0 / (1.0 + (-1.0f64).exp()),
                1.0 / (1.0 + 2.0f64.exp()),
            ],
        ),
        (UnaryOp::Sin, [0.0, 1.0f64.sin(), (-2.0f64).sin()]),
        (UnaryOp::Cos, [1.0, 1.0f64.cos(), (-2.0f64).cos()]),
        (UnaryOp::Relu, [0.0, 1.0, 0.0]),
        (
            UnaryOp::Gelu,
            [0.0, 0.841_191_990_608_276_8, -0.045_402_305_912_224_94],
        ),
        (
            UnaryOp::Silu,
            [0.0, 0.731_058_578_630_004_9, -0.238_405_844_044_234_07],
        ),
        (UnaryOp::Abs, [0.0, 1.0, 2.0]),
        (UnaryOp::Neg, [-0.0, -1.0, 2.0]),
    ];
    for (op, want) in cases {
        let out = unary_kernel(x.clone(), tt(F32, 1, 3), |kb, v| kb.unary(op, v).unwrap());
        for (i, w) in want.iter().enumerate() {
            let got = out.get(0, i).as_f64();
            let ok = (got.is_nan() && w.is_nan())
                || got == *w
                || ((got - w).abs() <= 8.0 * f64::from(f32::EPSILON) * w.abs());
            assert!(ok, "{op:?}[{i}]: got {got}, want {w}");
        }
    }
}

#[test]
fn f16_and_bf16_elementwise_round_to_operand_dtype() {
    let h = |v: &[f64]| Tile::from_f64(DType::F16, 1, 2, v);
    // 2048 + 1 = 2049 ties to even → 2048; 2048 + 3 = 2051 → 2052.
    let out = run_binary_kernel(
        h(&[2048.0, 2048.0]),
        h(&[1.0, 3.0]),
        tt(DType::F16, 1, 2),
        |kb, a, b| kb.binary(BinaryOp::Add, a, b).unwrap(),
    );
    assert_eq!(out.dtype, DType::F16);
    assert_eq!(out.valid_f64(), vec![2048.0, 2052.0]);
    // Overflow: 60000 + 10000 → inf in f16.
    let out = run_binary_kernel(
        h(&[60000.0, 1.0]),
        h(&[10000.0, 1.0]),
        tt(DType::F16, 1, 2),
        |kb, a, b| kb.binary(BinaryOp::Add, a, b).unwrap(),
    );
    assert_eq!(out.valid_f64(), vec![f64::INFINITY, 2.0]);
    let bh = |v: &[f64]| Tile::from_f64(DType::Bf16, 1, 2, v);
    // bf16 has 8 significant bits: 256 + 1 → 256, 256 + 3 → 260.
    let out = run_binary_kernel(
        bh(&[256.0, 256.0]),
        bh(&[1.0, 3.0]),
        tt(DType::Bf16, 1, 2),
        |kb, a, b| kb.binary(BinaryOp::Add, a, b).unwrap(),
    );
    assert_eq!(out.valid_f64(), vec![256.0, 260.0]);
    // Computed in f32, rounded once: f16 1/3 is the f16 nearest to the f32 quotient.
    let out = unary_kernel(h(&[3.0, 1.0]), tt(DType::F16, 1, 2), |kb, v| {
        kb.unary(UnaryOp::Recip, v).unwrap()
    });
    assert_eq!(
        out.get(0, 0).as_f64(),
        half::f16::from_f32(1.0f32 / 3.0).to_f64()
    );
}

#[test]
fn reductions_rows_and_columns() {
    let x = f32s(2, 3, &[1.0, 5.0, 3.0, -4.0, 2.0, 8.0]);
    let red = |op: ReduceOp, shape: (u32, u32)| {
        unary_kernel(x.clone(), tt(F32, shape.0, shape.1), |kb, v| {
            kb.op(Op::Reduce { op, x: v }).unwrap()
        })
        .valid_f64()
    };
    assert_eq!(red(ReduceOp::RowSum, (2, 1)), vec![9.0, 6.0]);
    assert_eq!(red(ReduceOp::RowMax, (2, 1)), vec![5.0, 8.0]);
    assert_eq!(red(ReduceOp::RowMin, (2, 1)), vec![1.0, -4.0]);
    assert_eq!(red(ReduceOp::RowMean, (2, 1)), vec![3.0, 2.0]);
    assert_eq!(red(ReduceOp::ColSum, (1, 3)), vec![-3.0, 7.0, 11.0]);
    assert_eq!(red(ReduceOp::ColMax, (1, 3)), vec![1.0, 5.0, 8.0]);
    assert_eq!(red(ReduceOp::ColMin, (1, 3)), vec![-4.0, 2.0, 3.0]);
}

#[test]
fn row_sum_uses_the_canonical_four_lane_order() {
    // Lanes: s0 = 1e8, s1 = 1, s2 = -1e8, s3 = 1 → (1e8 + 1) + (-1e8 + 1) = 1e8 - 1e8 = 0 in
    // f32 (a left-to-right sum would give 1).
    let x = f32s(1, 4, &[1e8, 1.0, -1e8, 1.0]);
    let out = unary_kernel(x, tt(F32, 1, 1), |kb, v| {
        kb.op(Op::Reduce {
            op: ReduceOp::RowSum,
            x: v,
        })
        .unwrap()
    });
    assert_eq!(out.valid_f64(), vec![0.0]);
}

#[test]
fn f16_reductions_accumulate_and_yield_f32() {
    // 2048 + 1 + 1 + 1 = 2051 is not an f16 but is exact in the f32 accumulator.
    let x = Tile::from_f64(DType::F16, 1, 4, &[2048.0, 1.0, 1.0, 1.0]);
    let out = unary_kernel(x, tt(F32, 1, 1), |kb, v| {
        kb.op(Op::Reduce {
            op: ReduceOp::RowSum,
            x: v,
        })
        .unwrap()
    });
    assert_eq!(out.dtype, F32);
    assert_eq!(out.valid_f64(), vec![2051.0]);
}

#[test]
fn matmul_plain_with_accumulator_and_f16_inputs() {
    let a = f32s(2, 3, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let b = f32s(3, 2, &[7.0, 8.0, 9.0, 10.0, 11.0, 12.0]);
    let out = run_binary_kernel(a.clone(), b.clone(), tt(F32, 2, 2), |kb, x, y| {
        kb.op(Op::Matmul {
            a: x,
            b: y,
            acc: None,
        })
        .unwrap()
    });
    assert_eq!(out.valid_f64(), vec![58.0, 64.0, 139.0, 154.0]);
    let out = run_binary_kernel(a, b, tt(F32, 2, 2), |kb, x, y| {
        let m = kb
            .op(Op::Matmul {
                a: x,
                b: y,
                acc: None,
            })
            .unwrap();
        kb.op(Op::Matmul {
            a: x,
            b: y,
            acc: Some(m),
        })
        .unwrap()
    });
    assert_eq!(out.valid_f64(), vec![116.0, 128.0, 278.0, 308.0]);
    // f16 inputs: 2048·1 + 1·1 + 1·1 = 2050 accumulates in f32 and yields f32.
    let ha = Tile::from_f64(DType::F16, 1, 3, &[2048.0, 1.0, 1.0]);
    let hb = Tile::from_f64(DType::F16, 3, 1, &[1.0, 1.0, 1.0]);
    let out = run_binary_kernel(ha, hb, tt(F32, 1, 1), |kb, x, y| {
        kb.op(Op::Matmul {
            a: x,
            b: y,
            acc: None,
        })
        .unwrap()
    });
    assert_eq!(out.valid_f64(), vec![2050.0]);
}

#[test]
fn transpose_cast_full_iota() {
    let x = f32s(2, 3, &[1.5, -2.5, 3.0, 4.0, 5.0, 6.0]);
    let t = unary_kernel(x.clone(), tt(F32, 3, 2), |kb, v| {
        kb.op(Op::Transpose { x: v }).unwrap()
    });
    assert_eq!(t.valid_f64(), vec![1.5, 4.0, -2.5, 5.0, 3.0, 6.0]);
    let c = unary_kernel(x.clone(), tt(DType::I32, 2, 3), |kb, v| {
        kb.op(Op::Cast {
            x: v,
            dtype: DType::I32,
        })
        .unwrap()
    });
    assert_eq!(c.valid_f64(), vec![1.0, -2.0, 3.0, 4.0, 5.0, 6.0]);
    let f = unary_kernel(x.clone(), tt(F32, 2, 3), |kb, _| {
        let v = kb.constant(ScalarValue::Float(-7.0), F32).unwrap();
        kb.op(Op::Full {
            shape: [2, 3],
            dtype: F32,
            value: v,
        })
        .unwrap()
    });
    assert_eq!(f.valid_f64(), vec![-7.0; 6]);
    let i = unary_kernel(x, tt(DType::I32, 2, 3), |kb, _| {
        kb.op(Op::Iota {
            shape: [2, 3],
            dtype: DType::I32,
        })
        .unwrap()
    });
    assert_eq!(i.valid_f64(), vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
}

#[test]
fn store_rounds_to_the_parameter_dtype() {
    // f32 2049.0 stored to an f16 tile rounds to nearest even (2048); 2051 → 2052.
    let mut kb = KernelBuilder::new("st");
    let px = kb.tile_param("x", Direction::In, tt(F32, 1, 2));
    let po = kb.tile_param("o", Direction::Out, tt(DType::F16, 1, 2));
    let v = kb.load(px).unwrap();
    kb.store(po, v);
    let k = kb.finish().unwrap();
    let mut args = vec![
        KernelArg::Tile(f32s(1, 2, &[2049.0, 2051.0])),
        KernelArg::Tile(Tile::zeros(tt(DType::F16, 1, 2))),
    ];
    run_kernel(&k, &mut args).unwrap();
    assert_eq!(out_tile(&args, 1).valid_f64(), vec![2048.0, 2052.0]);
    assert_eq!(
        out_tile(&args, 1).data.to_bytes(DType::F16),
        vec![0x00, 0x68, 0x02, 0x68]
    );
}

#[test]
fn rowtopk_is_stable_larger_first_then_smaller_index() {
    let x = f32s(
        2,
        5,
        &[1.0, 3.0, 3.0, 2.0, f64::NAN, 0.0, -0.0, 5.0, 5.0, 5.0],
    );
    let mut kb = KernelBuilder::new("topk");
    let px = kb.tile_param("x", Direction::In, tt(F32, 2, 5));
    let pv = kb.tile_param("v", Direction::Out, tt(F32, 2, 3));
    let pi = kb.tile_param("i", Direction::Out, tt(DType::I32, 2, 3));
    let v = kb.load(px).unwrap();
    let r = kb.op_n(Op::RowTopK { x: v, k: 3 }).unwrap();
    kb.store(pv, r[0]);
    kb.store(pi, r[1]);
    let k = kb.finish().unwrap();
    let mut args = vec![
        KernelArg::Tile(x),
        KernelArg::Tile(Tile::zeros(tt(F32, 2, 3))),
        KernelArg::Tile(Tile::zeros(tt(DType::I32, 2, 3))),
    ];
    run_kernel(&k, &mut args).unwrap();
    let vals = out_tile(&args, 1).valid_f64();
    assert!(vals[0].is_nan());
    assert_eq!(&vals[1..], &[3.0, 3.0, 5.0, 5.0, 5.0]);
    assert_eq!(
        out_tile(&args, 2).valid_f64(),
        vec![4.0, 1.0, 2.0, 2.0, 3.0, 4.0]
    );
}

#[test]
fn var_loop_carried_state_slices_and_region_stores() {
    // acc = x; for i in 0..3 { acc = acc + x }; out[0..1, :] = acc[1..2, :]; out[1..2, :] = x[0..1,:]
    let mut kb = KernelBuilder::new("loop");
    let px = kb.tile_param("x", Direction::In, tt(F32, 2, 2));
    let po = kb.tile_param("o", Direction::Out, tt(F32, 2, 2));
    let acc = kb.var("acc", Type::Tile(tt(F32, 2, 2)));
    let x = kb.load(px).unwrap();
    kb.stmt(Stmt::Assign {
        var: acc,
        region: None,
        value: x,
    });
    let i = kb.begin_for(0, 3);
    let cur = kb.op(Op::VarRead { var: acc }).unwrap();
    let nxt = kb.binary(BinaryOp::Add, cur, x).unwrap();
    kb.stmt(Stmt::Assign {
        var: acc,
        region: None,
        value: nxt,
    });
    // Use the index to write a running copy into row 0 of `o` (row index constant, column i%2
    // is not affine, so write the whole row 0 on each iteration from a slice).
    let _ = i;
    kb.end_for().unwrap();
    let fin = kb.op(Op::VarRead { var: acc }).unwrap();
    let region = |r: i64| Region {
        row_start: KIndex::constant(r),
        rows: 1,
        col_start: KIndex::constant(0),
        cols: 2,
    };
    let row1 = kb
        .op(Op::Slice {
            x: fin,
            region: region(1),
        })
        .unwrap();
    kb.stmt(Stmt::Store {
        param: po,
        region: Some(region(0)),
        value: row1,
    });
    let row0 = kb
        .op(Op::Slice {
            x,
            region: region(0),
        })
        .unwrap();
    kb.stmt(Stmt::Store {
        param: po,
        region: Some(region(1)),
        value: row0,
    });
    let k = kb.finish().unwrap();
    let mut args = vec![
        KernelArg::Tile(f32s(2, 2, &[1.0, 2.0, 3.0, 4.0])),
        KernelArg::Tile(Tile::zeros(tt(F32, 2, 2))),
    ];
    run_kernel(&k, &mut args).unwrap();
    assert_eq!(out_tile(&args, 1).valid_f64(), vec![12.0, 16.0, 1.0, 2.0]);
}

#[test]
fn loop_index_drives_a_dynamic_region() {
    // for i in 0..4 { o[0..1, i..i+1] = x[0..1, (3-i)..(4-i)] }: reverses a row.
    let mut kb = KernelBuilder::new("rev");
    let px = kb.tile_param("x", Direction::In, tt(F32, 1, 4));
    let po = kb.tile_param("o", Direction::Out, tt(F32, 1, 4));
    let x = kb.load(px).unwrap();
    let i = kb.begin_for(0, 4);
    let src = Region {
        row_start: KIndex::constant(0),
        rows: 1,
        col_start: KIndex {
            constant: 3,
            terms: vec![(i, -1)],
        },
        cols: 1,
    };
    let e = kb.op(Op::Slice { x, region: src }).unwrap();
    let dst = Region {
        row_start: KIndex::constant(0),
        rows: 1,
        col_start: KIndex {
            constant: 0,
            terms: vec![(i, 1)],
        },
        cols: 1,
    };
    kb.stmt(Stmt::Store {
        param: po,
        region: Some(dst),
        value: e,
    });
    kb.end_for().unwrap();
    let k = kb.finish().unwrap();
    let mut args = vec![
        KernelArg::Tile(f32s(1, 4, &[1.0, 2.0, 3.0, 4.0])),
        KernelArg::Tile(Tile::zeros(tt(F32, 1, 4))),
    ];
    run_kernel(&k, &mut args).unwrap();
    assert_eq!(out_tile(&args, 1).valid_f64(), vec![4.0, 3.0, 2.0, 1.0]);
}

#[test]
fn partial_tiles_compute_and_store_only_the_valid_extent() {
    // x: f32[..4, 3] with 2 valid rows; out = x * rowsum(x).
    let mut kb = KernelBuilder::new("partial");
    let px = kb.partial_tile_param("x", Direction::In, tt(F32, 4, 3), [true, false]);
    let po = kb.partial_tile_param("o", Direction::Out, tt(F32, 4, 3), [true, false]);
    let x = kb.load(px).unwrap();
    let s = kb
        .op(Op::Reduce {
            op: ReduceOp::RowSum,
            x,
        })
        .unwrap();
    let r = kb.binary(BinaryOp::Mul, x, s).unwrap();
    kb.store(po, r);
    let k = kb.finish().unwrap();
    let mut xin = f32s(
        4,
        3,
        &[1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 9.0, 9.0, 9.0, 9.0, 9.0, 9.0],
    );
    xin.valid = [2, 3];
    let mut o = Tile::from_f64(F32, 4, 3, &[-1.0; 12]);
    o.valid = [2, 3];
    let mut args = vec![KernelArg::Tile(xin), KernelArg::Tile(o)];
    run_kernel(&k, &mut args).unwrap();
    let o = out_tile(&args, 1);
    assert_eq!(o.valid_f64(), vec![3.0, 3.0, 3.0, 12.0, 12.0, 12.0]);
    // Rows past the valid extent are untouched.
    assert_eq!(o.get(2, 0), El::F(-1.0));
    // A valid extent larger than a non-partial dimension is rejected.
    let mut bad = f32s(4, 3, &[0.0; 12]);
    bad.valid = [4, 2];
    let mut args = vec![
        KernelArg::Tile(bad),
        KernelArg::Tile(Tile::zeros(tt(F32, 4, 3))),
    ];
    let e = run_kernel(&k, &mut args).unwrap_err();
    assert!(e.message.contains("valid extent"), "{e}");
}

#[test]
fn pipes_pass_slots_from_cube_to_vector() {
    // cube: for i in 0..2 { slot = talloc(p); slot[:, 0..1] = x[:, i..i+1] ... } (whole slot here)
    let mut kb = KernelBuilder::new("pipe");
    let px = kb.tile_param("x", Direction::In, tt(F32, 1, 2));
    let po = kb.tile_param("o", Direction::Out, tt(F32, 1, 2));
    let p = kb.pipe("p", tt(F32, 1, 2), 2);
    let slot = kb.var("slot", Type::Tile(tt(F32, 1, 2)));
    let x = kb.load(px).unwrap();
    // Producer: pushes x and 2·x.
    let two = kb.constant(ScalarValue::Float(2.0), F32).unwrap();
    let x2 = kb.binary(BinaryOp::Mul, x, two).unwrap();
    for v in [x, x2] {
        kb.stmt(Stmt::TAlloc { pipe: p, slot });
        kb.stmt(Stmt::Assign {
            var: slot,
            region: Some(Region {
                row_start: KIndex::constant(0),
                rows: 1,
                col_start: KIndex::constant(0),
                cols: 2,
            }),
            value: v,
        });
        kb.stmt(Stmt::TPush { pipe: p, slot });
    }
    // Consumer: o = first + second.
    let a = kb.op(Op::TPop { pipe: p }).unwrap();
    let b = kb.op(Op::TPop { pipe: p }).unwrap();
    let s = kb.binary(BinaryOp::Add, a, b).unwrap();
    kb.stmt(Stmt::TFree { pipe: p, value: a });
    kb.stmt(Stmt::TFree { pipe: p, value: b });
    kb.store(po, s);
    let k = kb.finish().unwrap();
    let mut args = vec![
        KernelArg::Tile(f32s(1, 2, &[1.0, 2.0])),
        KernelArg::Tile(Tile::zeros(tt(F32, 1, 2))),
    ];
    run_kernel(&k, &mut args).unwrap();
    assert_eq!(out_tile(&args, 1).valid_f64(), vec![3.0, 6.0]);

    // A third pop finds the pipe empty.
    let mut k2 = k.clone();
    if let Some(body) = &mut k2.body {
        body.push(Stmt::Op {
            results: vec![a],
            op: Op::TPop { pipe: p },
        });
    }
    let mut args = vec![
        KernelArg::Tile(f32s(1, 2, &[1.0, 2.0])),
        KernelArg::Tile(Tile::zeros(tt(F32, 1, 2))),
    ];
    let e = run_kernel(&k2, &mut args).unwrap_err();
    assert!(e.message.contains("empty pipe `p`"), "{e}");
}

#[test]
fn errors_are_reported_not_panics() {
    let mut kb = KernelBuilder::new("e");
    let px = kb.tile_param("x", Direction::In, tt(F32, 2, 2));
    let po = kb.tile_param("o", Direction::Out, tt(F32, 2, 2));
    let v = kb.var("v", Type::Tile(tt(F32, 2, 2)));
    let _x = kb.load(px).unwrap();
    let r = kb.op(Op::VarRead { var: v }).unwrap();
    kb.store(po, r);
    let k = kb.finish().unwrap();
    let mut args = vec![
        KernelArg::Tile(Tile::zeros(tt(F32, 2, 2))),
        KernelArg::Tile(Tile::zeros(tt(F32, 2, 2))),
    ];
    let e = run_kernel(&k, &mut args).unwrap_err();
    assert!(
        e.message.contains("`v` is read before it is assigned"),
        "{e}"
    );
    // Wrong argument shape.
    let mut args = vec![
        KernelArg::Tile(Tile::zeros(tt(F32, 2, 3))),
        KernelArg::Tile(Tile::zeros(tt(F32, 2, 2))),
    ];
    let e = run_kernel(&k, &mut args).unwrap_err();
    assert!(
        e.message
            .contains("argument `x` is f32[2, 3], expected f32[2, 2]"),
        "{e}"
    );
    // Wrong count.
    let e = run_kernel(&k, &mut []).unwrap_err();
    assert!(e.message.contains("expected 2 arguments"), "{e}");
    // Extern-only kernel.
    let mut ext = k.clone();
    ext.body = None;
    ext.externs.push(ExternImpl {
        target: "ascend".into(),
        path: "k.cpp".into(),
    });
    let e = run_kernel(&ext, &mut []).unwrap_err();
    assert!(
        e.message.contains("only extern implementations for ascend"),
        "{e}"
    );
}

#[test]
fn scalar_params_take_call_values() {
    // out = x * rsqrt(rowmean(x * x) + eps)
    let mut kb = KernelBuilder::new("rmsnorm");
    let px = kb.tile_param("x", Direction::In, tt(F32, 1, 2));
    let po = kb.tile_param("out", Direction::Out, tt(F32, 1, 2));
    let pe = kb.scalar_param("eps", F32, Some(ScalarValue::Float(1e-6)));
    let x = kb.load(px).unwrap();
    let eps = kb.load(pe).unwrap();
    let sq = kb.binary(BinaryOp::Mul, x, x).unwrap();
    let m = kb
        .op(Op::Reduce {
            op: ReduceOp::RowMean,
            x: sq,
        })
        .unwrap();
    let a = kb.binary(BinaryOp::Add, m, eps).unwrap();
    let r = kb.unary(UnaryOp::Rsqrt, a).unwrap();
    let y = kb.binary(BinaryOp::Mul, x, r).unwrap();
    kb.store(po, y);
    let k = kb.finish().unwrap();
    let mut args = vec![
        KernelArg::Tile(f32s(1, 2, &[3.0, 4.0])),
        KernelArg::Tile(Tile::zeros(tt(F32, 1, 2))),
        KernelArg::Scalar(ScalarValue::Float(0.0)),
    ];
    run_kernel(&k, &mut args).unwrap();
    // mean(9, 16) = 12.5; 1/sqrt(12.5) in f32.
    let r = 1.0f32 / 12.5f32.sqrt();
    assert_eq!(
        out_tile(&args, 1).valid_f64(),
        vec![f64::from(3.0 * r), f64::from(4.0 * r)]
    );
}

#[test]
fn ir_json_round_trips() {
    let mut kb = KernelBuilder::new("rt");
    let px = kb.tile_param("x", Direction::In, tt(DType::Bf16, 2, 2));
    let po = kb.tile_param("o", Direction::InOut, tt(DType::Bf16, 2, 2));
    kb.scalar_param("s", F32, Some(ScalarValue::Float(f64::NEG_INFINITY)));
    let x = kb.load(px).unwrap();
    let r = kb.unary(UnaryOp::Exp, x).unwrap();
    kb.name(r, "e");
    kb.store(po, r);
    let k = kb.finish().unwrap();
    let json = serde_json::to_string(&k).unwrap();
    assert!(json.contains("\"-inf\""), "{json}");
    let back: Kernel = serde_json::from_str(&json).unwrap();
    assert_eq!(back, k);
}

#[test]
fn a_consumer_section_written_first_still_sees_its_producer() {
    // vector { o = tpop(p) * 2; tfree } written before cube { slot = talloc; slot = x; tpush }.
    let mut kb = KernelBuilder::new("sections");
    let t = tt(F32, 1, 2);
    let px = kb.tile_param("x", Direction::In, t);
    let po = kb.tile_param("o", Direction::Out, t);
    let p = kb.pipe("p", t, 1);
    let slot = kb.var("slot", Type::Tile(t));
    let x = kb.load(px).unwrap();
    let two = kb.constant(ScalarValue::Float(2.0), F32).unwrap();
    let mut k = kb.finish().unwrap();
    // Build the two sections by hand.
    let popped = ValueId(k.values.len() as u32);
    let doubled = ValueId(popped.0 + 1);
    k.values.push(ValueInfo {
        ty: Type::Tile(t),
        name: None,
    });
    k.values.push(ValueInfo {
        ty: Type::Tile(t),
        name: None,
    });
    let vector = Stmt::Section {
        kind: SectionKind::Vector,
        body: vec![
            Stmt::Op {
                results: vec![popped],
                op: Op::TPop { pipe: p },
            },
            Stmt::Op {
                results: vec![doubled],
                op: Op::Binary {
                    op: BinaryOp::Mul,
                    lhs: popped,
                    rhs: two,
                },
            },
            Stmt::TFree {
                pipe: p,
                value: popped,
            },
            Stmt::Store {
                param: po,
                region: None,
                value: doubled,
            },
        ],
    };
    let cube = Stmt::Section {
        kind: SectionKind::Cube,
        body: vec![
            Stmt::TAlloc { pipe: p, slot },
            Stmt::Assign {
                var: slot,
                region: None,
                value: x,
            },
            Stmt::TPush { pipe: p, slot },
        ],
    };
    if let Some(body) = &mut k.body {
        body.push(vector);
        body.push(cube);
    }
    crate::typing::validate(&k).unwrap();
    let mut args = vec![
        KernelArg::Tile(f32s(1, 2, &[1.5, -2.0])),
        KernelArg::Tile(Tile::zeros(t)),
    ];
    run_kernel(&k, &mut args).unwrap();
    assert_eq!(out_tile(&args, 1).valid_f64(), vec![3.0, -4.0]);
}

mod fuzz {
    //! Arbitrary (mostly ill-formed) kernels never make the interpreter or the cost walker
    //! panic: they run or fail with a message.
    use super::*;
    use proptest::prelude::*;

    fn dtype() -> impl Strategy<Value = DType> {
        proptest::sample::select(DType::ALL.to_vec())
    }

    fn ty() -> impl Strategy<Value = Type> {
        prop_oneof![
            dtype().prop_map(|d| Type::Scalar { dtype: d }),
            (dtype(), 1u32..4, 1u32..4).prop_map(|(d, r, c)| Type::Tile(TileType::new(d, r, c))),
        ]
    }

    fn op(n: u32) -> impl Strategy<Value = Op> {
        let v = move || (0..n + 4).prop_map(ValueId);
        prop_oneof![
            (0u32..3).prop_map(|p| Op::Param { param: ParamId(p) }),
            (dtype(), -3i64..3).prop_map(|(d, i)| Op::Const {
                value: ScalarValue::Int(i),
                dtype: d
            }),
            (
                proptest::sample::select(vec![
                    BinaryOp::Add,
                    BinaryOp::Sub,
                    BinaryOp::Mul,
                    BinaryOp::Div,
                    BinaryOp::Rem,
                    BinaryOp::Max,
                    BinaryOp::Min,
                    BinaryOp::Pow,
                    BinaryOp::And,
                    BinaryOp::Or
                ]),
                v(),
                v()
            )
                .prop_map(|(op, lhs, rhs)| Op::Binary { op, lhs, rhs }),
            (v(), v()).prop_map(|(lhs, rhs)| Op::Cmp {
                op: CmpOp::Lt,
                lhs,
                rhs
            }),
            (v(), v(), v()).prop_map(|(cond, on_true, on_false)| Op::Select {
                cond,
                on_true,
                on_false
            }),
            (
                proptest::sample::select(vec![
                    UnaryOp::Exp,
                    UnaryOp::Neg,
                    UnaryOp::Not,
                    UnaryOp::Gelu
                ]),
                v()
            )
                .prop_map(|(op, x)| Op::Unary { op, x }),
            (
                proptest::sample::select(vec![
                    ReduceOp::RowSum,
                    ReduceOp::ColMax,
                    ReduceOp::RowMean
                ]),
                v()
            )
                .prop_map(|(op, x)| Op::Reduce { op, x }),
            (v(), v(), proptest::option::of(v())).prop_map(|(a, b, acc)| Op::Matmul { a, b, acc }),
            v().prop_map(|x| Op::Transpose { x }),
            (v(), dtype()).prop_map(|(x, dtype)| Op::Cast { x, dtype }),
            (v(), 0u32..5).prop_map(|(x, k)| Op::RowTopK { x, k }),
            (v(), 0i64..3, 0u32..3).prop_map(|(x, s, n)| Op::Slice {
                x,
                region: Region {
                    row_start: KIndex::constant(s),
                    rows: n,
                    col_start: KIndex::constant(0),
                    cols: 1
                },
            }),
            (1u32..3, 1u32..3, dtype(), v()).prop_map(|(r, c, dtype, value)| Op::Full {
                shape: [r, c],
                dtype,
                value
            }),
            (0u32..2).prop_map(|p| Op::VarRead { var: VarId(p) }),
            (0u32..2).prop_map(|p| Op::TPop { pipe: PipeId(p) }),
        ]
    }

    prop_compose! {
        fn kernel()(
            ptys in proptest::collection::vec((dtype(), 1u32..4, 1u32..4, any::<bool>()), 1..3),
            vtys in proptest::collection::vec(ty(), 1..8),
        )(
            ops in proptest::collection::vec(op(vtys.len() as u32 + 2), 1..10),
            store_to in 0u32..3,
            ptys in Just(ptys),
            vtys in Just(vtys),
        ) -> (Kernel, Vec<KernelArg>) {
            let mut params = Vec::new();
            let mut args = Vec::new();
            for (i, (d, r, c, out)) in ptys.iter().enumerate() {
                let tile = TileType::new(*d, *r, *c);
                params.push(Param {
                    name: format!("p{i}"),
                    kind: ParamKind::Tile {
                        dir: if *out { Direction::InOut } else { Direction::In },
                        tile,
                        partial: [true, false],
                    },
                });
                args.push(KernelArg::Tile(Tile::zeros(tile)));
            }
            // Values 0.. are the parameters' loads (well-typed), then the arbitrary ops.
            let np = ptys.len();
            let mut values: Vec<ValueInfo> = ptys
                .iter()
                .map(|(d, r, c, _)| ValueInfo { ty: Type::Tile(TileType::new(*d, *r, *c)), name: None })
                .collect();
            values.extend(vtys.into_iter().map(|ty| ValueInfo { ty, name: None }));
            let mut body: Vec<Stmt> = (0..np)
                .map(|i| Stmt::Op { results: vec![ValueId(i as u32)], op: Op::Param { param: ParamId(i as u32) } })
                .collect();
            let mut next = np as u32;
            for op in ops {
                let n = op.num_results() as u32;
                body.push(Stmt::Op { results: (next..next + n).collect::<Vec<_>>().into_iter().map(ValueId).collect(), op });
                next += n;
            }
            body.push(Stmt::Store { param: ParamId(store_to), region: None, value: ValueId(0) });
            let k = Kernel {
                name: "fuzz".into(),
                params,
                values,
                vars: vec![Var { name: "v".into(), ty: Type::Tile(TileType::new(DType::F32, 2, 2)) }],
                pipes: vec![Pipe { name: "p".into(), elem: TileType::new(DType::F32, 2, 2), slots: 1 }],
                body: Some(body),
                externs: vec![],
                cost: None,
                at: None,
            };
            (k, args)
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        #[test]
        fn arbitrary_kernels_never_panic((k, mut args) in kernel()) {
            let _ = crate::typing::validate(&k);
            let _ = run_kernel(&k, &mut args);
            let _ = crate::cost::v9_cycles(&k, &[]);
            let _ = serde_json::to_string(&k).map(|j| serde_json::from_str::<Kernel>(&j));
        }
    }
}

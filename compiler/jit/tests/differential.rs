//! Differential tests: each kernel of the corpus runs through the reference interpreter and
//! the JIT on the same data; valid output elements must agree bit for bit (any NaN matches any
//! NaN), and both must reject the same malformed arguments.

use wsp_ir::interp::{run_kernel, KernelArg, Tile};
use wsp_ir::kernel::*;
use wsp_ir::tensor::{convert, El};
use wsp_ir::typing::KernelBuilder;
use wsp_ir::{DType, ScalarValue};
use wsp_jit::Jit;

struct Rng(u64);
impl Rng {
    fn bits(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 40
    }
    /// Uniform in [-2, 2).
    fn next(&mut self) -> f64 {
        (self.bits() as f64 / (1u64 << 24) as f64) * 4.0 - 2.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.bits() % n
    }
    /// A float over many binades (f16 subnormals to past f16's range), with specials and
    /// exact ties of f16/bf16 rounding now and then.
    fn wide(&mut self) -> f64 {
        match self.below(24) {
            0 => f64::NAN,
            1 => f64::INFINITY,
            2 => f64::NEG_INFINITY,
            3 => -0.0,
            4 => 0.0,
            // A tie of f16 rounding (11 significant bits + a half) and of bf16 (8 + a half).
            5 => (1.0 + (self.below(1024) as f64 + 0.5) / 1024.0) * 2f64.powi(self.below(8) as i32),
            6 => {
                (1.0 + (self.below(128) as f64 + 0.5) / 128.0) * -(2f64.powi(self.below(8) as i32))
            }
            _ => {
                let e = self.below(56) as i32 - 34;
                let m = 1.0 + self.bits() as f64 / (1u64 << 24) as f64;
                let s = if self.below(2) == 0 { 1.0 } else { -1.0 };
                s * m * 2f64.powi(e)
            }
        }
    }
    /// An i32: small values (ties, zeros when `zeros`) and extremes.
    fn int(&mut self, zeros: bool) -> i128 {
        let v = match self.below(16) {
            0 => i128::from(i32::MIN),
            1 => i128::from(i32::MAX),
            2 => -1,
            3 => self.bits() as i32 as i128,
            _ => self.below(17) as i128 - 8,
        };
        if v == 0 && !zeros {
            1
        } else {
            v
        }
    }
}

fn f32t(r: u32, c: u32) -> TileType {
    TileType::new(DType::F32, r, c)
}

fn tt(d: DType, r: u32, c: u32) -> TileType {
    TileType::new(d, r, c)
}

/// How [`args_for`] draws values.
#[derive(Clone, Copy, PartialEq)]
enum Data {
    /// Floats uniform in [-2, 2); small integers (no zeros: every division is defined).
    Small,
    /// Floats over many binades with specials; integers with zeros and extremes.
    Wide,
}

fn el(d: DType, rng: &mut Rng, mode: Data) -> El {
    let e = if d.is_bool() {
        El::B(rng.below(2) == 0)
    } else if d.is_int() {
        El::I(rng.int(mode == Data::Wide))
    } else if mode == Data::Wide {
        El::F(rng.wide())
    } else {
        El::F(rng.next())
    };
    convert(e, d)
}

/// Arguments for `k`: random inputs (valid extent `valid` for partial params), zero outputs.
fn args_for(k: &Kernel, seed: u64, valid: Option<[u32; 2]>) -> Vec<KernelArg> {
    args_mode(
        k,
        seed,
        valid,
        if seed.is_multiple_of(2) {
            Data::Wide
        } else {
            Data::Small
        },
    )
}

fn args_mode(k: &Kernel, seed: u64, valid: Option<[u32; 2]>, mode: Data) -> Vec<KernelArg> {
    let mut rng = Rng(seed);
    k.params
        .iter()
        .map(|p| match p.kind {
            ParamKind::Tile { tile, partial, .. } => {
                let mut t = Tile::zeros(tile);
                for i in 0..tile.len() {
                    t.data.set(i, el(tile.dtype, &mut rng, mode));
                }
                if let Some(v) = valid {
                    for d in 0..2 {
                        if partial[d] {
                            t.valid[d] = v[d].min(tile.shape[d]);
                        }
                    }
                }
                KernelArg::Tile(t)
            }
            ParamKind::Scalar { dtype, .. } => KernelArg::Scalar(match el(dtype, &mut rng, mode) {
                El::F(f) => ScalarValue::Float(f),
                El::I(i) => ScalarValue::Int(i as i64),
                El::B(b) => ScalarValue::Bool(b),
            }),
        })
        .collect()
}

fn same(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits()
}

fn check(k: &Kernel, seed: u64, valid: Option<[u32; 2]>) {
    check_mode(
        k,
        seed,
        valid,
        if seed.is_multiple_of(2) {
            Data::Wide
        } else {
            Data::Small
        },
    );
}

/// Runs `k` in both engines; returns whether the run succeeded (both failing is agreement).
fn check_mode(k: &Kernel, seed: u64, valid: Option<[u32; 2]>, mode: Data) -> bool {
    let jit = Jit::new();
    let ck = jit.compile(k).unwrap_or_else(|e| panic!("{e}"));
    let mut a = args_mode(k, seed, valid, mode);
    let mut b = a.clone();
    let ri = run_kernel(k, &mut a);
    let rj = ck.run(&mut b);
    match (&ri, &rj) {
        (Ok(()), Ok(())) => {}
        (Err(_), Err(_)) => return false,
        _ => panic!("{}: interpreter {ri:?} vs JIT {rj:?}", k.name),
    }
    for (p, (x, y)) in k.params.iter().zip(a.iter().zip(&b)) {
        if let (KernelArg::Tile(x), KernelArg::Tile(y)) = (x, y) {
            let (xs, ys) = (x.valid_f64(), y.valid_f64());
            assert_eq!(xs.len(), ys.len());
            for (i, (u, v)) in xs.iter().zip(&ys).enumerate() {
                assert!(
                    same(*u, *v),
                    "{} (seed {seed}): `{}` element {i}: interpreter {u} vs JIT {v}",
                    k.name,
                    p.name
                );
            }
        }
    }
    true
}

fn check_all(k: &Kernel) {
    for seed in 1..5 {
        check(k, seed, None);
    }
    for v in [[1, 1], [3, 5], [7, 2], [0, 3], [5, 0]] {
        check(k, 7, Some(v));
    }
}

/// `out = f(x, y)` for an elementwise or general body.
fn kernel2(
    name: &str,
    xs: TileType,
    ys: TileType,
    out: TileType,
    partial: bool,
    body: impl FnOnce(&mut KernelBuilder, ValueId, ValueId) -> ValueId,
) -> Kernel {
    let mut b = KernelBuilder::new(name);
    let p = [partial, partial];
    let x = b.partial_tile_param("x", Direction::In, xs, p);
    let y = b.partial_tile_param("y", Direction::In, ys, p);
    let o = b.partial_tile_param("out", Direction::Out, out, p);
    let xv = b.load(x).unwrap();
    let yv = b.load(y).unwrap();
    let r = body(&mut b, xv, yv);
    b.store(o, r);
    b.finish().unwrap_or_else(|e| panic!("{name}: {e}"))
}

const SHAPES: [[u32; 2]; 5] = [[1, 1], [4, 4], [3, 7], [8, 13], [16, 64]];

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

#[test]
fn out_of_range_region_is_an_error_naming_the_view() {
    let mut b = KernelBuilder::new("oob");
    let x = b.tile_param("x", Direction::In, f32t(2, 4));
    let o = b.tile_param("out", Direction::Out, f32t(4, 4));
    let xv = b.load(x).unwrap();
    let i = b.begin_for(0, 4);
    b.stmt(Stmt::Store {
        param: o,
        region: Some(Region {
            row_start: KIndex {
                constant: 0,
                terms: vec![(i, 1)],
            },
            rows: 2,
            col_start: KIndex::constant(0),
            cols: 4,
        }),
        value: xv,
    });
    b.end_for().unwrap();
    let k = b.finish().unwrap();
    let ck = Jit::new().compile(&k).unwrap();
    let mut args = args_for(&k, 1, None);
    let e = ck.run(&mut args).unwrap_err();
    assert!(e.message.contains("`out`"), "{e}");
    assert!(run_kernel(&k, &mut args_for(&k, 1, None)).is_err());
}

#[test]
fn bad_extent_is_rejected_before_running() {
    let k = kernel2(
        "ext",
        f32t(4, 4),
        f32t(4, 4),
        f32t(4, 4),
        false,
        |b, x, y| b.binary(BinaryOp::Add, x, y).unwrap(),
    );
    let ck = Jit::new().compile(&k).unwrap();
    let mut args = args_for(&k, 1, None);
    if let KernelArg::Tile(t) = &mut args[0] {
        t.valid = [3, 4];
    }
    let e = ck.run(&mut args).unwrap_err();
    assert!(
        e.message.contains("`x`") && e.message.contains("rows"),
        "{e}"
    );
}

#[test]
fn cache_hits_on_identical_kernels_and_unsupported_is_an_error() {
    let jit = Jit::new();
    let mk = || {
        kernel2("c", f32t(4, 4), f32t(4, 4), f32t(4, 4), false, |b, x, y| {
            b.binary(BinaryOp::Add, x, y).unwrap()
        })
    };
    let a = jit.compile(&mk()).unwrap();
    let b = jit.compile(&mk()).unwrap();
    assert!(std::sync::Arc::ptr_eq(&a, &b));
    assert_eq!(jit.cached(), 1);
    let mut kb = KernelBuilder::new("f64");
    let x = kb.tile_param("x", Direction::In, tt(DType::F64, 2, 8));
    let o = kb.tile_param("out", Direction::Out, tt(DType::F64, 2, 8));
    let xv = kb.load(x).unwrap();
    let r = kb.binary(BinaryOp::Add, xv, xv).unwrap();
    kb.store(o, r);
    let e = jit.compile(&kb.finish().unwrap()).err().unwrap();
    assert_eq!(e.kind, wsp_jit::JitErrorKind::Unsupported);
    assert!(e.message.contains("f64"), "{e}");
}

const HALF: [DType; 2] = [DType::F16, DType::Bf16];
const ALL: [DType; 5] = [DType::F32, DType::F16, DType::Bf16, DType::I32, DType::Bool];

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

// ----- pipes -------------------------------------------------------------------------------

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

//! Differential tests: each kernel of the corpus runs through the reference interpreter and
//! the JIT on the same data; valid output elements must agree bit for bit (any NaN matches any
//! NaN), and both must reject the same malformed arguments.

use wsp_ir::interp::{run_kernel, KernelArg, Tile};
use wsp_ir::kernel::*;
use wsp_ir::typing::KernelBuilder;
use wsp_ir::{DType, ScalarValue};
use wsp_jit::Jit;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 40) as f64 / (1u64 << 24) as f64) * 4.0 - 2.0
    }
}

fn f32t(r: u32, c: u32) -> TileType {
    TileType::new(DType::F32, r, c)
}

/// Arguments for `k`: random inputs (valid extent `valid` for partial params), zero outputs.
fn args_for(k: &Kernel, seed: u64, valid: Option<[u32; 2]>) -> Vec<KernelArg> {
    let mut rng = Rng(seed);
    k.params
        .iter()
        .map(|p| match p.kind {
            ParamKind::Tile { tile, partial, .. } => {
                let vals: Vec<f64> = (0..tile.len()).map(|_| rng.next()).collect();
                let mut t = Tile::from_f64(DType::F32, tile.rows(), tile.cols(), &vals);
                if let Some(v) = valid {
                    for d in 0..2 {
                        if partial[d] {
                            t.valid[d] = v[d].min(tile.shape[d]);
                        }
                    }
                }
                KernelArg::Tile(t)
            }
            ParamKind::Scalar { .. } => KernelArg::Scalar(ScalarValue::Float(rng.next())),
        })
        .collect()
}

fn same(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || (a as f32).to_bits() == (b as f32).to_bits()
}

fn check(k: &Kernel, seed: u64, valid: Option<[u32; 2]>) {
    let jit = Jit::new();
    let ck = jit.compile(k).unwrap_or_else(|e| panic!("{e}"));
    let mut a = args_for(k, seed, valid);
    let mut b = a.clone();
    let ri = run_kernel(k, &mut a);
    let rj = ck.run(&mut b);
    match (&ri, &rj) {
        (Ok(()), Ok(())) => {}
        (Err(_), Err(_)) => return,
        _ => panic!("{}: interpreter {ri:?} vs JIT {rj:?}", k.name),
    }
    for (p, (x, y)) in k.params.iter().zip(a.iter().zip(&b)) {
        if let (KernelArg::Tile(x), KernelArg::Tile(y)) = (x, y) {
            let (xs, ys) = (x.valid_f64(), y.valid_f64());
            assert_eq!(xs.len(), ys.len());
            for (i, (u, v)) in xs.iter().zip(&ys).enumerate() {
                assert!(
                    same(*u, *v),
                    "{}: `{}` element {i}: interpreter {u} vs JIT {v}",
                    k.name,
                    p.name
                );
            }
        }
    }
}

fn check_all(k: &Kernel) {
    for seed in 1..4 {
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
    let mut kb = KernelBuilder::new("topk");
    let x = kb.tile_param("x", Direction::In, f32t(2, 8));
    let o = kb.tile_param("out", Direction::Out, f32t(2, 2));
    let xv = kb.load(x).unwrap();
    let r = kb.op_n(Op::RowTopK { x: xv, k: 2 }).unwrap();
    kb.store(o, r[0]);
    let e = jit.compile(&kb.finish().unwrap()).err().unwrap();
    assert_eq!(e.kind, wsp_jit::JitErrorKind::Unsupported);
    assert!(e.message.contains("rowtopk"), "{e}");
}

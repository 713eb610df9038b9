//! The differential harness: seeded random arguments of every dtype, both engines run on
//! copies of them, outputs compared bit for bit; kernel builders, and the shapes and dtypes
//! the tests sweep.

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

pub(crate) fn f32t(r: u32, c: u32) -> TileType {
    TileType::new(DType::F32, r, c)
}

pub(crate) fn tt(d: DType, r: u32, c: u32) -> TileType {
    TileType::new(d, r, c)
}

/// How [`args_for`] draws values.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Data {
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
pub(crate) fn args_for(k: &Kernel, seed: u64, valid: Option<[u32; 2]>) -> Vec<KernelArg> {
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

pub(crate) fn args_mode(
    k: &Kernel,
    seed: u64,
    valid: Option<[u32; 2]>,
    mode: Data,
) -> Vec<KernelArg> {
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
pub(crate) fn check_mode(k: &Kernel, seed: u64, valid: Option<[u32; 2]>, mode: Data) -> bool {
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

pub(crate) fn check_all(k: &Kernel) {
    for seed in 1..5 {
        check(k, seed, None);
    }
    for v in [[1, 1], [3, 5], [7, 2], [0, 3], [5, 0]] {
        check(k, 7, Some(v));
    }
}

/// `out = f(x, y)` for an elementwise or general body.
pub(crate) fn kernel2(
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

pub(crate) const SHAPES: [[u32; 2]; 5] = [[1, 1], [4, 4], [3, 7], [8, 13], [16, 64]];

pub(crate) const HALF: [DType; 2] = [DType::F16, DType::Bf16];
pub(crate) const ALL: [DType; 5] = [DType::F32, DType::F16, DType::Bf16, DType::I32, DType::Bool];

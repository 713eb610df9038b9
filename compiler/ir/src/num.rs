//! Scalar arithmetic with the kernel IR's numeric rules (see [`crate::kernel`]), shared by the
//! reference interpreter and anything else that must agree with it.

use crate::dtype::DType;
use crate::kernel::{BinaryOp, CmpOp, UnaryOp};
use crate::tensor::{convert, round_float, wrap_int, El};
use std::cmp::Ordering;

/// The float operations the interpreter needs, for f32 and f64.
pub trait Fl: Copy + PartialOrd + std::fmt::Debug {
    const ZERO: Self;
    const ONE: Self;
    const NEG_INF: Self;
    const INF: Self;
    fn from64(x: f64) -> Self;
    fn to64(self) -> f64;
    fn add(self, o: Self) -> Self;
    fn sub(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    fn div(self, o: Self) -> Self;
    fn rem(self, o: Self) -> Self;
    fn pow(self, o: Self) -> Self;
    /// `self · a + b` with one rounding (a fused multiply-add).
    fn mul_add(self, a: Self, b: Self) -> Self;
    fn exp(self) -> Self;
    fn ln(self) -> Self;
    fn sqrt(self) -> Self;
    fn tanh(self) -> Self;
    fn sin(self) -> Self;
    fn cos(self) -> Self;
    fn abs(self) -> Self;
    fn neg(self) -> Self;
    fn is_nan(self) -> bool;
    fn is_sign_negative(self) -> bool;
    fn nan() -> Self;
}

macro_rules! impl_fl {
    ($t:ty, $exp:path, $ln:path, $tanh:path) => {
        impl Fl for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const NEG_INF: Self = <$t>::NEG_INFINITY;
            const INF: Self = <$t>::INFINITY;
            fn from64(x: f64) -> Self {
                x as $t
            }
            fn to64(self) -> f64 {
                self as f64
            }
            fn add(self, o: Self) -> Self {
                self + o
            }
            fn sub(self, o: Self) -> Self {
                self - o
            }
            fn mul(self, o: Self) -> Self {
                self * o
            }
            fn div(self, o: Self) -> Self {
                self / o
            }
            fn rem(self, o: Self) -> Self {
                self % o
            }
            fn pow(self, o: Self) -> Self {
                self.powf(o)
            }
            fn mul_add(self, a: Self, b: Self) -> Self {
                <$t>::mul_add(self, a, b)
            }
            fn exp(self) -> Self {
                $exp(self)
            }
            fn ln(self) -> Self {
                $ln(self)
            }
            fn sqrt(self) -> Self {
                <$t>::sqrt(self)
            }
            fn tanh(self) -> Self {
                $tanh(self)
            }
            fn sin(self) -> Self {
                <$t>::sin(self)
            }
            fn cos(self) -> Self {
                <$t>::cos(self)
            }
            fn abs(self) -> Self {
                <$t>::abs(self)
            }
            fn neg(self) -> Self {
                -self
            }
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
            fn is_sign_negative(self) -> bool {
                <$t>::is_sign_negative(self)
            }
            fn nan() -> Self {
                <$t>::NAN
            }
        }
    };
}
// f32's `exp`, `ln` and `tanh` are the kernel IR's own (`crate::math`: the JIT's vector code
// computes the same sequence); f64's are the platform's.
impl_fl!(f32, crate::math::exp, crate::math::ln, crate::math::tanh);
impl_fl!(f64, f64::exp, f64::ln, f64::tanh);

/// IEEE 754-2019 `maximum`: NaN if either operand is NaN; `+0.0 > -0.0`.
pub fn maximum<F: Fl>(a: F, b: F) -> F {
    if a.is_nan() || b.is_nan() {
        F::nan()
    } else if b > a || (a == b && a.is_sign_negative()) {
        b
    } else {
        a
    }
}

/// IEEE 754-2019 `minimum`: NaN if either operand is NaN; `-0.0 < +0.0`.
pub fn minimum<F: Fl>(a: F, b: F) -> F {
    if a.is_nan() || b.is_nan() {
        F::nan()
    } else if a < b || (a == b && a.is_sign_negative()) {
        a
    } else {
        b
    }
}

/// A binary float op in precision `F` (`None` for ops that are not float ops).
pub fn float_binary_in<F: Fl>(op: BinaryOp, a: F, b: F) -> Option<F> {
    Some(match op {
        BinaryOp::Add => a.add(b),
        BinaryOp::Sub => a.sub(b),
        BinaryOp::Mul => a.mul(b),
        BinaryOp::Div => a.div(b),
        BinaryOp::Rem => a.rem(b),
        BinaryOp::Max => maximum(a, b),
        BinaryOp::Min => minimum(a, b),
        BinaryOp::Pow => a.pow(b),
        BinaryOp::And | BinaryOp::Or => return None,
    })
}

/// A unary float op in precision `F` (`None` for `not`).
pub fn float_unary_in<F: Fl>(op: UnaryOp, x: F) -> Option<F> {
    Some(match op {
        UnaryOp::Exp => x.exp(),
        UnaryOp::Log => x.ln(),
        UnaryOp::Sqrt => x.sqrt(),
        UnaryOp::Rsqrt => F::ONE.div(x.sqrt()),
        UnaryOp::Recip => F::ONE.div(x),
        UnaryOp::Tanh => x.tanh(),
        UnaryOp::Sigmoid => F::ONE.div(F::ONE.add(x.neg().exp())),
        UnaryOp::Sin => x.sin(),
        UnaryOp::Cos => x.cos(),
        UnaryOp::Relu => maximum(x, F::ZERO),
        UnaryOp::Gelu => {
            // 0.5 * x * (1 + tanh(c * (x + 0.044715 * x * x * x))), left to right.
            let c = F::from64(0.797_884_560_802_865_4);
            let k = F::from64(0.044715);
            let inner = c.mul(x.add(k.mul(x).mul(x).mul(x)));
            F::from64(0.5).mul(x).mul(F::ONE.add(inner.tanh()))
        }
        UnaryOp::Silu => x.mul(F::ONE.div(F::ONE.add(x.neg().exp()))),
        UnaryOp::Abs => x.abs(),
        UnaryOp::Neg => x.neg(),
        UnaryOp::Not => return None,
    })
}

/// Runs `f` in the compute precision of `dtype` (f64 for f64, else f32) and rounds the result
/// to `dtype`.
fn in_precision(
    dtype: DType,
    f32op: impl FnOnce() -> Option<f32>,
    f64op: impl FnOnce() -> Option<f64>,
) -> Option<f64> {
    if dtype == DType::F64 {
        f64op()
    } else {
        f32op().map(|r| round_float(dtype, f64::from(r)))
    }
}

/// An elementwise binary op on two elements of `dtype`.
pub fn binary(op: BinaryOp, dtype: DType, a: El, b: El) -> Result<El, String> {
    match (a, b) {
        (El::F(x), El::F(y)) => in_precision(
            dtype,
            || float_binary_in(op, x as f32, y as f32),
            || float_binary_in(op, x, y),
        )
        .map(El::F)
        .ok_or_else(|| format!("`{}` needs bool operands, found {dtype}", op.symbol())),
        (El::I(x), El::I(y)) => {
            let r = match op {
                BinaryOp::Add => x + y,
                BinaryOp::Sub => x - y,
                BinaryOp::Mul => x.wrapping_mul(y),
                BinaryOp::Div | BinaryOp::Rem if y == 0 => {
                    return Err(format!(
                        "integer {} by zero ({dtype})",
                        if op == BinaryOp::Div {
                            "division"
                        } else {
                            "remainder"
                        }
                    ))
                }
                BinaryOp::Div => x / y,
                BinaryOp::Rem => x % y,
                BinaryOp::Max => x.max(y),
                BinaryOp::Min => x.min(y),
                BinaryOp::Pow => return Err(format!("`pow` needs float operands, found {dtype}")),
                BinaryOp::And | BinaryOp::Or => {
                    return Err(format!(
                        "`{}` needs bool operands, found {dtype}",
                        op.symbol()
                    ))
                }
            };
            Ok(El::I(wrap_int(dtype, r)))
        }
        (El::B(x), El::B(y)) => match op {
            BinaryOp::And => Ok(El::B(x && y)),
            BinaryOp::Or => Ok(El::B(x || y)),
            _ => Err(format!("`{}` is not defined on bool operands", op.symbol())),
        },
        _ => Err(format!("`{}` on elements of different kinds", op.symbol())),
    }
}

/// An elementwise unary op on an element of `dtype`.
pub fn unary(op: UnaryOp, dtype: DType, x: El) -> Result<El, String> {
    match x {
        El::F(v) => in_precision(
            dtype,
            || float_unary_in(op, v as f32),
            || float_unary_in(op, v),
        )
        .map(El::F)
        .ok_or_else(|| format!("`{}` needs a bool operand, found {dtype}", op.name())),
        El::I(v) => match op {
            UnaryOp::Neg => Ok(El::I(wrap_int(dtype, -v))),
            UnaryOp::Abs => Ok(El::I(wrap_int(dtype, v.abs()))),
            UnaryOp::Relu => Ok(El::I(v.max(0))),
            _ => Err(format!(
                "`{}` needs a float operand, found {dtype}",
                op.name()
            )),
        },
        El::B(b) => match op {
            UnaryOp::Not => Ok(El::B(!b)),
            _ => Err(format!("`{}` is not defined on bool operands", op.name())),
        },
    }
}

/// Total order used by comparisons of elements of one kind: numbers as numbers (`-0.0 ==
/// +0.0`), `false < true`. `None` when a NaN is involved (every comparison with NaN is false
/// except `!=`).
pub fn partial_cmp_el(a: El, b: El) -> Option<Ordering> {
    match (a, b) {
        (El::F(x), El::F(y)) => x.partial_cmp(&y),
        (El::I(x), El::I(y)) => Some(x.cmp(&y)),
        (El::B(x), El::B(y)) => Some(x.cmp(&y)),
        _ => None,
    }
}

/// A comparison.
pub fn compare(op: CmpOp, a: El, b: El) -> bool {
    let o = partial_cmp_el(a, b);
    match op {
        CmpOp::Eq => o == Some(Ordering::Equal),
        CmpOp::Ne => o != Some(Ordering::Equal),
        CmpOp::Lt => o == Some(Ordering::Less),
        CmpOp::Le => matches!(o, Some(Ordering::Less | Ordering::Equal)),
        CmpOp::Gt => o == Some(Ordering::Greater),
        CmpOp::Ge => matches!(o, Some(Ordering::Greater | Ordering::Equal)),
    }
}

/// Order of `rowtopk`: descending by value with NaN above every number, ties (including
/// `-0.0`/`+0.0` and NaN/NaN) by ascending index.
pub fn topk_order(a: (El, usize), b: (El, usize)) -> Ordering {
    let by_value = match (a.0, b.0) {
        (El::F(x), El::F(y)) if x.is_nan() || y.is_nan() => y.is_nan().cmp(&x.is_nan()),
        (x, y) => partial_cmp_el(y, x).unwrap_or(Ordering::Equal),
    };
    by_value.then(a.1.cmp(&b.1))
}

/// `cast` of one element.
pub fn cast(x: El, to: DType) -> El {
    convert(x, to)
}

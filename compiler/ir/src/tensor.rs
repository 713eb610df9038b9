//! Host-side data: element values, typed buffers, conversions with the IR's numeric rules, and
//! the deterministic `random(seed)` generator.
//!
//! Buffers hold each element exactly: floats as `f64` (every f16, bf16 and f32 value is exactly
//! representable, and values are kept rounded to their dtype), integers as `i128` (wrapped to
//! their dtype), bools as `bool`. Conversion to and from the real bit layouts
//! ([`Data::to_bytes`], [`Data::from_bytes`]) uses the `half` crate for f16/bf16.

use crate::dtype::{DType, ScalarValue};
use half::{bf16, f16};

/// One element.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum El {
    F(f64),
    I(i128),
    B(bool),
}

impl El {
    /// Identity comparison: floats by bits.
    pub fn same(self, other: El) -> bool {
        match (self, other) {
            (El::F(a), El::F(b)) => a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
            (a, b) => a == b,
        }
    }

    /// Converts a scalar constant to an element of `dtype` (cast rules).
    pub fn from_scalar(v: ScalarValue, dtype: DType) -> El {
        let src = match v {
            ScalarValue::Float(f) => El::F(f),
            ScalarValue::Int(i) => El::I(i128::from(i)),
            ScalarValue::UInt(u) => El::I(i128::from(u)),
            ScalarValue::Bool(b) => El::B(b),
        };
        convert(src, dtype)
    }

    /// The element as a scalar constant.
    pub fn to_scalar(self) -> ScalarValue {
        match self {
            El::F(f) => ScalarValue::Float(f),
            El::I(i) => match i64::try_from(i) {
                Ok(v) => ScalarValue::Int(v),
                Err(_) => ScalarValue::UInt(u64::try_from(i).unwrap_or(u64::MAX)),
            },
            El::B(b) => ScalarValue::Bool(b),
        }
    }

    pub fn as_f64(self) -> f64 {
        match self {
            El::F(f) => f,
            El::I(i) => i as f64,
            El::B(b) => f64::from(u8::from(b)),
        }
    }
}

/// `x` rounded to f32 with round-to-odd: truncated toward zero, with the last bit set when
/// inexact. Rounding that result to a format with at least two fewer significand bits (f16,
/// bf16) with ties-to-even gives the correctly rounded value of `x` (no double rounding).
fn f64_to_f32_odd(x: f64) -> f32 {
    let t = x as f32;
    if x.is_nan() || f64::from(t) == x {
        return t;
    }
    // Inexact (including overflow to ±inf, where |t| > |x|): truncate toward zero, set the
    // last bit.
    let bits = t.to_bits();
    let toward_zero = if f64::from(t).abs() > x.abs() {
        f32::from_bits(bits - 1)
    } else {
        t
    };
    f32::from_bits(toward_zero.to_bits() | 1)
}

/// `i` rounded to f32 with round-to-odd (see [`f64_to_f32_odd`]).
fn int_to_f32_odd(i: i128) -> f32 {
    let m = i.unsigned_abs();
    let width = 128 - m.leading_zeros();
    let mag = if width <= 24 {
        m as f32
    } else {
        let shift = width - 24;
        let mut top = m >> shift;
        if m & ((1u128 << shift) - 1) != 0 {
            top |= 1;
        }
        // `top` < 2^24 is exact in f32; scaling by a power of two is exact.
        top as f32 * 2f32.powi(shift as i32)
    };
    if i < 0 {
        -mag
    } else {
        mag
    }
}

/// The f16 nearest to `x` (ties to even), correctly rounded from f64.
pub fn f16_from_f64(x: f64) -> f16 {
    f16::from_f32(f64_to_f32_odd(x))
}

/// The bf16 nearest to `x` (ties to even), correctly rounded from f64.
pub fn bf16_from_f64(x: f64) -> bf16 {
    bf16::from_f32(f64_to_f32_odd(x))
}

/// Rounds `x` to the nearest value of the float `dtype` (ties to even).
pub fn round_float(dtype: DType, x: f64) -> f64 {
    match dtype {
        DType::F16 => f16_from_f64(x).to_f64(),
        DType::Bf16 => bf16_from_f64(x).to_f64(),
        DType::F32 => x as f32 as f64,
        _ => x,
    }
}

/// Wraps an integer to the range of the integer `dtype` (two's complement).
pub fn wrap_int(dtype: DType, v: i128) -> i128 {
    match dtype {
        DType::I8 => i128::from(v as i8),
        DType::I16 => i128::from(v as i16),
        DType::I32 => i128::from(v as i32),
        DType::I64 => i128::from(v as i64),
        DType::U8 => i128::from(v as u8),
        DType::U16 => i128::from(v as u16),
        DType::U32 => i128::from(v as u32),
        DType::U64 => i128::from(v as u64),
        _ => v,
    }
}

fn int_range(dtype: DType) -> (i128, i128) {
    match dtype {
        DType::I8 => (i128::from(i8::MIN), i128::from(i8::MAX)),
        DType::I16 => (i128::from(i16::MIN), i128::from(i16::MAX)),
        DType::I32 => (i128::from(i32::MIN), i128::from(i32::MAX)),
        DType::I64 => (i128::from(i64::MIN), i128::from(i64::MAX)),
        DType::U8 => (0, i128::from(u8::MAX)),
        DType::U16 => (0, i128::from(u16::MAX)),
        DType::U32 => (0, i128::from(u32::MAX)),
        DType::U64 => (0, i128::from(u64::MAX)),
        _ => (0, 0),
    }
}

/// Converts an element to `dtype` with the `cast` rules of the kernel IR: float→float rounds to
/// nearest even; float→int truncates toward zero and saturates (NaN → 0); int→float rounds to
/// nearest; int→int wraps; bool→number is 0/1; number→bool is `x != 0`.
pub fn convert(v: El, dtype: DType) -> El {
    if dtype.is_bool() {
        return El::B(match v {
            El::F(f) => f != 0.0,
            El::I(i) => i != 0,
            El::B(b) => b,
        });
    }
    if dtype.is_float() {
        return El::F(match v {
            El::F(f) => round_float(dtype, f),
            El::I(i) => int_to_float(dtype, i),
            El::B(b) => f64::from(u8::from(b)),
        });
    }
    El::I(match v {
        El::F(f) => {
            if f.is_nan() {
                0
            } else {
                let (lo, hi) = int_range(dtype);
                let t = f.trunc();
                if t <= lo as f64 {
                    lo
                } else if t >= hi as f64 {
                    hi
                } else {
                    t as i128
                }
            }
        }
        El::I(i) => wrap_int(dtype, i),
        El::B(b) => i128::from(b),
    })
}

fn int_to_float(dtype: DType, i: i128) -> f64 {
    match dtype {
        DType::F64 => i as f64,
        DType::F32 => i as f32 as f64,
        DType::F16 => f16::from_f32(int_to_f32_odd(i)).to_f64(),
        DType::Bf16 => bf16::from_f32(int_to_f32_odd(i)).to_f64(),
        _ => i as f64,
    }
}

/// A typed, row-major buffer.
#[derive(Clone, Debug, PartialEq)]
pub enum Data {
    Float(Vec<f64>),
    Int(Vec<i128>),
    Bool(Vec<bool>),
}

impl Data {
    /// Bytes that `n` elements of `dtype` take on the host (the representation [`Data::zeros`]
    /// picks; saturating).
    pub fn host_bytes(dtype: DType, n: usize) -> usize {
        let per = if dtype.is_float() {
            std::mem::size_of::<f64>()
        } else if dtype.is_bool() {
            std::mem::size_of::<bool>()
        } else {
            std::mem::size_of::<i128>()
        };
        n.saturating_mul(per)
    }

    /// `n` zeros of `dtype`.
    pub fn zeros(dtype: DType, n: usize) -> Data {
        if dtype.is_float() {
            Data::Float(vec![0.0; n])
        } else if dtype.is_bool() {
            Data::Bool(vec![false; n])
        } else {
            Data::Int(vec![0; n])
        }
    }

    /// `n` copies of `v` (already of the right kind).
    pub fn filled(v: El, n: usize) -> Data {
        match v {
            El::F(f) => Data::Float(vec![f; n]),
            El::I(i) => Data::Int(vec![i; n]),
            El::B(b) => Data::Bool(vec![b; n]),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Data::Float(v) => v.len(),
            Data::Int(v) => v.len(),
            Data::Bool(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Element `i` (`None` when out of range).
    pub fn get(&self, i: usize) -> Option<El> {
        match self {
            Data::Float(v) => v.get(i).map(|x| El::F(*x)),
            Data::Int(v) => v.get(i).map(|x| El::I(*x)),
            Data::Bool(v) => v.get(i).map(|x| El::B(*x)),
        }
    }

    /// Sets element `i`; returns false when out of range or of the wrong kind.
    pub fn set(&mut self, i: usize, e: El) -> bool {
        match (self, e) {
            (Data::Float(v), El::F(x)) => v.get_mut(i).map(|s| *s = x).is_some(),
            (Data::Int(v), El::I(x)) => v.get_mut(i).map(|s| *s = x).is_some(),
            (Data::Bool(v), El::B(x)) => v.get_mut(i).map(|s| *s = x).is_some(),
            _ => false,
        }
    }

    /// The elements in the little-endian bit layout of `dtype` (bool as one byte 0/1).
    pub fn to_bytes(&self, dtype: DType) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len() * dtype.size_bytes());
        match (self, dtype) {
            // The common cases without a conversion per element (the same bytes).
            (Data::Float(v), DType::F32) => {
                for x in v {
                    out.extend_from_slice(&(*x as f32).to_le_bytes());
                }
            }
            (Data::Float(v), DType::F64) => {
                for x in v {
                    out.extend_from_slice(&x.to_le_bytes());
                }
            }
            _ => {
                for i in 0..self.len() {
                    if let Some(e) = self.get(i) {
                        encode_el(convert(e, dtype), dtype, &mut out, false);
                    }
                }
            }
        }
        out
    }

    /// Reads `n` elements of `dtype` from little-endian (or big-endian) bytes. Returns `None`
    /// when `bytes` is shorter than `n` elements.
    pub fn from_bytes(dtype: DType, bytes: &[u8], n: usize, big_endian: bool) -> Option<Data> {
        let size = dtype.size_bytes();
        if bytes.len() < n.checked_mul(size)? {
            return None;
        }
        let bytes = &bytes[..n * size];
        match (dtype, big_endian) {
            // The common cases without an element enum per value (the same values).
            (DType::F32, false) => {
                return Some(Data::Float(
                    bytes
                        .chunks_exact(4)
                        .map(|c| f64::from(f32::from_le_bytes([c[0], c[1], c[2], c[3]])))
                        .collect(),
                ))
            }
            (DType::F64, false) => {
                return Some(Data::Float(
                    bytes
                        .chunks_exact(8)
                        .map(|c| f64::from_le_bytes(std::array::from_fn(|i| c[i])))
                        .collect(),
                ))
            }
            _ => {}
        }
        let els = bytes
            .chunks_exact(size)
            .take(n)
            .map(|c| decode_el(dtype, c, big_endian));
        // `decode_el` gives the element kind of `dtype`; one vector of that kind is built.
        Some(if dtype.is_float() {
            Data::Float(els.map(El::as_f64).collect())
        } else if dtype.is_bool() {
            Data::Bool(els.map(|e| matches!(e, El::B(true))).collect())
        } else {
            Data::Int(
                els.map(|e| match e {
                    El::I(i) => i,
                    _ => 0,
                })
                .collect(),
            )
        })
    }
}

/// Appends the bytes of one element (already of `dtype`).
pub fn encode_el(e: El, dtype: DType, out: &mut Vec<u8>, big_endian: bool) {
    macro_rules! put {
        ($v:expr) => {
            if big_endian {
                out.extend_from_slice(&$v.to_be_bytes())
            } else {
                out.extend_from_slice(&$v.to_le_bytes())
            }
        };
    }
    let f = e.as_f64();
    // Only integer dtypes read `i` (a float's conversion to i128 is a library call).
    let i = || match e {
        El::I(i) => i,
        El::B(b) => i128::from(b),
        El::F(x) => x as i128,
    };
    match dtype {
        DType::F16 => put!(f16_from_f64(f).to_bits()),
        DType::Bf16 => put!(bf16_from_f64(f).to_bits()),
        DType::F32 => put!(f as f32),
        DType::F64 => put!(f),
        DType::I8 => put!(i() as i8),
        DType::I16 => put!(i() as i16),
        DType::I32 => put!(i() as i32),
        DType::I64 => put!(i() as i64),
        DType::U8 => put!(i() as u8),
        DType::U16 => put!(i() as u16),
        DType::U32 => put!(i() as u32),
        DType::U64 => put!(i() as u64),
        DType::Bool => out.push(u8::from(i() != 0)),
    }
}

/// Decodes one element of `dtype` from exactly `dtype.size_bytes()` bytes.
pub fn decode_el(dtype: DType, b: &[u8], big_endian: bool) -> El {
    fn arr<const N: usize>(b: &[u8], be: bool) -> [u8; N] {
        let mut a = [0u8; N];
        for (i, x) in a.iter_mut().enumerate() {
            *x = b.get(i).copied().unwrap_or(0);
        }
        if be {
            a.reverse();
        }
        a
    }
    let be = big_endian;
    match dtype {
        DType::F16 => El::F(f16::from_bits(u16::from_le_bytes(arr(b, be))).to_f64()),
        DType::Bf16 => El::F(bf16::from_bits(u16::from_le_bytes(arr(b, be))).to_f64()),
        DType::F32 => El::F(f64::from(f32::from_le_bytes(arr(b, be)))),
        DType::F64 => El::F(f64::from_le_bytes(arr(b, be))),
        DType::I8 => El::I(i128::from(i8::from_le_bytes(arr(b, be)))),
        DType::I16 => El::I(i128::from(i16::from_le_bytes(arr(b, be)))),
        DType::I32 => El::I(i128::from(i32::from_le_bytes(arr(b, be)))),
        DType::I64 => El::I(i128::from(i64::from_le_bytes(arr(b, be)))),
        DType::U8 => El::I(i128::from(u8::from_le_bytes(arr(b, be)))),
        DType::U16 => El::I(i128::from(u16::from_le_bytes(arr(b, be)))),
        DType::U32 => El::I(i128::from(u32::from_le_bytes(arr(b, be)))),
        DType::U64 => El::I(i128::from(u64::from_le_bytes(arr(b, be)))),
        DType::Bool => El::B(b.first().copied().unwrap_or(0) != 0),
    }
}

/// A global tensor's data: dtype, shape and row-major elements.
#[derive(Clone, Debug, PartialEq)]
pub struct HostTensor {
    pub dtype: DType,
    pub shape: Vec<usize>,
    pub data: Data,
}

impl HostTensor {
    pub fn zeros(dtype: DType, shape: Vec<usize>) -> HostTensor {
        let n = shape.iter().product();
        HostTensor {
            dtype,
            data: Data::zeros(dtype, n),
            shape,
        }
    }

    /// A tensor from f64 values, each converted to `dtype`.
    pub fn from_f64(dtype: DType, shape: Vec<usize>, values: &[f64]) -> HostTensor {
        let mut t = HostTensor::zeros(dtype, shape);
        match &mut t.data {
            Data::Float(v) => {
                for (s, x) in v.iter_mut().zip(values) {
                    *s = round_float(dtype, *x);
                }
            }
            data => {
                for (i, v) in values.iter().enumerate() {
                    data.set(i, convert(El::F(*v), dtype));
                }
            }
        }
        t
    }

    pub fn len(&self) -> usize {
        self.data.len()
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Row-major linear offset of `index` (`None` if the rank differs or an index is out of
    /// range).
    pub fn offset(&self, index: &[i64]) -> Option<usize> {
        if index.len() != self.shape.len() {
            return None;
        }
        let mut off = 0usize;
        for (i, d) in index.iter().zip(&self.shape) {
            let i = usize::try_from(*i).ok()?;
            if i >= *d {
                return None;
            }
            off = off * d + i;
        }
        Some(off)
    }

    /// Element at `index`.
    pub fn at(&self, index: &[i64]) -> Option<El> {
        self.data.get(self.offset(index)?)
    }

    /// The elements as f64 (for comparisons and reports).
    pub fn to_f64(&self) -> Vec<f64> {
        (0..self.len())
            .filter_map(|i| self.data.get(i))
            .map(El::as_f64)
            .collect()
    }
}

/// The SplitMix64 step.
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// `random(seed: s)`: `n` standard normal samples, deterministic on every host.
///
/// Algorithm (a contract: other implementations must reproduce it): a SplitMix64 stream
/// seeded with `seed`; each pair of outputs `(x1, x2)` gives `u1 = ((x1 >> 11) + 1) · 2⁻⁵³`
/// (in (0, 1]) and `u2 = (x2 >> 11) · 2⁻⁵³`, and the Box–Muller pair
/// `r·cos(2π·u2), r·sin(2π·u2)` with `r = √(−2·ln u1)`, computed in f64. The tensor takes the
/// samples in row-major order, converted to its dtype with the `cast` rules.
pub fn random_normal(seed: u64, n: usize) -> Vec<f64> {
    let mut state = seed;
    let mut out = Vec::with_capacity(n + 1);
    let scale = 1.0 / (1u64 << 53) as f64;
    while out.len() < n {
        let u1 = ((splitmix64(&mut state) >> 11) + 1) as f64 * scale;
        let u2 = (splitmix64(&mut state) >> 11) as f64 * scale;
        let r = (-2.0 * u1.ln()).sqrt();
        let t = 2.0 * std::f64::consts::PI * u2;
        out.push(r * t.cos());
        out.push(r * t.sin());
    }
    out.truncate(n);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bulk_conversions_match_the_element_path() {
        let vals = [
            0.0,
            -0.0,
            1.5,
            -2.75,
            65519.0,
            1e30,
            -1e-30,
            f64::NAN,
            f64::INFINITY,
            3.0e9,
            -7.9,
        ];
        let n = vals.len();
        for dtype in DType::ALL {
            // One element at a time: convert, set, encode, decode.
            let mut want = Data::zeros(dtype, n);
            for (i, v) in vals.iter().enumerate() {
                want.set(i, convert(El::F(*v), dtype));
            }
            let mut bytes = Vec::new();
            for i in 0..n {
                if let Some(e) = want.get(i) {
                    encode_el(convert(e, dtype), dtype, &mut bytes, false);
                }
            }
            let mut decoded = Data::zeros(dtype, n);
            for (i, c) in bytes.chunks_exact(dtype.size_bytes()).enumerate() {
                decoded.set(i, decode_el(dtype, c, false));
            }
            // In bulk (Debug compares NaNs too).
            let t = HostTensor::from_f64(dtype, vec![n], &vals);
            assert_eq!(format!("{:?}", t.data), format!("{want:?}"), "{dtype:?}");
            assert_eq!(t.data.to_bytes(dtype), bytes, "{dtype:?}");
            let back = Data::from_bytes(dtype, &bytes, n, false).expect("long enough");
            assert_eq!(format!("{back:?}"), format!("{decoded:?}"), "{dtype:?}");
        }
    }

    #[test]
    fn f16_rounds_to_nearest_even() {
        // 2049 lies between f16 2048 and 2050: ties to even → 2048; 2051 → 2052.
        assert_eq!(round_float(DType::F16, 2049.0), 2048.0);
        assert_eq!(round_float(DType::F16, 2051.0), 2052.0);
        // Overflow to infinity above the largest finite f16 (65504) past the halfway point.
        assert_eq!(round_float(DType::F16, 65520.0), f64::INFINITY);
        assert_eq!(round_float(DType::F16, 65519.0), 65504.0);
        // bf16 keeps 8 significant bits: 257 is a tie between 256 and 258 → 256.
        assert_eq!(round_float(DType::Bf16, 257.0), 256.0);
        assert_eq!(round_float(DType::Bf16, 259.0), 260.0);
    }

    #[test]
    fn f64_to_half_rounds_once() {
        // Just above the f16 tie between 1 and 1 + 2^-10: rounding through f32 would lose the
        // 2^-40 and round to even (1.0); the correct result is 1 + 2^-10.
        let x = 1.0 + 2f64.powi(-11) + 2f64.powi(-40);
        assert_eq!(round_float(DType::F16, x), 1.0 + 2f64.powi(-10));
        assert_eq!(round_float(DType::F16, 1.0 + 2f64.powi(-11)), 1.0);
        let y = 1.0 + 2f64.powi(-8) + 2f64.powi(-40);
        assert_eq!(round_float(DType::Bf16, y), 1.0 + 2f64.powi(-7));
        assert_eq!(round_float(DType::Bf16, 1.0 + 2f64.powi(-8)), 1.0);
        // Negative, overflow, tiny, NaN.
        assert_eq!(round_float(DType::F16, -x), -(1.0 + 2f64.powi(-10)));
        assert_eq!(round_float(DType::F16, 1e300), f64::INFINITY);
        assert_eq!(round_float(DType::Bf16, -1e300), f64::NEG_INFINITY);
        assert_eq!(round_float(DType::F16, 1e-300), 0.0);
        assert!(round_float(DType::Bf16, f64::NAN).is_nan());
        // Integers: 2^60 + 2^52 + 1 is just above a bf16 tie (2^60 + 2^52); to bf16 it must
        // round up to 2^60 + 2^53.
        let i = (1i128 << 60) + (1i128 << 52) + 1;
        assert_eq!(
            convert(El::I(i), DType::Bf16),
            El::F(2f64.powi(60) + 2f64.powi(53))
        );
        assert_eq!(
            convert(El::I(-i), DType::Bf16),
            El::F(-(2f64.powi(60) + 2f64.powi(53)))
        );
        assert_eq!(
            convert(El::I(1i128 << 60), DType::Bf16),
            El::F(2f64.powi(60))
        );
    }

    #[test]
    fn casts_follow_the_rules() {
        assert_eq!(convert(El::F(-3.7), DType::I32), El::I(-3));
        assert_eq!(convert(El::F(1e10), DType::I8), El::I(127));
        assert_eq!(convert(El::F(-1e10), DType::U8), El::I(0));
        assert_eq!(convert(El::F(f64::NAN), DType::I32), El::I(0));
        assert_eq!(convert(El::I(300), DType::U8), El::I(44));
        assert_eq!(convert(El::I(-1), DType::U16), El::I(65535));
        assert_eq!(convert(El::I(2), DType::Bool), El::B(true));
        assert_eq!(convert(El::B(true), DType::F16), El::F(1.0));
        assert_eq!(convert(El::I(2049), DType::F16), El::F(2048.0));
    }

    #[test]
    fn bytes_round_trip_every_dtype() {
        for d in DType::ALL {
            let vals = [0.0, 1.0, 2.0, 100.0];
            let t = HostTensor::from_f64(d, vec![4], &vals);
            for be in [false, true] {
                let mut bytes = Vec::new();
                for i in 0..4 {
                    encode_el(t.data.get(i).unwrap_or(El::F(0.0)), d, &mut bytes, be);
                }
                let back = Data::from_bytes(d, &bytes, 4, be);
                assert_eq!(back.as_ref(), Some(&t.data), "{d} be={be}");
            }
        }
        assert_eq!(
            HostTensor::from_f64(DType::F16, vec![1], &[1.0])
                .data
                .to_bytes(DType::F16),
            vec![0x00, 0x3c]
        );
        assert_eq!(
            HostTensor::from_f64(DType::Bf16, vec![1], &[1.0])
                .data
                .to_bytes(DType::Bf16),
            vec![0x80, 0x3f]
        );
    }

    #[test]
    fn random_is_deterministic_and_normal() {
        let a = random_normal(7, 10_000);
        assert_eq!(a, random_normal(7, 10_000));
        assert_ne!(a, random_normal(8, 10_000));
        let mean = a.iter().sum::<f64>() / a.len() as f64;
        let var = a.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / a.len() as f64;
        assert!(mean.abs() < 0.05, "mean {mean}");
        assert!((var - 1.0).abs() < 0.05, "var {var}");
        assert_eq!(random_normal(1, 3).len(), 3);
    }
}

//! Scalars: their C++ types, constants, and the scalar helpers every translation unit carries
//! (wsp's numeric contract for scalar arithmetic, independent of the tile library).

use wsp_ir::tensor::round_float;
use wsp_ir::{DType, ScalarValue};

/// The C++ type a scalar of `d` is held in: f16/bf16/f32 in `float` (holding a value of the
/// dtype), f64 in `double`, integers in their `<cstdint>` type, bool in `bool`.
pub fn scalar_ty(d: DType) -> &'static str {
    match d {
        DType::F16 | DType::Bf16 | DType::F32 => "float",
        DType::F64 => "double",
        DType::I8 => "int8_t",
        DType::I16 => "int16_t",
        DType::I32 => "int32_t",
        DType::I64 => "int64_t",
        DType::U8 => "uint8_t",
        DType::U16 => "uint16_t",
        DType::U32 => "uint32_t",
        DType::U64 => "uint64_t",
        DType::Bool => "bool",
    }
}

/// The PTO-ISA element type of a tile of `d` (bool tiles hold one byte, 0 or 1).
pub fn elem_ty(d: DType) -> &'static str {
    match d {
        DType::F16 => "half",
        DType::Bf16 => "bfloat16_t",
        DType::Bool => "uint8_t",
        d => scalar_ty(d),
    }
}

/// The helper that rounds a `float` result to `d` (`None` for f32 and non-16-bit types).
pub fn round_fn(d: DType) -> Option<&'static str> {
    match d {
        DType::F16 => Some("wsp_rnd_f16"),
        DType::Bf16 => Some("wsp_rnd_bf16"),
        _ => None,
    }
}

/// A constant of `d` as a C++ expression (floats by their bits, so NaNs and infinities are
/// exact).
pub fn constant(v: ScalarValue, d: DType) -> String {
    let el = wsp_ir::tensor::El::from_scalar(v, d);
    match d {
        DType::F64 => format!("wsp_f64(0x{:016x}ull)", el.as_f64().to_bits()),
        DType::F16 | DType::Bf16 | DType::F32 => {
            let x = round_float(d, el.as_f64()) as f32;
            format!("wsp_f32(0x{:08x}u)", x.to_bits())
        }
        DType::Bool => (if el.as_f64() != 0.0 { "true" } else { "false" }).to_string(),
        _ => match el {
            wsp_ir::tensor::El::I(i) => match d {
                DType::I64 => {
                    if i == i128::from(i64::MIN) {
                        "INT64_MIN".to_string()
                    } else {
                        format!("(int64_t){i}ll")
                    }
                }
                DType::U64 => format!("(uint64_t){i}ull"),
                _ => format!("({}){i}ll", scalar_ty(d)),
            },
            _ => format!("({})0", scalar_ty(d)),
        },
    }
}

/// The scalar helpers, guarded so that several kernels may share one translation unit.
pub const PRELUDE: &str = r#"#ifndef WSP_ASCEND_KERNEL_SCALARS
#define WSP_ASCEND_KERNEL_SCALARS
static inline float wsp_f32(uint32_t b) { float f; std::memcpy(&f, &b, 4); return f; }
static inline double wsp_f64(uint64_t b) { double f; std::memcpy(&f, &b, 8); return f; }
static inline uint32_t wsp_bits32(float f) { uint32_t b; std::memcpy(&b, &f, 4); return b; }
/* float rounded to binary16 / bfloat16 (nearest, ties to even), as a float. */
static inline float wsp_rnd_f16(float f) {
    uint32_t x = wsp_bits32(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return f;
    float a = std::fabs(f);
    if (a >= 65520.0f) return std::copysign(INFINITY, f);
    if (a < 6.103515625e-05f) {
        /* subnormal: multiples of 2^-24 */
        float q = std::nearbyint(a * 16777216.0f) / 16777216.0f;
        return std::copysign(q, f);
    }
    uint32_t lsb = (x >> 13) & 1u;
    x = (x + 0xfffu + lsb) & ~0x1fffu;
    return wsp_f32(x);
}
static inline float wsp_rnd_bf16(float f) {
    uint32_t x = wsp_bits32(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return f;
    uint32_t lsb = (x >> 16) & 1u;
    return wsp_f32((x + 0x7fffu + lsb) & 0xffff0000u);
}
/* double -> float with round-to-odd (no double rounding on the way to a 16-bit format). */
static inline float wsp_f64_odd(double x) {
    float t = (float)x;
    if (std::isnan(x) || (double)t == x) return t;
    uint32_t b = wsp_bits32(t);
    if (std::fabs((double)t) > std::fabs(x)) b -= 1u;
    return wsp_f32(b | 1u);
}
static inline float wsp_u64_odd(uint64_t i) {
    if (i < (uint64_t(1) << 24)) return (float)i;
    int w = 64 - __builtin_clzll(i);
    int shift = w - 24;
    uint64_t top = i >> shift;
    if (i & ((uint64_t(1) << shift) - 1)) top |= 1;
    return std::ldexp((float)top, shift);
}
static inline float wsp_i64_odd(int64_t i) {
    float m = wsp_u64_odd(i < 0 ? 0 - (uint64_t)i : (uint64_t)i);
    return i < 0 ? -m : m;
}
template <typename F> static inline F wsp_maximum(F a, F b) {
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<F>::quiet_NaN();
    if (b > a || (a == b && std::signbit(a))) return b;
    return a;
}
template <typename F> static inline F wsp_minimum(F a, F b) {
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<F>::quiet_NaN();
    if (a < b || (a == b && std::signbit(a))) return a;
    return b;
}
/* float -> integer: truncate, saturate, NaN -> 0. */
template <typename T> static inline T wsp_sat(double x) {
    if (std::isnan(x)) return 0;
    double t = std::trunc(x);
    if (t <= (double)std::numeric_limits<T>::min()) return std::numeric_limits<T>::min();
    if (t >= (double)std::numeric_limits<T>::max()) return std::numeric_limits<T>::max();
    return (T)t;
}
template <typename T> static inline T wsp_wrap(uint64_t v) {
    return (T)(typename std::make_unsigned<T>::type)v;
}
#endif
"#;

//! The kernel IR's f32 `exp`, `log` and `tanh`: each a fixed sequence of IEEE f32 additions,
//! multiplications and divisions, integer operations on the bits, comparisons and selections
//! — no library call, no fused multiply-add — so that the JIT evaluates the same sequence four
//! lanes at a time and agrees with the interpreter bit for bit. `sigmoid`, `silu` and `gelu`
//! are built from these (see [`crate::num::float_unary_in`]). Every constant the sequences use
//! is public here, and the JIT reads it from here.
//!
//! Accuracy, against the exact result (`f64`'s function, rounded to f32), over every f32
//! input (the test `accuracy_over_every_f32`, run in release with `--ignored`; a sweep of
//! every 1021st bit pattern runs with the unit tests):
//!
//! | function | bound | where |
//! |---|---|---|
//! | `exp` | 1 ulp | overflow to `inf` from 88.72284, zero below −103.97 (subnormal results round once) |
//! | `log` | 1 ulp | `-inf` at ±0, NaN below zero |
//! | `tanh` | 1 ulp | exactly ±1 from |x| ≥ 9.01; sign of zero kept |
//!
//! NaN in, NaN out (any NaN: payloads are not kept).
//!
//! How each is computed:
//! * `exp(x)`: `x` is clamped to [−104, 89] (NaN passes), `n = round(x·log2 e)` (by adding and
//!   subtracting 1.5·2²³, which rounds to nearest even), `r = (x − n·ln2_hi) − n·ln2_lo`
//!   (Cody and Waite's two-part ln 2; `n·ln2_hi` is exact), `e^r ≈ 1 + (r + r²·Q(r))` with a
//!   degree-4 minimax `Q` on |r| ≤ ln2/2, and the result scaled by `2^n` in two steps of
//!   powers of two built from the exponent bits (so a subnormal result is rounded once).
//! * `log(x)`: a subnormal `x` is scaled by 2²³ first; `x = m·2^e` with `m` in [√½, √2)
//!   (from the bits), `f = m − 1` (exact), `s = f/(2 + f)`, `log(1 + f) = f − ½f² + s·(½f² +
//!   R(s²))` with `R` the first four terms of `2·atanh(s)/s − 2`, and `e·ln 2` added in two
//!   parts; ±0, +∞, negative numbers and NaN are selected at the end.
//! * `tanh(x)`: on `a = |x|`, below 0.625 an odd minimax polynomial `a + a·(z·P(z))`,
//!   `z = a²`, degree 4 in `z`; from 0.625 `1 − 2/(exp(2a) + 1)`; the sign of `x` is copied
//!   onto the result.

/// `exp`: the clamp of the input.
pub const EXP_LO: f32 = -104.0;
pub const EXP_HI: f32 = 89.0;
/// `log2 e`.
pub const LOG2E: f32 = std::f32::consts::LOG2_E;
/// 1.5·2²³: added and subtracted to round to the nearest integer (ties to even).
pub const ROUND_MAGIC: f32 = 12_582_912.0;
/// ln 2 in two parts: `LN2_HI` has 9 significant bits (its product with any exponent of f32
/// is exact), `LN2_LO` the rest.
pub const LN2_HI: f32 = 0.693_359_4;
pub const LN2_LO: f32 = -2.121_944_4e-4;
/// `exp`'s `Q(r)` (`e^r ≈ 1 + r + r²·Q(r)`), lowest degree first.
pub const EXP_Q: [f32; 5] = [
    0.499_999_94,
    0.166_665_21,
    0.041_668_39,
    0.008_368_711,
    0.001_381_460_5,
];
/// `log`: the smallest normal f32, and 2²³ (the scale of subnormal inputs).
pub const MIN_NORMAL: f32 = f32::MIN_POSITIVE;
pub const TWO_POW_23: f32 = 8_388_608.0;
/// The bits of √½ (rounded down): `m` of `x = m·2^e` is in [√½, √2).
pub const SQRT_HALF_BITS: i32 = 0x3F35_04F3;
/// `log`'s `R(z)/z` (`z = s²`): the coefficients 2/3, 2/5, 2/7, 2/9.
pub const LOG_R: [f32; 4] = [0.666_666_7, 0.4, 0.285_714_3, 0.222_222_22];
/// `tanh`: below this `|x|` the polynomial, from it the exponential form.
pub const TANH_POLY_BELOW: f32 = 0.625;
/// `tanh`'s `P(z)` (`tanh a ≈ a + a·(z·P(z))`, `z = a²`), lowest degree first.
pub const TANH_P: [f32; 5] = [
    -0.333_332_8,
    0.133_314_42,
    -0.053_739_7,
    0.020_639_049,
    -0.005_704_947,
];
/// The f32 sign bit.
pub const SIGN_BIT: i32 = i32::MIN;

/// `2^k` for `k` in [−126, 127], from the exponent bits.
fn pow2(k: i32) -> f32 {
    f32::from_bits((k.wrapping_add(127) as u32) << 23)
}

/// Horner's rule, highest degree first: `c[0] + x·(c[1] + x·(… + x·c[n−1]))`.
fn horner(x: f32, c: &[f32]) -> f32 {
    let mut acc = c[c.len() - 1];
    for k in c[..c.len() - 1].iter().rev() {
        acc = *k + x * acc;
    }
    acc
}

/// The kernel IR's f32 `exp` (see the module docs).
pub fn exp(x: f32) -> f32 {
    // NaN passes (`clamp` compares, as the JIT's selections do).
    let x = x.clamp(EXP_LO, EXP_HI);
    let t = x * LOG2E + ROUND_MAGIC;
    let n = t - ROUND_MAGIC;
    let ni = (t.to_bits() as i32).wrapping_sub(ROUND_MAGIC.to_bits() as i32);
    let r = (x - n * LN2_HI) - n * LN2_LO;
    let q = horner(r, &EXP_Q);
    let p = 1.0 + (r + (r * r) * q);
    let n1 = ni >> 1;
    let n2 = ni.wrapping_sub(n1);
    p * pow2(n1) * pow2(n2)
}

/// The kernel IR's f32 natural logarithm (see the module docs).
pub fn ln(x: f32) -> f32 {
    let sub = x < MIN_NORMAL;
    let xs = if sub { x * TWO_POW_23 } else { x };
    let d = (xs.to_bits() as i32).wrapping_sub(SQRT_HALF_BITS);
    let e = (d >> 23).wrapping_add(if sub { -23 } else { 0 });
    let m = f32::from_bits(((d & 0x007F_FFFF).wrapping_add(SQRT_HALF_BITS)) as u32);
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    let rr = z * horner(z, &LOG_R);
    let hfsq = 0.5 * f * f;
    let ef = e as f32;
    let y = ef * LN2_HI - ((hfsq - (s * (hfsq + rr) + ef * LN2_LO)) - f);
    if x == f32::INFINITY {
        f32::INFINITY
    } else if x == 0.0 {
        f32::NEG_INFINITY
    } else if x >= 0.0 {
        y
    } else {
        f32::NAN
    }
}

/// The kernel IR's f32 `tanh` (see the module docs).
pub fn tanh(x: f32) -> f32 {
    let a = f32::from_bits(x.to_bits() & !(SIGN_BIT as u32));
    let y = if a < TANH_POLY_BELOW {
        let z = a * a;
        a + a * (z * horner(z, &TANH_P))
    } else {
        let e = exp(a + a);
        1.0 - 2.0 / (e + 1.0)
    };
    f32::from_bits((y.to_bits() & !(SIGN_BIT as u32)) | (x.to_bits() & SIGN_BIT as u32))
}

/// A C header (C99 and C++) with these three functions as `wsp_math_expf`, `wsp_math_logf`
/// and `wsp_math_tanhf`, the same sequences with the same constants, so that backends' kernels
/// compute what the interpreter computes (`wsp emit` writes it into the Ascend and AIE trees).
/// It turns floating-point contraction off (a fused multiply-add would round once where the
/// sequence rounds twice) and assumes IEEE binary32 arithmetic without excess precision
/// (`FLT_EVAL_METHOD` 0: SSE on x86-64, AArch64, the NPUs' vector units) and an arithmetic
/// right shift of negative `int32_t`s (every compiler wsp targets). In C++ it adds
/// `wsp_math_exp`, `wsp_math_log` and `wsp_math_tanh` overloads, `double`'s from `<cmath>`.
pub fn c_header() -> String {
    let f = |x: f32| format!("{x:?}f");
    let horner = |name: &str, c: &[f32]| {
        let mut s = format!("    float {name} = {};\n", f(c[c.len() - 1]));
        for k in c[..c.len() - 1].iter().rev() {
            s.push_str(&format!("    {name} = {} + z * {name};\n", f(*k)));
        }
        s
    };
    let exp_q = horner("q", &EXP_Q).replace(" z * ", " r * ");
    let log_r = horner("rz", &LOG_R);
    let tanh_p = horner("pz", &TANH_P);
    format!(
        r#"/* wsp_math.h: exp, log and tanh of the kernel IR in f32, generated by wsp from
 * wsp_ir::math (the interpreter's and the JIT's sequences, within 1 ulp), so that these
 * kernels compute what `wsp run` computes, bit for bit. Needs IEEE binary32 without excess
 * precision and no contraction into fused multiply-adds (turned off below). */
#ifndef WSP_MATH_H
#define WSP_MATH_H
#include <stdint.h>
#include <string.h>
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif

static inline uint32_t wsp_math_bits(float x) {{ uint32_t u; memcpy(&u, &x, 4); return u; }}
static inline float wsp_math_float(uint32_t u) {{ float x; memcpy(&x, &u, 4); return x; }}
/* 2^k for k in [-126, 127]. */
static inline float wsp_math_pow2(int32_t k) {{ return wsp_math_float(((uint32_t)k + 127u) << 23); }}

static inline float wsp_math_expf(float x) {{
    if (x < {lo}) x = {lo};
    else if (x > {hi}) x = {hi};
    float t = x * {log2e} + {magic};
    float n = t - {magic};
    int32_t ni = (int32_t)(wsp_math_bits(t) - {magic_bits}u);
    float r = (x - n * {ln2_hi}) - n * {ln2_lo};
{exp_q}    float p = 1.0f + (r + (r * r) * q);
    int32_t n1 = ni >> 1;
    int32_t n2 = (int32_t)((uint32_t)ni - (uint32_t)n1);
    return p * wsp_math_pow2(n1) * wsp_math_pow2(n2);
}}

static inline float wsp_math_logf(float x) {{
    int sub = x < {min_normal};
    float xs = sub ? x * {two23} : x;
    int32_t d = (int32_t)(wsp_math_bits(xs) - {sqrt_half}u);
    int32_t e = (d >> 23) + (sub ? -23 : 0);
    float m = wsp_math_float(((uint32_t)d & 0x7FFFFFu) + {sqrt_half}u);
    float f = m - 1.0f;
    float s = f / (2.0f + f);
    float z = s * s;
{log_r}    float rr = z * rz;
    float hfsq = 0.5f * f * f;
    float ef = (float)e;
    float y = ef * {ln2_hi} - ((hfsq - (s * (hfsq + rr) + ef * {ln2_lo})) - f);
    if (x == wsp_math_float(0x7F800000u)) return x;
    if (x == 0.0f) return wsp_math_float(0xFF800000u);
    if (x >= 0.0f) return y;
    return wsp_math_float(0x7FC00000u);
}}

static inline float wsp_math_tanhf(float x) {{
    float a = wsp_math_float(wsp_math_bits(x) & 0x7FFFFFFFu);
    float y;
    if (a < {tanh_below}) {{
        float z = a * a;
{tanh_p}        y = a + a * (z * pz);
    }} else {{
        float e = wsp_math_expf(a + a);
        y = 1.0f - 2.0f / (e + 1.0f);
    }}
    return wsp_math_float((wsp_math_bits(y) & 0x7FFFFFFFu) | (wsp_math_bits(x) & 0x80000000u));
}}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

#ifdef __cplusplus
#include <cmath>
static inline float wsp_math_exp(float x) {{ return wsp_math_expf(x); }}
static inline float wsp_math_log(float x) {{ return wsp_math_logf(x); }}
static inline float wsp_math_tanh(float x) {{ return wsp_math_tanhf(x); }}
static inline double wsp_math_exp(double x) {{ return std::exp(x); }}
static inline double wsp_math_log(double x) {{ return std::log(x); }}
static inline double wsp_math_tanh(double x) {{ return std::tanh(x); }}
#endif
#endif
"#,
        lo = f(EXP_LO),
        hi = f(EXP_HI),
        log2e = f(LOG2E),
        magic = f(ROUND_MAGIC),
        magic_bits = ROUND_MAGIC.to_bits(),
        ln2_hi = f(LN2_HI),
        ln2_lo = f(LN2_LO),
        min_normal = f(MIN_NORMAL),
        two23 = f(TWO_POW_23),
        sqrt_half = SQRT_HALF_BITS as u32,
        tanh_below = f(TANH_POLY_BELOW),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Distance in units in the last place between two finite or infinite f32s of the same
    /// sign convention (the ordered-integer distance).
    fn ulps(a: f32, b: f32) -> u64 {
        let key = |x: f32| {
            let i = x.to_bits() as i32;
            if i < 0 {
                i64::from(i32::MIN) - i64::from(i)
            } else {
                i64::from(i)
            }
        };
        (key(a) - key(b)).unsigned_abs()
    }

    /// The largest error in ulps of `f` against `exact` over the bit patterns `0, step, 2·step,
    /// …` (every f32 when `step` is 1), with the input of the worst.
    fn worst(f: fn(f32) -> f32, exact: fn(f64) -> f64, step: u64) -> (u64, f32) {
        let mut w = (0, 0.0);
        let mut bits = 0u64;
        while bits <= u64::from(u32::MAX) {
            let x = f32::from_bits(bits as u32);
            let (got, want) = (f(x), exact(f64::from(x)) as f32);
            if want.is_nan() {
                assert!(got.is_nan(), "{x:e}: {got:e}, not NaN");
            } else {
                let d = ulps(got, want);
                if d > w.0 {
                    w = (d, x);
                }
            }
            bits += step;
        }
        w
    }

    /// `(name, function, exact reference, bound in ulps)`.
    type Bound = (&'static str, fn(f32) -> f32, fn(f64) -> f64, u64);
    const BOUNDS: [Bound; 3] = [
        ("exp", exp, f64::exp, 1),
        ("log", ln, f64::ln, 1),
        ("tanh", tanh, f64::tanh, 1),
    ];

    #[test]
    fn accuracy_over_a_sweep_of_the_f32_range() {
        for (name, f, exact, bound) in BOUNDS {
            let (d, x) = worst(f, exact, 1021);
            assert!(d <= bound, "{name}({x:e}) is {d} ulps off (bound {bound})");
        }
    }

    /// Every f32: `cargo test -p wsp-ir --release math -- --ignored` (about two minutes).
    #[test]
    #[ignore]
    fn accuracy_over_every_f32() {
        for (name, f, exact, bound) in BOUNDS {
            let (d, x) = worst(f, exact, 1);
            eprintln!("{name}: worst {d} ulps at {x:e}");
            assert!(d <= bound, "{name}({x:e}) is {d} ulps off (bound {bound})");
        }
    }

    /// The C header computes what these functions compute, bit for bit, compiled with the
    /// system's C compiler (`$CC`, default `cc`) at -O2, over a sweep of the f32 range.
    #[test]
    fn the_c_header_agrees_bit_for_bit() {
        let dir = std::env::temp_dir().join(format!("wsp-math-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("wsp_math.h"), c_header()).unwrap();
        let driver = r#"#include "wsp_math.h"
#include <stdio.h>
int main(void) {
    for (uint64_t b = 0; b <= 0xFFFFFFFFull; b += 65521) {
        float x = wsp_math_float((uint32_t)b);
        printf("%08x %08x %08x\n", wsp_math_bits(wsp_math_expf(x)),
               wsp_math_bits(wsp_math_logf(x)), wsp_math_bits(wsp_math_tanhf(x)));
    }
    return 0;
}
"#;
        std::fs::write(dir.join("driver.c"), driver).unwrap();
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let exe = dir.join("driver");
        let st = std::process::Command::new(&cc)
            .args(["-O2", "-std=c99", "-Wall", "-Werror", "-o"])
            .arg(&exe)
            .arg(dir.join("driver.c"))
            .status()
            .unwrap_or_else(|e| panic!("`{cc}`: {e}"));
        assert!(st.success(), "the header does not compile");
        let out = std::process::Command::new(&exe).output().unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        let mut lines = text.lines();
        let mut b = 0u64;
        let mut n = 0;
        while b <= u64::from(u32::MAX) {
            let x = f32::from_bits(b as u32);
            let want = [exp(x), ln(x), tanh(x)];
            let line = lines.next().expect("a line for every input");
            for (w, got) in want.iter().zip(line.split(' ')) {
                let got = f32::from_bits(u32::from_str_radix(got, 16).unwrap());
                assert!(
                    (w.is_nan() && got.is_nan()) || w.to_bits() == got.to_bits(),
                    "{x:e}: {line} vs {w:e}"
                );
            }
            b += 65521;
            n += 1;
        }
        assert!(n > 65000);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn special_values() {
        assert_eq!(exp(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp(f32::INFINITY), f32::INFINITY);
        assert_eq!(exp(0.0), 1.0);
        assert_eq!(exp(-0.0), 1.0);
        assert!(exp(88.72283).is_finite() && exp(88.7229).is_infinite());
        assert!(exp(f32::NAN).is_nan());
        assert_eq!(ln(0.0), f32::NEG_INFINITY);
        assert_eq!(ln(-0.0), f32::NEG_INFINITY);
        assert_eq!(ln(1.0), 0.0);
        assert_eq!(ln(f32::INFINITY), f32::INFINITY);
        assert!(ln(-1.0).is_nan() && ln(f32::NEG_INFINITY).is_nan() && ln(f32::NAN).is_nan());
        assert_eq!(
            ln(f32::from_bits(1)),
            (f64::from(f32::from_bits(1))).ln() as f32
        );
        assert_eq!(tanh(f32::INFINITY), 1.0);
        assert_eq!(tanh(f32::NEG_INFINITY), -1.0);
        assert_eq!(tanh(20.0), 1.0);
        assert_eq!(tanh(0.0).to_bits(), 0.0f32.to_bits());
        assert_eq!(tanh(-0.0).to_bits(), (-0.0f32).to_bits());
        assert!(tanh(f32::NAN).is_nan());
        assert_eq!(tanh(-1e-30), -1e-30);
    }
}

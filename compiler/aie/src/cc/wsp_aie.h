// wsp_aie.h: the numeric helpers of wsp's kernel contract for AIE core kernels (emitted by
// `wsp emit --target aie`). Plain C++17: it compiles for the AIE core and on a CPU, where the
// stand-in defines WSP_AIE_CPU. f16 and bf16 are stored as their bit patterns (uint16_t) and
// computed in float; every conversion rounds to nearest, ties to even.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
// exp, log and tanh in f32 as wsp computes them (generated beside this header).
#include "wsp_math.h"
#ifdef WSP_AIE_CPU
#include <cstdio>
#include <cstdlib>
#endif

// A run-time error of a kernel (integer division by zero, a region outside its tile).
[[noreturn]] static inline void wsp_fail(const char* kernel, const char* what) {
#ifdef WSP_AIE_CPU
  std::fprintf(stderr, "error: in kernel `%s`: %s\n", kernel, what);
  std::exit(1);
#else
  (void)kernel;
  (void)what;
  __builtin_trap();
#endif
}

static inline uint32_t wsp_f32_bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
static inline float wsp_bits_f32(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }
static inline uint64_t wsp_f64_bits(double f) { uint64_t u; std::memcpy(&u, &f, 8); return u; }
static inline double wsp_bits_f64(uint64_t u) { double f; std::memcpy(&f, &u, 8); return f; }

// f16 bits -> float (exact).
static inline float wsp_h2f(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  if (exp == 0x1fu) return wsp_bits_f32(sign | 0x7f800000u | (man << 13));
  if (exp == 0) {
    if (man == 0) return wsp_bits_f32(sign);
    // Subnormal: man * 2^-24, exact in float.
    float v = (float)man * wsp_bits_f32(0x33800000u);
    return sign ? -v : v;
  }
  return wsp_bits_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

// float -> f16 bits, round to nearest even (NaN keeps its top payload bits, quiet).
static inline uint16_t wsp_f2h(float f) {
  uint32_t x = wsp_f32_bits(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t exp = (x >> 23) & 0xffu;
  uint32_t man = x & 0x7fffffu;
  if (exp == 0xffu) {
    if (man != 0) return (uint16_t)(sign | 0x7e00u | (man >> 13));
    return (uint16_t)(sign | 0x7c00u);
  }
  int32_t e = (int32_t)exp - 127 + 15;
  if (e >= 0x1f) return (uint16_t)(sign | 0x7c00u);
  if (e <= 0) {
    if (e < -10) return (uint16_t)sign;
    uint32_t m = man | 0x800000u;
    uint32_t shift = (uint32_t)(14 - e);
    uint32_t half_m = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1u);
    uint32_t halfway = 1u << (shift - 1u);
    if (rem > halfway || (rem == halfway && (half_m & 1u))) half_m += 1u;
    return (uint16_t)(sign | half_m);
  }
  uint32_t half_m = man >> 13;
  uint32_t rem = man & 0x1fffu;
  uint32_t out = sign | ((uint32_t)e << 10) | half_m;
  if (rem > 0x1000u || (rem == 0x1000u && (half_m & 1u))) out += 1u;
  return (uint16_t)out;
}

static inline float wsp_b2f(uint16_t b) { return wsp_bits_f32((uint32_t)b << 16); }

// float -> bf16 bits, round to nearest even (NaN stays quiet).
static inline uint16_t wsp_f2b(float f) {
  uint32_t x = wsp_f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
  uint32_t round = 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)((x + round) >> 16);
}

// double -> float with round-to-odd (so that a second rounding to f16/bf16 is correct).
static inline float wsp_d2f_odd(double x) {
  float t = (float)x;
  if (std::isnan(x) || (double)t == x) return t;
  uint32_t bits = wsp_f32_bits(t);
  if (std::fabs((double)t) > std::fabs(x)) bits -= 1u;
  return wsp_bits_f32(bits | 1u);
}
static inline uint16_t wsp_d2h(double x) { return wsp_f2h(wsp_d2f_odd(x)); }
static inline uint16_t wsp_d2b(double x) { return wsp_f2b(wsp_d2f_odd(x)); }

// A 64-bit integer -> float with round-to-odd.
static inline float wsp_u2f_odd(uint64_t m) {
  int width = 0;
  for (uint64_t t = m; t; t >>= 1) ++width;
  if (width <= 24) return (float)m;
  int shift = width - 24;
  uint64_t top = m >> shift;
  if (m & ((1ull << shift) - 1ull)) top |= 1ull;
  return (float)top * std::ldexp(1.0f, shift);
}
static inline float wsp_i2f_odd(int64_t i) {
  uint64_t m = i < 0 ? (uint64_t)0 - (uint64_t)i : (uint64_t)i;
  float f = wsp_u2f_odd(m);
  return i < 0 ? -f : f;
}
static inline float wsp_i2f_odd(uint64_t u) { return wsp_u2f_odd(u); }

// IEEE 754-2019 maximum / minimum: NaN wins, -0.0 < +0.0.
template <class F> static inline F wsp_maximum(F a, F b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<F>::quiet_NaN();
  if (b > a || (a == b && std::signbit(a))) return b;
  return a;
}
template <class F> static inline F wsp_minimum(F a, F b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<F>::quiet_NaN();
  if (a < b || (a == b && std::signbit(a))) return a;
  return b;
}

// Wrapping integer arithmetic (two's complement).
template <class T> static inline T wsp_add(T a, T b) { return (T)(uint64_t)((uint64_t)a + (uint64_t)b); }
template <class T> static inline T wsp_sub(T a, T b) { return (T)(uint64_t)((uint64_t)a - (uint64_t)b); }
template <class T> static inline T wsp_mul(T a, T b) { return (T)(uint64_t)((uint64_t)a * (uint64_t)b); }
template <class T> static inline T wsp_div(const char* k, T a, T b) {
  if (b == 0) wsp_fail(k, "integer division by zero");
  if (std::is_signed<T>::value && b == (T)-1) return wsp_sub<T>((T)0, a);
  return (T)(a / b);
}
template <class T> static inline T wsp_rem(const char* k, T a, T b) {
  if (b == 0) wsp_fail(k, "integer remainder by zero");
  if (std::is_signed<T>::value && b == (T)-1) return (T)0;
  return (T)(a % b);
}

// float -> integer: truncate toward zero, saturate, NaN -> 0.
template <class T> static inline T wsp_f2i(double v) {
  if (std::isnan(v)) return (T)0;
  double t = std::trunc(v);
  const double lo = (double)std::numeric_limits<T>::min();
  const double hi = (double)std::numeric_limits<T>::max();
  if (t <= lo) return std::numeric_limits<T>::min();
  if (t >= hi) return std::numeric_limits<T>::max();
  return (T)t;
}

static inline float wsp_fmod(float a, float b) { return std::fmod(a, b); }
static inline double wsp_fmod(double a, double b) { return std::fmod(a, b); }
static inline float wsp_pow(float a, float b) { return std::pow(a, b); }
static inline double wsp_pow(double a, double b) { return std::pow(a, b); }
static inline float wsp_exp(float a) { return wsp_math_expf(a); }
static inline double wsp_exp(double a) { return std::exp(a); }
static inline float wsp_log(float a) { return wsp_math_logf(a); }
static inline double wsp_log(double a) { return std::log(a); }
static inline float wsp_sqrt(float a) { return std::sqrt(a); }
static inline double wsp_sqrt(double a) { return std::sqrt(a); }
static inline float wsp_tanh(float a) { return wsp_math_tanhf(a); }
static inline double wsp_tanh(double a) { return std::tanh(a); }
static inline float wsp_sin(float a) { return std::sin(a); }
static inline double wsp_sin(double a) { return std::sin(a); }
static inline float wsp_cos(float a) { return std::cos(a); }
static inline double wsp_cos(double a) { return std::cos(a); }
static inline float wsp_fabs(float a) { return std::fabs(a); }
static inline double wsp_fabs(double a) { return std::fabs(a); }

template <class T> static inline bool wsp_isnan(T v) {
  if constexpr (std::is_floating_point<T>::value) return std::isnan(v);
  return false;
}

// rowtopk's order: larger first, NaN above every number, ties by smaller column.
template <class T> static inline bool wsp_topk_before(T a, int ia, T b, int ib) {
  bool an = wsp_isnan(a), bn = wsp_isnan(b);
  if (an || bn) {
    if (an != bn) return an;
    return ia < ib;
  }
  if (a > b) return true;
  if (a < b) return false;
  return ia < ib;
}

static inline int32_t wsp_min32(int32_t a, int32_t b) { return a < b ? a : b; }
static inline int32_t wsp_max32(int32_t a, int32_t b) { return a > b ? a : b; }

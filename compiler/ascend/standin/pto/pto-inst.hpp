/* pto-inst.hpp: wsp's CPU stand-in for the PTO-ISA tile API.
 *
 * It provides exactly the tile types and tile calls that wsp's Ascend kernel emitter
 * (compiler/ascend/src/kernel) uses, under the same include path as the real library, so
 * that one `-I` switch chooses between this stand-in and PTO-ISA's own CPU implementation.
 * It is written from the instructions' documented meaning (the PTO Virtual ISA manual:
 * each call computes over the valid region of its destination tile) and follows wsp's
 * numeric contract (compiler/ir/src/kernel.rs), including where it fixes what the manual
 * leaves to the implementation:
 *
 *  - half / bfloat16_t keep their bit layouts; arithmetic on them computes in float and
 *    rounds the result to nearest, ties to even;
 *  - TROWSUM adds four interleaved partial sums (s_l over columns j = l mod 4) and returns
 *    (s0 + s1) + (s2 + s3); TCOLSUM adds rows in increasing order; both start at +0.0;
 *  - TMAX/TMIN/TROWMAX/... follow IEEE 754-2019 maximum/minimum (NaN wins, -0 < +0);
 *  - TMATMUL accumulates in increasing k by fused multiply-adds (std::fma, one rounding);
 *  - TCVT float->int truncates and saturates (NaN -> 0); int->int wraps.
 *
 * Tiles address per-location arenas (Vec = UB, Mat = L1, Left = L0A, Right = L0B,
 * Acc = L0C) through TASSIGN, one set of arenas per thread. Pipe synchronisation
 * (set_flag / wait_flag / pipe_barrier) is a no-op: the CPU runs instructions in order.
 */
#ifndef WSP_PTO_STANDIN_INST_HPP
#define WSP_PTO_STANDIN_INST_HPP

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <type_traits>

/* exp, log and tanh in f32 as wsp computes them (written beside this header by wsp emit). */
#include "wsp_math.h"

#define AICORE
#define __gm__

namespace pto {

constexpr int DYNAMIC = -1;

enum class TileType { Vec, Mat, Left, Right, Acc };
enum class BLayout { RowMajor = 0, ColMajor = 1 };
enum class SLayout { NoneBox = 0, RowMajor = 1, ColMajor = 2 };
enum class Layout { ND, DN, NZ };
enum class RoundMode : uint8_t {
    CAST_NONE = 0,
    CAST_RINT = 1,
    CAST_ROUND = 2,
    CAST_FLOOR = 3,
    CAST_CEIL = 4,
    CAST_TRUNC = 5,
    CAST_ODD = 6,
};

/* ------------------------------------------------------------------ 16-bit floats */

namespace standin {

inline uint32_t f32_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}
inline float f32_from_bits(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

/* float -> binary16, round to nearest, ties to even. */
inline uint16_t f32_to_f16(float f) {
    uint32_t x = f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t exp = (x >> 23) & 0xffu;
    uint32_t man = x & 0x7fffffu;
    if (exp == 0xffu) return (uint16_t)(sign | 0x7c00u | (man ? 0x200u | (man >> 13) : 0u));
    int e = (int)exp - 127 + 15;
    if (e >= 31) return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) {
        if (e < -10) return (uint16_t)sign;
        uint32_t m = man | 0x800000u;
        int shift = 14 - e;
        uint32_t half = m >> shift;
        uint32_t rem = m & ((1u << shift) - 1u);
        uint32_t mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1u))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t h = ((uint32_t)e << 10) | (man >> 13);
    uint32_t rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;
    return (uint16_t)(sign | h);
}

inline float f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    if (exp == 0x1fu) return f32_from_bits(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {
        if (man == 0) return f32_from_bits(sign);
        float v = (float)man * 5.9604644775390625e-08f; /* 2^-24 */
        return (sign ? -v : v);
    }
    return f32_from_bits(sign | ((exp + 112u) << 23) | (man << 13));
}

/* float -> bfloat16, round to nearest, ties to even. */
inline uint16_t f32_to_bf16(float f) {
    uint32_t x = f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
    uint32_t lsb = (x >> 16) & 1u;
    return (uint16_t)((x + 0x7fffu + lsb) >> 16);
}

inline float bf16_to_f32(uint16_t b) { return f32_from_bits((uint32_t)b << 16); }

/* double -> float rounded to odd: exact when representable, else truncated with the last
 * bit set; rounding that to a 16-bit format gives the correctly rounded result. */
inline float f64_to_f32_odd(double x) {
    float t = (float)x;
    if (std::isnan(x) || (double)t == x) return t;
    uint32_t b = f32_bits(t);
    if (std::fabs((double)t) > std::fabs(x)) b -= 1u;
    return f32_from_bits(b | 1u);
}

} // namespace standin

struct half {
    uint16_t bits;
    half() : bits(0) {}
    half(float f) : bits(standin::f32_to_f16(f)) {}
    operator float() const { return standin::f16_to_f32(bits); }
};

struct bfloat16_t {
    uint16_t bits;
    bfloat16_t() : bits(0) {}
    bfloat16_t(float f) : bits(standin::f32_to_bf16(f)) {}
    operator float() const { return standin::bf16_to_f32(bits); }
};

namespace standin {

template <typename T> struct is_f16ish : std::false_type {};
template <> struct is_f16ish<half> : std::true_type {};
template <> struct is_f16ish<bfloat16_t> : std::true_type {};
template <typename T>
constexpr bool is_float_v = is_f16ish<T>::value || std::is_floating_point<T>::value;

/* The type elementwise arithmetic on T computes in. */
template <typename T> struct compute { using type = T; };
template <> struct compute<half> { using type = float; };
template <> struct compute<bfloat16_t> { using type = float; };
template <typename T> using compute_t = typename compute<T>::type;

template <typename T> inline compute_t<T> up(T x) { return (compute_t<T>)x; }

/* Integer arithmetic wraps: done on uint64_t, then converted back (two's complement). */
template <typename T> inline T wrap(uint64_t v) { return (T)(typename std::make_unsigned<T>::type)v; }

template <typename F> inline F maximum(F a, F b) {
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<F>::quiet_NaN();
    if (b > a || (a == b && std::signbit(a))) return b;
    return a;
}
template <typename F> inline F minimum(F a, F b) {
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<F>::quiet_NaN();
    if (a < b || (a == b && std::signbit(a))) return a;
    return b;
}

/* Thread-local arenas, one per tile location. */
constexpr size_t ARENA_BYTES = size_t(4) << 20;
inline unsigned char *arena(TileType loc) {
    alignas(64) static thread_local unsigned char mem[5][ARENA_BYTES];
    return mem[(int)loc];
}

} // namespace standin

/* ------------------------------------------------------------------ global tensors */

template <int64_t N1 = DYNAMIC, int64_t N2 = DYNAMIC, int64_t N3 = DYNAMIC, int64_t N4 = DYNAMIC,
          int64_t N5 = DYNAMIC>
struct Shape {
    int64_t shape[5];
    Shape(int64_t a, int64_t b, int64_t c, int64_t d, int64_t e) {
        const int64_t s[5] = {N1, N2, N3, N4, N5}, v[5] = {a, b, c, d, e};
        for (int i = 0; i < 5; i++) shape[i] = s[i] == DYNAMIC ? v[i] : s[i];
    }
};

template <int64_t S1 = DYNAMIC, int64_t S2 = DYNAMIC, int64_t S3 = DYNAMIC, int64_t S4 = DYNAMIC,
          int64_t S5 = DYNAMIC>
struct Stride {
    int64_t stride[5];
    Stride(int64_t a, int64_t b, int64_t c, int64_t d, int64_t e) {
        const int64_t s[5] = {S1, S2, S3, S4, S5}, v[5] = {a, b, c, d, e};
        for (int i = 0; i < 5; i++) stride[i] = s[i] == DYNAMIC ? v[i] : s[i];
    }
};

/* A 5-D view of global memory; wsp uses the last two dimensions (rows, columns). */
template <typename Element_, typename Shape_, typename Stride_, Layout Layout_ = Layout::ND>
struct GlobalTensor {
    using DType = Element_;
    DType *data_;
    Shape_ shape_;
    Stride_ stride_;
    GlobalTensor(DType *data, const Shape_ &shape, const Stride_ &stride)
        : data_(data), shape_(shape), stride_(stride) {}
    DType *data() { return data_; }
    int64_t GetShape(int d) const { return shape_.shape[d]; }
    int64_t GetStride(int d) const { return stride_.stride[d]; }
};

/* ------------------------------------------------------------------ tiles */

template <TileType Loc_, typename Element_, int Rows_, int Cols_, BLayout BFractal_ = BLayout::RowMajor,
          int RowValid_ = Rows_, int ColValid_ = Cols_, SLayout SFractal_ = SLayout::NoneBox,
          int SFractalSize_ = 512>
struct Tile {
    using DType = Element_;
    static constexpr TileType Loc = Loc_;
    static constexpr int Rows = Rows_;
    static constexpr int Cols = Cols_;
    static constexpr BLayout BFractal = BFractal_;
    static constexpr int ValidRow = RowValid_;
    static constexpr int ValidCol = ColValid_;
    static_assert(Rows > 0 && Cols > 0, "a tile has a positive static shape");

    DType *data_ = nullptr;
    unsigned vr_ = RowValid_ == DYNAMIC ? Rows_ : RowValid_;
    unsigned vc_ = ColValid_ == DYNAMIC ? Cols_ : ColValid_;

    Tile() {}
    Tile(unsigned vr, unsigned vc) : vr_(vr), vc_(vc) {
        if (vr > (unsigned)Rows || vc > (unsigned)Cols) std::abort();
    }
    unsigned GetValidRow() const { return vr_; }
    unsigned GetValidCol() const { return vc_; }
    void SetValidRow(unsigned v) {
        if (v > (unsigned)Rows) std::abort();
        vr_ = v;
    }
    void SetValidCol(unsigned v) {
        if (v > (unsigned)Cols) std::abort();
        vc_ = v;
    }
    DType *data() { return data_; }
    static constexpr size_t offset(unsigned r, unsigned c) {
        return BFractal_ == BLayout::RowMajor ? (size_t)r * Cols + c : (size_t)c * Rows + r;
    }
    DType GetValue(uint32_t off) const { return data_[off]; }
    void SetValue(uint32_t off, DType v) { data_[off] = v; }
    DType &at(unsigned r, unsigned c) { return data_[offset(r, c)]; }
    const DType &at(unsigned r, unsigned c) const { return data_[offset(r, c)]; }
};

/* Fractal sizes of the cube tiles (bytes of one fractal). */
struct TileConfig {
    static constexpr int fractalABSize = 512;
    static constexpr int fractalCSize = 1024;
};

/* The cube operand and accumulator tiles (their fractal layouts do not matter on the CPU). */
template <typename T, int R, int C, int VR = R, int VC = C>
using TileLeft = Tile<TileType::Left, T, R, C, BLayout::ColMajor, VR, VC, SLayout::RowMajor, TileConfig::fractalABSize>;
template <typename T, int R, int C, int VR = R, int VC = C>
using TileRight = Tile<TileType::Right, T, R, C, BLayout::RowMajor, VR, VC, SLayout::ColMajor, TileConfig::fractalABSize>;
template <typename T, int R, int C, int VR = R, int VC = C>
using TileAcc = Tile<TileType::Acc, T, R, C, BLayout::ColMajor, VR, VC, SLayout::RowMajor, TileConfig::fractalCSize>;

template <typename T, typename Addr> inline void TASSIGN(T &tile, Addr addr) {
    size_t a = (size_t)addr;
    if (a + sizeof(typename T::DType) * T::Rows * T::Cols > standin::ARENA_BYTES) std::abort();
    tile.data_ = reinterpret_cast<typename T::DType *>(standin::arena(T::Loc) + a);
}

/* Binds a GlobalTensor to an address of global memory. */
template <typename E, typename S, typename St, Layout L>
inline void TASSIGN(GlobalTensor<E, S, St, L> &g, E *addr) {
    g.data_ = addr;
}

/* Pipe synchronisation: a no-op on the in-order CPU. */
enum pipe_t { PIPE_S, PIPE_V, PIPE_M, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_FIX, PIPE_ALL };
enum event_t { EVENT_ID0, EVENT_ID1, EVENT_ID2, EVENT_ID3, EVENT_ID4, EVENT_ID5, EVENT_ID6, EVENT_ID7 };
inline void set_flag(pipe_t, pipe_t, event_t) {}
inline void wait_flag(pipe_t, pipe_t, event_t) {}
inline void pipe_barrier(pipe_t) {}

/* ------------------------------------------------------------------ memory */

/* Loads the GlobalTensor's rows x cols (dims 3 and 4) into the tile. */
template <typename TileData, typename GlobalData> inline void TLOAD(TileData &dst, GlobalData &src) {
    int64_t rows = src.GetShape(3), cols = src.GetShape(4);
    int64_t rs = src.GetStride(3), cs = src.GetStride(4);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) dst.at(r, c) = src.data_[r * rs + c * cs];
}

/* Stores the tile's valid region (clipped to the GlobalTensor's rows x cols). */
template <typename GlobalData, typename TileData> inline void TSTORE(GlobalData &dst, TileData &src) {
    int64_t rows = dst.GetShape(3), cols = dst.GetShape(4);
    int64_t rs = dst.GetStride(3), cs = dst.GetStride(4);
    for (int64_t r = 0; r < rows && r < (int64_t)src.GetValidRow(); r++)
        for (int64_t c = 0; c < cols && c < (int64_t)src.GetValidCol(); c++)
            dst.data_[r * rs + c * cs] = src.at(r, c);
}

/* Copies the destination's valid region between locations (Vec<->Mat, Acc->Vec, ...). */
template <typename D, typename S> inline void TMOV(D &dst, S &src) {
    for (unsigned r = 0; r < dst.GetValidRow(); r++)
        for (unsigned c = 0; c < dst.GetValidCol(); c++) dst.at(r, c) = src.at(r, c);
}

/* dst = src[row.., col..] over the destination's valid region. */
template <typename D, typename S> inline void TEXTRACT(D &dst, S &src, uint16_t row, uint16_t col) {
    for (unsigned r = 0; r < dst.GetValidRow(); r++)
        for (unsigned c = 0; c < dst.GetValidCol(); c++) dst.at(r, c) = src.at(row + r, col + c);
}

/* dst[row.., col..] = src over the source's valid region. */
template <typename D, typename S> inline void TINSERT(D &dst, S &src, uint16_t row, uint16_t col) {
    for (unsigned r = 0; r < src.GetValidRow(); r++)
        for (unsigned c = 0; c < src.GetValidCol(); c++) dst.at(row + r, col + c) = src.at(r, c);
}

/* ------------------------------------------------------------------ elementwise */

namespace standin {
template <typename D, typename F> inline void each(D &dst, F f) {
    for (unsigned r = 0; r < dst.GetValidRow(); r++)
        for (unsigned c = 0; c < dst.GetValidCol(); c++) dst.at(r, c) = f(r, c);
}
template <typename T, typename Op> inline T bin(T a, T b, Op op) {
    if constexpr (is_float_v<T>) {
        return T(op(up(a), up(b)));
    } else {
        return op(a, b);
    }
}
template <typename T> inline T add(T a, T b) {
    if constexpr (is_float_v<T>) return T(up(a) + up(b));
    else return wrap<T>((uint64_t)a + (uint64_t)b);
}
template <typename T> inline T sub(T a, T b) {
    if constexpr (is_float_v<T>) return T(up(a) - up(b));
    else return wrap<T>((uint64_t)a - (uint64_t)b);
}
template <typename T> inline T mul(T a, T b) {
    if constexpr (is_float_v<T>) return T(up(a) * up(b));
    else return wrap<T>((uint64_t)a * (uint64_t)b);
}
template <typename T> inline T max(T a, T b) {
    if constexpr (is_float_v<T>) return T(maximum(up(a), up(b)));
    else return a < b ? b : a;
}
template <typename T> inline T min(T a, T b) {
    if constexpr (is_float_v<T>) return T(minimum(up(a), up(b)));
    else return b < a ? b : a;
}
} // namespace standin

#define WSP_STANDIN_BINARY(NAME, EXPR)                                                             \
    template <typename D, typename S0, typename S1> inline void NAME(D &dst, S0 &a, S1 &b) {     \
        using T = typename D::DType;                                                               \
        standin::each(dst, [&](unsigned r, unsigned c) -> T {                                      \
            T x = a.at(r, c), y = b.at(r, c);                                                      \
            return EXPR;                                                                           \
        });                                                                                        \
    }
WSP_STANDIN_BINARY(TADD, standin::add(x, y))
WSP_STANDIN_BINARY(TSUB, standin::sub(x, y))
WSP_STANDIN_BINARY(TMUL, standin::mul(x, y))
WSP_STANDIN_BINARY(TDIV, T(standin::up(x) / standin::up(y)))
WSP_STANDIN_BINARY(TMAX, standin::max(x, y))
WSP_STANDIN_BINARY(TMIN, standin::min(x, y))
WSP_STANDIN_BINARY(TFMOD, T(std::fmod(standin::up(x), standin::up(y))))
WSP_STANDIN_BINARY(TAND, T(x & y))
WSP_STANDIN_BINARY(TOR, T(x | y))
#undef WSP_STANDIN_BINARY

/* dst = base ^ exp (the C library's pow in the compute type); tmp is scratch. */
template <typename D, typename S0, typename S1, typename Tmp> inline void TPOW(D &dst, S0 &a, S1 &b, Tmp &) {
    using T = typename D::DType;
    standin::each(dst, [&](unsigned r, unsigned c) -> T {
        return T(std::pow(standin::up(a.at(r, c)), standin::up(b.at(r, c))));
    });
}

#define WSP_STANDIN_SCALAR(NAME, EXPR)                                                             \
    template <typename D, typename S> inline void NAME(D &dst, S &a, typename S::DType s) {       \
        using T = typename D::DType;                                                               \
        standin::each(dst, [&](unsigned r, unsigned c) -> T {                                      \
            T x = a.at(r, c);                                                                      \
            return EXPR;                                                                           \
        });                                                                                        \
    }
WSP_STANDIN_SCALAR(TADDS, standin::add(x, s))
WSP_STANDIN_SCALAR(TMULS, standin::mul(x, s))
WSP_STANDIN_SCALAR(TDIVS, T(standin::up(x) / standin::up(s)))
#undef WSP_STANDIN_SCALAR

#define WSP_STANDIN_UNARY(NAME, EXPR)                                                              \
    template <typename D, typename S> inline void NAME(D &dst, S &a) {                            \
        using T = typename D::DType;                                                               \
        standin::each(dst, [&](unsigned r, unsigned c) -> T {                                      \
            auto x = standin::up(a.at(r, c));                                                      \
            return EXPR;                                                                           \
        });                                                                                        \
    }
WSP_STANDIN_UNARY(TEXP, T(wsp_math_exp(x)))
WSP_STANDIN_UNARY(TLOG, T(wsp_math_log(x)))
WSP_STANDIN_UNARY(TSQRT, T(std::sqrt(x)))
WSP_STANDIN_UNARY(TRECIP, T(decltype(x)(1) / x))
#undef WSP_STANDIN_UNARY

/* -x: flips the sign of floats (also of zeros and NaNs), wraps for integers. */
template <typename D, typename S> inline void TNEG(D &dst, S &a) {
    using T = typename D::DType;
    standin::each(dst, [&](unsigned r, unsigned c) -> T {
        T x = a.at(r, c);
        if constexpr (standin::is_float_v<T>) return T(-standin::up(x));
        else return standin::sub(T(0), x);
    });
}

template <typename D, typename S> inline void TABS(D &dst, S &a) {
    using T = typename D::DType;
    standin::each(dst, [&](unsigned r, unsigned c) -> T {
        T x = a.at(r, c);
        if constexpr (standin::is_float_v<T>) return T(std::fabs(standin::up(x)));
        else if constexpr (std::is_signed<T>::value) return x < 0 ? standin::sub(T(0), x) : x;
        else return x;
    });
}

/* relu(x) = maximum(x, 0): NaN stays NaN, -0 becomes +0. */
template <typename D, typename S> inline void TRELU(D &dst, S &a) {
    using T = typename D::DType;
    standin::each(dst, [&](unsigned r, unsigned c) -> T { return standin::max(T(a.at(r, c)), T(0)); });
}

/* Fills the valid region with a scalar. */
template <typename D> inline void TEXPANDS(D &dst, typename D::DType s) {
    standin::each(dst, [&](unsigned, unsigned) { return s; });
}

/* A one-row tile: dst(0, j) = start + j (start - j when descending). */
template <typename D, typename T, int descending = 0> inline void TCI(D &dst, T start) {
    static_assert(D::Rows == 1, "TCI fills one row");
    static_assert(std::is_same<typename D::DType, T>::value, "TCI counts in the tile's type");
    for (unsigned c = 0; c < dst.GetValidCol(); c++)
        dst.at(0, c) = descending ? standin::sub(start, (T)c) : standin::add(start, (T)c);
}

/* ------------------------------------------------------------------ conversion */

namespace standin {
template <typename T> inline T from_double(double x) {
    if constexpr (is_f16ish<T>::value) return T(f64_to_f32_odd(x));
    else return (T)x;
}
/* |i| rounded to float with round-to-odd: the top 24 significant bits, sticky last bit. */
inline float u64_to_f32_odd(uint64_t i) {
    if (i < (uint64_t(1) << 24)) return (float)i;
    int w = 64 - __builtin_clzll(i);
    int shift = w - 24;
    uint64_t top = i >> shift;
    if (i & ((uint64_t(1) << shift) - 1)) top |= 1;
    return std::ldexp((float)top, shift);
}
template <typename T> inline T from_int(int64_t i) {
    if constexpr (is_f16ish<T>::value) {
        float m = u64_to_f32_odd(i < 0 ? 0 - (uint64_t)i : (uint64_t)i);
        return T(i < 0 ? -m : m);
    } else {
        return (T)i;
    }
}
template <typename T> inline T from_uint(uint64_t i) {
    if constexpr (is_f16ish<T>::value) return T(u64_to_f32_odd(i));
    else return (T)i;
}
template <typename T> inline T saturate(double x) {
    if (std::isnan(x)) return 0;
    double t = std::trunc(x);
    if (t <= (double)std::numeric_limits<T>::min()) return std::numeric_limits<T>::min();
    if (t >= (double)std::numeric_limits<T>::max()) return std::numeric_limits<T>::max();
    return (T)t;
}
template <typename D, typename S> inline D convert(S x) {
    if constexpr (is_float_v<D>) {
        if constexpr (is_float_v<S>) {
            if constexpr (std::is_same<S, double>::value) return from_double<D>(x);
            else return D((float)x);
        } else if constexpr (std::is_signed<S>::value) {
            return from_int<D>((int64_t)x);
        } else {
            return from_uint<D>((uint64_t)x);
        }
    } else if constexpr (is_float_v<S>) {
        return saturate<D>((double)up(x));
    } else {
        return wrap<D>((uint64_t)x);
    }
}
} // namespace standin

/* Converts element types; float targets round to nearest even (CAST_RINT), integer targets
 * from floats truncate and saturate (CAST_TRUNC), integer to integer wraps. */
template <typename D, typename S> inline void TCVT(D &dst, S &src, RoundMode) {
    standin::each(dst, [&](unsigned r, unsigned c) {
        return standin::convert<typename D::DType>(src.at(r, c));
    });
}

/* ------------------------------------------------------------------ broadcast */

/* dst(r, c) = src(r, 0). */
template <typename D, typename S> inline void TROWEXPAND(D &dst, S &src) {
    standin::each(dst, [&](unsigned r, unsigned) { return src.at(r, 0); });
}
/* dst(r, c) = src(0, c). */
template <typename D, typename S> inline void TCOLEXPAND(D &dst, S &src) {
    standin::each(dst, [&](unsigned, unsigned c) { return src.at(0, c); });
}

/* ------------------------------------------------------------------ reductions */

/* Row sums over the source's valid columns: four interleaved partial sums for floats,
 * wrapping left-to-right sums for integers. */
template <typename D, typename S, typename Tmp> inline void TROWSUM(D &dst, S &src, Tmp &) {
    using T = typename D::DType;
    for (unsigned r = 0; r < dst.GetValidRow(); r++) {
        if constexpr (standin::is_float_v<T>) {
            T s[4] = {T(0), T(0), T(0), T(0)};
            for (unsigned c = 0; c < src.GetValidCol(); c++) s[c % 4] = s[c % 4] + (T)src.at(r, c);
            dst.at(r, 0) = (s[0] + s[1]) + (s[2] + s[3]);
        } else {
            T s = 0;
            for (unsigned c = 0; c < src.GetValidCol(); c++) s = standin::add(s, (T)src.at(r, c));
            dst.at(r, 0) = s;
        }
    }
}

namespace standin {
template <typename T> inline T lowest() {
    if constexpr (std::is_floating_point<T>::value) return -std::numeric_limits<T>::infinity();
    else return std::numeric_limits<T>::min();
}
template <typename T> inline T highest() {
    if constexpr (std::is_floating_point<T>::value) return std::numeric_limits<T>::infinity();
    else return std::numeric_limits<T>::max();
}
} // namespace standin

template <typename D, typename S, typename Tmp> inline void TROWMAX(D &dst, S &src, Tmp &) {
    using T = typename D::DType;
    for (unsigned r = 0; r < dst.GetValidRow(); r++) {
        T m = standin::lowest<T>();
        for (unsigned c = 0; c < src.GetValidCol(); c++) m = standin::max(m, (T)src.at(r, c));
        dst.at(r, 0) = m;
    }
}
template <typename D, typename S, typename Tmp> inline void TROWMIN(D &dst, S &src, Tmp &) {
    using T = typename D::DType;
    for (unsigned r = 0; r < dst.GetValidRow(); r++) {
        T m = standin::highest<T>();
        for (unsigned c = 0; c < src.GetValidCol(); c++) m = standin::min(m, (T)src.at(r, c));
        dst.at(r, 0) = m;
    }
}

/* Column sums over the source's valid rows, in increasing row order from +0. */
template <typename D, typename S> inline void TCOLSUM(D &dst, S &src) {
    using T = typename D::DType;
    for (unsigned c = 0; c < dst.GetValidCol(); c++) {
        T s = T(0);
        for (unsigned r = 0; r < src.GetValidRow(); r++) s = standin::add(s, (T)src.at(r, c));
        dst.at(0, c) = s;
    }
}
template <typename D, typename S> inline void TCOLMAX(D &dst, S &src) {
    using T = typename D::DType;
    for (unsigned c = 0; c < dst.GetValidCol(); c++) {
        T m = standin::lowest<T>();
        for (unsigned r = 0; r < src.GetValidRow(); r++) m = standin::max(m, (T)src.at(r, c));
        dst.at(0, c) = m;
    }
}
template <typename D, typename S> inline void TCOLMIN(D &dst, S &src) {
    using T = typename D::DType;
    for (unsigned c = 0; c < dst.GetValidCol(); c++) {
        T m = standin::highest<T>();
        for (unsigned r = 0; r < src.GetValidRow(); r++) m = standin::min(m, (T)src.at(r, c));
        dst.at(0, c) = m;
    }
}

/* ------------------------------------------------------------------ cube */

/* c = a x b over k < min(valid cols of a, valid rows of b), by fused multiply-adds. */
template <typename C, typename A, typename B> inline void TMATMUL(C &c, A &a, B &b) {
    using T = typename C::DType;
    unsigned kk = a.GetValidCol() < b.GetValidRow() ? a.GetValidCol() : b.GetValidRow();
    for (unsigned i = 0; i < c.GetValidRow(); i++)
        for (unsigned j = 0; j < c.GetValidCol(); j++) {
            T s = T(0);
            for (unsigned k = 0; k < kk; k++) s = std::fma((T)a.at(i, k), (T)b.at(k, j), s);
            c.at(i, j) = s;
        }
}

/* cOut = cIn + a x b, fused multiply-adds into the accumulator in increasing k. */
template <typename C, typename A, typename B> inline void TMATMUL_ACC(C &cOut, C &cIn, A &a, B &b) {
    using T = typename C::DType;
    unsigned kk = a.GetValidCol() < b.GetValidRow() ? a.GetValidCol() : b.GetValidRow();
    for (unsigned i = 0; i < cOut.GetValidRow(); i++)
        for (unsigned j = 0; j < cOut.GetValidCol(); j++) {
            T s = cIn.at(i, j);
            for (unsigned k = 0; k < kk; k++) s = std::fma((T)a.at(i, k), (T)b.at(k, j), s);
            cOut.at(i, j) = s;
        }
}

/* dst = transpose(src) over the destination's valid region. */
template <typename D, typename S, typename Tmp> inline void TTRANS(D &dst, S &src, Tmp &) {
    standin::each(dst, [&](unsigned r, unsigned c) { return src.at(c, r); });
}

} // namespace pto

#endif /* WSP_PTO_STANDIN_INST_HPP */

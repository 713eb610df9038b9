//! f16 and bf16 in registers: rounding an f32 to f16 or bf16 (ties to even) and the
//! conversions between f32 and f16 bits, as inline bit arithmetic.

use super::Lower;
use cranelift::prelude::*;
use wsp_ir::DType;

impl<'a, 'b> Lower<'a, 'b> {
    /// An f32 rounded to the nearest f16 (ties to even), as f32: `f16::from_f32(x).to_f32()`.
    fn q16(&mut self, x: Value, vec: bool) -> Value {
        let bits = self.as_int(x, vec);
        let sign = self.and_c(bits, 0x8000_0000, vec);
        let a = self.and_c(bits, 0x7FFF_FFFF, vec);
        // Normal results: round the significand to 10 bits; at or above 65520 → inf.
        let t = self.ushr_c(a, 13);
        let odd = self.and_c(t, 1, vec);
        let n = self.add_c(a, 0xFFF, vec);
        let n = self.b.ins().iadd(n, odd);
        let n = self.and_c(n, !0x1FFF, vec);
        let ovf = self.cmp_c(IntCC::SignedGreaterThanOrEqual, n, 0x4780_0000, vec);
        let inf = self.ci(0x7F80_0000, vec);
        let n = self.sel(ovf, inf, n, vec);
        // Subnormal results (|x| < 2^-14): round to a multiple of 2^-24 by adding 0.5.
        let af = self.as_float(a, vec);
        let half = self.num(0.5, vec);
        let s = self.b.ins().fadd(af, half);
        let s = self.b.ins().fsub(s, half);
        let s = self.as_int(s, vec);
        let sub = self.cmp_c(IntCC::SignedLessThan, a, 0x3880_0000, vec);
        let r = self.sel(sub, s, n, vec);
        let nan = self.cmp_c(IntCC::SignedGreaterThan, a, 0x7F80_0000, vec);
        let r = self.sel(nan, a, r, vec);
        let r = self.b.ins().bor(r, sign);
        self.as_float(r, vec)
    }

    /// The f32 bits of an f32 rounded to the nearest bf16 (ties to even; NaN stays a quiet
    /// NaN), low 16 bits zero: `bf16::from_f32(x).to_f32()`.
    pub(super) fn qbf_bits(&mut self, x: Value, vec: bool) -> Value {
        let b = self.as_int(x, vec);
        let t = self.ushr_c(b, 16);
        let odd = self.and_c(t, 1, vec);
        let r = self.add_c(b, 0x7FFF, vec);
        let r = self.b.ins().iadd(r, odd);
        let r = self.and_c(r, 0xFFFF_0000, vec);
        let a = self.and_c(b, 0x7FFF_FFFF, vec);
        let nan = self.cmp_c(IntCC::SignedGreaterThan, a, 0x7F80_0000, vec);
        let q = self.or_c(b, 0x0040_0000, vec);
        let q = self.and_c(q, 0xFFFF_0000, vec);
        self.sel(nan, q, r, vec)
    }

    fn qbf(&mut self, x: Value, vec: bool) -> Value {
        let r = self.qbf_bits(x, vec);
        self.as_float(r, vec)
    }

    /// Rounds an f32 compute value to `d` (f16 or bf16; f32 unchanged).
    pub(super) fn round_to(&mut self, x: Value, d: DType, vec: bool) -> Value {
        match d {
            DType::F16 => self.q16(x, vec),
            DType::Bf16 => self.qbf(x, vec),
            _ => x,
        }
    }

    /// The f16 bits (in an i32 lane) of an f32, rounded to nearest even (`f16::from_f32`).
    pub(super) fn f2h(&mut self, x: Value, vec: bool) -> Value {
        let b = self.as_int(x, vec);
        let s = self.and_c(b, 0x8000_0000, vec);
        let sign = self.ushr_c(s, 16);
        let a = self.and_c(b, 0x7FFF_FFFF, vec);
        // Normal: rebias the exponent, round the significand to 10 bits.
        let t = self.ushr_c(a, 13);
        let odd = self.and_c(t, 1, vec);
        let n = self.add_c(a, 0xC800_0FFF, vec);
        let n = self.b.ins().iadd(n, odd);
        let n = self.ushr_c(n, 13);
        // Subnormal: the multiple of 2^-24 by adding 0.5.
        let af = self.as_float(a, vec);
        let half = self.num(0.5, vec);
        let sf = self.b.ins().fadd(af, half);
        let si = self.as_int(sf, vec);
        let si = self.add_c(si, -0x3F00_0000, vec);
        let sub = self.cmp_c(IntCC::SignedLessThan, a, 0x3880_0000, vec);
        let r = self.sel(sub, si, n, vec);
        // ≥ 65536 (after rounding: inf), inf and NaN.
        let nm = self.and_c(t, 0x3FF, vec);
        let nanb = self.or_c(nm, 0x7E00, vec);
        let infb = self.ci(0x7C00, vec);
        let nan = self.cmp_c(IntCC::SignedGreaterThan, a, 0x7F80_0000, vec);
        let special = self.sel(nan, nanb, infb, vec);
        let big = self.cmp_c(IntCC::SignedGreaterThanOrEqual, a, 0x4780_0000, vec);
        let r = self.sel(big, special, r, vec);
        self.b.ins().bor(r, sign)
    }

    /// The f32 value of f16 bits (zero-extended in an i32 lane); exact.
    pub(super) fn h2f(&mut self, h: Value, vec: bool) -> Value {
        let s = self.and_c(h, 0x8000, vec);
        let sign = self.shl_c(s, 16);
        let em = self.and_c(h, 0x7FFF, vec);
        let bits = self.shl_c(em, 13);
        // Normal and subnormal: the exponent rebias is a multiplication by 2^112 (exact).
        let f = self.as_float(bits, vec);
        let scale = self.num(f32::from_bits(0x7780_0000), vec);
        let f = self.b.ins().fmul(f, scale);
        let fi = self.as_int(f, vec);
        let sp = self.or_c(bits, 0x7F80_0000, vec);
        let infnan = self.cmp_c(IntCC::SignedGreaterThan, em, 0x7BFF, vec);
        let r = self.sel(infnan, sp, fi, vec);
        let r = self.b.ins().bor(r, sign);
        self.as_float(r, vec)
    }
}

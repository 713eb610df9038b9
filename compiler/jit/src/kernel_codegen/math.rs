//! `exp`, `log` and `tanh` inside the generated code, four lanes at a time (or one): the
//! sequences of [`wsp_ir::math`], operation for operation and with its constants, so that
//! the results are the interpreter's bit for bit. Both arms of every choice are computed and
//! the result selected by a lane mask.

use super::Lower;
use cranelift::prelude::*;
use wsp_ir::math as m;

impl<'a, 'b> Lower<'a, 'b> {
    /// The comparison `x cc k` with a constant: a mask.
    fn fcmp_c(&mut self, cc: FloatCC, x: Value, k: f32, vec: bool) -> Value {
        let kv = self.num(k, vec);
        self.b.ins().fcmp(cc, x, kv)
    }

    fn horner(&mut self, x: Value, c: &[f32], vec: bool) -> Value {
        let (last, rest) = match c.split_last() {
            Some(s) => s,
            None => return self.num(0.0, vec),
        };
        let mut acc = self.num(*last, vec);
        for k in rest.iter().rev() {
            let xa = self.b.ins().fmul(x, acc);
            let kv = self.num(*k, vec);
            acc = self.b.ins().fadd(kv, xa);
        }
        acc
    }

    fn sshr_c(&mut self, x: Value, n: i64) -> Value {
        let k = self.b.ins().iconst(types::I32, n);
        self.b.ins().sshr(x, k)
    }

    /// `2^k` from i32 exponents `k` in [−126, 127].
    fn pow2(&mut self, k: Value, vec: bool) -> Value {
        let e = self.add_c(k, 127, vec);
        let bits = self.shl_c(e, 23);
        self.as_float(bits, vec)
    }

    /// [`wsp_ir::math::exp`].
    pub(super) fn exp_f(&mut self, x: Value, vec: bool) -> Value {
        let lo = self.num(m::EXP_LO, vec);
        let below = self.fcmp_c(FloatCC::LessThan, x, m::EXP_LO, vec);
        let x = self.sel(below, lo, x, vec);
        let hi = self.num(m::EXP_HI, vec);
        let above = self.fcmp_c(FloatCC::GreaterThan, x, m::EXP_HI, vec);
        let x = self.sel(above, hi, x, vec);
        let log2e = self.num(m::LOG2E, vec);
        let magic = self.num(m::ROUND_MAGIC, vec);
        let xl = self.b.ins().fmul(x, log2e);
        let t = self.b.ins().fadd(xl, magic);
        let n = self.b.ins().fsub(t, magic);
        let tb = self.as_int(t, vec);
        let ni = self.add_c(tb, -i64::from(m::ROUND_MAGIC.to_bits()), vec);
        let hi_part = self.num(m::LN2_HI, vec);
        let lo_part = self.num(m::LN2_LO, vec);
        let nh = self.b.ins().fmul(n, hi_part);
        let nl = self.b.ins().fmul(n, lo_part);
        let xr = self.b.ins().fsub(x, nh);
        let r = self.b.ins().fsub(xr, nl);
        let q = self.horner(r, &m::EXP_Q, vec);
        let r2 = self.b.ins().fmul(r, r);
        let r2q = self.b.ins().fmul(r2, q);
        let s = self.b.ins().fadd(r, r2q);
        let one = self.num(1.0, vec);
        let p = self.b.ins().fadd(one, s);
        let n1 = self.sshr_c(ni, 1);
        let n2 = self.b.ins().isub(ni, n1);
        let s1 = self.pow2(n1, vec);
        let s2 = self.pow2(n2, vec);
        let p1 = self.b.ins().fmul(p, s1);
        self.b.ins().fmul(p1, s2)
    }

    /// [`wsp_ir::math::ln`].
    pub(super) fn ln_f(&mut self, x: Value, vec: bool) -> Value {
        let sub = self.fcmp_c(FloatCC::LessThan, x, m::MIN_NORMAL, vec);
        let scale = self.num(m::TWO_POW_23, vec);
        let scaled = self.b.ins().fmul(x, scale);
        let xs = self.sel(sub, scaled, x, vec);
        let xb = self.as_int(xs, vec);
        let d = self.add_c(xb, -i64::from(m::SQRT_HALF_BITS), vec);
        let m23 = self.ci(-23, vec);
        let z0 = self.ci(0, vec);
        let adj = self.sel(sub, m23, z0, vec);
        let e0 = self.sshr_c(d, 23);
        let e = self.b.ins().iadd(e0, adj);
        let low = self.and_c(d, 0x007F_FFFF, vec);
        let mb = self.add_c(low, i64::from(m::SQRT_HALF_BITS), vec);
        let mv = self.as_float(mb, vec);
        let one = self.num(1.0, vec);
        let f = self.b.ins().fsub(mv, one);
        let two = self.num(2.0, vec);
        let den = self.b.ins().fadd(two, f);
        let s = self.b.ins().fdiv(f, den);
        let z = self.b.ins().fmul(s, s);
        let rz = self.horner(z, &m::LOG_R, vec);
        let rr = self.b.ins().fmul(z, rz);
        let half = self.num(0.5, vec);
        let hf = self.b.ins().fmul(half, f);
        let hfsq = self.b.ins().fmul(hf, f);
        let ft = if vec { types::F32X4 } else { types::F32 };
        let ef = self.b.ins().fcvt_from_sint(ft, e);
        let hi_part = self.num(m::LN2_HI, vec);
        let lo_part = self.num(m::LN2_LO, vec);
        let eh = self.b.ins().fmul(ef, hi_part);
        let el = self.b.ins().fmul(ef, lo_part);
        let hr = self.b.ins().fadd(hfsq, rr);
        let shr = self.b.ins().fmul(s, hr);
        let inner = self.b.ins().fadd(shr, el);
        let a = self.b.ins().fsub(hfsq, inner);
        let a = self.b.ins().fsub(a, f);
        let y = self.b.ins().fsub(eh, a);
        // The special inputs, the last choice first.
        let ge = self.fcmp_c(FloatCC::GreaterThanOrEqual, x, 0.0, vec);
        let nan = self.num(f32::NAN, vec);
        let y = self.sel(ge, y, nan, vec);
        let zero = self.fcmp_c(FloatCC::Equal, x, 0.0, vec);
        let ninf = self.num(f32::NEG_INFINITY, vec);
        let y = self.sel(zero, ninf, y, vec);
        let inf = self.fcmp_c(FloatCC::Equal, x, f32::INFINITY, vec);
        let pinf = self.num(f32::INFINITY, vec);
        self.sel(inf, pinf, y, vec)
    }

    /// [`wsp_ir::math::tanh`].
    pub(super) fn tanh_f(&mut self, x: Value, vec: bool) -> Value {
        let xb = self.as_int(x, vec);
        let ab = self.and_c(xb, i64::from(!m::SIGN_BIT), vec);
        let a = self.as_float(ab, vec);
        let small = self.fcmp_c(FloatCC::LessThan, a, m::TANH_POLY_BELOW, vec);
        let z = self.b.ins().fmul(a, a);
        let p = self.horner(z, &m::TANH_P, vec);
        let zp = self.b.ins().fmul(z, p);
        let azp = self.b.ins().fmul(a, zp);
        let poly = self.b.ins().fadd(a, azp);
        let a2 = self.b.ins().fadd(a, a);
        let e = self.exp_f(a2, vec);
        let one = self.num(1.0, vec);
        let two = self.num(2.0, vec);
        let e1 = self.b.ins().fadd(e, one);
        let q = self.b.ins().fdiv(two, e1);
        let big = self.b.ins().fsub(one, q);
        let y = self.sel(small, poly, big, vec);
        let yb = self.as_int(y, vec);
        let mag = self.and_c(yb, i64::from(!m::SIGN_BIT), vec);
        let sign = self.and_c(xb, i64::from(m::SIGN_BIT), vec);
        let out = self.b.ins().bor(mag, sign);
        self.as_float(out, vec)
    }
}

//! Scalar functions called from JIT code. `sin`, `cos`, `pow` and `fmod` are the same Rust
//! `f32` functions the reference interpreter calls (`exp`, `log` and `tanh` are generated
//! inline: `kernel_codegen::math`), and the conversions call the interpreter's own
//! conversion, so the results agree bit for bit.

use crate::kernel_codegen::Helpers;
use cranelift::codegen::ir::Function;
use cranelift::prelude::*;
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{FuncId, Linkage, Module};
use wsp_ir::tensor::{convert, El};
use wsp_ir::DType;

pub extern "C" fn wsp_sinf(x: f32) -> f32 {
    x.sin()
}
pub extern "C" fn wsp_cosf(x: f32) -> f32 {
    x.cos()
}
pub extern "C" fn wsp_powf(x: f32, y: f32) -> f32 {
    x.powf(y)
}
pub extern "C" fn wsp_fmodf(x: f32, y: f32) -> f32 {
    x % y
}

/// An integer converted to bf16 with the `cast` rule (rounded once, to nearest even), as f32.
pub extern "C" fn wsp_int_to_bf16(i: i64) -> f32 {
    convert(El::I(i128::from(i)), DType::Bf16).as_f64() as f32
}

/// Whether `a` comes before `b` in `rowtopk` order (strictly): by value descending, NaN above
/// every number; equal values (including `-0.0`/`+0.0` and NaN/NaN) are not strictly before
/// each other. `kind`: 0 f32 bits, 1 i32, 2 bool lane masks (0 or −1).
fn topk_before(kind: i32, a: u32, b: u32) -> bool {
    match kind {
        0 => {
            let (x, y) = (f32::from_bits(a), f32::from_bits(b));
            match (x.is_nan(), y.is_nan()) {
                (true, false) => true,
                (_, true) => false,
                _ => x > y,
            }
        }
        1 => (a as i32) > (b as i32),
        _ => a != 0 && b == 0,
    }
}

/// `rowtopk` of one row of `n` elements: the `k` first elements in `rowtopk` order (see
/// [`wsp_ir::num::topk_order`]: larger first, equal values by smaller column) into `vals`
/// and their column indices into `idx`. A stable insertion into the `k` outputs: O(n·k), no
/// allocation.
///
/// # Safety
/// `row` is valid for `n` reads, `vals` and `idx` for `k` writes, and `k ≤ n`.
pub unsafe extern "C" fn wsp_rowtopk(
    row: *const u32,
    n: i64,
    k: i64,
    kind: i32,
    vals: *mut u32,
    idx: *mut i32,
) {
    let (Ok(n), Ok(k)) = (usize::try_from(n), usize::try_from(k)) else {
        return;
    };
    if k == 0 || k > n {
        return;
    }
    // SAFETY: the caller's contract.
    let (row, vals, idx) = unsafe {
        (
            std::slice::from_raw_parts(row, n),
            std::slice::from_raw_parts_mut(vals, k),
            std::slice::from_raw_parts_mut(idx, k),
        )
    };
    let mut len = 0;
    for (c, &x) in row.iter().enumerate() {
        // After every kept element not strictly after x (so equal values keep column order).
        let mut pos = len;
        while pos > 0 && topk_before(kind, x, vals[pos - 1]) {
            pos -= 1;
        }
        if pos >= k {
            continue;
        }
        let end = len.min(k - 1);
        let mut j = end;
        while j > pos {
            vals[j] = vals[j - 1];
            idx[j] = idx[j - 1];
            j -= 1;
        }
        vals[pos] = x;
        idx[pos] = c as i32;
        len = (len + 1).min(k);
    }
}

/// Zeroes `rows` rows of `row_bytes` bytes, `stride` bytes apart, from `ptr` (a `full` of
/// +0 stored: zero bits in every element layout), with one `memset` when the rows are
/// contiguous.
///
/// # Safety
/// The rows are inside one writable allocation.
pub unsafe extern "C" fn wsp_zero_rows(ptr: *mut u8, stride: i64, rows: i64, row_bytes: i64) {
    let (Ok(rows), Ok(n), Ok(stride)) = (
        usize::try_from(rows),
        usize::try_from(row_bytes),
        usize::try_from(stride),
    ) else {
        return;
    };
    if rows == 0 || n == 0 {
        return;
    }
    // SAFETY: the caller's contract.
    unsafe {
        if stride == n {
            std::ptr::write_bytes(ptr, 0, rows * n);
        } else {
            for r in 0..rows {
                std::ptr::write_bytes(ptr.add(r * stride), 0, n);
            }
        }
    }
}

const F: Type = types::F32;
const I: Type = types::I64;

/// `(symbol, address, parameter types, return types)` of every helper.
fn symbols() -> [(&'static str, *const u8, &'static [Type], &'static [Type]); 7] {
    [
        ("wsp_sinf", wsp_sinf as *const u8, &[F], &[F]),
        ("wsp_cosf", wsp_cosf as *const u8, &[F], &[F]),
        ("wsp_powf", wsp_powf as *const u8, &[F, F], &[F]),
        ("wsp_fmodf", wsp_fmodf as *const u8, &[F, F], &[F]),
        ("wsp_int_to_bf16", wsp_int_to_bf16 as *const u8, &[I], &[F]),
        (
            "wsp_rowtopk",
            wsp_rowtopk as *const u8,
            &[I, I, I, types::I32, I, I],
            &[],
        ),
        (
            "wsp_zero_rows",
            wsp_zero_rows as *const u8,
            &[I, I, I, I],
            &[],
        ),
    ]
}

/// Registers every helper's address with the JIT builder.
pub(crate) fn register(jb: &mut JITBuilder) {
    for (name, addr, _, _) in symbols() {
        jb.symbol(name, addr);
    }
}

/// Declares every helper in `module` (imports), in [`symbols`]' order.
pub(crate) fn declare_ids(module: &mut JITModule) -> Result<Vec<FuncId>, String> {
    let mut ids = Vec::new();
    for (name, _, params, returns) in symbols() {
        let mut sig = module.make_signature();
        sig.params.extend(params.iter().map(|t| AbiParam::new(*t)));
        sig.returns
            .extend(returns.iter().map(|t| AbiParam::new(*t)));
        let id = module
            .declare_function(name, Linkage::Import, &sig)
            .map_err(|e| e.to_string())?;
        ids.push(id);
    }
    Ok(ids)
}

/// Declares every helper in `module` and imports it into `func`.
pub(crate) fn declare(module: &mut JITModule, func: &mut Function) -> Result<Helpers, String> {
    let mut refs = Vec::new();
    for id in declare_ids(module)? {
        refs.push(module.declare_func_in_func(id, func));
    }
    Ok(Helpers {
        sin: refs[0],
        cos: refs[1],
        pow: refs[2],
        fmod: refs[3],
        int_to_bf16: refs[4],
        rowtopk: refs[5],
        zero_rows: refs[6],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use wsp_ir::num::topk_order;

    fn reference(xs: &[f32], k: usize) -> Vec<(u32, i32)> {
        let mut row: Vec<(El, usize)> = xs
            .iter()
            .enumerate()
            .map(|(c, x)| (El::F(f64::from(*x)), c))
            .collect();
        row.sort_by(|a, b| topk_order(*a, *b));
        row.into_iter()
            .take(k)
            .map(|(v, c)| ((v.as_f64() as f32).to_bits(), c as i32))
            .collect()
    }

    #[test]
    fn rowtopk_matches_the_interpreters_order_with_ties_nan_and_signed_zeros() {
        let xs = [
            1.0,
            f32::NAN,
            -0.0,
            3.0,
            0.0,
            3.0,
            f32::NAN,
            -1.0,
            f32::NEG_INFINITY,
            1.0,
        ];
        for k in 1..=xs.len() {
            let mut v = vec![0u32; k];
            let mut i = vec![0i32; k];
            let bits: Vec<u32> = xs.iter().map(|x| x.to_bits()).collect();
            // SAFETY: sizes as documented.
            unsafe {
                wsp_rowtopk(
                    bits.as_ptr(),
                    xs.len() as i64,
                    k as i64,
                    0,
                    v.as_mut_ptr(),
                    i.as_mut_ptr(),
                )
            };
            let want = reference(&xs, k);
            for (j, (wv, wi)) in want.iter().enumerate() {
                assert_eq!(i[j], *wi, "k = {k}, position {j}");
                let same =
                    v[j] == *wv || (f32::from_bits(v[j]).is_nan() && f32::from_bits(*wv).is_nan());
                assert!(same, "k = {k}, position {j}");
            }
        }
    }

    #[test]
    fn int_to_bf16_rounds_once() {
        // 2^25 + 2^17 + 1 is just above the midpoint of two bf16 values; via f32 it would
        // round to the midpoint first and then to even (down).
        let i = (1i64 << 25) + (1 << 17) + 1;
        assert_eq!(wsp_int_to_bf16(i), ((1u64 << 25) + (1 << 18)) as f32);
    }
}

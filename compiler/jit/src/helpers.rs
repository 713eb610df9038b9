//! Scalar math called from JIT code. Each is the same Rust `f32` function the reference
//! interpreter calls, so the results agree bit for bit.

pub extern "C" fn wsp_expf(x: f32) -> f32 {
    x.exp()
}
pub extern "C" fn wsp_logf(x: f32) -> f32 {
    x.ln()
}
pub extern "C" fn wsp_tanhf(x: f32) -> f32 {
    x.tanh()
}
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

/// `(symbol, address, arity)` of every helper.
pub fn symbols() -> [(&'static str, *const u8, usize); 7] {
    [
        ("wsp_expf", wsp_expf as *const u8, 1),
        ("wsp_logf", wsp_logf as *const u8, 1),
        ("wsp_tanhf", wsp_tanhf as *const u8, 1),
        ("wsp_sinf", wsp_sinf as *const u8, 1),
        ("wsp_cosf", wsp_cosf as *const u8, 1),
        ("wsp_powf", wsp_powf as *const u8, 2),
        ("wsp_fmodf", wsp_fmodf as *const u8, 2),
    ]
}

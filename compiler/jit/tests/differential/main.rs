//! Differential tests: each kernel of the corpus runs through the reference interpreter and
//! the JIT on the same data; valid output elements must agree bit for bit (any NaN matches any
//! NaN), and both must reject the same malformed arguments.
//!
//! The tests are grouped by topic: `f32_ops`, `dtypes` (f16, bf16, i32, bool), `pipes` and
//! `errors`; `common` holds the harness.

mod common;
mod disk_cache;
mod dtypes;
mod errors;
mod f32_ops;
mod pipes;

//! Program IR of wsp (serde JSON), its reference interpreter, `.npy` data and per-task cost.
//!
//! The Program IR is what the compiler core lowers a checked program to, what the JIT and the
//! emitters compile, and what external backend plugins read (JSON on standard input). A
//! [`Program`] carries [`Program::version`] = [`IR_VERSION`]; readers reject other versions
//! ([`Program::from_json`] does). Within one version, fields are only ever added, with serde
//! defaults, so older JSON stays readable.
//!
//! # Modules
//!
//! * [`kernel`]: kernels as structured tile-operation graphs over SSA values, with their exact
//!   numeric semantics (valid extents of partial tiles, f16/bf16 rounding, summation order,
//!   NaN and signed-zero rules) — the contract every backend meets.
//! * [`workload`]: the whole program: params, global tensors and initialisers, axes (Dense,
//!   DenseDyn, Ragged, Sparse), workloads (loops, `when`, task calls with affine views,
//!   `sequential`/`combine`/`connect`), channels and processes, schedules, expects.
//! * [`typing`]: result types of operations, [`typing::validate`], and [`typing::KernelBuilder`];
//!   [`check::validate_program`] checks a whole program's references; [`display`] prints
//!   kernels as text.
//! * [`interp`]: the reference kernel interpreter (the oracle for the JIT).
//! * [`exec`]: the reference workload interpreter (tasks in program order on real data; CSP as
//!   a deterministic round-robin); [`exec::run_workload_with`] swaps in another kernel
//!   executor (a JIT) under the same task generation.
//! * [`schedule`]: a schedule as engines apply it: policy forms and task keys
//!   ([`schedule::resolve`]), shared by the simulator and the Ascend orchestration.
//! * [`cost`]: the tile operations a task executes ([`cost::profile`], for architecture
//!   models to price), the exact `pto_wsp_v9` cycles ([`cost::v9_cycles`]) and the cost
//!   under any `wsp-arch` model ([`cost::task_cost`]).
//! * [`schema`]: the JSON Schema of the serialized [`Program`] (docs/program-ir.schema.json),
//!   derived from these types.
//! * [`data`], [`npy`], [`tensor`]: params and `--set`, tensor initialisers and `--input`,
//!   `expect` checks, `.npy` files (atomic writes), host buffers and dtype conversions.
//!
//! The crate is pure data and computation except [`npy`] and [`data`], which read and write
//! files; of the other wsp crates it uses only `wsp-arch` (architecture cost tables), so
//! backends and plugins can use it alone.
//!
//! # JSON shape
//!
//! Enums are internally tagged (`"kind"` for types, params, ops, axes, expressions and the
//! like, `"stmt"` for statements), names are snake_case, ids are plain integers indexing the
//! owning table, dtypes are their `.wsp` spelling. A kernel `c = a + a` on `f32[32, 32]`:
//!
//! ```json
//! { "name": "add",
//!   "params": [ { "name": "a", "kind": "tile", "dir": "in",
//!                 "tile": { "dtype": "f32", "shape": [32, 32] }, "partial": [false, false] },
//!               { "name": "c", "kind": "tile", "dir": "out",
//!                 "tile": { "dtype": "f32", "shape": [32, 32] }, "partial": [false, false] } ],
//!   "values": [ { "ty": { "kind": "tile", "dtype": "f32", "shape": [32, 32] } },
//!               { "ty": { "kind": "tile", "dtype": "f32", "shape": [32, 32] } } ],
//!   "vars": [], "pipes": [],
//!   "body": [ { "stmt": "op", "results": [0], "op": { "kind": "param", "param": 0 } },
//!             { "stmt": "op", "results": [1],
//!               "op": { "kind": "binary", "op": "add", "lhs": 0, "rhs": 0 } },
//!             { "stmt": "store", "param": 1, "value": 1 } ],
//!   "externs": [] }
//! ```

pub mod check;
pub mod cost;
pub mod counts;
pub mod data;
pub mod display;
pub mod dtype;
pub mod exec;
pub mod fsio;
pub mod interp;
pub mod kernel;
pub mod math;
pub mod npy;
pub mod num;
pub mod schedule;
pub mod schema;
pub mod tensor;
pub mod typing;
pub mod workload;

pub use dtype::{DType, ScalarValue};
pub use kernel::*;
pub use workload::*;

#[cfg(test)]
mod exec_tests;
#[cfg(test)]
mod interp_tests;

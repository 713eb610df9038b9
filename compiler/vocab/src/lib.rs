//! The vocabulary of the wsp language, declared once.
//!
//! Every table here is the one place its words are spelled: the checker, the language server's
//! completion and hover, the capability matrix, lowering, the IR and the simulator all read
//! them. Adding an operation or a policy means adding a row here; every `match` over these
//! enums elsewhere is exhaustive, so the compiler lists what else must learn about it.
//!
//! * [`ops`]: kernel operations — the elementwise, reduction and other functions a kernel body
//!   calls, with their signature, arity and capability family.
//! * [`schedule`]: schedule directives and the policies of `.dispatch`, `.timing` and
//!   `.ready`, with their argument forms and capability keys.
//! * [`codes`]: the diagnostic codes, one constant each.
//! * [`words`]: the other builtin words (dtypes, tensor initialisers, axis constructors,
//!   workload and `expect` builtins).
//!
//! Uses nothing of wsp; `serde` only, because the IR serializes the operation enums. The
//! code constants are generated from the explanation files of `compiler/diagnostics`.

pub mod codes;
pub mod ops;
pub mod schedule;
pub mod words;

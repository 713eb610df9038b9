//! The Ascend backend (`wsp emit --target ascend --arch ascend910b|ascend950`).
//!
//! * [`kernel`]: one C++ translation unit per kernel against the PTO-ISA tile API, and the
//!   CPU stand-in of exactly the tile calls it uses.
//! * [`host`]: the orchestration as C against the wsp runtime's submit API, the host
//!   launcher, the CMake project and the plan file.

pub mod host;
pub mod kernel;

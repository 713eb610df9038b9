//! Kernels as PTO-ISA C++: one translation unit per kernel, and the CPU stand-in of exactly
//! the tile calls the emitter uses.
//!
//! [`emit_kernel`] turns a kernel of the Program IR into C++ against the PTO-ISA tile API
//! (`#include <pto/pto-inst.hpp>`): every tile value becomes a `pto::Tile` in the unified
//! buffer (`TileType::Vec`) at an offset chosen by a liveness-based allocator ([`plan`]), the
//! matmul operands are staged through `Mat` (L1) into `Left`/`Right` (L0A/L0B) and the result
//! read back from `Acc` (L0C); tile parameters are `pto::GlobalTensor` views loaded with
//! `TLOAD` and written with `TSTORE`. The translation unit ends in
//! `extern "C" int32_t ENTRY(const struct wsp_raw_task *task)` (see `runtime/capi/include/
//! wsp_task.h`), which maps each region argument to a view with the conventions of wsp-sim
//! (per tile parameter two scalars give the tensor dimensions that are its rows and columns)
//! and returns nonzero (see [`ErrorCode`]) instead of touching memory when an argument is out
//! of range.
//!
//! A kernel with pipes becomes two functions, its cube sections and its vector sections, run
//! side by side as the cube and vector cores of a cluster would (`cores.rs` checks that they
//! share nothing but the pipes), and each pipe a ring of slots in global memory driven by
//! PTO-ISA's slot-model instructions `TALLOC`/`TPUSH`/`TPOP`/`TFREE` (`cpu_pipe.hpp` for the
//! CPU builds).
//!
//! [`standin_files`] is the CPU stand-in (`pto/pto-inst.hpp`, same include path as the real
//! library): the tile types and calls the emitter uses, implemented from their documented
//! semantics with wsp's numeric contract. The differential test (`tests/differential.rs`)
//! builds every kernel of the examples and std modules against it with g++ and compares the
//! results with the reference interpreter bit for bit.

mod cores;
mod emit;
pub use emit::ident;
mod entry;
mod ops;
mod plan;
mod scalar;
mod scalar_ops;

use wsp_backend::BackendDiagnostic;
use wsp_ir::kernel::Kernel;

/// An Ascend architecture a kernel is emitted for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Arch {
    /// A2/A3 (910B, one 910C die): separate cube and vector cores.
    Ascend910b,
    /// A5 (950).
    Ascend950,
}

impl Arch {
    pub const ALL: [Arch; 2] = [Arch::Ascend910b, Arch::Ascend950];

    /// The architecture named `ascend910b` or `ascend950` (the names of `std/arch`).
    pub fn from_name(name: &str) -> Option<Arch> {
        match name {
            "ascend910b" => Some(Arch::Ascend910b),
            "ascend950" => Some(Arch::Ascend950),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Arch::Ascend910b => "ascend910b",
            Arch::Ascend950 => "ascend950",
        }
    }

    /// The on-chip buffer capacities (bytes) from the architecture file.
    pub fn buffers(self) -> Result<Buffers, String> {
        let a = wsp_arch::Arch::builtin(self.name()).map_err(|e| e.message)?;
        let get = |n: &str| {
            a.buffer(n)
                .ok_or_else(|| format!("architecture `{}` has no `{n}` buffer", self.name()))
        };
        Ok(Buffers {
            ub: get("UB")?,
            l1: get("L1")?,
            l0a: get("L0A")?,
            l0b: get("L0B")?,
            l0c: get("L0C")?,
        })
    }
}

/// Per-core buffer capacities in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Buffers {
    pub ub: u64,
    pub l1: u64,
    pub l0a: u64,
    pub l0b: u64,
    pub l0c: u64,
}

/// The units a kernel runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Unit {
    /// Only matmuls (and the data movement around them).
    Cube,
    /// No matmul.
    Vector,
    /// Matmuls and vector work (a mixed kernel: a cube core with its vector cores).
    Mixed,
}

/// One emitted kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelSource {
    /// `kernels/NAME.cpp`.
    pub path: String,
    /// The translation unit.
    pub code: String,
    /// The name of its `extern "C" int32_t ENTRY(const struct wsp_raw_task *)`.
    pub entry: String,
    pub unit: Unit,
}

/// The nonzero codes an entry returns (0 is success).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum ErrorCode {
    /// The task has the wrong number of region arguments or scalars.
    Arity = 1,
    /// A region argument is malformed or lies outside its tensor.
    Region = 2,
    /// A region argument's element size is not its parameter's dtype.
    ElemSize = 3,
    /// A region's extent does not fit its parameter's tile (larger than the static shape, or
    /// smaller in a dimension that is not partial).
    Extent = 4,
    /// An `out`/`inout` parameter received an input-only region.
    Direction = 5,
    /// A run-time error of the kernel body (an index outside a tile, an integer division by
    /// zero, a pipe whose other core has finished, `rowtopk` with more than the valid columns).
    Body = 6,
}

/// The C identifier of a kernel's entry.
pub fn entry_name(k: &Kernel) -> String {
    format!("wsp_kernel_{}", emit::ident(&k.name))
}

/// Emits `k` as a PTO-ISA C++ translation unit for `arch`, or the diagnostic that names what
/// cannot be lowered. The unit includes `"wsp_math.h"` ([`wsp_ir::math::c_header`]), which a
/// tree has beside its kernels.
pub fn emit_kernel(k: &Kernel, arch: Arch) -> Result<KernelSource, BackendDiagnostic> {
    let buffers = arch
        .buffers()
        .map_err(|m| BackendDiagnostic::error(m, k.at.clone()))?;
    let (code, unit) = emit::emit(k, arch, buffers)?;
    Ok(KernelSource {
        path: format!("kernels/{}.cpp", emit::ident(&k.name)),
        code,
        entry: entry_name(k),
        unit,
    })
}

/// The CPU stand-in for the PTO-ISA tile API: `(relative path, contents)`; compile emitted
/// kernels with `-I <dir>/pto_standin` (and `-I` the directory of `wsp_task.h`).
pub fn standin_files() -> Vec<(String, String)> {
    vec![
        (
            "pto_standin/pto/pto-inst.hpp".to_string(),
            include_str!("../../standin/pto/pto-inst.hpp").to_string(),
        ),
        (
            "pto_standin/pto/wsp_math.h".to_string(),
            wsp_ir::math::c_header(),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use wsp_ir::kernel::{BinaryOp, Direction, Op, TileType};
    use wsp_ir::typing::KernelBuilder;
    use wsp_ir::DType;

    fn kernel(name: &str, matmul: bool, vector: bool) -> Kernel {
        let t = TileType::new(DType::F32, 16, 16);
        let mut b = KernelBuilder::new(name);
        let x = b.tile_param("x", Direction::In, t);
        let o = b.tile_param("out", Direction::Out, t);
        let xv = b.load(x).expect("x");
        let mut v = xv;
        if matmul {
            v = b
                .op(Op::Matmul {
                    a: v,
                    b: xv,
                    acc: None,
                })
                .expect("matmul");
        }
        if vector {
            v = b.binary(BinaryOp::Add, v, xv).expect("add");
        }
        b.store(o, v);
        b.finish().expect("kernel")
    }

    #[test]
    fn a_kernel_source_names_its_file_entry_and_units() {
        let s = emit_kernel(&kernel("add-1", false, true), Arch::Ascend910b).expect("emits");
        assert_eq!(s.path, "kernels/add_1.cpp");
        assert_eq!(s.entry, "wsp_kernel_add_1");
        assert_eq!(s.unit, Unit::Vector);
        assert!(s.code.contains("#include <pto/pto-inst.hpp>"));
        assert!(s
            .code
            .contains("extern \"C\" int32_t wsp_kernel_add_1(const struct wsp_raw_task *task)"));
        assert!(
            s.code.contains("TLOAD(") && s.code.contains("TADD(") && s.code.contains("TSTORE(")
        );
        let c = emit_kernel(&kernel("mm", true, false), Arch::Ascend950).expect("emits");
        assert_eq!(c.unit, Unit::Cube);
        assert!(c.code.contains("TMATMUL(") && c.code.contains("TileLeft<float"));
        let m = emit_kernel(&kernel("mix", true, true), Arch::Ascend950).expect("emits");
        assert_eq!(m.unit, Unit::Mixed);
    }

    #[test]
    fn architectures_by_name_with_their_buffers() {
        assert_eq!(Arch::from_name("ascend910b"), Some(Arch::Ascend910b));
        assert_eq!(Arch::from_name("ascend950"), Some(Arch::Ascend950));
        assert_eq!(Arch::from_name("aie"), None);
        for a in Arch::ALL {
            let b = a.buffers().expect("buffers");
            assert!(b.ub > 0 && b.l1 > b.l0a && b.l0c > 0, "{a:?}: {b:?}");
        }
    }

    #[test]
    fn the_standin_is_the_real_librarys_include_path() {
        let f = standin_files();
        assert_eq!(f.len(), 2);
        assert_eq!(f[0].0, "pto_standin/pto/pto-inst.hpp");
        assert!(f[0].1.contains("TROWSUM") && f[0].1.contains("#include \"wsp_math.h\""));
        assert_eq!(f[1].0, "pto_standin/pto/wsp_math.h");
        assert!(f[1].1.contains("wsp_math_expf"));
    }
}

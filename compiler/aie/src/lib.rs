//! The AIE backend (`wsp emit --target aie --arch aie-ml`).
//!
//! AIE-ML has no run-time scheduler, so the program's task set is placed statically
//! ([`plan`]): the workload is expanded at compile time, tasks go to compute tiles by the
//! schedule's dispatch policy (evaluated at compile time), global tensors move through the
//! shim DMA into per-tile object FIFOs (and results back), and CSP channels become object
//! FIFOs between the tiles of their processes with the channel's depth. The emitted tree:
//!
//! * `aie.mlir`: the MLIR-AIE design ([`mlir`]);
//! * `kernels/NAME.cc`, `kernels/wsp_aie.h` and `kernels/wsp_math.h`: each kernel as C++ for an AIE core
//!   ([`kernel_cc`]), implementing wsp's numeric contract;
//! * `cpu/` and `CMakeLists.txt`: a CPU stand-in that executes the same dataflow (object
//!   FIFOs, shim transfers, core programs) with the same kernels ([`cpu`]);
//! * `README.md`: what the tree is and how to build and run it.

use wsp_backend::{Backend, BackendDiagnostic, EmitOptions, FileTree};
use wsp_ir::Program;

pub mod cpu;
pub mod kernel_cc;
pub mod mlir;
pub mod plan;

/// The AIE backend.
#[derive(Clone, Copy, Debug, Default)]
pub struct AieBackend;

/// The architecture model the backend reads (compute tile data memory).
pub const ARCH: &str = "aie-ml";

impl AieBackend {
    /// The placement alone (for tests and tools), with the warnings it produced: of the
    /// schedule `wsp run` runs by default.
    pub fn plan(
        &self,
        program: &Program,
    ) -> Result<(plan::Plan, Vec<BackendDiagnostic>), Vec<BackendDiagnostic>> {
        self.plan_schedule(program, None)
    }

    /// The placement of the schedule named `schedule` (`None`: the default one).
    pub fn plan_schedule(
        &self,
        program: &Program,
        schedule: Option<&str>,
    ) -> Result<(plan::Plan, Vec<BackendDiagnostic>), Vec<BackendDiagnostic>> {
        let arch = wsp_arch::Arch::builtin(ARCH).map_err(|e| {
            vec![BackendDiagnostic::error(
                format!("the architecture model `{ARCH}` does not load: {e}"),
                None,
            )]
        })?;
        let dm = arch.buffer("DM").ok_or_else(|| {
            vec![BackendDiagnostic::error(
                format!("the architecture model `{ARCH}` has no `DM` buffer size"),
                None,
            )]
        })?;
        let mut warnings = Vec::new();
        let p = plan::plan(program, dm, schedule, &mut warnings)?;
        Ok((p, warnings))
    }
}

impl Backend for AieBackend {
    fn name(&self) -> &str {
        "aie"
    }

    fn archs(&self) -> Vec<String> {
        vec![ARCH.to_string()]
    }

    fn emit(
        &self,
        program: &Program,
        opts: &EmitOptions,
    ) -> Result<(FileTree, Vec<BackendDiagnostic>), Vec<BackendDiagnostic>> {
        if let Some(a) = opts.arch.as_deref() {
            if a != ARCH {
                return Err(vec![BackendDiagnostic::error(
                    format!("the AIE target has no architecture `{a}`"),
                    None,
                )
                .with_help(format!("use --arch {ARCH}"))]);
            }
        }
        let mut schedule = None;
        for (k, v) in &opts.options {
            match k.as_str() {
                "schedule" => schedule = Some(v.as_str()),
                other => {
                    return Err(vec![BackendDiagnostic::error(
                        format!("the AIE target has no option `{other}`"),
                        None,
                    )
                    .with_help("options: schedule=NAME")])
                }
            }
        }
        let (plan, warnings) = self.plan_schedule(program, schedule)?;
        let mut tree = FileTree::new();
        let mut extern_files = Vec::new();
        let add = |tree: &mut FileTree, path: &str, text: String| {
            tree.add(path, text)
                .map_err(|m| vec![BackendDiagnostic::error(m, None)])
        };
        add(&mut tree, "aie.mlir", mlir::design(program, &plan))?;
        add(
            &mut tree,
            "kernels/wsp_aie.h",
            kernel_cc::HEADER.to_string(),
        )?;
        add(&mut tree, "kernels/wsp_math.h", wsp_ir::math::c_header())?;
        for (i, io) in plan.io.iter().enumerate() {
            let (Some(io), Some(k)) = (io, program.kernels.get(i)) else {
                continue;
            };
            let path = format!("kernels/{}.cc", kernel_cc::sanitize(&k.name));
            if let Some(e) = k.externs.iter().find(|e| e.target == "aie") {
                // The extern kernel's own C++ for the core, which defines `wsp_NAME` with the
                // signature the generated kernels have (docs/backends.md).
                let Some(src) = opts.extern_source(i, "aie") else {
                    return Err(vec![BackendDiagnostic::error(
                        format!(
                            "the contents of `{}`, the `aie` source of kernel `{}`, were not given to the backend",
                            e.path, k.name
                        ),
                        k.at.clone(),
                    )
                    .with_help("`wsp emit` reads it relative to the file that declares the kernel")]);
                };
                extern_files.push((path, src.contents.clone()));
                continue;
            }
            let at = k.at.clone();
            tree.add(&path, kernel_cc::kernel_source(k, io))
                .map_err(|m| {
                    vec![BackendDiagnostic::error(
                        format!("kernel `{}`: {m}", k.name),
                        at,
                    )]
                })?;
        }
        add(&mut tree, "cpu/aie_cpu.h", cpu::RUNTIME.to_string())?;
        add(&mut tree, "cpu/main.cc", cpu::MAIN.to_string())?;
        add(
            &mut tree,
            "cpu/design.cc",
            cpu::design_source(program, &plan),
        )?;
        add(&mut tree, "CMakeLists.txt", cpu::cmake(program, &plan))?;
        add(&mut tree, "README.md", readme(&plan))?;
        for (path, contents) in extern_files {
            tree.add(&path, contents)
                .map_err(|m| vec![BackendDiagnostic::error(m, None)])?;
        }
        Ok((tree, warnings))
    }
}

fn readme(plan: &plan::Plan) -> String {
    let used = plan.tiles.iter().filter(|t| !t.program.is_empty()).count();
    format!(
        "# AIE design of workload `{}` (wsp emit --target aie --arch aie-ml)\n\n\
* `aie.mlir`: the MLIR-AIE design for `npu1_4col`: {used} compute tiles, {} object FIFOs, {} tasks placed statically, {} host operations in the runtime sequence.\n\
* `kernels/*.cc`: the kernels as C++ for the AIE cores (`extern \"C\" wsp_NAME`), with `kernels/wsp_aie.h` and `kernels/wsp_math.h` (wsp's f32 exp, log, tanh).\n\
* `cpu/`, `CMakeLists.txt`: the CPU stand-in of the same dataflow.\n\n\
Build and run the stand-in:\n\n\
    cmake -S . -B build && cmake --build build\n\
    ./build/aie_cpu --data DIR_OF_THE_PROGRAM --out-dir RES\n\n\
It writes every output tensor as `RES/NAME.npy`, equal to `wsp run --out-dir RES` for the\n\
same program. Kernels compute wsp's numeric semantics (f32 matmul included); on the device\n\
the AIE-ML matrix unit multiplies bf16.\n",
        plan.workload,
        plan.fifos.len(),
        plan.tasks.len(),
        plan.host.len()
    )
}

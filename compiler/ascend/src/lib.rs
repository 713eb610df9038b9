//! The Ascend backend (`wsp emit --target ascend --arch ascend910b|ascend950`).
//!
//! * [`kernel`]: one C++ translation unit per kernel against the PTO-ISA tile API, and the
//!   CPU stand-in of exactly the tile calls it uses.
//! * [`host`]: the orchestration as C against the wsp runtime's submit API, the host
//!   launcher, the CMake project and the plan file.
//!
//! [`emit`] puts them together into one source tree; [`AscendBackend`] is the [`Backend`].

pub mod host;
pub mod kernel;

use std::path::PathBuf;

use wsp_backend::{Backend, BackendDiagnostic, EmitOptions, FileTree};
use wsp_ir::Program;

/// The architectures the backend emits for; the first is the default.
pub const ARCHS: [&str; 2] = ["ascend910b", "ascend950"];

/// The Ascend backend.
#[derive(Clone, Copy, Debug, Default)]
pub struct AscendBackend;

impl Backend for AscendBackend {
    fn name(&self) -> &str {
        "ascend"
    }

    fn archs(&self) -> Vec<String> {
        ARCHS.iter().map(|s| s.to_string()).collect()
    }

    fn emit(
        &self,
        program: &Program,
        opts: &EmitOptions,
    ) -> Result<(FileTree, Vec<BackendDiagnostic>), Vec<BackendDiagnostic>> {
        emit(program, opts)
    }
}

/// Where the CMake project looks for `libwsp_runtime_capi.a` unless told: next to the running
/// executable (cargo puts `wsp` and the library in the same target directory).
fn default_runtime_lib() -> String {
    std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(|d| d.join("libwsp_runtime_capi.a")))
        .unwrap_or_else(|| PathBuf::from("libwsp_runtime_capi.a"))
        .display()
        .to_string()
}

/// Emits the source tree of `program`: `kernels/*.cpp` and the CPU stand-in (the [`kernel`]
/// module), `orchestration.c`, `host.c`, `wsp_program.h`, `include/`, `CMakeLists.txt` and
/// `plan.json` (the [`host`] module).
///
/// The architecture is `opts.arch`, else the schedule's `.target(...)` when it names an
/// Ascend model, else `ascend910b` (as `wsp run` chooses). Options (`--option KEY=VALUE`):
/// `schedule=NAME` (default: what `wsp run` runs), `runtime_lib=PATH` (the default of the
/// CMake variable `WSP_RUNTIME_LIB`).
pub fn emit(
    program: &Program,
    opts: &EmitOptions,
) -> Result<(FileTree, Vec<BackendDiagnostic>), Vec<BackendDiagnostic>> {
    let schedule = opts
        .options
        .iter()
        .rev()
        .find(|(k, _)| k == "schedule")
        .map(|(_, v)| v.as_str());
    // As `wsp run`: `--arch`, else the schedule's `.target(...)` when it is an Ascend model,
    // else the first.
    let arch_name = opts.arch.clone().unwrap_or_else(|| {
        host::schedule_target(program, schedule)
            .filter(|t| ARCHS.contains(&t.as_str()))
            .unwrap_or_else(|| ARCHS[0].to_string())
    });
    let Some(karch) = kernel::Arch::from_name(&arch_name) else {
        return Err(vec![BackendDiagnostic::error(
            format!(
                "the ascend backend has no architecture `{arch_name}`; it emits for {}",
                ARCHS.join(", ")
            ),
            None,
        )]);
    };
    let arch = wsp_arch::Arch::builtin(&arch_name)
        .map_err(|e| vec![BackendDiagnostic::error(e.to_string(), None)])?;
    let mut hopts = host::HostOptions {
        arch_name: arch_name.clone(),
        schedule: None,
        runtime_lib: default_runtime_lib(),
        standin_include: Vec::new(),
    };
    for (k, v) in &opts.options {
        match k.as_str() {
            "schedule" => hopts.schedule = Some(v.clone()),
            "runtime_lib" => hopts.runtime_lib = v.clone(),
            other => {
                return Err(vec![BackendDiagnostic::error(
                    format!("the ascend backend has no option `{other}`"),
                    None,
                )
                .with_help("options: schedule=NAME, runtime_lib=PATH")])
            }
        }
    }
    let mut tree = FileTree::new();
    let mut diags = Vec::new();
    let mut kernels = Vec::new();
    for (i, k) in program.kernels.iter().enumerate() {
        // An extern kernel's own `ascend:` source replaces the generated translation unit; it
        // defines the same entry (`wsp_kernel_NAME`, taking the runtime's `wsp_raw_task`).
        if let Some(e) = k.externs.iter().find(|e| e.target == "ascend") {
            let path = format!("kernels/{}.cpp", kernel::ident(&k.name));
            match opts.extern_source(i, "ascend") {
                Some(src) => {
                    if let Err(m) = tree.add(&path, src.contents.clone()) {
                        diags.push(BackendDiagnostic::error(
                            format!("kernel `{}`: {m}", k.name),
                            k.at.clone(),
                        ));
                    }
                }
                None => diags.push(
                    BackendDiagnostic::error(
                        format!(
                            "the contents of `{}`, the `ascend` source of kernel `{}`, were not given to the backend",
                            e.path, k.name
                        ),
                        k.at.clone(),
                    )
                    .with_help("`wsp emit` reads it relative to the file that declares the kernel"),
                ),
            }
            kernels.push(host::HostKernel {
                name: k.name.clone(),
                entry: kernel::entry_name(k),
                source: path,
                unit: host::plan_class(k).to_string(),
            });
            continue;
        }
        match kernel::emit_kernel(k, karch) {
            Ok(src) => {
                if let Err(m) = tree.add(&src.path, src.code.clone()) {
                    diags.push(BackendDiagnostic::error(
                        format!("kernel `{}`: {m}", k.name),
                        k.at.clone(),
                    ));
                }
                kernels.push(host::HostKernel {
                    name: k.name.clone(),
                    entry: src.entry.clone(),
                    source: src.path.clone(),
                    unit: match src.unit {
                        kernel::Unit::Cube => "cube",
                        kernel::Unit::Vector => "vector",
                        kernel::Unit::Mixed => "mixed",
                    }
                    .to_string(),
                });
            }
            Err(d) => {
                diags.push(d);
                // The host side still reports what it cannot lower (no tree is returned).
                kernels.push(host::HostKernel {
                    name: k.name.clone(),
                    entry: String::new(),
                    source: String::new(),
                    unit: host::plan_class(k).to_string(),
                });
            }
        }
    }
    // The kernels' f32 exp, log and tanh (`#include "wsp_math.h"` beside them).
    if let Err(m) = tree.add("kernels/wsp_math.h", wsp_ir::math::c_header()) {
        diags.push(BackendDiagnostic::error(m, None));
    }
    for (path, code) in kernel::standin_files() {
        // The stand-in's include root: the directory above `pto/`.
        if let Some(i) = path.find("/pto/") {
            let root = path[..i].to_string();
            if !hopts.standin_include.contains(&root) {
                hopts.standin_include.push(root);
            }
        }
        if let Err(m) = tree.add(&path, code) {
            diags.push(BackendDiagnostic::error(m, None));
        }
    }
    if let Err(d) = host::emit_host(program, &arch, &kernels, &hopts, &mut tree) {
        diags.extend(d);
    }
    if diags.is_empty() {
        Ok((tree, Vec::new()))
    } else {
        Err(diags)
    }
}

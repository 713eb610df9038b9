//! The host side of the Ascend backend: the orchestration in C against the wsp runtime's
//! submit API (`orchestration.c`), the host launcher (`host.c`: inputs from `.npy` files and
//! initialisers, outputs to `.npy`), the CMake project and the plan file.
//!
//! The tree builds for the CPU (`-DWSP_BUILD_CPU=ON`): kernels against the CPU stand-in of the
//! tile API (or PTO-ISA's own CPU headers with `-DPTO_ISA_ROOT`), and the orchestration linked
//! against `libwsp_runtime_capi.a`, the runtime `wsp run` uses — so the emitted orchestration
//! generates its tasks on the same dependency-tracking runtime, with the same configuration,
//! regions, keys and cycles, and makes the same task graph.

mod hostc;
mod orch;
mod sched;

pub use sched::schedule_target;

use std::fmt::Write as _;

use wsp_arch::Arch;
use wsp_backend::{BackendDiagnostic, FileTree};
use wsp_ir::data;
use wsp_ir::dtype::ScalarValue;
use wsp_ir::kernel::{Kernel, Op, ParamKind, Stmt};
use wsp_ir::workload::{AxisKind, Program, TensorKind, WorkloadBody, WorkloadId};

/// A kernel as the host side needs it: its C entry and the source file that defines it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostKernel {
    /// The kernel's name in the program.
    pub name: String,
    /// The `extern "C"` entry, `int32_t entry(const struct wsp_raw_task *)`.
    pub entry: String,
    /// The source file in the tree (`kernels/NAME.cpp`), compiled into `wsp_host`.
    pub source: String,
    /// What it runs on, for the plan: `cube`, `vector` or `mixed`.
    pub unit: String,
}

/// What the host side needs besides the program.
#[derive(Clone, Debug)]
pub struct HostOptions {
    /// The built-in architecture model the tree is for (`ascend910b`, `ascend950`).
    pub arch_name: String,
    /// The schedule to emit (`None`: what `wsp run` runs by default).
    pub schedule: Option<String>,
    /// The default of the CMake cache variable `WSP_RUNTIME_LIB`.
    pub runtime_lib: String,
    /// Directories (relative to the tree) holding the kernels' CPU stand-in headers.
    pub standin_include: Vec<String>,
}

/// The runtime's C headers, copied into every tree.
pub const WSP_RUNTIME_H: &str = include_str!("../../../../runtime/capi/include/wsp_runtime.h");
pub const WSP_TASK_H: &str = include_str!("../../../../runtime/capi/include/wsp_task.h");

fn has_matmul(stmts: &[Stmt]) -> bool {
    stmts.iter().any(|s| match s {
        Stmt::Op { op, .. } => matches!(op, Op::Matmul { .. }),
        Stmt::For { body, .. } | Stmt::Section { body, .. } => has_matmul(body),
        _ => false,
    })
}

fn has_vector_op(stmts: &[Stmt]) -> bool {
    stmts.iter().any(|s| match s {
        Stmt::Op { op, .. } => matches!(
            op,
            Op::Binary { .. }
                | Op::Unary { .. }
                | Op::Reduce { .. }
                | Op::Cmp { .. }
                | Op::Select { .. }
                | Op::Cast { .. }
                | Op::Transpose { .. }
        ),
        Stmt::For { body, .. } | Stmt::Section { body, .. } => has_vector_op(body),
        _ => false,
    })
}

/// The core class a kernel's tasks run on (as `wsp run` registers it): a kernel with a matmul
/// on the cube cores, any other on the vector cores.
pub fn core_class(k: &Kernel) -> &'static str {
    if k.body.as_deref().is_some_and(has_matmul) {
        "cube"
    } else {
        "vector"
    }
}

/// The plan's classification: `cube`, `vector`, or `mixed` (a matmul and vector work; its
/// tasks run on the cube class).
pub fn plan_class(k: &Kernel) -> &'static str {
    match k.body.as_deref() {
        Some(b) if has_matmul(b) && has_vector_op(b) => "mixed",
        Some(b) if has_matmul(b) => "cube",
        _ => "vector",
    }
}

/// Emits the host side of `program` into `tree`: `orchestration.c`, `host.c`,
/// `wsp_program.h`, `include/wsp_runtime.h`, `include/wsp_task.h`, `CMakeLists.txt` and
/// `plan.json`. `kernels` are the program's kernels in order.
pub fn emit_host(
    program: &Program,
    arch: &Arch,
    kernels: &[HostKernel],
    opts: &HostOptions,
    tree: &mut FileTree,
) -> Result<(), Vec<BackendDiagnostic>> {
    let err = |m: String| vec![BackendDiagnostic::error(m, None)];
    if kernels.len() != program.kernels.len()
        || kernels
            .iter()
            .zip(&program.kernels)
            .any(|(h, k)| h.name != k.name)
    {
        return Err(err(
            "the host side was given kernels that are not the program's, in its order".into(),
        ));
    }
    let params = data::resolve_params(program, &[]).map_err(|e| err(e.message))?;
    let mut shapes = Vec::new();
    for t in &program.tensors {
        let s = data::tensor_shape(t, &params)
            .map_err(|e| vec![BackendDiagnostic::error(e.message, t.at.clone())])?;
        shapes.push(s);
    }
    let (sched, w) = program.select_run(opts.schedule.as_deref()).map_err(err)?;
    let (pol, keys) = sched::policies(program, sched).map_err(err)?;
    let max_tiles = program
        .kernels
        .iter()
        .map(|k| {
            k.params
                .iter()
                .filter(|p| matches!(p.kind, ParamKind::Tile { .. }))
                .count()
        })
        .max()
        .unwrap_or(0);

    let header = hostc::program_h(program, kernels, &shapes);
    let body = orch::Orch::new(program, arch, &params, &shapes, &keys).emit(w)?;
    let mut orch_c = String::from(
        "/* orchestration.c: generated by wsp (the Ascend backend). The entry schedule's workload\n * as C against wsp_runtime.h: every task submitted with its region arguments, scalars,\n * keys and compute cycles (from the architecture model's cost tables, evaluated when the\n * tree was emitted), so the runtime infers the task graph `wsp run` makes. */\n#include <math.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include \"wsp_program.h\"\n\n",
    );
    orch_c.push_str(include_str!("prelude.c"));
    orch_c.push_str(orch::CALL_HELPERS);
    orch_c.push('\n');
    orch_c.push_str(&sched::configure_c(&pol, max_tiles));
    orch_c.push('\n');
    orch_c.push_str(&body);

    let host_c = hostc::host_c(program, &params, &shapes, kernels, &opts.arch_name)?;
    let cmake = cmake_lists(program, kernels, opts);
    let plan = plan_json(
        program,
        kernels,
        w,
        sched.map(|s| s.name.as_str()),
        opts,
        &pol,
    );

    let add = |tree: &mut FileTree, p: &str, c: String| tree.add(p, c).map_err(err);
    add(tree, "wsp_program.h", header)?;
    add(tree, "orchestration.c", orch_c)?;
    add(tree, "host.c", host_c)?;
    add(tree, "include/wsp_runtime.h", WSP_RUNTIME_H.to_string())?;
    add(tree, "include/wsp_task.h", WSP_TASK_H.to_string())?;
    add(tree, "CMakeLists.txt", cmake)?;
    add(tree, "plan.json", plan)?;
    Ok(())
}

fn cmake_lists(program: &Program, kernels: &[HostKernel], opts: &HostOptions) -> String {
    let name: String = program
        .source
        .as_deref()
        .and_then(|s| std::path::Path::new(s).file_stem())
        .and_then(|s| s.to_str())
        .unwrap_or("program")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let mut srcs: Vec<&str> = kernels.iter().map(|k| k.source.as_str()).collect();
    srcs.sort();
    srcs.dedup();
    let q = |s: &str| format!("\"{}\"", s.replace('\\', "/").replace('"', "\\\""));
    let mut c = String::new();
    let _ = write!(
        c,
        r#"# Generated by wsp (the Ascend backend) for `{src}` on {arch}.
#
# CPU build (the only one generated so far):
#   cmake -S . -B build -DWSP_BUILD_CPU=ON [-DPTO_ISA_ROOT=DIR] [-DWSP_RUNTIME_LIB=PATH]
#   cmake --build build
#   build/wsp_host --data DIR --out-dir RES
# Kernels build against the CPU stand-in of the tile API in this tree, or against PTO-ISA's
# own headers when PTO_ISA_ROOT is given; the orchestration links the wsp runtime's C ABI
# (libwsp_runtime_capi.a: `cargo build -p wsp-runtime-capi` in the wsp repository).
cmake_minimum_required(VERSION 3.16)
project(wsp_{name} C CXX)

option(WSP_BUILD_CPU "Build the CPU simulation (kernels on the CPU, tasks on the wsp runtime)" OFF)
set(WSP_RUNTIME_LIB {lib} CACHE FILEPATH "The wsp runtime's C ABI, libwsp_runtime_capi.a")
set(PTO_ISA_ROOT "" CACHE PATH "A PTO-ISA checkout whose include/ replaces the CPU stand-in")

if(NOT WSP_BUILD_CPU)
  message(FATAL_ERROR
    "This tree is built for the CPU: configure with -DWSP_BUILD_CPU=ON.\n"
    "A device build is not generated yet: it needs the CANN toolkit (the bisheng/ccec compiler "
    "for the PTO-ISA kernels, the AICPU toolchain for orchestration.c) and a task runtime "
    "implementing wsp_runtime.h on the device (pto-runtime style); see docs/backends.md.")
endif()

if(NOT EXISTS "${{WSP_RUNTIME_LIB}}")
  message(FATAL_ERROR
    "The wsp runtime library was not found at `${{WSP_RUNTIME_LIB}}`.\n"
    "Build it in the wsp repository with `cargo build -p wsp-runtime-capi` and pass "
    "-DWSP_RUNTIME_LIB=<target dir>/debug/libwsp_runtime_capi.a")
endif()

set(CMAKE_C_STANDARD 11)
if(PTO_ISA_ROOT)
  # PTO-ISA's CPU implementation (include/pto/cpu) is C++23 and selected by __CPU_SIM; its
  # own CPU tests build with clang++-19 (-DCMAKE_CXX_COMPILER=clang++-19).
  set(CMAKE_CXX_STANDARD 23)
else()
  set(CMAKE_CXX_STANDARD 17)
endif()
find_package(Threads REQUIRED)

add_executable(wsp_host host.c orchestration.c
"#,
        src = program.source.as_deref().unwrap_or("?"),
        arch = opts.arch_name,
        lib = q(&opts.runtime_lib),
    );
    for s in &srcs {
        let _ = writeln!(c, "  {}", q(s));
    }
    c.push_str(")\ntarget_include_directories(wsp_host PRIVATE \"${CMAKE_CURRENT_SOURCE_DIR}\" \"${CMAKE_CURRENT_SOURCE_DIR}/include\")\n");
    c.push_str("if(PTO_ISA_ROOT)\n  target_include_directories(wsp_host PRIVATE \"${PTO_ISA_ROOT}/include\")\n  target_compile_definitions(wsp_host PRIVATE $<$<COMPILE_LANGUAGE:CXX>:__CPU_SIM>)\n  target_compile_options(wsp_host PRIVATE \"$<$<COMPILE_LANGUAGE:CXX>:SHELL:-include stdint.h>\" \"$<$<COMPILE_LANGUAGE:CXX>:SHELL:-include stddef.h>\")\nelse()\n");
    for d in &opts.standin_include {
        let _ = writeln!(
            c,
            "  target_include_directories(wsp_host PRIVATE \"${{CMAKE_CURRENT_SOURCE_DIR}}/{}\")",
            d.replace('"', "")
        );
    }
    c.push_str("endif()\ntarget_compile_options(wsp_host PRIVATE $<$<COMPILE_LANGUAGE:C>:-Wall -Wextra>)\ntarget_link_libraries(wsp_host PRIVATE \"${WSP_RUNTIME_LIB}\" Threads::Threads ${CMAKE_DL_LIBS} m)\n");
    c
}

/// What the program uses that the backends' capability matrix names.
fn capabilities(p: &Program, pol: &wsp_runtime::Policies) -> Vec<String> {
    let mut caps: Vec<String> = sched::forms(pol)
        .iter()
        .map(|(f, _)| {
            wsp_runtime::policy::REGISTRY
                .iter()
                .find(|i| i.form == *f)
                .map_or_else(|| (*f).to_string(), |i| i.capability.to_string())
        })
        .collect();
    caps.push("task_window".into());
    for a in &p.axes {
        caps.push(
            match a.kind {
                AxisKind::Dense { .. } => "axis.dense",
                AxisKind::DenseDyn { .. } => "axis.dense_dyn",
                AxisKind::Ragged { .. } => "axis.ragged",
                AxisKind::Sparse { .. } => "axis.sparse",
            }
            .into(),
        );
    }
    for w in &p.workloads {
        match &w.body {
            WorkloadBody::Sequential { .. } => caps.push("workload.sequential".into()),
            WorkloadBody::Combine { .. } => caps.push("workload.combine".into()),
            _ => {}
        }
    }
    if p.tensors.iter().any(|t| t.kind == TensorKind::Local) {
        caps.push("workload.local_tensor".into());
    }
    caps.sort();
    caps.dedup();
    caps
}

fn plan_json(
    p: &Program,
    hk: &[HostKernel],
    w: WorkloadId,
    schedule: Option<&str>,
    opts: &HostOptions,
    pol: &wsp_runtime::Policies,
) -> String {
    // The tree runs with the params' declared values.
    let params: Vec<ScalarValue> = p.params.iter().map(|q| q.default).collect();
    let counts = wsp_ir::counts::static_task_counts(p, w, &params);
    let kernels: Vec<serde_json::Value> = p
        .kernels
        .iter()
        .zip(&counts)
        .zip(hk)
        .map(|((k, n), h)| {
            serde_json::json!({
                "name": k.name,
                "unit": h.unit,
                "core_class": core_class(k),
                "entry": h.entry,
                "source": h.source,
                "tasks": n,
            })
        })
        .collect();
    let total = counts
        .iter()
        .try_fold(0u64, |a, n| n.map(|n| a.saturating_add(n)));
    let v = serde_json::json!({
        "arch": opts.arch_name,
        "program": p.source,
        "schedule": schedule,
        "workload": p.workloads.get(w.index()).map(|w| w.name.clone()),
        "task_window": pol.task_window,
        "kernels": kernels,
        "tasks": total,
        "capabilities": capabilities(p, pol),
    });
    let mut s = serde_json::to_string_pretty(&v).unwrap_or_default();
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::orch::c_str;
    use super::sched::forms;
    use wsp_runtime::{Dispatch, Policies, Pools, ReadyOrder, Streams, Timing, WindowMode};

    #[test]
    fn policy_forms_rebuild_the_policies() {
        let cases = [
            Policies::default(),
            Policies {
                dispatch: Dispatch::RoundRobin(4),
                ready: ReadyOrder::Lifo,
                timing: Timing::Batched(8),
                task_window: 16,
                window_mode: WindowMode::Abort,
                streams: Some(Streams(2)),
                pools: Pools {
                    tensormap: Some(64),
                    deplist: None,
                    ready: Some(3),
                    heap: Some(5 << 32 | 7),
                },
            },
            Policies {
                dispatch: Dispatch::Hash,
                ready: ReadyOrder::Priority,
                timing: Timing::RateLimit(3),
                task_window: 1024,
                window_mode: WindowMode::Benchmark,
                streams: None,
                pools: Pools::default(),
            },
            Policies {
                dispatch: Dispatch::Affinity,
                ready: ReadyOrder::Fifo,
                timing: Timing::Interleaved(5),
                task_window: 1024,
                window_mode: WindowMode::Stall,
                streams: None,
                pools: Pools {
                    tensormap: None,
                    deplist: Some(9),
                    ready: None,
                    heap: None,
                },
            },
        ];
        for pol in cases {
            let mut p = Policies {
                task_window: pol.task_window,
                ..Policies::default()
            };
            for (form, args) in forms(&pol) {
                p.apply(form, &args).expect("a registered form");
            }
            assert_eq!(p, pol);
        }
    }

    #[test]
    fn c_strings_are_escaped() {
        assert_eq!(c_str("a\"b\\c\nd"), "\"a\\\"b\\\\c\\nd\"");
        // Non-ASCII as three-digit octal escapes, so a following digit is not absorbed.
        assert_eq!(c_str("é1"), "\"\\303\\2511\"");
        assert_eq!(c_str("*/"), "\"*/\"");
    }
}

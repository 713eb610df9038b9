//! The CPU stand-in (`cpu/`): the design's tables (`cpu/design.cc`) printed from the same
//! [`Plan`] as `aie.mlir`, the runtime that executes them (`cpu/aie_cpu.h`), its `main`
//! (`cpu/main.cc`) and a `CMakeLists.txt` that builds them with the kernels.

use std::fmt::Write;

use wsp_backend::c_string_literal;
use wsp_ir::dtype::DType;
use wsp_ir::kernel::ParamKind;
use wsp_ir::tensor::{convert, encode_el, El};
use wsp_ir::workload::{Init, TensorKind};
use wsp_ir::Program;

use crate::kernel_cc::{entry_name, sanitize, st};
use crate::plan::{End, HostOp, Plan, Step};

pub const RUNTIME: &str = include_str!("cc/aie_cpu.h");
pub const MAIN: &str = include_str!("cc/main.cc");

fn bytes_literal(b: &[u8]) -> String {
    let mut s = String::from("{");
    for (i, x) in b.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        if i % 32 == 31 {
            s.push('\n');
        }
        let _ = write!(s, "{x}");
    }
    s.push('}');
    s
}

fn scalar_bits(v: wsp_ir::dtype::ScalarValue, d: DType) -> u64 {
    let mut b = Vec::new();
    encode_el(El::from_scalar(v, d), d, &mut b, false);
    b.iter()
        .enumerate()
        .fold(0u64, |a, (i, x)| a | (u64::from(*x) << (8 * i)))
}

/// `cpu/design.cc`.
pub fn design_source(program: &Program, plan: &Plan) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "// The tables of the AIE design of workload `{}` for the CPU stand-in, printed from the\n// same placement as aie.mlir (wsp emit --target aie).",
        plan.workload
    );
    s.push_str("#include \"aie_cpu.h\"\n\nusing namespace wsp_cpu;\n\n");

    // Kernels and their trampolines.
    let mut tramp = Vec::new();
    for (ki, k) in program.kernels.iter().enumerate() {
        let Some(Some(io)) = plan.io.get(ki) else {
            tramp.push("nullptr".to_string());
            continue;
        };
        let mut params = Vec::new();
        let mut args = Vec::new();
        if !io.reads.is_empty() {
            params.push("uint8_t*".to_string());
            args.push("in".to_string());
        }
        if !io.writes.is_empty() {
            params.push("uint8_t*".to_string());
            args.push("out".to_string());
        }
        let mut e = 0;
        for _ in k.tile_params() {
            params.push("int32_t".into());
            params.push("int32_t".into());
            args.push(format!("ext[{e}]"));
            args.push(format!("ext[{}]", e + 1));
            e += 2;
        }
        let mut sc = 0;
        for p in &k.params {
            if let ParamKind::Scalar { dtype, .. } = p.kind {
                params.push(st(dtype).into());
                args.push(format!("scalar<{}>(sc[{sc}])", st(dtype)));
                sc += 1;
            }
        }
        let _ = writeln!(
            s,
            "extern \"C\" void {}({});",
            entry_name(k),
            params.join(", ")
        );
        let _ = writeln!(
            s,
            "static void call_{ki}(uint8_t* in, uint8_t* out, const int32_t* ext, const uint64_t* sc) {{\n  (void)in; (void)out; (void)ext; (void)sc;\n  {}({});\n}}",
            entry_name(k),
            args.join(", ")
        );
        tramp.push(format!("call_{ki}"));
    }
    let _ = writeln!(
        s,
        "static const KernelFn kKernels[] = {{{}}};\n",
        tramp.join(", ")
    );

    // Tensors.
    let mut tinfo = Vec::new();
    for (i, t) in plan.tensors.iter().enumerate() {
        let mut bytes_name = "nullptr".to_string();
        let (init, seed, path) = match (&t.init, t.kind) {
            (None, TensorKind::Input) => ("Required", 0, "nullptr".to_string()),
            (None, _) | (Some(Init::Zeros), _) => ("Zeros", 0, "nullptr".to_string()),
            (Some(Init::Random { seed }), _) => ("Random", *seed, "nullptr".to_string()),
            (Some(Init::Load { path }), _) => ("Load", 0, c_string_literal(path)),
            (Some(Init::Ones), _) | (Some(Init::Full { .. }), _) => {
                let el = match &t.init {
                    Some(Init::Full { value }) => El::from_scalar(*value, t.dtype),
                    _ => convert(El::F(1.0), t.dtype),
                };
                let mut b = Vec::new();
                encode_el(el, t.dtype, &mut b, false);
                let _ = writeln!(
                    s,
                    "static const uint8_t kInit{i}[] = {};",
                    bytes_literal(&b)
                );
                bytes_name = format!("kInit{i}");
                ("Repeat", 0, "nullptr".to_string())
            }
            (Some(Init::Literal { values }), _) => {
                let mut b = Vec::new();
                for v in values {
                    encode_el(El::from_scalar(*v, t.dtype), t.dtype, &mut b, false);
                }
                let _ = writeln!(
                    s,
                    "static const uint8_t kInit{i}[] = {};",
                    bytes_literal(&b)
                );
                bytes_name = format!("kInit{i}");
                ("Bytes", 0, "nullptr".to_string())
            }
        };
        let kind = match t.kind {
            TensorKind::Input => 0,
            TensorKind::Output => 1,
            TensorKind::Scratch | TensorKind::Local => 2,
        };
        let shape: Vec<String> = t.shape.iter().map(|d| format!("{d}ull")).collect();
        tinfo.push(format!(
            "  {{{}, {}, {kind}, {}, {}ull, {}, {{{}}}, InitKind::{init}, {seed}ull, {path}, {bytes_name}}}",
            c_string_literal(&t.name),
            c_string_literal(t.dtype.name()),
            t.dtype.size_bytes(),
            t.elements(),
            t.shape.len(),
            shape.join(", ")
        ));
    }
    let _ = writeln!(
        s,
        "static const TensorInfo kTensors[] = {{\n{}\n}};\n",
        tinfo.join(",\n")
    );

    // FIFOs.
    let end = |e: End| match e {
        End::Shim(c) => format!("EndKind::Shim, {c}"),
        End::Tile(i) => format!("EndKind::Tile, {i}"),
    };
    let fifos: Vec<String> = plan
        .fifos
        .iter()
        .map(|f| {
            format!(
                "  {{{}, {}, {}ull, {}, {}}}",
                c_string_literal(&f.name),
                f.depth,
                f.elem_bytes,
                end(f.producer),
                end(f.consumer)
            )
        })
        .collect();
    let _ = writeln!(
        s,
        "static const FifoInfo kFifos[] = {{\n{}\n}};\n",
        fifos.join(",\n")
    );

    // Host operations and their segments.
    let mut segs = Vec::new();
    let mut host = Vec::new();
    for op in &plan.host {
        match op {
            HostOp::Fill { fifo, segments } | HostOp::Drain { fifo, segments } => {
                let kind = if matches!(op, HostOp::Fill { .. }) {
                    "Fill"
                } else {
                    "Drain"
                };
                host.push(format!(
                    "{{HostKind::{kind}, {fifo}, {}, {}}}",
                    segs.len(),
                    segments.len()
                ));
                for g in segments {
                    segs.push(format!(
                        "{{{}, {}ull, {{{}ull, {}ull}}, {{{}ull, {}ull}}}}",
                        g.tensor.0, g.offset, g.sizes[0], g.sizes[1], g.strides[0], g.strides[1]
                    ));
                }
            }
            HostOp::Wait { fifo } => host.push(format!("{{HostKind::Wait, {fifo}, 0, 0}}")),
        }
    }
    if segs.is_empty() {
        segs.push("{0, 0ull, {0ull, 0ull}, {0ull, 0ull}}".into());
    }
    if host.is_empty() {
        host.push("{HostKind::Wait, 0, 0, 0}".into());
    }
    let _ = writeln!(
        s,
        "static const SegmentInfo kSegments[] = {{\n{}\n}};\n",
        segs.join(",\n")
    );
    let _ = writeln!(
        s,
        "static const HostOpInfo kHost[] = {{\n{}\n}};\n",
        host.join(",\n")
    );

    // Calls, extents, scalars, steps, tokens, cores.
    let mut calls = Vec::new();
    let mut ext = Vec::new();
    let mut scal = Vec::new();
    let mut steps = Vec::new();
    let mut tokens: Vec<i64> = Vec::new();
    let mut cores = Vec::new();
    for t in &plan.tiles {
        let first = steps.len();
        let mut i = 0;
        while i < t.program.len() {
            match &t.program[i] {
                Step::Task(ti) => {
                    let task = &plan.tasks[*ti];
                    // Repeated identical calls share one entry (as the design's loops do).
                    let same = |a: usize, b: usize| {
                        let (x, y) = (&plan.tasks[a], &plan.tasks[b]);
                        x.kernel == y.kernel
                            && x.tiles
                                .iter()
                                .map(|a| a.valid)
                                .eq(y.tiles.iter().map(|a| a.valid))
                            && x.scalars == y.scalars
                    };
                    let mut n = 1;
                    while let Some(Step::Task(next)) = t.program.get(i + n) {
                        if same(*ti, *next) {
                            n += 1;
                        } else {
                            break;
                        }
                    }
                    let io = plan.io.get(task.kernel.index()).and_then(Option::as_ref);
                    let reads = io.is_some_and(|x| !x.reads.is_empty());
                    let writes = io.is_some_and(|x| !x.writes.is_empty());
                    let in_f = if reads {
                        t.input.map_or(-1, |f| f as i64)
                    } else {
                        -1
                    };
                    let out_f = if writes {
                        t.output.map_or(-1, |f| f as i64)
                    } else {
                        -1
                    };
                    calls.push(format!(
                        "{{{}, {in_f}, {out_f}, {}, {}}}",
                        task.kernel.0,
                        ext.len(),
                        scal.len()
                    ));
                    for a in &task.tiles {
                        ext.push(a.valid[0].to_string());
                        ext.push(a.valid[1].to_string());
                    }
                    for (d, v) in &task.scalars {
                        scal.push(format!("0x{:x}ull", scalar_bits(*v, *d)));
                    }
                    steps.push(format!(
                        "{{StepKind::Call, {}, {n}, 0, 0}}",
                        calls.len() - 1
                    ));
                    i += n;
                }
                Step::Send { fifo, token } => {
                    steps.push(format!(
                        "{{StepKind::Send, {fifo}, 1, {}, {}}}",
                        tokens.len(),
                        token.len()
                    ));
                    tokens.extend(token.iter().copied());
                    i += 1;
                }
                Step::Recv { fifo } => {
                    steps.push(format!("{{StepKind::Recv, {fifo}, 1, 0, 0}}"));
                    i += 1;
                }
            }
        }
        cores.push(format!(
            "{{{}, {}, {first}, {}}}",
            t.col,
            t.row,
            steps.len() - first
        ));
    }
    let nonempty = |v: &mut Vec<String>, z: &str| {
        if v.is_empty() {
            v.push(z.to_string());
        }
    };
    nonempty(&mut calls, "{0, -1, -1, 0, 0}");
    nonempty(&mut ext, "0");
    nonempty(&mut scal, "0");
    nonempty(&mut steps, "{StepKind::Recv, 0, 0, 0, 0}");
    nonempty(&mut cores, "{0, 0, 0, 0}");
    if tokens.is_empty() {
        tokens.push(0);
    }
    let _ = writeln!(
        s,
        "static const CallInfo kCalls[] = {{\n  {}\n}};",
        calls.join(",\n  ")
    );
    let _ = writeln!(
        s,
        "static const int32_t kExtents[] = {{{}}};",
        ext.join(", ")
    );
    let _ = writeln!(
        s,
        "static const uint64_t kScalars[] = {{{}}};",
        scal.join(", ")
    );
    let _ = writeln!(
        s,
        "static const StepInfo kSteps[] = {{\n  {}\n}};",
        steps.join(",\n  ")
    );
    let _ = writeln!(
        s,
        "static const CoreInfo kCores[] = {{\n  {}\n}};",
        cores.join(",\n  ")
    );
    let _ = writeln!(
        s,
        "static const int64_t kTokens[] = {{{}}};\n",
        tokens
            .iter()
            .map(|t| format!("{t}ll"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let _ = writeln!(
        s,
        "extern const Design kDesign;\nconst Design kDesign = {{kTensors, {}, kFifos, {}, kSegments, kHost, {}, kCalls, kKernels, kExtents, kScalars, kSteps, kCores, {}, kTokens}};",
        plan.tensors.len(),
        plan.fifos.len(),
        plan.host.len(),
        plan.tiles.len()
    );
    s
}

/// `CMakeLists.txt` building the stand-in `aie_cpu` from the kernels and `cpu/`.
pub fn cmake(program: &Program, plan: &Plan) -> String {
    let kernels: Vec<String> = plan
        .io
        .iter()
        .enumerate()
        .filter(|(_, io)| io.is_some())
        .filter_map(|(i, _)| program.kernels.get(i))
        .map(|k| format!("kernels/{}.cc", sanitize(&k.name)))
        .collect();
    format!(
        "# The CPU stand-in of the AIE design (wsp emit --target aie): cmake -S . -B build && cmake --build build\n\
cmake_minimum_required(VERSION 3.13)\n\
project(wsp_aie_cpu CXX)\n\
set(CMAKE_CXX_STANDARD 17)\n\
set(CMAKE_CXX_STANDARD_REQUIRED ON)\n\
if(NOT CMAKE_BUILD_TYPE)\n  set(CMAKE_BUILD_TYPE Release)\nendif()\n\
add_executable(aie_cpu cpu/main.cc cpu/design.cc {})\n\
target_include_directories(aie_cpu PRIVATE kernels cpu)\n\
target_compile_definitions(aie_cpu PRIVATE WSP_AIE_CPU=1)\n\
# wsp's numeric contract: no contraction into FMA, no fast-math reassociation.\n\
target_compile_options(aie_cpu PRIVATE -ffp-contract=off -fno-fast-math)\n\
target_link_libraries(aie_cpu PRIVATE m)\n",
        kernels.join(" ")
    )
}

/// The files of the stand-in build, for a direct compiler invocation: sources and flags.
pub fn sources(program: &Program, plan: &Plan) -> Vec<String> {
    let mut v = vec!["cpu/main.cc".to_string(), "cpu/design.cc".to_string()];
    for (i, io) in plan.io.iter().enumerate() {
        if io.is_some() {
            if let Some(k) = program.kernels.get(i) {
                v.push(format!("kernels/{}.cc", sanitize(&k.name)));
            }
        }
    }
    v
}

//! The std kernels (and the kernels of `kernels_vs_c.wsp`) as JIT code against the same loop
//! in C, side by side (not here yet: std.nn's bf16 and f16 layernorm/add/rope/swiglu forms,
//! the f16 attention forms, std.moe's integer `routing_csr` and `moe_combine`, std.deepseek):
//!
//! ```text
//! cargo bench -p wsp --bench kernels_vs_c [-- NAME_FILTER]
//! ```
//!
//! The bench builds `kernels_vs_c.c` three times with `$CC` (default `gcc`): `-O2`, `-O3
//! -march=native`, and the latter limited to 128-bit vectors (`-mprefer-vector-width=128`,
//! the JIT's width: Cranelift has no wider vectors; on x86-64 only). For each kernel it
//! alternates, `WSP_KBENCH_REPS` times (default 7): the JIT kernel called in this process,
//! then each C build in its own process, each measurement the mean of enough calls to take
//! about 20 ms. It prints the medians in nanoseconds per call and the ratios JIT ÷ C (below
//! 1: the JIT is faster). Inputs are values in [−1, 1), generated alike on both sides; the
//! JIT gets the runtime's argument block (pointer, row stride, valid rows and columns per
//! tile).
//!
//! The last columns are the kernel's compile time (warm median; the process's first compile,
//! which sets up the host ISA, is printed above the table) and the time a fresh JIT takes to
//! load it from the disk cache (a hit: no Cranelift).
//!
//! Then, for the five kernels of `kernels_vs_c.wsp`'s workloads, the whole run: the release
//! `wsp` runs 64 tiles × 256 sequential passes and 64 tiles × 1 pass, alternately (the
//! orchestration compiled, as in large runs); the difference of the medians over the 16,320
//! extra tasks is a task's cost in `wsp run`
//! (argument blocks, views, the runtime, the simulator and the kernel, on 64 tiles' data),
//! printed against the kernel alone (one tile's buffers, hot in the cache); and the same with
//! one tile (16,384 passes against 64), whose data stays in the cache as the kernel alone's
//! does: the difference of the two is the memory traffic of the larger working set.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;
use wsp_ir::kernel::{Kernel, ParamKind};
use wsp_ir::{DType, ScalarValue};
use wsp_jit::{abi::scalar_slot, compile_uncached, CompiledKernel, DiskCache, Jit, Scratch};

/// `(file under the repository root, kernel)`; the C function is `k_<kernel>`.
const KERNELS: [(&str, &str); 35] = [
    ("std/nn.wsp", "rmsnorm"),
    ("std/nn.wsp", "layernorm"),
    ("std/nn.wsp", "softmax"),
    ("std/nn.wsp", "add"),
    ("std/nn.wsp", "linear"),
    ("std/nn.wsp", "linear_acc"),
    ("std/nn.wsp", "silu_tile"),
    ("std/nn.wsp", "gelu_tile"),
    ("std/nn.wsp", "relu_tile"),
    ("std/nn.wsp", "swiglu"),
    ("std/nn.wsp", "rope"),
    ("std/nn.wsp", "linear_gelu"),
    ("std/nn.wsp", "softmax_stats"),
    ("std/nn.wsp", "softmax_apply"),
    ("std/nn.wsp", "rmsnorm_f16"),
    ("std/nn.wsp", "softmax_f16"),
    ("std/nn.wsp", "linear_f16"),
    ("std/nn.wsp", "linear_acc_f16"),
    ("std/attention.wsp", "attention_tile"),
    ("std/attention.wsp", "attn_init"),
    ("std/attention.wsp", "attn_score"),
    ("std/attention.wsp", "attn_score_causal"),
    ("std/attention.wsp", "attn_softmax"),
    ("std/attention.wsp", "attn_output"),
    ("std/attention.wsp", "attn_normalize"),
    ("std/attention.wsp", "decode_split"),
    ("std/attention.wsp", "decode_merge"),
    ("std/moe.wsp", "route"),
    ("std/moe.wsp", "expert_up"),
    ("std/moe.wsp", "expert_down"),
    ("std/moe.wsp", "scale_add"),
    (BENCH_WSP, "exp_chain"),
    (BENCH_WSP, "softmax_wide"),
    (BENCH_WSP, "matmul_64"),
    (BENCH_WSP, "matmul_f16"),
];

const BENCH_WSP: &str = "compiler/cli/benches/kernels_vs_c.wsp";
/// The kernels whose whole `wsp run` is measured too (the workloads of `kernels_vs_c.wsp`).
const RUN_KERNELS: [&str; 5] = [
    "exp_chain",
    "softmax_wide",
    "matmul_64",
    "matmul_f16",
    "rmsnorm",
];
/// Each measurement's length.
const TARGET_NS: f64 = 20e6;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Builds the C reference with `flags` into `out`.
fn build_c(out: &Path, flags: &[&str]) -> Result<(), String> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "gcc".into());
    let src = root().join("compiler/cli/benches/kernels_vs_c.c");
    let st = Command::new(&cc)
        .args(flags)
        .arg("-o")
        .arg(out)
        .arg(&src)
        .arg("-lm")
        .status()
        .map_err(|e| format!("cannot run `{cc}` (set CC to a C compiler): {e}"))?;
    if st.success() {
        Ok(())
    } else {
        Err(format!(
            "`{cc} {}` failed on {}",
            flags.join(" "),
            src.display()
        ))
    }
}

/// Nanoseconds per call of the C build `exe` over `calls` calls.
fn time_c(exe: &Path, name: &str, calls: u64) -> f64 {
    let out = Command::new(exe)
        .args([name, &calls.to_string()])
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", exe.display()));
    assert!(
        out.status.success(),
        "{} {name}: {}",
        exe.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or_else(|e| panic!("{} {name}: {e}", exe.display()))
}

/// The JIT kernel with its buffers and argument block.
struct Jitted {
    ck: CompiledKernel,
    args: Vec<u64>,
    scratch: Scratch,
    _bufs: Vec<Vec<u32>>,
}

impl Jitted {
    fn new(k: &Kernel) -> Jitted {
        let ck = compile_uncached(k).unwrap_or_else(|e| panic!("{}: {e}", k.name));
        let mut seed = 12345u32;
        let mut next = move || {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            f64::from(seed >> 8) / 8_388_608.0 - 1.0
        };
        let mut bufs = Vec::new();
        let mut args = Vec::new();
        for p in &k.params {
            match p.kind {
                ParamKind::Tile { tile, .. } => {
                    let n = tile.len();
                    let buf: Vec<u32> = match tile.dtype {
                        DType::F32 => (0..n).map(|_| (next() as f32).to_bits()).collect(),
                        // Two f16 elements a word.
                        DType::F16 => (0..n.div_ceil(2))
                            .map(|_| {
                                let lo = wsp_ir::tensor::f16_from_f64(next()).to_bits();
                                let hi = wsp_ir::tensor::f16_from_f64(next()).to_bits();
                                u32::from(lo) | (u32::from(hi) << 16)
                            })
                            .collect(),
                        _ => vec![0; n],
                    };
                    args.extend([
                        buf.as_ptr() as u64,
                        u64::from(tile.cols()),
                        u64::from(tile.rows()),
                        u64::from(tile.cols()),
                    ]);
                    bufs.push(buf);
                }
                ParamKind::Scalar { dtype, default } => {
                    args.push(scalar_slot(dtype, default.unwrap_or(ScalarValue::Int(0))))
                }
            }
        }
        let scratch = ck.new_scratch();
        Jitted {
            ck,
            args,
            scratch,
            _bufs: bufs,
        }
    }

    fn time(&mut self, calls: u64) -> f64 {
        let t = Instant::now();
        for _ in 0..calls {
            // SAFETY: every pointer of the block addresses a buffer of its tile's full shape.
            unsafe {
                self.ck
                    .call_raw(std::hint::black_box(&self.args), &mut self.scratch)
            }
            .unwrap_or_else(|e| panic!("{e}"));
        }
        t.elapsed().as_nanos() as f64 / calls as f64
    }
}

/// Wall time of `wsp run kernels_vs_c.wsp --schedule on_NAME --set ntiles=T --set
/// passes=P` in ns.
fn time_run(name: &str, tiles: u32, passes: u32) -> f64 {
    let t = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_wsp"))
        .current_dir(root())
        // The orchestration compiled, as in any run of more than 8,192 tasks.
        .args(["run", BENCH_WSP, "-q", "--jit-orchestration", "--schedule"])
        .arg(format!("on_{name}"))
        .arg("--set")
        .arg(format!("ntiles={tiles}"))
        .arg("--set")
        .arg(format!("passes={passes}"))
        .output()
        .unwrap_or_else(|e| panic!("wsp run: {e}"));
    let ns = t.elapsed().as_nanos() as f64;
    assert!(
        out.status.success(),
        "wsp run on_{name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    ns
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let filter: Option<String> = std::env::args().skip(1).find(|a| !a.starts_with("--"));
    let reps: usize = std::env::var("WSP_KBENCH_REPS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(7)
        .max(1);
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let (o2, o3) = (dir.join("kernels_vs_c_O2"), dir.join("kernels_vs_c_O3n"));
    let o3w = dir.join("kernels_vs_c_O3n128");
    let narrow = cfg!(target_arch = "x86_64");
    for (exe, flags) in [
        (&o2, &["-O2"][..]),
        (&o3, &["-O3", "-march=native"][..]),
        (
            &o3w,
            &["-O3", "-march=native", "-mprefer-vector-width=128"][..],
        ),
    ] {
        if exe == &o3w && !narrow {
            continue;
        }
        if let Err(e) = build_c(exe, flags) {
            eprintln!("kernels_vs_c: {e}");
            std::process::exit(2);
        }
    }
    let mut ws = wsp_core::Workspace::new();
    for file in ["std/nn.wsp", "std/attention.wsp", "std/moe.wsp", BENCH_WSP] {
        let text =
            std::fs::read_to_string(root().join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        ws.set_file(file, text);
    }
    println!(
        "{:<16} {:>9} {:>9} {:>9} {:>9} {:>8} {:>10} {:>10} {:>8} {:>8}   (ns per call, medians of {reps}; compile and cache hit µs)",
        "kernel", "JIT", "gcc -O2", "-O3 nat", "128-bit", "JIT÷O2", "JIT÷O3nat", "JIT÷128b", "compile", "hit"
    );
    let cache_dir = dir.join("kernels_vs_c_jit_cache");
    let _ = std::fs::remove_dir_all(&cache_dir);
    let mut first = true;
    let mut jit_ns = Vec::new();
    for (file, name) in KERNELS {
        if filter.as_deref().is_some_and(|f| !name.contains(f)) {
            continue;
        }
        let handle = ws
            .file_handle(file)
            .unwrap_or_else(|| panic!("{file} is not loaded"));
        let k = wsp_lower::kernel_ir(ws.db(), handle, name)
            .unwrap_or_else(|| panic!("{file}: kernel `{name}` does not lower"));
        // Compile time: the first compile of the process (the host ISA is set up once), then
        // the median of warm compiles.
        let t = Instant::now();
        compile_uncached(&k).unwrap_or_else(|e| panic!("{name}: {e}"));
        let cold = t.elapsed().as_nanos() as f64 / 1e3;
        if first {
            println!("(first compile of the process: {name}, {cold:.0} µs)");
            first = false;
        }
        let mut tc: Vec<f64> = (0..reps.max(5))
            .map(|_| {
                let t = Instant::now();
                compile_uncached(&k).unwrap_or_else(|e| panic!("{name}: {e}"));
                t.elapsed().as_nanos() as f64 / 1e3
            })
            .collect();
        let mc = median(&mut tc);
        // A disk cache hit: a fresh JIT (as a new process has) loading the stored kernel.
        let cache = || Jit::with_disk_cache(Some(DiskCache::new(&cache_dir)));
        cache()
            .compile(&k)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut th: Vec<f64> = (0..reps.max(5))
            .map(|_| {
                let jit = cache();
                let t = Instant::now();
                jit.compile(&k).unwrap_or_else(|e| panic!("{name}: {e}"));
                let us = t.elapsed().as_nanos() as f64 / 1e3;
                assert_eq!(jit.counts(), (1, 0), "{name}: not a cache hit");
                us
            })
            .collect();
        let mh = median(&mut th);
        let mut j = Jitted::new(&k);
        j.time(3);
        let one = j.time(3).max(1.0);
        let calls = ((TARGET_NS / one) as u64).clamp(5, 2_000_000);
        let (mut tj, mut t2, mut t3, mut tw) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for _ in 0..reps {
            tj.push(j.time(calls));
            t2.push(time_c(&o2, name, calls));
            t3.push(time_c(&o3, name, calls));
            if narrow {
                tw.push(time_c(&o3w, name, calls));
            }
        }
        let (mj, m2, m3) = (median(&mut tj), median(&mut t2), median(&mut t3));
        let mw = if narrow { median(&mut tw) } else { f64::NAN };
        jit_ns.push((name, mj));
        println!(
            "{name:<16} {mj:>9.0} {m2:>9.0} {m3:>9.0} {mw:>9.0} {:>8.2} {:>10.2} {:>10.2} {mc:>8.0} {mh:>8.0}",
            mj / m2,
            mj / m3,
            mj / mw
        );
    }
    // The whole run: a task's cost in `wsp run` against the kernel alone.
    let whole: Vec<(&str, f64)> = jit_ns
        .into_iter()
        .filter(|(n, _)| RUN_KERNELS.contains(n))
        .collect();
    if whole.is_empty() {
        return;
    }
    println!(
        "\n{:<16} {:>12} {:>12} {:>14} {:>12} {:>14}   (ns; medians of {reps})",
        "kernel", "kernel alone", "per task", "whole÷kernel", "1 tile", "1 tile÷kernel"
    );
    for (name, alone) in whole {
        // 64 tiles × 256 passes against × 1 pass; 1 tile × 16,384 passes against × 64: 16,320
        // tasks more, enough to stand out of the process's own time and its noise.
        let mut t = [Vec::new(), Vec::new(), Vec::new(), Vec::new()];
        for _ in 0..reps {
            for (i, (tiles, passes)) in [(64, 256), (64, 1), (1, 16384), (1, 64)].iter().enumerate()
            {
                t[i].push(time_run(name, *tiles, *passes));
            }
        }
        let [a, b, c, d] = t.map(|mut v| median(&mut v));
        let per = (a - b) / f64::from(64 * 256 - 64);
        let hot = (c - d) / f64::from(16384 - 64);
        println!(
            "{name:<16} {alone:>12.0} {per:>12.0} {:>14.2} {hot:>12.0} {:>14.2}",
            per / alone,
            hot / alone
        );
    }
}

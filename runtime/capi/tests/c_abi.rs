//! The C ABI tested from C: a harness (`tests/c/harness.c`) compiled with `cc` against
//! `wsp_runtime.h` and the static library, run, and compared with the Rust API.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};

use wsp_runtime::{
    Arch, Arg, Config, CoreClass, Direction, KernelId, RawArg, RawTask, Region, Runtime, TaskDesc,
    TensorId,
};

/// The target directory's profile directory (`target/debug`): the test binary is in `deps/`.
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    exe.parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps")
        .to_path_buf()
}

/// The static library, built by `cargo build -p wsp-runtime-capi` into this target directory.
fn static_lib() -> PathBuf {
    let dir = profile_dir();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let target = dir.parent().expect("the target directory");
    let st = Command::new(cargo)
        .args(["build", "-q", "-p", "wsp-runtime-capi"])
        .env("CARGO_TARGET_DIR", target)
        .status()
        .expect("cargo runs");
    assert!(st.success(), "cargo build -p wsp-runtime-capi failed");
    let lib = dir.join("libwsp_runtime_capi.a");
    assert!(lib.exists(), "{} is missing", lib.display());
    lib
}

/// The harness, compiled once per test binary.
fn harness() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let lib = static_lib();
        let here = Path::new(env!("CARGO_MANIFEST_DIR"));
        let out = profile_dir().join("wsp_capi_harness");
        let st = Command::new("cc")
            .args(["-std=c11", "-O1", "-Wall", "-Wextra", "-Werror", "-I"])
            .arg(here.join("include"))
            .arg(here.join("tests/c/harness.c"))
            .arg(&lib)
            .args(["-lpthread", "-ldl", "-lm", "-o"])
            .arg(&out)
            .status()
            .expect("cc runs");
        assert!(st.success(), "the harness does not compile");
        out
    })
}

fn run_harness(args: &[&str]) -> String {
    let o = Command::new(harness()).args(args).output().expect("runs");
    assert!(
        o.status.success(),
        "harness {args:?} failed ({}): {}{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).expect("UTF-8")
}

#[test]
fn wsp_task_h_matches_raw_task_and_raw_arg() {
    use std::mem::{offset_of, size_of};
    let out = run_harness(&["layout"]);
    let mut want = vec![format!("wsp_raw_arg {}", size_of::<RawArg>())];
    macro_rules! f {
        ($c:literal, $t:ty, $f:ident, $s:expr) => {
            want.push(format!(
                "{}.{} {} {}",
                $c,
                stringify!($f),
                offset_of!($t, $f),
                $s
            ))
        };
    }
    f!("wsp_raw_arg", RawArg, base, 8);
    f!("wsp_raw_arg", RawArg, elem_size, 8);
    f!("wsp_raw_arg", RawArg, rank, 8);
    f!("wsp_raw_arg", RawArg, dims, 64);
    f!("wsp_raw_arg", RawArg, offsets, 64);
    f!("wsp_raw_arg", RawArg, extents, 64);
    f!("wsp_raw_arg", RawArg, strides, 64);
    f!("wsp_raw_arg", RawArg, dir, 8);
    want.push(format!("wsp_raw_task {}", size_of::<RawTask>()));
    f!("wsp_raw_task", RawTask, task, 8);
    f!("wsp_raw_task", RawTask, coords, 8);
    f!("wsp_raw_task", RawTask, ncoords, 8);
    f!("wsp_raw_task", RawTask, args, 8);
    f!("wsp_raw_task", RawTask, nargs, 8);
    f!("wsp_raw_task", RawTask, scalars, 8);
    f!("wsp_raw_task", RawTask, nscalars, 8);
    use wsp_runtime_capi::{WspRtArg, WspRtProcess, WspRtStats, WspRtStep, WspRtTask};
    want.push(format!("wsp_rt_arg {}", size_of::<WspRtArg>()));
    f!("wsp_rt_arg", WspRtArg, tensor, 4);
    f!("wsp_rt_arg", WspRtArg, rank, 4);
    f!("wsp_rt_arg", WspRtArg, offsets, 64);
    f!("wsp_rt_arg", WspRtArg, extents, 64);
    f!("wsp_rt_arg", WspRtArg, strides, 64);
    f!("wsp_rt_arg", WspRtArg, dir, 4);
    want.push(format!("wsp_rt_task {}", size_of::<WspRtTask>()));
    f!("wsp_rt_task", WspRtTask, kernel, 4);
    f!("wsp_rt_task", WspRtTask, coords, 8);
    f!("wsp_rt_task", WspRtTask, ncoords, 8);
    f!("wsp_rt_task", WspRtTask, args, 8);
    f!("wsp_rt_task", WspRtTask, nargs, 8);
    f!("wsp_rt_task", WspRtTask, scalars, 8);
    f!("wsp_rt_task", WspRtTask, nscalars, 8);
    f!("wsp_rt_task", WspRtTask, cycles, 8);
    f!("wsp_rt_task", WspRtTask, key, 8);
    f!("wsp_rt_task", WspRtTask, priority, 8);
    f!("wsp_rt_task", WspRtTask, stream, 8);
    want.push(format!("wsp_rt_stats {}", size_of::<WspRtStats>()));
    f!("wsp_rt_stats", WspRtStats, tasks, 8);
    f!("wsp_rt_stats", WspRtStats, edges, 8);
    f!("wsp_rt_stats", WspRtStats, total_cycles, 8);
    want.push(format!("wsp_rt_step {}", size_of::<WspRtStep>()));
    f!("wsp_rt_step", WspRtStep, kind, 4);
    f!("wsp_rt_step", WspRtStep, channel, 4);
    f!("wsp_rt_step", WspRtStep, token_len, 4);
    f!("wsp_rt_step", WspRtStep, token, 64);
    f!("wsp_rt_step", WspRtStep, has_after, 4);
    f!("wsp_rt_step", WspRtStep, after, 8);
    want.push(format!("wsp_rt_process {}", size_of::<WspRtProcess>()));
    f!("wsp_rt_process", WspRtProcess, name, 8);
    f!("wsp_rt_process", WspRtProcess, step, 8);
    f!("wsp_rt_process", WspRtProcess, user, 8);
    f!("wsp_rt_process", WspRtProcess, produces, 8);
    f!("wsp_rt_process", WspRtProcess, nproduces, 4);
    let got: Vec<&str> = out.lines().collect();
    assert_eq!(got, want);
}

#[test]
fn a_c_program_computes_pipelines_and_reports_errors() {
    let out = run_harness(&["demo"]);
    assert!(out.contains("demo ok"), "{out}");
    assert!(
        out.contains("no built-in architecture `no_such_arch`"),
        "{out}"
    );
    assert!(out.contains("null task: `task` is a null pointer"), "{out}");
    assert!(out.contains("bad region:"), "{out}");
    assert!(out.contains("kernel entry returned error code 42"), "{out}");
    assert!(out.contains("deadlock:"), "{out}");
    assert!(out.contains("deadlock report: []"), "{out}");
}

/// A small deterministic generator (xorshift64*).
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A region argument: tensor, direction, (offset, extent, stride) per dimension.
type RegionArg = (u32, Direction, Vec<(i64, i64, i64)>);

enum Op {
    Task {
        kernel: u32,
        cycles: u64,
        keys: [i64; 3],
        coords: Vec<i64>,
        args: Vec<RegionArg>,
    },
    Wait(u32),
    Barrier,
}

/// A random program: tensors, kernels, a schedule, and tasks on random strided regions.
struct TaskList {
    window: u32,
    threads: u32,
    policies: Vec<(&'static str, Vec<u32>)>,
    tensors: Vec<Vec<i64>>,
    kernels: Vec<(String, CoreClass)>,
    ops: Vec<Op>,
}

fn task_list(seed: u64) -> TaskList {
    let mut g = Gen(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let tensors: Vec<Vec<i64>> = (0..3)
        .map(|_| vec![1 + g.below(6) as i64, 1 + g.below(8) as i64])
        .collect();
    let kernels = vec![
        ("a".to_string(), CoreClass::Vector),
        ("b".to_string(), CoreClass::Cube),
        ("c".to_string(), CoreClass::Vector),
    ];
    let policies = match seed % 4 {
        0 => vec![],
        1 => vec![("round_robin", vec![3]), ("lifo", vec![])],
        2 => vec![("hash", vec![]), ("priority", vec![])],
        _ => vec![
            ("affinity", vec![]),
            ("streams", vec![2]),
            ("batched", vec![3]),
        ],
    };
    let mut ops = Vec::new();
    for _ in 0..60 {
        match g.below(20) {
            0 => ops.push(Op::Wait(g.below(3) as u32)),
            1 => ops.push(Op::Barrier),
            _ => {
                let mut args = Vec::new();
                for _ in 0..1 + g.below(3) {
                    let t = g.below(3) as u32;
                    let dims = &tensors[t as usize];
                    let mut reg = Vec::new();
                    for &n in dims {
                        let stride = 1 + g.below(2) as i64;
                        let off = g.below(n as u64) as i64;
                        let max = (n - 1 - off) / stride + 1;
                        let ext = 1 + g.below(max as u64) as i64;
                        reg.push((off, ext, stride));
                    }
                    let dir = match g.below(3) {
                        0 => Direction::In,
                        1 => Direction::Out,
                        _ => Direction::InOut,
                    };
                    args.push((t, dir, reg));
                }
                ops.push(Op::Task {
                    kernel: g.below(3) as u32,
                    // Longer than a submission (1,610 cycles on ascend910b), so tasks overlap.
                    cycles: 2_000 + g.below(4_000),
                    keys: [g.below(7) as i64, g.below(5) as i64, g.below(4) as i64],
                    coords: vec![g.below(9) as i64, g.below(3) as i64],
                    args,
                });
            }
        }
    }
    TaskList {
        window: [2, 4, 16, 1024][(seed % 4) as usize],
        threads: if seed.is_multiple_of(3) { 2 } else { 1 },
        policies,
        tensors,
        kernels,
        ops,
    }
}

fn dir_code(d: Direction) -> u64 {
    d.code()
}

/// The list in the harness's text format.
fn to_text(l: &TaskList) -> String {
    let mut s = format!("ascend910b {} {}\n", l.window, l.threads);
    for (form, args) in &l.policies {
        let a: Vec<String> = args.iter().map(u32::to_string).collect();
        s += &format!("P {form} {} {}\n", args.len(), a.join(" "));
    }
    s += "F 3\n";
    for t in &l.tensors {
        let d: Vec<String> = t.iter().map(i64::to_string).collect();
        s += &format!("T {} {}\n", t.len(), d.join(" "));
    }
    for (name, class) in &l.kernels {
        s += &format!("K {name} {}\n", class.name());
    }
    for op in &l.ops {
        match op {
            Op::Wait(t) => s += &format!("W {t}\n"),
            Op::Barrier => s += "B\n",
            Op::Task {
                kernel,
                cycles,
                keys,
                coords,
                args,
            } => {
                s += &format!(
                    "S {kernel} {cycles} {} {} {} {}",
                    keys[0],
                    keys[1],
                    keys[2],
                    coords.len()
                );
                for c in coords {
                    s += &format!(" {c}");
                }
                s += &format!(" {}", args.len());
                for (t, dir, reg) in args {
                    s += &format!(" {t} {} {}", dir_code(*dir), reg.len());
                    for (o, e, st) in reg {
                        s += &format!(" {o} {e} {st}");
                    }
                }
                s += "\n";
            }
        }
    }
    s
}

/// The harness's kernel in Rust: s = coords[0] + Σ elements of the `in` regions; each element
/// of an `out`/`inout` region becomes v·3 + s (u64, wrapping).
fn mix(t: &RawTask) -> Result<(), String> {
    // SAFETY: the runtime passes valid arrays of the given lengths.
    let coords = unsafe { std::slice::from_raw_parts(t.coords, t.ncoords as usize) };
    let args = unsafe { std::slice::from_raw_parts(t.args, t.nargs as usize) };
    let elems = |a: &RawArg| -> Vec<usize> {
        let r = a.rank as usize;
        let mut out = Vec::new();
        let mut idx = vec![0i64; r];
        loop {
            let mut flat = 0i64;
            for (d, i) in idx.iter().enumerate() {
                flat = flat * a.dims[d] + a.offsets[d] + a.strides[d] * i;
            }
            out.push(flat as usize);
            let mut d = r as i64 - 1;
            while d >= 0 {
                idx[d as usize] += 1;
                if idx[d as usize] < a.extents[d as usize] {
                    break;
                }
                idx[d as usize] = 0;
                d -= 1;
            }
            if d < 0 {
                return out;
            }
        }
    };
    let mut s = coords.first().map_or(0, |c| *c as u64);
    for a in args.iter().filter(|a| a.dir == 0) {
        for i in elems(a) {
            // SAFETY: the element is inside the region, inside the tensor.
            let v = unsafe { (a.base.add(i * 8) as *const u64).read_unaligned() };
            s = s.wrapping_add(v);
        }
    }
    for a in args.iter().filter(|a| a.dir != 0) {
        for i in elems(a) {
            // SAFETY: as above; the region is written by this task only.
            unsafe {
                let p = a.base.add(i * 8) as *mut u64;
                p.write_unaligned(p.read_unaligned().wrapping_mul(3).wrapping_add(s));
            }
        }
    }
    Ok(())
}

/// The list run through the Rust API, printed as the harness prints it.
fn run_rust(l: &TaskList) -> String {
    let mut cfg = Config::new(Arch::builtin("ascend910b").expect("built in")).with_window(l.window);
    for (form, args) in &l.policies {
        cfg.policies.apply(form, args).expect("a known policy");
    }
    cfg.fit_region_args(3);
    cfg.threads = l.threads as usize;
    cfg.record = true;
    let mut rt = Runtime::new(cfg).expect("a runtime");
    for t in &l.tensors {
        rt.add_tensor(8, t).expect("a tensor");
    }
    for (name, class) in &l.kernels {
        rt.register_kernel(name, *class, Arc::new(mix));
    }
    for op in &l.ops {
        match op {
            Op::Wait(t) => rt.wait_tensor(TensorId(*t)).expect("waits"),
            Op::Barrier => rt.wait_all().expect("waits"),
            Op::Task {
                kernel,
                cycles,
                keys,
                coords,
                args,
            } => {
                let args: Vec<Arg> = args
                    .iter()
                    .map(|(t, dir, reg)| {
                        let o: Vec<i64> = reg.iter().map(|r| r.0).collect();
                        let e: Vec<i64> = reg.iter().map(|r| r.1).collect();
                        let s: Vec<i64> = reg.iter().map(|r| r.2).collect();
                        Arg {
                            region: Region::new(TensorId(*t), &o, &e, &s).expect("a region"),
                            dir: *dir,
                        }
                    })
                    .collect();
                rt.submit(&TaskDesc {
                    kernel: KernelId(*kernel),
                    coords,
                    args: &args,
                    scalars: &[7, -1],
                    cycles: *cycles,
                    key: keys[0],
                    priority: keys[1],
                    stream: keys[2],
                    place: None,
                })
                .expect("submits");
            }
        }
    }
    let s = rt.finish().expect("finishes");
    let mut out = format!(
        "tasks {} edges {} total_cycles {}\n",
        s.tasks, s.edges, s.total_cycles
    );
    for t in 0..l.tensors.len() {
        let b = rt.tensor_bytes(TensorId(t as u32)).expect("a tensor");
        let mut h: u64 = 1469598103934665603;
        for x in b {
            h = (h ^ u64::from(*x)).wrapping_mul(1099511628211);
        }
        out += &format!("tensor {t} {h:016x}\n");
    }
    out += &rt.dot();
    out
}

#[test]
fn tasks_submitted_through_c_and_rust_give_the_same_graph_cycles_and_data() {
    let dir = profile_dir().join("wsp_capi_lists");
    std::fs::create_dir_all(&dir).expect("a directory");
    for seed in 0..12 {
        let l = task_list(seed);
        let path = dir.join(format!("list{seed}.txt"));
        std::fs::write(&path, to_text(&l)).expect("written");
        let c = run_harness(&["run", path.to_str().expect("UTF-8")]);
        let r = run_rust(&l);
        assert_eq!(c, r, "seed {seed}");
        assert!(r.contains(" -> "), "seed {seed}: no edge at all\n{r}");
    }
}

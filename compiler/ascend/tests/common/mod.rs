//! The harness shared by the emitter's tests: emits kernels as PTO-ISA C++, compiles them
//! with g++ (one harness per job), runs random tasks and compares every written tensor with
//! the reference interpreter.

#![allow(dead_code)] // each test binary uses a part of the harness

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use wsp_ascend::kernel::{emit_kernel, entry_name, standin_files, Arch};
use wsp_ir::interp::{run_kernel, KernelArg, Tile};
use wsp_ir::kernel::{Kernel, ParamKind};
use wsp_ir::tensor::{convert, decode_el, encode_el, El};
use wsp_ir::{DType, ScalarValue};

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

struct Rng(u64);
impl Rng {
    fn bits(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 40
    }
    fn below(&mut self, n: u64) -> u64 {
        self.bits() % n
    }
    fn small(&mut self) -> f64 {
        (self.bits() as f64 / (1u64 << 24) as f64) * 4.0 - 2.0
    }
    /// Many binades, specials, and exact ties of f16/bf16 rounding.
    fn wide(&mut self) -> f64 {
        match self.below(24) {
            0 => f64::NAN,
            1 => f64::INFINITY,
            2 => f64::NEG_INFINITY,
            3 => -0.0,
            4 => 0.0,
            5 => (1.0 + (self.below(1024) as f64 + 0.5) / 1024.0) * 2f64.powi(self.below(8) as i32),
            6 => {
                (1.0 + (self.below(128) as f64 + 0.5) / 128.0) * -(2f64.powi(self.below(8) as i32))
            }
            _ => {
                let e = self.below(56) as i32 - 34;
                let m = 1.0 + self.bits() as f64 / (1u64 << 24) as f64;
                if self.below(2) == 0 {
                    m * 2f64.powi(e)
                } else {
                    -m * 2f64.powi(e)
                }
            }
        }
    }
    fn el(&mut self, d: DType, wide: bool) -> El {
        let e = if d.is_bool() {
            El::B(self.below(2) == 0)
        } else if d.is_int() {
            El::I(match self.below(16) {
                0 if wide => i128::from(i32::MIN),
                1 if wide => i128::from(i32::MAX),
                2 if wide => 0,
                _ => self.below(17) as i128 - 8,
            })
        } else if wide {
            El::F(self.wide())
        } else {
            El::F(self.small())
        };
        convert(e, d)
    }
}

/// One region argument of a case: the tensor and how the tile sits in it.
struct ArgData {
    dtype: DType,
    dims: Vec<i64>,
    offsets: Vec<i64>,
    extents: Vec<i64>,
    layout: (i64, i64),
    writes: bool,
    bytes: Vec<u8>,
}

struct Case {
    kernel: usize,
    args: Vec<ArgData>,
    scalars: Vec<i64>,
    /// The interpreter's tensors after the run, or `None` when it rejects the task.
    expect: Option<Vec<Vec<u8>>>,
    what: String,
}

fn element_index(a: &ArgData, r: usize, c: usize) -> usize {
    let rank = a.dims.len();
    let mut ts = vec![0usize; rank];
    let mut acc = 1usize;
    for d in (0..rank).rev() {
        ts[d] = acc;
        acc *= a.dims[d] as usize;
    }
    let origin: usize = (0..rank).map(|d| a.offsets[d] as usize * ts[d]).sum();
    let rs = usize::try_from(a.layout.0).map(|d| ts[d]).unwrap_or(0);
    let cs = usize::try_from(a.layout.1).map(|d| ts[d]).unwrap_or(0);
    origin + r * rs + c * cs
}

fn make_case(
    ki: usize,
    k: &Kernel,
    seed: u64,
    valid: Option<[u32; 2]>,
    layout_variant: bool,
) -> Case {
    let wide = seed.is_multiple_of(2);
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9) ^ (ki as u64) << 20);
    let mut args = Vec::new();
    let mut scalars = Vec::new();
    let mut iargs = Vec::new();
    for p in &k.params {
        match p.kind {
            ParamKind::Tile { dir, tile, partial } => {
                let mut v = tile.shape;
                if let Some(val) = valid {
                    for d in 0..2 {
                        if partial[d] {
                            v[d] = val[d].min(tile.shape[d]);
                        }
                    }
                }
                let (vr, vc) = (i64::from(v[0]), i64::from(v[1]));
                let (dims, offsets, extents, layout) = if layout_variant && tile.rows() == 1 {
                    (vec![vc + 2], vec![1], vec![vc], (-1, 0))
                } else if layout_variant && tile.cols() == 1 {
                    (vec![vr + 3], vec![2], vec![vr], (0, -1))
                } else {
                    (vec![vr + 1, vc + 2], vec![1, 1], vec![vr, vc], (0, 1))
                };
                let n: i64 = dims.iter().product();
                let mut bytes = Vec::new();
                let els: Vec<El> = (0..n).map(|_| rng.el(tile.dtype, wide)).collect();
                for e in &els {
                    encode_el(*e, tile.dtype, &mut bytes, false);
                }
                let a = ArgData {
                    dtype: tile.dtype,
                    dims,
                    offsets,
                    extents,
                    layout,
                    writes: dir.writes(),
                    bytes,
                };
                let mut t = Tile::zeros(tile);
                t.valid = v;
                for r in 0..v[0] as usize {
                    for c in 0..v[1] as usize {
                        t.set(r, c, els[element_index(&a, r, c)]);
                    }
                }
                iargs.push(KernelArg::Tile(t));
                scalars.push(a.layout.0);
                scalars.push(a.layout.1);
                args.push(a);
            }
            ParamKind::Scalar { dtype, .. } => {
                let e = rng.el(dtype, wide);
                let (bits, sv) = match e {
                    El::F(f) => (f.to_bits() as i64, ScalarValue::Float(f)),
                    El::I(i) => (i as i64, ScalarValue::Int(i as i64)),
                    El::B(b) => (i64::from(b), ScalarValue::Bool(b)),
                };
                scalars.push(bits);
                iargs.push(KernelArg::Scalar(sv));
            }
        }
    }
    let expect = match run_kernel(k, &mut iargs) {
        Err(_) => None,
        Ok(()) => {
            let mut tensors = Vec::new();
            let tiles = iargs.iter().filter_map(|a| match a {
                KernelArg::Tile(t) => Some(t),
                KernelArg::Scalar(_) => None,
            });
            for (a, t) in args.iter().zip(tiles) {
                let mut b = a.bytes.clone();
                if a.writes {
                    let es = a.dtype.size_bytes();
                    for r in 0..t.valid[0] as usize {
                        for c in 0..t.valid[1] as usize {
                            let i = element_index(a, r, c);
                            let mut e = Vec::new();
                            encode_el(t.get(r, c), a.dtype, &mut e, false);
                            b[i * es..(i + 1) * es].copy_from_slice(&e);
                        }
                    }
                }
                tensors.push(b);
            }
            Some(tensors)
        }
    };
    Case {
        kernel: ki,
        args,
        scalars,
        expect,
        what: format!("seed {seed}, valid {valid:?}, rank-1 views {layout_variant}"),
    }
}

fn push_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn encode_cases(cases: &[Case]) -> Vec<u8> {
    let mut out = Vec::new();
    push_u64(&mut out, cases.len() as u64);
    for c in cases {
        push_u64(&mut out, c.kernel as u64);
        push_u64(&mut out, c.args.len() as u64);
        for a in &c.args {
            push_u64(&mut out, a.dtype.size_bytes() as u64);
            push_u64(&mut out, a.dims.len() as u64);
            for v in a.dims.iter().chain(&a.offsets).chain(&a.extents) {
                push_u64(&mut out, *v as u64);
            }
            push_u64(&mut out, if a.writes { 2 } else { 0 });
            push_u64(&mut out, a.bytes.len() as u64);
            out.extend_from_slice(&a.bytes);
        }
        push_u64(&mut out, c.scalars.len() as u64);
        for s in &c.scalars {
            push_u64(&mut out, *s as u64);
        }
    }
    out
}

const HARNESS: &str = r#"
#include <cstdio>
#include <vector>
typedef int32_t (*entry_fn)(const struct wsp_raw_task *);
static const entry_fn entries[] = { ENTRIES };
static uint64_t rd(FILE *f) { uint64_t v = 0; if (fread(&v, 8, 1, f) != 1) { fprintf(stderr, "short input\n"); std::exit(3); } return v; }
int main(int argc, char **argv) {
    if (argc != 3) return 2;
    FILE *in = fopen(argv[1], "rb");
    FILE *out = fopen(argv[2], "wb");
    if (!in || !out) return 2;
    uint64_t ncases = rd(in);
    for (uint64_t ci = 0; ci < ncases; ci++) {
        uint64_t ki = rd(in), nargs = rd(in);
        std::vector<std::vector<uint8_t>> bufs(nargs);
        std::vector<wsp_raw_arg> args(nargs);
        for (uint64_t i = 0; i < nargs; i++) {
            wsp_raw_arg &a = args[i];
            std::memset(&a, 0, sizeof a);
            a.elem_size = rd(in);
            a.rank = rd(in);
            for (int d = 0; d < WSP_MAX_RANK; d++) { a.dims[d] = 1; a.extents[d] = 1; a.strides[d] = 1; }
            for (uint64_t d = 0; d < a.rank; d++) a.dims[d] = (int64_t)rd(in);
            for (uint64_t d = 0; d < a.rank; d++) a.offsets[d] = (int64_t)rd(in);
            for (uint64_t d = 0; d < a.rank; d++) a.extents[d] = (int64_t)rd(in);
            a.dir = rd(in);
            uint64_t n = rd(in);
            bufs[i].resize(n + 1);
            if (n && fread(bufs[i].data(), 1, n, in) != n) return 3;
            bufs[i].resize(n);
            a.base = bufs[i].data();
        }
        uint64_t ns = rd(in);
        std::vector<int64_t> sc(ns + 1);
        for (uint64_t i = 0; i < ns; i++) sc[i] = (int64_t)rd(in);
        int64_t coords[1] = {0};
        wsp_raw_task t;
        t.task = ci; t.coords = coords; t.ncoords = 0;
        t.args = args.data(); t.nargs = nargs; t.scalars = sc.data(); t.nscalars = ns;
        int64_t rc = entries[ki](&t);
        fwrite(&rc, 8, 1, out);
        for (uint64_t i = 0; i < nargs; i++) {
            uint64_t n = bufs[i].size();
            fwrite(&n, 8, 1, out);
            fwrite(bufs[i].data(), 1, n, out);
        }
    }
    fclose(out);
    return 0;
}
"#;

fn same_el(d: DType, a: &[u8], b: &[u8]) -> bool {
    if a == b {
        return true;
    }
    match (decode_el(d, a, false), decode_el(d, b, false)) {
        (El::F(x), El::F(y)) => x.is_nan() && y.is_nan(),
        _ => false,
    }
}

fn check_output(kernels: &[&Kernel], cases: &[Case], out: &[u8]) -> Vec<String> {
    let mut errs = Vec::new();
    let mut pos = 0usize;
    let rd = |pos: &mut usize| -> u64 {
        let v = out
            .get(*pos..*pos + 8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
            .unwrap_or(u64::MAX);
        *pos += 8;
        v
    };
    for c in cases {
        let k = kernels[c.kernel];
        let rc = rd(&mut pos) as i64;
        let mut got = Vec::new();
        for _ in &c.args {
            let n = rd(&mut pos) as usize;
            got.push(
                out.get(pos..pos + n)
                    .map(|b| b.to_vec())
                    .unwrap_or_default(),
            );
            pos += n;
        }
        match &c.expect {
            None => {
                if rc == 0 {
                    errs.push(format!(
                        "{} ({}): the interpreter rejects the task, the entry returned 0",
                        k.name, c.what
                    ));
                }
            }
            Some(want) => {
                if rc != 0 {
                    errs.push(format!("{} ({}): the entry returned {rc}", k.name, c.what));
                    continue;
                }
                for ((a, w), g) in c.args.iter().zip(want).zip(&got) {
                    let es = a.dtype.size_bytes();
                    if g.len() != w.len() {
                        errs.push(format!("{}: output size differs", k.name));
                        continue;
                    }
                    if let Some(i) = (0..w.len() / es).find(|i| {
                        !same_el(a.dtype, &w[i * es..(i + 1) * es], &g[i * es..(i + 1) * es])
                    }) {
                        errs.push(format!(
                            "{} ({}): tensor element {i}: interpreter {:?}, emitted {:?}",
                            k.name,
                            c.what,
                            decode_el(a.dtype, &w[i * es..(i + 1) * es], false),
                            decode_el(a.dtype, &g[i * es..(i + 1) * es], false)
                        ));
                        break;
                    }
                }
            }
        }
    }
    errs
}

/// Builds and runs one source file's kernels against the headers in `pto_include`; returns
/// the failures.
fn run_file(
    dir: &Path,
    name: &str,
    kernels: &[&Kernel],
    pto_include: &Path,
    compiler: &[String],
) -> (Vec<String>, usize, usize) {
    let fdir = dir.join(name);
    std::fs::create_dir_all(fdir.join("kernels")).expect("mkdir");
    // As in an emitted tree: the kernels' f32 exp, log and tanh beside them.
    std::fs::write(fdir.join("kernels/wsp_math.h"), wsp_ir::math::c_header()).expect("write");
    let mut tu = String::new();
    let mut entries = Vec::new();
    for k in kernels {
        let src = match emit_kernel(k, Arch::Ascend910b) {
            Ok(s) => s,
            Err(d) => return (vec![format!("{}: {}", k.name, d.message)], 0, 0),
        };
        std::fs::write(fdir.join(&src.path), &src.code).expect("write kernel");
        let _ = writeln!(tu, "#include \"{}\"", src.path);
        entries.push(entry_name(k));
    }
    tu.push_str(&HARNESS.replace("ENTRIES", &entries.join(", ")));
    std::fs::write(fdir.join("harness.cpp"), tu).expect("write harness");
    let exe = fdir.join("harness");
    let (cxx, flags) = compiler.split_first().expect("a compiler command");
    let out = Command::new(cxx)
        .args(flags)
        .args(["-O1", "-o"])
        .arg(&exe)
        .arg(fdir.join("harness.cpp"))
        .arg("-I")
        .arg(pto_include)
        .arg("-I")
        .arg(root().join("runtime/capi/include"))
        .arg("-I")
        .arg(&fdir)
        .output()
        .expect("the C++ compiler runs");
    if !out.status.success() {
        let e = String::from_utf8_lossy(&out.stderr);
        let e: String = e
            .lines()
            .filter(|l| l.contains("error"))
            .take(40)
            .collect::<Vec<_>>()
            .join("\n");
        return (vec![format!("{name}: the C++ compiler failed:\n{e}")], 0, 0);
    }
    let mut cases = Vec::new();
    for (ki, k) in kernels.iter().enumerate() {
        for seed in 1..=4u64 {
            cases.push(make_case(ki, k, seed, None, seed == 3));
        }
        let partial = k.tile_params().any(|(_, _, _, p)| p[0] || p[1]);
        if partial {
            for (i, v) in [[1, 1], [3, 5], [0, 3], [5, 0], [17, 33]]
                .into_iter()
                .enumerate()
            {
                cases.push(make_case(ki, k, 10 + i as u64, Some(v), false));
            }
        }
    }
    std::fs::write(fdir.join("cases.bin"), encode_cases(&cases)).expect("write cases");
    let run = Command::new(&exe)
        .arg(fdir.join("cases.bin"))
        .arg(fdir.join("results.bin"))
        .output()
        .expect("harness runs");
    if !run.status.success() {
        return (
            vec![format!(
                "{name}: the harness failed: {:?} {}",
                run.status,
                String::from_utf8_lossy(&run.stderr)
            )],
            0,
            0,
        );
    }
    let out = std::fs::read(fdir.join("results.bin")).expect("results");
    let ok = cases.iter().filter(|c| c.expect.is_some()).count();
    (check_output(kernels, &cases, &out), cases.len(), ok)
}

/// Emits, builds and runs `corpus` (jobs of kernels, one harness each) against the headers
/// in `pto_include`; kernels the emitter refuses must match `expected_refusals`.
pub fn run_jobs(
    corpus: &[(String, Vec<Kernel>)],
    expected_refusals: &[(&str, &str, &str)],
    pto_include: &Path,
    compiler: &[String],
    tag: &str,
) -> Vec<String> {
    let dir = std::env::temp_dir().join(format!("wsp_ascend_{tag}_{}", std::process::id()));
    let mut failures = Vec::new();
    let mut jobs: Vec<(String, Vec<&Kernel>)> = Vec::new();
    let mut seen = BTreeMap::new();
    for (file, kernels) in corpus {
        let mut ks = Vec::new();
        for k in kernels {
            match emit_kernel(k, Arch::Ascend910b) {
                Ok(_) => {
                    if let Err(d) = emit_kernel(k, Arch::Ascend950) {
                        failures.push(format!(
                            "{file}/{}: emits for 910b, not for 950: {}",
                            k.name, d.message
                        ));
                    }
                    ks.push(k);
                }
                Err(d) => {
                    let expected = expected_refusals
                        .iter()
                        .any(|(n, words, _)| *n == k.name && d.message.contains(words));
                    if !expected {
                        failures.push(format!("{file}/{}: refused: {}", k.name, d.message));
                    }
                }
            }
            seen.insert(format!("{file}/{}", k.name), ());
        }
        jobs.push((file.clone(), ks));
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let Some((file, ks)) = jobs.get(i) else { break };
                let (errs, n, ok) = run_file(&dir, file, ks, pto_include, compiler);
                if let Ok(mut r) = results.lock() {
                    r.push((file.clone(), ks.len(), n, ok, errs));
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap_or_default();
    results.sort();
    let (mut total, mut total_ok) = (0, 0);
    for (file, nk, n, ok, errs) in results {
        eprintln!(
            "{file}: {nk} kernels, {n} tasks ({ok} the interpreter runs): {}",
            if errs.is_empty() { "agree" } else { "FAIL" }
        );
        total += n;
        total_ok += ok;
        failures.extend(errs.into_iter().map(|e| format!("{file}: {e}")));
    }
    // WSP_ASCEND_KEEP=1 keeps the emitted sources and harnesses for inspection.
    if std::env::var_os("WSP_ASCEND_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    } else {
        eprintln!("kept {}", dir.display());
    }
    // Most tasks must run: a corpus whose tasks the interpreter all rejects proves nothing.
    if total_ok * 4 < total * 3 {
        failures.push(format!(
            "only {total_ok} of {total} tasks run in the interpreter"
        ));
    }
    failures
}

/// Writes the stand-in into a fresh directory; returns the directory to pass with `-I`.
pub fn standin_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wsp_ascend_standin_{tag}_{}", std::process::id()));
    for (path, text) in standin_files() {
        let p = dir.join(path);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, text).expect("write stand-in");
    }
    dir.join("pto_standin")
}

/// g++ in C++17, the compiler of the stand-in builds.
pub fn gxx() -> Vec<String> {
    vec!["g++".to_string(), "-std=c++17".to_string()]
}

/// The kernels of every example (lowered as `wsp emit --target ir` does) and of every std
/// module (each kernel lowered on its own), by source file.
pub fn corpus() -> Vec<(String, Vec<Kernel>)> {
    let mut out = Vec::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join("examples"))
        .expect("examples")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .filter_map(|d| {
            let n = d.file_name()?.to_string_lossy().to_string();
            let f = d.join(format!("{n}.wsp"));
            f.exists().then_some(f)
        })
        .collect();
    files.sort();
    for path in files {
        let text = std::fs::read_to_string(&path).expect("example");
        let mut ws = wsp_core::Workspace::new();
        let key = path.to_string_lossy().to_string();
        ws.set_file(&key, text);
        let p = wsp_lower::lower(&ws, &key)
            .unwrap_or_else(|d| panic!("{} did not lower: {d:#?}", path.display()));
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_default();
        out.push((name, p.kernels));
    }
    let mut std_files: Vec<PathBuf> = std::fs::read_dir(root().join("std"))
        .expect("std")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "wsp"))
        .collect();
    std_files.sort();
    for path in std_files {
        let text = std::fs::read_to_string(&path).expect("std module");
        let names: Vec<String> = text
            .lines()
            .filter_map(|l| {
                let rest = l.trim_start().strip_prefix("kernel ")?;
                let n: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                (!n.is_empty()).then_some(n)
            })
            .collect();
        if names.is_empty() {
            // A module of workloads only (std.llama): its kernels are the other modules'.
            continue;
        }
        let mut ws = wsp_core::Workspace::new();
        let key = path.to_string_lossy().to_string();
        ws.set_file(&key, text);
        let file = ws.file_handle(&key).expect("loaded");
        let kernels: Vec<Kernel> = names
            .iter()
            .map(|n| {
                wsp_lower::kernel_ir(ws.db(), file, n)
                    .unwrap_or_else(|| panic!("std kernel `{n}` does not lower on its own"))
            })
            .collect();
        let name = format!(
            "std_{}",
            path.file_stem()
                .map(|s| s.to_string_lossy().to_string())
                .unwrap_or_default()
        );
        out.push((name, kernels));
    }
    out
}

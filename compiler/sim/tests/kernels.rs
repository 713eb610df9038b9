//! Every kernel declared in `examples/` and `std/` compiles with the JIT — none falls back to
//! the reference interpreter — and agrees with the interpreter bit for bit on random data
//! (any NaN matches any NaN), valid extents full and partial.

use std::path::{Path, PathBuf};
use wsp_ir::interp::{run_kernel, KernelArg, Tile};
use wsp_ir::kernel::{Kernel, ParamKind};
use wsp_ir::tensor::{convert, El};
use wsp_ir::ScalarValue;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `examples/*/*.wsp` and `std/*.wsp`.
fn sources() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let ex = root().join("examples");
    for e in std::fs::read_dir(&ex).expect("examples/") {
        let dir = e.expect("entry").path();
        if dir.is_dir() {
            for f in std::fs::read_dir(&dir).expect("example dir") {
                let f = f.expect("entry").path();
                if f.extension().is_some_and(|x| x == "wsp") {
                    out.push(f);
                }
            }
        }
    }
    for f in std::fs::read_dir(root().join("std")).expect("std/") {
        let f = f.expect("entry").path();
        if f.extension().is_some_and(|x| x == "wsp") {
            out.push(f);
        }
    }
    out.sort();
    out
}

/// Names of the kernels declared at the top level of `text` (`kernel NAME(`).
fn kernel_names(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("kernel "))
        .filter_map(|rest| rest.split('(').next())
        .map(|n| n.trim().to_string())
        .collect()
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 40) as f64 / (1u64 << 24) as f64) * 4.0 - 2.0
    }
}

fn args(k: &Kernel, seed: u64, partial_to: Option<[u32; 2]>) -> Vec<KernelArg> {
    let mut rng = Rng(seed);
    k.params
        .iter()
        .map(|p| match p.kind {
            ParamKind::Tile { tile, partial, .. } => {
                let mut t = Tile::zeros(tile);
                for i in 0..tile.len() {
                    let x = rng.next();
                    let e = if tile.dtype.is_int() {
                        El::I((x * 8.0) as i128)
                    } else {
                        El::F(x)
                    };
                    t.data.set(i, convert(e, tile.dtype));
                }
                if let Some(v) = partial_to {
                    for d in 0..2 {
                        if partial[d] {
                            t.valid[d] = v[d].min(tile.shape[d]);
                        }
                    }
                }
                KernelArg::Tile(t)
            }
            ParamKind::Scalar { dtype, default } => {
                let x = rng.next();
                KernelArg::Scalar(default.unwrap_or(if dtype.is_int() {
                    ScalarValue::Int((x * 8.0) as i64 + 8)
                } else {
                    ScalarValue::Float(x)
                }))
            }
        })
        .collect()
}

fn agree(k: &Kernel, ck: &wsp_jit::CompiledKernel, seed: u64, partial_to: Option<[u32; 2]>) {
    let mut a = args(k, seed, partial_to);
    let mut b = a.clone();
    let ri = run_kernel(k, &mut a);
    let rj = ck.run(&mut b);
    assert_eq!(ri.is_ok(), rj.is_ok(), "{}: {ri:?} vs {rj:?}", k.name);
    for (x, y) in a.iter().zip(&b) {
        if let (KernelArg::Tile(x), KernelArg::Tile(y)) = (x, y) {
            for (u, v) in x.valid_f64().iter().zip(y.valid_f64()) {
                assert!(
                    u.to_bits() == v.to_bits() || (u.is_nan() && v.is_nan()),
                    "{}: interpreter {u} vs JIT {v}",
                    k.name
                );
            }
        }
    }
}

#[test]
fn every_example_and_std_kernel_compiles_with_the_jit_and_agrees_with_the_interpreter() {
    let jit = wsp_jit::Jit::new();
    let mut compiled = 0;
    for path in sources() {
        let text = std::fs::read_to_string(&path).expect("readable");
        let mut ws = wsp_core::Workspace::new();
        let rel = path.strip_prefix(root()).unwrap_or(&path);
        let key = rel.to_string_lossy().replace('\\', "/");
        // std modules are loaded by the workspace under `std/NAME.wsp`.
        if !key.starts_with("std/") {
            ws.set_file(&key, text.clone());
        }
        let file = ws
            .file_handle(&key)
            .unwrap_or_else(|| panic!("{key} is loaded"));
        for name in kernel_names(&text) {
            let k = wsp_lower::kernel_ir(ws.db(), file, &name)
                .unwrap_or_else(|| panic!("{key}: kernel `{name}` lowers"));
            if k.body.is_none() {
                continue;
            }
            let ck = jit
                .compile(&k)
                .unwrap_or_else(|e| panic!("{key}: the JIT does not compile `{name}`: {e}"));
            for seed in 1..3 {
                agree(&k, &ck, seed, None);
            }
            agree(&k, &ck, 5, Some([3, 5]));
            compiled += 1;
        }
    }
    assert!(compiled >= 40, "only {compiled} kernels found");
}

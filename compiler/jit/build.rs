//! Builds the C reference loops of the benchmarks with `gcc -O2` semantics, and computes the
//! JIT's build identity: a hash of the sources that decide the code it generates (this crate's
//! and wsp-ir's `src/`, and the workspace's `Cargo.lock`, which pins Cranelift). The disk cache
//! of compiled kernels keys its entries by it, so that code compiled by another build of the
//! JIT is never loaded, whatever the version number says.
use std::path::{Path, PathBuf};

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else {
            out.push(p);
        }
    }
}

fn main() {
    println!("cargo:rerun-if-changed=benches/ref.c");
    cc::Build::new()
        .file("benches/ref.c")
        .opt_level(2)
        .compile("wsp_jit_bench_ref");

    let here = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
    let mut paths = Vec::new();
    for dir in [here.join("src"), here.join("../ir/src")] {
        println!("cargo:rerun-if-changed={}", dir.display());
        files(&dir, &mut paths);
    }
    let lock = here.join("../../Cargo.lock");
    println!("cargo:rerun-if-changed={}", lock.display());
    paths.push(lock);
    paths.sort();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in &paths {
        let name = p
            .strip_prefix(&here)
            .unwrap_or(p)
            .to_string_lossy()
            .into_owned();
        for b in name.bytes().chain(std::fs::read(p).unwrap_or_default()) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    println!("cargo:rustc-env=WSP_JIT_BUILD_ID={h:016x}");
}

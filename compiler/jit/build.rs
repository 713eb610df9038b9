//! Builds the C reference loops of the benchmarks with `gcc -O2` semantics.
fn main() {
    println!("cargo:rerun-if-changed=benches/ref.c");
    cc::Build::new()
        .file("benches/ref.c")
        .opt_level(2)
        .compile("wsp_jit_bench_ref");
}

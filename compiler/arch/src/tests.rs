use super::*;

#[test]
fn every_builtin_loads() {
    for name in Arch::builtin_names() {
        let a = Arch::builtin(name).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(a.name, name);
    }
}

#[test]
fn ascend910b_figures() {
    let a = Arch::builtin("ascend910b").unwrap();
    assert_eq!(a.core_count(CoreClass::Cube), 24);
    assert_eq!(a.core_count(CoreClass::Vector), 48);
    assert_eq!(a.core_count(CoreClass::Aicpu), 6);
    assert_eq!(a.buffer("UB"), Some(192 * 1024));
    assert_eq!(a.buffer("L0C"), Some(128 * 1024));
    assert_eq!(a.timing, TimingSemantics::Event);
    assert!(!a.estimate);
    // TADDS fp32 64x64: 0.0156 * 4096 + 25 = 88.9 -> 89
    assert_eq!(a.op_cycles("TADDS", "fp32", 64, 64).unwrap(), 89);
    // f32 spelling maps to the fp32 entry.
    assert_eq!(a.op_cycles("TADDS", "f32", 64, 64).unwrap(), 89);
    // Unknown op: fallback 0.0078125 * bytes + 30: 64*64*2 bytes = 8192 -> 64 + 30.
    assert_eq!(a.op_cycles("TFOO", "fp16", 64, 64).unwrap(), 94);
    // MAD fp16 128x128x128: 6 + 8 * 8 * 8.
    assert_eq!(a.matmul_cycles(128, 128, 128, "fp16").unwrap(), 6 + 512);
    // fp32: K blocks of 8, c = 2: 6 + 2 * 8 * 16 * 8.
    assert_eq!(
        a.matmul_cycles(128, 128, 128, "fp32").unwrap(),
        6 + 2 * 1024
    );
    // 1 GiB over GM->UB at 100.9 GiB/s.
    let c = a.dma_cycles(1 << 30, "GM->UB").unwrap();
    assert_eq!(c, (1.85e9 / 100.9f64).ceil() as u64);
    assert!(a
        .dma_cycles(100, "GM->L9")
        .unwrap_err()
        .0
        .contains("GM->L9"));
    assert!(a.matmul_cycles(1, 1, 1, "int32").is_err());
}

#[test]
fn v9_model_is_product_and_free() {
    let a = Arch::builtin("pto_wsp_v9").unwrap();
    assert_eq!(a.timing, TimingSemantics::V9);
    assert_eq!(a.op_cycles("TADD", "fp32", 64, 64).unwrap(), 4096);
    assert_eq!(a.op_cycles("TSORT32", "fp32", 1, 32).unwrap(), 160);
    assert_eq!(a.matmul_cycles(16, 16, 16, "fp32").unwrap(), 4096);
    assert_eq!(a.dma_cycles(1 << 20, "GM->UB").unwrap(), 0);
}

#[test]
fn ascend950_is_marked_estimate() {
    let a = Arch::builtin("ascend950").unwrap();
    assert!(a.estimate);
    assert_eq!(a.core_count(CoreClass::Cube), 36);
    assert_eq!(a.buffer("UB"), Some(256 * 1024));
    assert_eq!(a.buffer("L0C"), Some(256 * 1024));
}

#[test]
fn aie_ml_matmul_on_vector() {
    let a = Arch::builtin("aie-ml").unwrap();
    assert_eq!(a.matmul_class, CoreClass::Vector);
    assert_eq!(a.core_count(CoreClass::Cube), 0);
    assert_eq!(a.core_count(CoreClass::Vector), 16);
}

fn broken(edit: impl Fn(&str) -> String) -> ArchError {
    let src = edit(BUILTIN[0].1);
    Arch::parse(&src, "user.toml").unwrap_err()
}

#[test]
fn validation_names_file_and_key() {
    let e = broken(|s| s.replace("count = 24", "count = 0"));
    assert_eq!(e.file, "user.toml");
    assert_eq!(e.key, "cores.cube.count");
    let e = broken(|s| s.replace("timing = \"event\"", "timing = \"fast\""));
    assert_eq!(e.key, "timing");
    assert!(e.message.contains("fast"));
    let e = broken(|s| s.replace("\"GM->UB\" = 100.9", "\"GM->UB\" = -1.0"));
    assert_eq!(e.key, "dma.\"GM->UB\"");
    let e = broken(|s| s.replace("[cores.cube]", "[cores.tensor]"));
    assert_eq!(e.key, "cores.tensor");
    let e = broken(|s| {
        s.replace(
            "fp32 = { slope = 0.0156, bias = 25.0 }",
            "fp99 = { slope = 0.0156, bias = 25.0 }",
        )
    });
    assert_eq!(e.key, "ops.TADDS.fp99");
    let e = broken(|s| s.replace("kind = \"fractal\"", "kind = \"magic\""));
    assert_eq!(e.key, "matmul.kind");
    let e = broken(|s| s.replace("clock_hz = 1850000000", ""));
    assert!(e.message.contains("clock_hz"), "{e}");
    let e = broken(|s| {
        s.replace(
            "[fallback.vector]\nslope_per_byte = 0.0078125\n",
            "[fallback.vector]\n",
        )
    });
    assert_eq!(e.key, "fallback.vector");
    // Overheads far beyond any target would let the runtime's clock wrap.
    let e = broken(|s| s.replace("\ndispatch = ", "\ndispatch = 18446744073709551615 #"));
    assert_eq!(e.key, "overheads.dispatch");
    assert!(e.message.contains("at most 1099511627776"), "{e}");
    // So would a class of more cores than the runtime numbers.
    let e = broken(|s| s.replacen("count = ", "count = 100000000 #", 1));
    assert!(
        e.key.starts_with("cores.") && e.key.ends_with(".count"),
        "{e}"
    );
    assert!(e.message.contains("at most 65534"), "{e}");
    let e = Arch::parse("name = \"x\"\nclock_hz = [", "bad.toml").unwrap_err();
    assert!(e.to_string().starts_with("bad.toml: "), "{e}");
    assert!(Arch::builtin("nope")
        .unwrap_err()
        .message
        .contains("ascend910b"));
}

#[test]
fn load_path_reports_missing_file() {
    let e = Arch::load_path(Path::new("/nonexistent/arch.toml")).unwrap_err();
    assert_eq!(e.file, "/nonexistent/arch.toml");
}

#[test]
fn task_io_paths() {
    let a = Arch::builtin("ascend910b").unwrap();
    let c = a.task_io_cycles(CoreClass::Vector, 1 << 30, 0).unwrap();
    assert_eq!(c, a.dma_cycles(1 << 30, "GM->UB").unwrap());
    assert_eq!(a.task_io_cycles(CoreClass::Aicpu, 100, 100).unwrap(), 0);
    let e = broken(|s| s.replace("vector_load = \"GM->UB\"", "vector_load = \"GM->XX\""));
    assert_eq!(e.key, "task_io.vector_load");
    let e = broken(|s| s.replace("vector_load = \"GM->UB\"", ""));
    assert_eq!(e.key, "task_io.vector_load");
}

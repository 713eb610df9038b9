//! Lowers the examples and runs the reference interpreter against their golden data.

use std::path::Path;

fn lower_example(name: &str) -> wsp_ir::Program {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name);
    let path = dir.join(format!("{name}.wsp"));
    let text = std::fs::read_to_string(&path).expect("example exists");
    let mut ws = wsp_core::Workspace::new();
    let key = path.to_string_lossy().to_string();
    ws.set_file(&key, text);
    match wsp_lower::lower(&ws, &key) {
        Ok(p) => p,
        Err(d) => panic!("{name} did not lower: {d:#?}"),
    }
}

#[test]
fn validated_matmul_lowers_to_valid_ir() {
    let p = lower_example("validated_matmul");
    assert!(wsp_ir::check::validate_program(&p).is_empty());
    assert_eq!(p.kernels.len(), 1);
    assert_eq!(p.tensors.len(), 3);
    assert_eq!(p.schedules[0].name, "main");
    assert_eq!(p.expects.len(), 1);
}

#[test]
fn a_program_with_errors_returns_its_check_errors() {
    let mut ws = wsp_core::Workspace::new();
    ws.set_file("bad.wsp", "const N = M\n".into());
    let errs = wsp_lower::lower(&ws, "bad.wsp").expect_err("has errors");
    assert!(
        errs.iter().all(|d| d.code != wsp_lower::UNSUPPORTED),
        "{errs:?}"
    );
}

/// The examples that carry input data and NumPy goldens (`gen.py` next to each program).
const WITH_DATA: [&str; 15] = [
    "csp_pipeline",
    "validated_matmul",
    "tensor_data_add",
    "tensor_data_square",
    "attention",
    "bgemm",
    "softmax",
    "e2e_rmsnorm",
    "llama",
    "deepseek_v3",
    "flashinfer_decode",
    "lightning_indexer",
    "flash_attention",
    "moe_routing",
    "varlen_attention",
];

/// The examples with data, lowered and run by the reference interpreters: every `expect`
/// (outputs against the NumPy goldens) holds.
#[test]
fn examples_with_data_match_their_goldens() {
    for name in WITH_DATA {
        let p = lower_example(name);
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../examples")
            .join(name);
        let run = wsp_ir::data::run_reference(&p, None, &[], &[], &dir)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(!run.expects.is_empty(), "{name} has no expect");
        for e in &run.expects {
            assert!(
                e.failure.is_none(),
                "{name}: {} failed: {:?}",
                e.description,
                e.failure
            );
        }
        assert!(!run.outcome.tasks.is_empty(), "{name} ran no task");
    }
}

#[test]
fn every_example_lowers() {
    for name in WITH_DATA {
        let p = lower_example(name);
        assert!(wsp_ir::check::validate_program(&p).is_empty(), "{name}");
    }
}

//! The committed JSON Schema of the Program IR (docs/program-ir.schema.json, kept equal to
//! what the types generate by a test in wsp-ir) accepts the IR `wsp emit --target ir` prints
//! for every example, and rejects IR that breaks it.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn compile() -> (boon::Schemas, boon::SchemaIndex) {
    let text = std::fs::read_to_string(repo().join("docs/program-ir.schema.json")).unwrap();
    let schema: Value = serde_json::from_str(&text).unwrap();
    let mut schemas = boon::Schemas::new();
    let mut compiler = boon::Compiler::new();
    let loc = "file:///wsp/docs/program-ir.schema.json";
    compiler.add_resource(loc, schema).unwrap();
    let index = compiler
        .compile(loc, &mut schemas)
        .unwrap_or_else(|e| panic!("the schema does not compile: {e}"));
    (schemas, index)
}

fn emit_ir(wsp_file: &Path) -> Value {
    let o = Command::new(env!("CARGO_BIN_EXE_wsp"))
        .args(["emit", "--target", "ir"])
        .arg(wsp_file.file_name().unwrap())
        .current_dir(wsp_file.parent().unwrap())
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}: {}",
        wsp_file.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

fn examples() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(repo().join("examples"))
        .unwrap()
        .flatten()
    {
        if !e.path().is_dir() {
            continue;
        }
        for f in std::fs::read_dir(e.path()).unwrap().flatten() {
            if f.path().extension().is_some_and(|x| x == "wsp") {
                out.push(f.path());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn every_example_ir_validates() {
    let (schemas, index) = compile();
    let files = examples();
    assert!(files.len() >= 10, "only {} examples", files.len());
    let mut failures = Vec::new();
    for f in &files {
        let ir = emit_ir(f);
        if let Err(e) = schemas.validate(&ir, index) {
            failures.push(format!("{}: {e:#}", f.display()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Sets the value at a JSON pointer (which must exist, so a mutation cannot silently miss).
fn set(v: &mut Value, pointer: &str, to: Value) {
    *v.pointer_mut(pointer)
        .unwrap_or_else(|| panic!("no {pointer} in the IR")) = to;
}

#[test]
fn invalid_ir_is_rejected() {
    let (schemas, index) = compile();
    let ir = emit_ir(&repo().join("examples/validated_matmul/validated_matmul.wsp"));
    assert!(schemas.validate(&ir, index).is_ok());
    let mut cases: Vec<(&str, Value)> = Vec::new();
    let mut v = ir.clone();
    v.as_object_mut().unwrap().remove("version");
    cases.push(("no version", v));
    let mut v = ir.clone();
    set(&mut v, "/version", json!("one"));
    cases.push(("a string version", v));
    let mut v = ir.clone();
    set(&mut v, "/kernels/0/params/0/tile/dtype", json!("f33"));
    cases.push(("an unknown dtype", v));
    let mut v = ir.clone();
    set(&mut v, "/kernels/0/body/0/op", json!({"kind": "teleport"}));
    cases.push(("an unknown op kind", v));
    let mut v = ir.clone();
    set(
        &mut v,
        "/kernels/0/body/0",
        json!({"stmt": "store", "param": -1, "value": 0}),
    );
    cases.push(("a negative id", v));
    let mut v = ir.clone();
    set(&mut v, "/kernels/0/params/0/tile/shape", json!([8]));
    cases.push(("a one-dimensional tile", v));
    let mut v = ir.clone();
    set(
        &mut v,
        "/kernels/0/body/0/op",
        json!({"kind": "const", "value": {"float": "infinity"}, "dtype": "f32"}),
    );
    cases.push(("a misspelt non-finite float", v));
    for (what, v) in cases {
        assert!(schemas.validate(&v, index).is_err(), "{what} was accepted");
        // The schema agrees with the reader.
        assert!(
            wsp_ir_rejects(&v),
            "{what}: the schema rejects it but Program::from_json accepts it"
        );
    }
    // A float constant spelt as the schema allows is accepted.
    let mut v = ir.clone();
    set(
        &mut v,
        "/kernels/0/body/0/op",
        json!({"kind": "const", "value": {"float": "-inf"}, "dtype": "f32"}),
    );
    assert!(schemas.validate(&v, index).is_ok());
}

/// Whether the IR reader (`Program::from_json`, the serde types the schema is derived from)
/// rejects the IR too.
fn wsp_ir_rejects(v: &Value) -> bool {
    wsp_ir::Program::from_json(&v.to_string()).is_err()
}

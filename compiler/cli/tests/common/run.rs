//! Helpers of the `wsp run` tests: running `wsp` in a directory, fresh directories holding a
//! program, the examples, and the `sum4` program with its `.npy` input.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn wsp(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wsp"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .expect("run wsp")
}

pub fn tempdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("wsp-run-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

/// A fresh directory holding `src` as `p.wsp`.
pub fn program(name: &str, src: &str) -> PathBuf {
    let d = tempdir(name);
    std::fs::write(d.join("p.wsp"), src).expect("write");
    d
}

pub fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
        .join(format!("{name}.wsp"))
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

const SUM4: &str = r#"
axis rows = Dense[2]
input  A: f32[2, 16, 16] = load("a.npy")
input  B: f32[2, 16, 16] = random(seed: 2)
input  C: f32[2, 16, 16] = random(seed: 3)
input  D: f32[2, 16, 16] = random(seed: 4)
output Y: f32[2, 16, 16]
kernel sum4(a: in f32[16, 16], b: in f32[16, 16], c: in f32[16, 16], d: in f32[16, 16], y: out f32[16, 16]) {
    y = a + b + c + d
}
workload w { for i in P(rows) { sum4[i](a: A[i], b: B[i], c: C[i], d: D[i], y: Y[i]) } }
schedule main = w.task_window(WINDOW)
"#;

/// A `.npy` of f32 zeros with the given shape.
pub fn npy_f32(shape: &[usize]) -> Vec<u8> {
    let dims = shape
        .iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let comma = if shape.len() == 1 { "," } else { "" };
    let mut h = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': ({dims}{comma}), }}");
    while (10 + h.len() + 1) % 64 != 0 {
        h.push(' ');
    }
    h.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend((h.len() as u16).to_le_bytes());
    out.extend(h.as_bytes());
    out.extend(vec![0u8; 4 * shape.iter().product::<usize>()]);
    out
}

pub fn sum4(d: &Path, window: u32, expect: &str) {
    let src = SUM4.replace("WINDOW", &window.to_string()) + expect;
    std::fs::write(d.join("p.wsp"), src).expect("write");
    std::fs::write(d.join("a.npy"), npy_f32(&[2, 16, 16])).expect("write");
}

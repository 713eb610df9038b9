//! The C++ numeric helpers of the kernels (`kernels/wsp_aie.h`) against wsp's own conversions
//! (`wsp_ir::tensor::convert`), bit for bit, on edge cases (ties, subnormals, overflow, NaN,
//! saturation) and pseudo-random values: compiled with g++ and run.

use std::fmt::Write;
use std::process::Command;

use wsp_ir::dtype::DType;
use wsp_ir::tensor::{convert, encode_el, El};

fn bits(e: El, d: DType) -> u64 {
    let mut b = Vec::new();
    encode_el(e, d, &mut b, false);
    b.iter()
        .enumerate()
        .fold(0u64, |a, (i, x)| a | (u64::from(*x) << (8 * i)))
}

fn values() -> Vec<f64> {
    let mut v = vec![
        0.0,
        -0.0,
        1.0,
        -1.5,
        65504.0,
        65519.99,
        65520.0,
        1e9,
        -1e9,
        3.0e38,
        3.5e38,
        1e-5,
        6.1e-5,
        5.96e-8,
        2.98e-8,
        2.99e-8,
        1e-40,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        1.0 + 2f64.powi(-11),
        1.0 + 3.0 * 2f64.powi(-11),
        1.0 + 2f64.powi(-8),
        1.0 + 2f64.powi(-8) + 2f64.powi(-40),
        2147483647.5,
        -2147483649.0,
        255.9,
        -0.9,
        1.0000000000000002,
    ];
    let mut s = 0x1234_5678_9abc_def0u64;
    for _ in 0..400 {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        let x = f64::from_bits(s);
        if x.is_finite() {
            v.push(x);
        }
        v.push(((s >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 2f64.powi((s % 60) as i32 - 30));
    }
    v
}

#[test]
fn conversions_match_wsp_bit_for_bit() {
    let vals = values();
    let targets = [
        (DType::F16, "(uint64_t)wsp_d2h(x)"),
        (DType::Bf16, "(uint64_t)wsp_d2b(x)"),
        (DType::F32, "(uint64_t)wsp_f32_bits((float)x)"),
        (DType::I32, "(uint64_t)(uint32_t)wsp_f2i<int32_t>(x)"),
        (DType::U8, "(uint64_t)wsp_f2i<uint8_t>(x)"),
        (DType::I64, "(uint64_t)wsp_f2i<int64_t>(x)"),
    ];
    let mut src =
        String::from("#include \"wsp_aie.h\"\n#include <cstdio>\nstatic const uint64_t kIn[] = {");
    for v in &vals {
        let _ = write!(src, "0x{:016x}ull,", v.to_bits());
    }
    src.push_str("};\nint main() {\n  for (uint64_t b : kIn) {\n    double x = wsp_bits_f64(b);\n");
    for (_, e) in &targets {
        let _ = writeln!(
            src,
            "    std::printf(\"%llx \", (unsigned long long)({e}));"
        );
    }
    // f16 -> f32 and bf16 -> f32 round trips of the converted halves.
    src.push_str("    std::printf(\"%x %x\\n\", wsp_f32_bits(wsp_h2f(wsp_d2h(x))), wsp_f32_bits(wsp_b2f(wsp_d2b(x))));\n  }\n}\n");
    let dir = std::env::temp_dir().join(format!("wsp-aie-conv-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join("wsp_aie.h"), wsp_aie::kernel_cc::HEADER).expect("write");
    std::fs::write(dir.join("wsp_math.h"), wsp_ir::math::c_header()).expect("write");
    std::fs::write(dir.join("conv.cc"), src).expect("write");
    let out = Command::new("g++")
        .args([
            "-std=c++17",
            "-O1",
            "-ffp-contract=off",
            "-DWSP_AIE_CPU=1",
            "-o",
            "conv",
            "conv.cc",
            "-lm",
        ])
        .current_dir(&dir)
        .output()
        .expect("g++ runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = Command::new(dir.join("conv")).output().expect("runs");
    assert!(run.status.success());
    let text = String::from_utf8_lossy(&run.stdout).to_string();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), vals.len());
    for (v, line) in vals.iter().zip(lines) {
        let got: Vec<u64> = line
            .split_whitespace()
            .map(|h| u64::from_str_radix(h, 16).expect("hex"))
            .collect();
        for (i, (d, _)) in targets.iter().enumerate() {
            let want = bits(convert(El::F(*v), *d), *d);
            let mask = if d.size_bytes() == 8 {
                u64::MAX
            } else {
                (1u64 << (8 * d.size_bytes())) - 1
            };
            assert_eq!(got[i] & mask, want, "{v:e} ({:#x}) -> {d}", v.to_bits());
        }
        // Halves widen exactly.
        let h = convert(El::F(*v), DType::F16).as_f64() as f32;
        let b = convert(El::F(*v), DType::Bf16).as_f64() as f32;
        if !h.is_nan() {
            assert_eq!(got[targets.len()] as u32, h.to_bits(), "{v:e} f16 widening");
        }
        if !b.is_nan() {
            assert_eq!(
                got[targets.len() + 1] as u32,
                b.to_bits(),
                "{v:e} bf16 widening"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn integer_to_float_conversions_match_wsp_bit_for_bit() {
    let mut ints: Vec<i64> = vec![
        0,
        1,
        -1,
        2047,
        2049,
        4097,
        65519,
        65520,
        65536,
        16_777_217,
        -16_777_219,
        i64::MAX,
        i64::MIN,
        (1 << 53) + 1,
        0x7fff_ffff,
    ];
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..300 {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        ints.push((s as i64) >> (s % 63));
    }
    let mut src =
        String::from("#include \"wsp_aie.h\"\n#include <cstdio>\nstatic const int64_t kIn[] = {");
    for v in &ints {
        let _ = write!(src, "(int64_t)0x{:016x}ull,", *v as u64);
    }
    src.push_str("};\nint main() {\n  for (int64_t i : kIn) std::printf(\"%x %x %x\\n\", (unsigned)wsp_f2h(wsp_i2f_odd(i)), (unsigned)wsp_f2b(wsp_i2f_odd(i)), wsp_f32_bits((float)i));\n}\n");
    let dir = std::env::temp_dir().join(format!("wsp-aie-iconv-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join("wsp_aie.h"), wsp_aie::kernel_cc::HEADER).expect("write");
    std::fs::write(dir.join("wsp_math.h"), wsp_ir::math::c_header()).expect("write");
    std::fs::write(dir.join("conv.cc"), src).expect("write");
    let out = Command::new("g++")
        .args([
            "-std=c++17",
            "-O1",
            "-DWSP_AIE_CPU=1",
            "-o",
            "conv",
            "conv.cc",
            "-lm",
        ])
        .current_dir(&dir)
        .output()
        .expect("g++ runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = Command::new(dir.join("conv")).output().expect("runs");
    let text = String::from_utf8_lossy(&run.stdout).to_string();
    for (v, line) in ints.iter().zip(text.lines()) {
        let got: Vec<u64> = line
            .split_whitespace()
            .map(|h| u64::from_str_radix(h, 16).expect("hex"))
            .collect();
        for (i, d) in [DType::F16, DType::Bf16, DType::F32]
            .into_iter()
            .enumerate()
        {
            assert_eq!(
                got[i],
                bits(convert(El::I(i128::from(*v)), d), d),
                "{v} -> {d}"
            );
        }
    }
    assert_eq!(text.lines().count(), ints.len());
    let _ = std::fs::remove_dir_all(&dir);
}

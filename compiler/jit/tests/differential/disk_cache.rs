//! The disk cache: a second JIT (another process, in effect) loads what the first compiled,
//! without Cranelift, and the loaded code computes what the compiled code and the interpreter
//! compute — kernels whose code calls helpers (`rowtopk`, `sin`, zero fills), Cranelift's
//! library calls or FMA instructions (matmul), and f16 conversions.

use crate::common::{args_for, f32t, tt};
use wsp_ir::interp::{run_kernel, KernelArg};
use wsp_ir::kernel::*;
use wsp_ir::typing::KernelBuilder;
use wsp_ir::{DType, ScalarValue};
use wsp_jit::{DiskCache, Jit};

fn kernels() -> Vec<Kernel> {
    let mut out = Vec::new();
    // matmul with an f16 operand, plus sin and a zero fill.
    let mut b = KernelBuilder::new("mm");
    let x = b.partial_tile_param("x", Direction::In, tt(DType::F16, 8, 12), [true, false]);
    let w = b.tile_param("w", Direction::In, f32t(12, 20));
    let o = b.tile_param("o", Direction::Out, f32t(8, 20));
    let z = b.tile_param("z", Direction::Out, f32t(8, 20));
    let xv = b.load(x).unwrap();
    let xf = b
        .op(Op::Cast {
            x: xv,
            dtype: DType::F32,
        })
        .unwrap();
    let wv = b.load(w).unwrap();
    let m = b
        .op(Op::Matmul {
            a: xf,
            b: wv,
            acc: None,
        })
        .unwrap();
    let s = b.unary(UnaryOp::Sin, m).unwrap();
    b.store(o, s);
    let zero = b.constant(ScalarValue::Float(0.0), DType::F32).unwrap();
    let f = b
        .op(Op::Full {
            shape: [8, 20],
            dtype: DType::F32,
            value: zero,
        })
        .unwrap();
    b.store(z, f);
    out.push(b.finish().unwrap());
    // rowtopk and exp.
    let mut b = KernelBuilder::new("topk");
    let x = b.tile_param("x", Direction::In, f32t(6, 9));
    let v = b.tile_param("v", Direction::Out, f32t(6, 3));
    let i = b.tile_param("i", Direction::Out, tt(DType::I32, 6, 3));
    let xv = b.load(x).unwrap();
    let e = b.unary(UnaryOp::Exp, xv).unwrap();
    let r = b.op_n(Op::RowTopK { x: e, k: 3 }).unwrap();
    b.store(v, r[0]);
    b.store(i, r[1]);
    out.push(b.finish().unwrap());
    out
}

fn outputs(args: &[KernelArg]) -> Vec<u64> {
    args.iter()
        .filter_map(|a| match a {
            KernelArg::Tile(t) => Some(t.valid_f64()),
            KernelArg::Scalar(_) => None,
        })
        .flatten()
        .map(|x| if x.is_nan() { u64::MAX } else { x.to_bits() })
        .collect()
}

#[test]
fn a_second_jit_loads_the_first_ones_kernels_and_they_compute_the_same() {
    let dir = std::env::temp_dir().join(format!("wsp-jit-cache-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let first = Jit::with_disk_cache(Some(DiskCache::new(&dir)));
    let second = Jit::with_disk_cache(Some(DiskCache::new(&dir)));
    let ks = kernels();
    for k in &ks {
        let a = first.compile(k).unwrap();
        let b = second.compile(k).unwrap();
        for seed in 1..4 {
            let mut want = args_for(k, seed, None);
            let mut ga = want.clone();
            let mut gb = want.clone();
            run_kernel(k, &mut want).unwrap();
            a.run(&mut ga).unwrap();
            b.run(&mut gb).unwrap();
            assert_eq!(outputs(&ga), outputs(&want), "{}: compiled", k.name);
            assert_eq!(outputs(&gb), outputs(&want), "{}: loaded", k.name);
        }
    }
    assert_eq!(first.counts(), (0, ks.len()), "the first JIT compiles");
    assert_eq!(second.counts(), (ks.len(), 0), "the second loads");
    // A damaged entry is compiled again (and rewritten), never an error.
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        let mut bytes = std::fs::read(&p).unwrap();
        let n = bytes.len();
        bytes[n / 2] ^= 0xff;
        std::fs::write(&p, bytes).unwrap();
    }
    let third = Jit::with_disk_cache(Some(DiskCache::new(&dir)));
    for k in &ks {
        third.compile(k).unwrap();
    }
    assert_eq!(third.counts(), (0, ks.len()));
    let fourth = Jit::with_disk_cache(Some(DiskCache::new(&dir)));
    for k in &ks {
        fourth.compile(k).unwrap();
    }
    assert_eq!(fourth.counts(), (ks.len(), 0));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn concurrent_jits_share_one_directory() {
    let dir = std::env::temp_dir().join(format!("wsp-jit-cache-race-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let ks = kernels();
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..3 {
                    let jit = Jit::with_disk_cache(Some(DiskCache::new(&dir)));
                    for k in &ks {
                        let c = jit.compile(k).unwrap();
                        let mut args = args_for(k, 5, None);
                        let mut want = args.clone();
                        run_kernel(k, &mut want).unwrap();
                        c.run(&mut args).unwrap();
                        assert_eq!(outputs(&args), outputs(&want));
                    }
                }
            });
        }
    });
    // One entry per kernel, no temporary file left.
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), ks.len(), "{names:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

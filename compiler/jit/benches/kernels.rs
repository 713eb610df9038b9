//! JIT compile time, and JIT code against the same loops in C (`gcc -O2`, benches/ref.c).

use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;
use wsp_ir::kernel::*;
use wsp_ir::typing::KernelBuilder;
use wsp_ir::{DType, ScalarValue};
use wsp_jit::{compile_uncached, CompiledKernel, Scratch};

extern "C" {
    fn wsp_ref_chain(x: *const f32, y: *const f32, out: *mut f32, n: usize);
    fn wsp_ref_rowsum(x: *const f32, out: *mut f32, rows: usize, cols: usize);
    fn wsp_ref_rowmax(x: *const f32, out: *mut f32, rows: usize, cols: usize);
    fn wsp_ref_matmul(a: *const f32, b: *const f32, c: *mut f32, m: usize, k: usize, n: usize);
}

const N: u32 = 64;

fn t(r: u32, c: u32) -> TileType {
    TileType::new(DType::F32, r, c)
}

fn chain() -> Kernel {
    let mut b = KernelBuilder::new("chain");
    let x = b.tile_param("x", Direction::In, t(N, N));
    let y = b.tile_param("y", Direction::In, t(N, N));
    let o = b.tile_param("out", Direction::Out, t(N, N));
    let xv = b.load(x).unwrap();
    let yv = b.load(y).unwrap();
    let m = b.binary(BinaryOp::Mul, xv, yv).unwrap();
    let a = b.binary(BinaryOp::Add, m, xv).unwrap();
    let r = b.unary(UnaryOp::Relu, a).unwrap();
    let h = b.constant(ScalarValue::Float(0.5), DType::F32).unwrap();
    let hy = b.binary(BinaryOp::Mul, h, yv).unwrap();
    let s = b.binary(BinaryOp::Sub, r, hy).unwrap();
    b.store(o, s);
    b.finish().unwrap()
}

fn reduce(op: ReduceOp) -> Kernel {
    let mut b = KernelBuilder::new("reduce");
    let x = b.tile_param("x", Direction::In, t(N, N));
    let o = b.tile_param("out", Direction::Out, t(N, 1));
    let xv = b.load(x).unwrap();
    let r = b.op(Op::Reduce { op, x: xv }).unwrap();
    b.store(o, r);
    b.finish().unwrap()
}

fn matmul() -> Kernel {
    let mut b = KernelBuilder::new("matmul");
    let x = b.tile_param("a", Direction::In, t(N, N));
    let y = b.tile_param("b", Direction::In, t(N, N));
    let o = b.tile_param("c", Direction::Out, t(N, N));
    let xv = b.load(x).unwrap();
    let yv = b.load(y).unwrap();
    let r = b
        .op(Op::Matmul {
            a: xv,
            b: yv,
            acc: None,
        })
        .unwrap();
    b.store(o, r);
    b.finish().unwrap()
}

fn block(bufs: &mut [&mut [f32]], shapes: &[[u32; 2]]) -> Vec<u64> {
    let mut v = Vec::new();
    for (b, s) in bufs.iter_mut().zip(shapes) {
        v.extend([
            b.as_mut_ptr() as u64,
            u64::from(s[1]),
            u64::from(s[0]),
            u64::from(s[1]),
        ]);
    }
    v
}

fn data(n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| ((i * 7919) % 1000) as f32 / 500.0 - 1.0)
        .collect()
}

fn run(ck: &CompiledKernel, args: &[u64], s: &mut Scratch) {
    // SAFETY: every pointer addresses a full 64×64 (or 64×1) buffer.
    unsafe { ck.call_raw(args, s) }.unwrap();
}

fn bench(c: &mut Criterion) {
    let n = (N * N) as usize;
    let (mut x, mut y, mut o) = (data(n), data(n + 3)[3..].to_vec(), vec![0.0f32; n]);
    let mut r = vec![0.0f32; N as usize];

    let mut g = c.benchmark_group("compile");
    for (name, k) in [
        ("chain", chain()),
        ("rowsum", reduce(ReduceOp::RowSum)),
        ("matmul", matmul()),
    ] {
        g.bench_function(name, |b| {
            b.iter(|| compile_uncached(black_box(&k)).unwrap())
        });
    }
    g.finish();

    let mut g = c.benchmark_group("elementwise_chain_64x64");
    let ck = compile_uncached(&chain()).unwrap();
    let mut s = ck.new_scratch();
    let args = block(&mut [&mut x, &mut y, &mut o], &[[N, N]; 3]);
    g.bench_function("jit", |b| b.iter(|| run(&ck, black_box(&args), &mut s)));
    g.bench_function("c_gcc_O2", |b| {
        // SAFETY: buffers of n elements.
        b.iter(|| unsafe { wsp_ref_chain(x.as_ptr(), y.as_ptr(), o.as_mut_ptr(), black_box(n)) })
    });
    g.finish();

    for (op, name, f) in [
        (
            ReduceOp::RowSum,
            "rowsum_64x64",
            wsp_ref_rowsum as unsafe extern "C" fn(_, _, _, _),
        ),
        (ReduceOp::RowMax, "rowmax_64x64", wsp_ref_rowmax),
    ] {
        let mut g = c.benchmark_group(name);
        let ck = compile_uncached(&reduce(op)).unwrap();
        let mut s = ck.new_scratch();
        let args = block(&mut [&mut x, &mut r], &[[N, N], [N, 1]]);
        g.bench_function("jit", |b| b.iter(|| run(&ck, black_box(&args), &mut s)));
        g.bench_function("c_gcc_O2", |b| {
            // SAFETY: x has N·N elements, r has N.
            b.iter(|| unsafe {
                f(
                    x.as_ptr(),
                    r.as_mut_ptr(),
                    black_box(N as usize),
                    N as usize,
                )
            })
        });
        g.finish();
    }

    let mut g = c.benchmark_group("matmul_64x64x64");
    let ck = compile_uncached(&matmul()).unwrap();
    let mut s = ck.new_scratch();
    let args = block(&mut [&mut x, &mut y, &mut o], &[[N, N]; 3]);
    g.bench_function("jit", |b| b.iter(|| run(&ck, black_box(&args), &mut s)));
    g.bench_function("c_gcc_O2", |b| {
        let m = N as usize;
        // SAFETY: buffers of N·N elements.
        b.iter(|| unsafe {
            wsp_ref_matmul(x.as_ptr(), y.as_ptr(), o.as_mut_ptr(), black_box(m), m, m)
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

//! Speed of the reference interpreter (it is an oracle, not the fast path) and of `.npy` I/O.

use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;
use std::path::Path;
use wsp_ir::interp::{run_kernel, KernelArg, Tile};
use wsp_ir::npy::{decode_npy, encode_npy};
use wsp_ir::tensor::HostTensor;
use wsp_ir::typing::KernelBuilder;
use wsp_ir::*;

fn kernel(
    name: &str,
    f: impl FnOnce(&mut KernelBuilder, ValueId, ValueId) -> ValueId,
    out: TileType,
) -> Kernel {
    let t = TileType::new(DType::F32, 64, 64);
    let mut kb = KernelBuilder::new(name);
    let pa = kb.tile_param("a", Direction::In, t);
    let pb = kb.tile_param("b", Direction::In, t);
    let po = kb.tile_param("o", Direction::Out, out);
    let a = kb.load(pa).expect("load");
    let b = kb.load(pb).expect("load");
    let r = f(&mut kb, a, b);
    kb.store(po, r);
    kb.finish().expect("valid kernel")
}

fn bench(c: &mut Criterion) {
    let t = TileType::new(DType::F32, 64, 64);
    let vals: Vec<f64> = (0..4096).map(|i| f64::from(i % 97) * 0.25).collect();
    let args = |out: TileType| {
        vec![
            KernelArg::Tile(Tile::from_f64(DType::F32, 64, 64, &vals)),
            KernelArg::Tile(Tile::from_f64(DType::F32, 64, 64, &vals)),
            KernelArg::Tile(Tile::zeros(out)),
        ]
    };
    let add = kernel(
        "add",
        |kb, a, b| kb.binary(BinaryOp::Add, a, b).expect("add"),
        t,
    );
    c.bench_function("interp add f32 64x64", |bch| {
        let mut a = args(t);
        bch.iter(|| run_kernel(black_box(&add), &mut a).expect("runs"))
    });
    let col = TileType::new(DType::F32, 64, 1);
    let rowsum = kernel(
        "rowsum",
        |kb, a, _| {
            kb.op(Op::Reduce {
                op: ReduceOp::RowSum,
                x: a,
            })
            .expect("rowsum")
        },
        col,
    );
    c.bench_function("interp rowsum f32 64x64", |bch| {
        let mut a = args(col);
        bch.iter(|| run_kernel(black_box(&rowsum), &mut a).expect("runs"))
    });
    let mm = kernel(
        "mm",
        |kb, a, b| kb.op(Op::Matmul { a, b, acc: None }).expect("matmul"),
        t,
    );
    c.bench_function("interp matmul f32 64x64x64", |bch| {
        let mut a = args(t);
        bch.iter(|| run_kernel(black_box(&mm), &mut a).expect("runs"))
    });
    let big: Vec<f64> = (0..1 << 20).map(|i| f64::from(i) * 0.5).collect();
    let tensor = HostTensor::from_f64(DType::F32, vec![1024, 1024], &big);
    let bytes = encode_npy(&tensor);
    c.bench_function("npy encode f32 1024x1024", |bch| {
        bch.iter(|| encode_npy(black_box(&tensor)))
    });
    c.bench_function("npy decode f32 1024x1024", |bch| {
        bch.iter(|| decode_npy(black_box(&bytes), Path::new("b.npy")).expect("decodes"))
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).measurement_time(std::time::Duration::from_secs(2));
    targets = bench
}
criterion_main!(benches);

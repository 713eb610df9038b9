//! Random well-typed f32 kernels (elementwise DAGs with broadcasting, reductions, matmul,
//! transpose, partial extents) run through the reference interpreter and the JIT; the valid
//! output elements must agree bit for bit (any NaN matches any NaN), and both must accept or
//! both reject the arguments.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wsp_ir::interp::{run_kernel, KernelArg, Tile};
use wsp_ir::kernel::*;
use wsp_ir::typing::KernelBuilder;
use wsp_ir::{DType, ScalarValue};

struct Bytes<'a>(&'a [u8]);
impl Bytes<'_> {
    fn byte(&mut self) -> u8 {
        match self.0.split_first() {
            Some((b, rest)) => {
                self.0 = rest;
                *b
            }
            None => 0,
        }
    }
    fn pick(&mut self, n: usize) -> usize {
        usize::from(self.byte()) % n.max(1)
    }
}

const BIN: [BinaryOp; 8] = [
    BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div,
    BinaryOp::Max, BinaryOp::Min, BinaryOp::Pow, BinaryOp::Rem,
];
const UN: [UnaryOp; 14] = [
    UnaryOp::Exp, UnaryOp::Log, UnaryOp::Sqrt, UnaryOp::Rsqrt, UnaryOp::Recip, UnaryOp::Tanh,
    UnaryOp::Sigmoid, UnaryOp::Sin, UnaryOp::Cos, UnaryOp::Relu, UnaryOp::Gelu, UnaryOp::Silu,
    UnaryOp::Abs, UnaryOp::Neg,
];
const CMP: [CmpOp; 6] = [CmpOp::Eq, CmpOp::Ne, CmpOp::Lt, CmpOp::Le, CmpOp::Gt, CmpOp::Ge];

fn build(d: &mut Bytes) -> Option<Kernel> {
    let r = 1 + d.pick(9) as u32;
    let c = 1 + d.pick(11) as u32;
    let tt = TileType::new(DType::F32, r, c);
    let mut b = KernelBuilder::new("fuzz");
    let x = b.partial_tile_param("x", Direction::In, tt, [true, true]);
    let y = b.partial_tile_param("y", Direction::In, tt, [true, true]);
    let col = b.partial_tile_param("col", Direction::In, TileType::new(DType::F32, r, 1), [true, false]);
    let s = b.scalar_param("s", DType::F32, None);
    let o = b.partial_tile_param("out", Direction::Out, tt, [true, true]);
    // Full-shape values and broadcastable ones.
    let mut full = vec![b.load(x).ok()?, b.load(y).ok()?];
    let mut bc = vec![b.load(col).ok()?, b.load(s).ok()?];
    for _ in 0..(1 + d.pick(12)) {
        let a = full[d.pick(full.len())];
        let v = match d.pick(7) {
            0 | 1 => {
                let other = if d.byte() % 2 == 0 { full[d.pick(full.len())] } else { bc[d.pick(bc.len())] };
                let (l, rr) = if d.byte() % 2 == 0 { (a, other) } else { (other, a) };
                b.binary(BIN[d.pick(BIN.len())], l, rr).ok()?
            }
            2 => b.unary(UN[d.pick(UN.len())], a).ok()?,
            3 => {
                let other = full[d.pick(full.len())];
                let m = b.op(Op::Cmp { op: CMP[d.pick(CMP.len())], lhs: a, rhs: other }).ok()?;
                b.op(Op::Select { cond: m, on_true: a, on_false: other }).ok()?
            }
            4 => {
                let ops = [ReduceOp::RowSum, ReduceOp::RowMax, ReduceOp::RowMin, ReduceOp::RowMean];
                let red = b.op(Op::Reduce { op: ops[d.pick(4)], x: a }).ok()?;
                bc.push(red);
                continue;
            }
            5 => {
                // [r, c] x ([c, r] x [r, c]) via transposes keeps the shape.
                let t = b.op(Op::Transpose { x: a }).ok()?;
                let g = b.op(Op::Matmul { a: t, b: a, acc: None }).ok()?;
                b.op(Op::Matmul { a, b: g, acc: None }).ok()?
            }
            _ => {
                let ops = [ReduceOp::ColSum, ReduceOp::ColMax, ReduceOp::ColMin];
                let red = b.op(Op::Reduce { op: ops[d.pick(3)], x: a }).ok()?;
                b.binary(BinaryOp::Add, a, red).ok()?
            }
        };
        full.push(v);
    }
    let last = *full.last()?;
    b.store(o, last);
    b.finish().ok()
}

fn same(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || (a as f32).to_bits() == (b as f32).to_bits()
}

fuzz_target!(|data: &[u8]| {
    let mut d = Bytes(data);
    let Some(k) = build(&mut d) else { return };
    let ck = match wsp_jit::Jit::new().compile(&k) {
        Ok(ck) => ck,
        Err(e) => panic!("a well-typed f32 kernel must compile: {e}"),
    };
    let mut args: Vec<KernelArg> = k
        .params
        .iter()
        .map(|p| match p.kind {
            ParamKind::Tile { tile, partial, .. } => {
                let vals: Vec<f64> = (0..tile.len())
                    .map(|_| (f64::from(d.byte() as i8)) / 16.0)
                    .collect();
                let mut t = Tile::from_f64(DType::F32, tile.rows(), tile.cols(), &vals);
                for dim in 0..2 {
                    if partial[dim] {
                        t.valid[dim] = u32::from(d.byte()) % (tile.shape[dim] + 1);
                    }
                }
                KernelArg::Tile(t)
            }
            ParamKind::Scalar { .. } => KernelArg::Scalar(ScalarValue::Float(f64::from(d.byte() as i8) / 8.0)),
        })
        .collect();
    let mut jargs = args.clone();
    let ri = run_kernel(&k, &mut args);
    let rj = ck.run(&mut jargs);
    assert_eq!(ri.is_ok(), rj.is_ok(), "interpreter {ri:?} vs JIT {rj:?}");
    for (x, y) in args.iter().zip(&jargs) {
        if let (KernelArg::Tile(x), KernelArg::Tile(y)) = (x, y) {
            for (i, (u, v)) in x.valid_f64().iter().zip(y.valid_f64()).enumerate() {
                assert!(same(*u, v), "element {i}: interpreter {u} vs JIT {v}\n{k}");
            }
        }
    }
});

//! Random well-typed kernels over f32, f16, bf16 or i32 tiles (elementwise DAGs with
//! broadcasting, reductions, matmul, transpose, casts through every dtype, `rowtopk`, partial
//! extents) run through the reference interpreter and the JIT; the valid output elements must
//! agree bit for bit (any NaN matches any NaN), and both must accept or both reject the
//! arguments (an integer division by zero is an error in both).
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
const INT_BIN: [BinaryOp; 7] = [
    BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div,
    BinaryOp::Max, BinaryOp::Min, BinaryOp::Rem,
];
const INT_UN: [UnaryOp; 3] = [UnaryOp::Neg, UnaryOp::Abs, UnaryOp::Relu];
const DTYPES: [DType; 4] = [DType::F32, DType::F16, DType::Bf16, DType::I32];
const CASTS: [DType; 5] = [DType::F32, DType::F16, DType::Bf16, DType::I32, DType::Bool];
const CMP: [CmpOp; 6] = [CmpOp::Eq, CmpOp::Ne, CmpOp::Lt, CmpOp::Le, CmpOp::Gt, CmpOp::Ge];

/// `x` (of dtype `from`) cast to `dt` unless it already is.
fn to(b: &mut KernelBuilder, x: ValueId, from: DType, dt: DType) -> Option<ValueId> {
    if from == dt {
        return Some(x);
    }
    b.op(Op::Cast { x, dtype: dt }).ok()
}

fn build(d: &mut Bytes) -> Option<Kernel> {
    let dt = DTYPES[d.pick(DTYPES.len())];
    let int = dt.is_int();
    let r = 1 + d.pick(9) as u32;
    let c = 1 + d.pick(11) as u32;
    let tt = TileType::new(dt, r, c);
    let mut b = KernelBuilder::new("fuzz");
    let x = b.partial_tile_param("x", Direction::In, tt, [true, true]);
    let y = b.partial_tile_param("y", Direction::In, tt, [true, true]);
    let col = b.partial_tile_param("col", Direction::In, TileType::new(dt, r, 1), [true, false]);
    let s = b.scalar_param("s", dt, None);
    let o = b.partial_tile_param("out", Direction::Out, tt, [true, true]);
    // Full-shape values and broadcastable ones, all of dtype `dt`.
    let mut full = vec![b.load(x).ok()?, b.load(y).ok()?];
    let mut bc = vec![b.load(col).ok()?, b.load(s).ok()?];
    for _ in 0..(1 + d.pick(12)) {
        let a = full[d.pick(full.len())];
        let v = match d.pick(9) {
            0 | 1 => {
                let other = if d.byte() % 2 == 0 { full[d.pick(full.len())] } else { bc[d.pick(bc.len())] };
                let (l, rr) = if d.byte() % 2 == 0 { (a, other) } else { (other, a) };
                let op = if int { INT_BIN[d.pick(INT_BIN.len())] } else { BIN[d.pick(BIN.len())] };
                b.binary(op, l, rr).ok()?
            }
            2 if int => b.unary(INT_UN[d.pick(INT_UN.len())], a).ok()?,
            2 => b.unary(UN[d.pick(UN.len())], a).ok()?,
            3 => {
                let other = full[d.pick(full.len())];
                let m = b.op(Op::Cmp { op: CMP[d.pick(CMP.len())], lhs: a, rhs: other }).ok()?;
                b.op(Op::Select { cond: m, on_true: a, on_false: other }).ok()?
            }
            4 => {
                let ops = [ReduceOp::RowSum, ReduceOp::RowMax, ReduceOp::RowMin, ReduceOp::RowMean];
                let red = b.op(Op::Reduce { op: ops[d.pick(if int { 3 } else { 4 })], x: a }).ok()?;
                let red = to(&mut b, red, dt.accumulator(), dt)?;
                bc.push(red);
                continue;
            }
            5 if !int => {
                // [r, c] x ([c, r] x [r, c]) via transposes keeps the shape.
                let t = b.op(Op::Transpose { x: a }).ok()?;
                let g = b.op(Op::Matmul { a: t, b: a, acc: None }).ok()?;
                let g = to(&mut b, g, dt.accumulator(), dt)?;
                let m = b.op(Op::Matmul { a, b: g, acc: None }).ok()?;
                to(&mut b, m, dt.accumulator(), dt)?
            }
            5 => {
                let t = b.op(Op::Transpose { x: a }).ok()?;
                b.op(Op::Transpose { x: t }).ok()?
            }
            6 => {
                // Through another dtype and back.
                let via = CASTS[d.pick(CASTS.len())];
                let t = b.op(Op::Cast { x: a, dtype: via }).ok()?;
                b.op(Op::Cast { x: t, dtype: dt }).ok()?
            }
            7 => {
                // rowtopk: the values' row max and the indices' row sum, as [r, 1] columns.
                let k = 1 + d.pick(c as usize) as u32;
                let res = b.op_n(Op::RowTopK { x: a, k }).ok()?;
                let m = b.op(Op::Reduce { op: ReduceOp::RowMax, x: res[0] }).ok()?;
                let m = to(&mut b, m, dt.accumulator(), dt)?;
                let i = b.op(Op::Reduce { op: ReduceOp::RowSum, x: res[1] }).ok()?;
                let i = to(&mut b, i, DType::I32, dt)?;
                bc.push(m);
                bc.push(i);
                continue;
            }
            _ => {
                let ops = [ReduceOp::ColSum, ReduceOp::ColMax, ReduceOp::ColMin];
                let red = b.op(Op::Reduce { op: ops[d.pick(3)], x: a }).ok()?;
                let red = to(&mut b, red, dt.accumulator(), dt)?;
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
    (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits()
}

fuzz_target!(|data: &[u8]| {
    let mut d = Bytes(data);
    let Some(k) = build(&mut d) else { return };
    let ck = match wsp_jit::Jit::new().compile(&k) {
        Ok(ck) => ck,
        Err(e) => panic!("a well-typed kernel must compile: {e}"),
    };
    let mut args: Vec<KernelArg> = k
        .params
        .iter()
        .map(|p| match p.kind {
            ParamKind::Tile { tile, partial, .. } => {
                let scale = if tile.dtype.is_int() { 1.0 } else { 16.0 };
                let vals: Vec<f64> = (0..tile.len())
                    .map(|_| (f64::from(d.byte() as i8)) / scale)
                    .collect();
                let mut t = Tile::from_f64(tile.dtype, tile.rows(), tile.cols(), &vals);
                for dim in 0..2 {
                    if partial[dim] {
                        t.valid[dim] = u32::from(d.byte()) % (tile.shape[dim] + 1);
                    }
                }
                KernelArg::Tile(t)
            }
            ParamKind::Scalar { dtype, .. } if dtype.is_int() => {
                KernelArg::Scalar(ScalarValue::Int(i64::from(d.byte() as i8)))
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

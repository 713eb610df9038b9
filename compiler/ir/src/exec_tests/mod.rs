//! Workload interpreter tests on small hand-built programs, by topic: `tasks` (grids of tiles,
//! partial tiles, `when` on tensor data, Ragged and Sparse rows, counted loops), `csp`
//! (pipelines over bounded channels, deadlocks), `runs` (sequential and nested workloads,
//! another kernel executor, a reference run with expects), `program` (the IR as JSON,
//! validation, run selection, directive capability keys) and `fuzz` (arbitrary workloads never
//! panic the interpreter). This file holds what several of them share: kernels, program
//! builders and the CSP pipeline.

use crate::data::{init_tensors, resolve_params};
use crate::dtype::{DType, ScalarValue};
use crate::exec::run_workload;
use crate::kernel::*;
use crate::tensor::HostTensor;
use crate::typing::KernelBuilder;
use crate::workload::*;
use std::path::Path;

mod csp;
mod fuzz;
mod program;
mod runs;
mod tasks;

const F32: DType = DType::F32;

/// `out = x * f` over `[rows, cols]` tiles (partial rows if asked).
fn scale_kernel(name: &str, rows: u32, cols: u32, f: f64, partial_rows: bool) -> Kernel {
    let mut kb = KernelBuilder::new(name);
    let t = TileType::new(F32, rows, cols);
    let px = kb.partial_tile_param("x", Direction::In, t, [partial_rows, false]);
    let po = kb.partial_tile_param("out", Direction::Out, t, [partial_rows, false]);
    let x = kb.load(px).unwrap();
    let c = kb.constant(ScalarValue::Float(f), F32).unwrap();
    let y = kb.binary(BinaryOp::Mul, x, c).unwrap();
    kb.store(po, y);
    kb.finish().unwrap()
}

fn add_kernel(rows: u32, cols: u32) -> Kernel {
    let mut kb = KernelBuilder::new("add");
    let t = TileType::new(F32, rows, cols);
    let pa = kb.tile_param("a", Direction::In, t);
    let pb = kb.tile_param("b", Direction::In, t);
    let pc = kb.tile_param("c", Direction::Out, t);
    let a = kb.load(pa).unwrap();
    let b = kb.load(pb).unwrap();
    let s = kb.binary(BinaryOp::Add, a, b).unwrap();
    kb.store(pc, s);
    kb.finish().unwrap()
}

fn tensor(
    p: &mut Program,
    name: &str,
    kind: TensorKind,
    dtype: DType,
    shape: &[i64],
    init: Option<Init>,
) -> TensorId {
    p.tensors.push(TensorDecl {
        name: name.into(),
        kind,
        dtype,
        shape: shape.iter().map(|d| Affine::constant(*d)).collect(),
        init,
        at: None,
    });
    TensorId(p.tensors.len() as u32 - 1)
}

fn literal(v: &[f64]) -> Option<Init> {
    Some(Init::Literal {
        values: v.iter().map(|x| ScalarValue::Float(*x)).collect(),
    })
}

fn ints(v: &[i64]) -> Option<Init> {
    Some(Init::Literal {
        values: v.iter().map(|x| ScalarValue::Int(*x)).collect(),
    })
}

fn axis(p: &mut Program, name: &str, kind: AxisKind) -> AxisId {
    p.axes.push(Axis {
        name: name.into(),
        kind,
        at: None,
    });
    AxisId(p.axes.len() as u32 - 1)
}

fn var(v: u32) -> Expr {
    Expr::Var { var: LoopVar(v) }
}

fn av(v: u32) -> Affine {
    Affine::var(LoopVar(v))
}

fn idx(a: Affine) -> ViewDim {
    ViewDim::Index { at: a }
}

fn view(t: TensorId, dims: Vec<ViewDim>) -> TaskArg {
    TaskArg::View(View { tensor: t, dims })
}

fn run(
    p: &Program,
    w: WorkloadId,
) -> Result<(Vec<HostTensor>, crate::exec::ExecOutcome), crate::exec::ExecError> {
    let params = resolve_params(p, &[]).unwrap();
    let mut ts = init_tensors(p, &params, Path::new("."), &[]).unwrap();
    let out = run_workload(p, w, &params, &mut ts)?;
    Ok((ts, out))
}

fn block(p: &mut Program, name: &str, vars: &[&str], stmts: Vec<WStmt>) -> WorkloadId {
    p.workloads.push(Workload {
        name: name.into(),
        vars: vars.iter().map(|s| s.to_string()).collect(),
        body: WorkloadBody::Block { stmts },
    });
    WorkloadId(p.workloads.len() as u32 - 1)
}

/// loader → computer → storer over `n` tiles, channels of `depth`.
fn csp_program(depth: u32, n: i64) -> Program {
    let mut p = Program::new();
    p.kernels.push(scale_kernel("load_tile", 1, 2, 1.0, false));
    // square: out = x * x
    let mut kb = KernelBuilder::new("square_tile");
    let t = TileType::new(F32, 1, 2);
    let px = kb.tile_param("src", Direction::In, t);
    let po = kb.tile_param("dst", Direction::Out, t);
    let x = kb.load(px).unwrap();
    let y = kb.binary(BinaryOp::Mul, x, x).unwrap();
    kb.store(po, y);
    p.kernels.push(kb.finish().unwrap());
    p.kernels.push(scale_kernel("store_tile", 1, 2, 1.0, false));
    let xv: Vec<f64> = (0..2 * n).map(|i| i as f64).collect();
    let x = tensor(&mut p, "X", TensorKind::Input, F32, &[n, 2], literal(&xv));
    let t0 = tensor(&mut p, "T0", TensorKind::Scratch, F32, &[n, 2], None);
    let t1 = tensor(&mut p, "T1", TensorKind::Scratch, F32, &[n, 2], None);
    let y = tensor(&mut p, "Y", TensorKind::Output, F32, &[n, 2], None);
    let tiles = axis(&mut p, "tiles", AxisKind::Dense { size: n as u64 });
    p.channels.push(Channel {
        name: "l2c".into(),
        depth,
        latency: None,
    });
    p.channels.push(Channel {
        name: "c2s".into(),
        depth,
        latency: None,
    });
    let call = |k: u32, a: TensorId, b: TensorId| TaskCall {
        kernel: KernelId(k),
        coords: vec![var(0)],
        args: vec![view(a, vec![idx(av(0))]), view(b, vec![idx(av(0))])],
        at: None,
    };
    p.processes.push(Process {
        name: "loader".into(),
        consumes: vec![],
        produces: vec![ChannelId(0)],
        vars: vec!["i".into()],
        body: vec![WStmt::For {
            kind: LoopKind::Sequential,
            vars: vec![LoopVar(0)],
            iters: vec![Iter::Axis { axis: tiles }],
            body: vec![WStmt::Send {
                channel: ChannelId(0),
                payload: SendPayload::Task(call(0, x, t0)),
            }],
        }],
    });
    p.processes.push(Process {
        name: "computer".into(),
        consumes: vec![ChannelId(0)],
        produces: vec![ChannelId(1)],
        vars: vec!["i".into()],
        body: vec![WStmt::Consume {
            channel: ChannelId(0),
            bindings: vec![LoopVar(0)],
            body: vec![WStmt::Send {
                channel: ChannelId(1),
                payload: SendPayload::Task(call(1, t0, t1)),
            }],
        }],
    });
    p.processes.push(Process {
        name: "storer".into(),
        consumes: vec![ChannelId(1)],
        produces: vec![],
        vars: vec!["i".into()],
        body: vec![WStmt::Consume {
            channel: ChannelId(1),
            bindings: vec![LoopVar(0)],
            body: vec![WStmt::Call(call(2, t1, y))],
        }],
    });
    p.workloads.push(Workload {
        name: "squares".into(),
        vars: vec![],
        body: WorkloadBody::Connect {
            processes: (0..3)
                .map(|i| ConnectItem {
                    process: ProcessId(i),
                    replicas: 1,
                })
                .collect(),
        },
    });
    p
}

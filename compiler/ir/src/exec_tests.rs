//! Workload interpreter tests on small hand-built programs.

use crate::data::{init_tensors, resolve_params};
use crate::dtype::{DType, ScalarValue};
use crate::exec::run_workload;
use crate::kernel::*;
use crate::tensor::HostTensor;
use crate::typing::KernelBuilder;
use crate::workload::*;
use std::path::Path;

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

#[test]
fn grid_of_tiles_adds_and_records_tasks_in_program_order() {
    // C[b, 2t..2t+2, :] = A + B for b in P(batch), t in P(tiles); A, B f32[2, 4, 3].
    let mut p = Program::new();
    p.kernels.push(add_kernel(2, 3));
    let av_: Vec<f64> = (0..24).map(f64::from).collect();
    let bv: Vec<f64> = (0..24).map(|i| f64::from(i) * 10.0).collect();
    let a = tensor(
        &mut p,
        "A",
        TensorKind::Input,
        F32,
        &[2, 4, 3],
        literal(&av_),
    );
    let b = tensor(
        &mut p,
        "B",
        TensorKind::Input,
        F32,
        &[2, 4, 3],
        literal(&bv),
    );
    let c = tensor(&mut p, "C", TensorKind::Output, F32, &[2, 4, 3], None);
    let batch = axis(&mut p, "batch", AxisKind::Dense { size: 2 });
    let tiles = axis(&mut p, "tiles", AxisKind::Dense { size: 2 });
    let rows = |t: u32| ViewDim::Slice {
        start: Affine {
            constant: 0,
            terms: vec![(Sym::Var(LoopVar(t)), 2)],
        },
        end: Affine {
            constant: 2,
            terms: vec![(Sym::Var(LoopVar(t)), 2)],
        },
    };
    let call = WStmt::Call(TaskCall {
        kernel: KernelId(0),
        coords: vec![var(0), var(1)],
        args: vec![
            view(a, vec![idx(av(0)), rows(1)]),
            view(b, vec![idx(av(0)), rows(1)]),
            view(c, vec![idx(av(0)), rows(1), ViewDim::Full]),
        ],
        at: None,
    });
    let w = block(
        &mut p,
        "w",
        &["b", "t"],
        vec![WStmt::For {
            kind: LoopKind::Parallel,
            vars: vec![LoopVar(0), LoopVar(1)],
            iters: vec![Iter::Axis { axis: batch }, Iter::Axis { axis: tiles }],
            body: vec![call],
        }],
    );
    let (ts, out) = run(&p, w).unwrap();
    let want: Vec<f64> = (0..24).map(|i| f64::from(i) * 11.0).collect();
    assert_eq!(ts[2].to_f64(), want);
    let coords: Vec<_> = out.tasks.iter().map(|t| t.coords.clone()).collect();
    assert_eq!(coords, vec![vec![0, 0], vec![0, 1], vec![1, 0], vec![1, 1]]);
    assert_eq!(out.tasks[0].extents, vec![Some([2, 3]); 3]);
    // The IR survives a JSON round trip and runs the same.
    let back = Program::from_json(&p.to_json()).unwrap();
    assert_eq!(back, p);
}

#[test]
fn partial_tail_tiles_get_their_valid_extent_and_full_tiles_are_checked() {
    // X f32[5, 2]; for i in 0..3 { scale[i](x: X[2i..2i+2, :], out: Y[2i..2i+2, :]) }.
    let mut p = Program::new();
    p.kernels.push(scale_kernel("scale", 2, 2, 2.0, true));
    let xv: Vec<f64> = (1..=10).map(f64::from).collect();
    let x = tensor(&mut p, "X", TensorKind::Input, F32, &[5, 2], literal(&xv));
    let y = tensor(&mut p, "Y", TensorKind::Output, F32, &[5, 2], None);
    let rows = ViewDim::Slice {
        start: Affine {
            constant: 0,
            terms: vec![(Sym::Var(LoopVar(0)), 2)],
        },
        end: Affine {
            constant: 2,
            terms: vec![(Sym::Var(LoopVar(0)), 2)],
        },
    };
    let body = |k: u32| {
        vec![WStmt::For {
            kind: LoopKind::Plain,
            vars: vec![LoopVar(0)],
            iters: vec![Iter::Range {
                start: Expr::Const {
                    value: ScalarValue::Int(0),
                },
                end: Expr::Const {
                    value: ScalarValue::Int(3),
                },
            }],
            body: vec![WStmt::Call(TaskCall {
                kernel: KernelId(k),
                coords: vec![var(0)],
                args: vec![view(x, vec![rows.clone()]), view(y, vec![rows.clone()])],
                at: None,
            })],
        }]
    };
    let w = block(&mut p, "w", &["i"], body(0));
    let (ts, out) = run(&p, w).unwrap();
    assert_eq!(
        ts[1].to_f64(),
        xv.iter().map(|v| v * 2.0).collect::<Vec<_>>()
    );
    assert_eq!(out.tasks[2].extents, vec![Some([1, 2]), Some([1, 2])]);

    // The same with a non-partial kernel: the tail view is out of range, an error naming the
    // task, the view and the tensor.
    p.kernels.push(scale_kernel("full_scale", 2, 2, 2.0, false));
    let w2 = block(&mut p, "w2", &["i"], body(1));
    let e = run(&p, w2).unwrap_err();
    assert_eq!(e.code, "E0810");
    assert!(
        e.message.contains("task full_scale[2]: view `x: X[4..6, 0..2]` is out of range in dimension 0 of `X` (shape [5, 2])"),
        "{}",
        e.message
    );
}

#[test]
fn when_branches_on_tensor_values_written_by_an_earlier_task() {
    // flag[b] is written by a task, then `when flag[b] > 5 { big } else { small }`.
    let mut p = Program::new();
    p.kernels.push(scale_kernel("double", 1, 1, 2.0, false));
    p.kernels.push(scale_kernel("big", 1, 1, 100.0, false));
    p.kernels.push(scale_kernel("small", 1, 1, -1.0, false));
    let src = tensor(
        &mut p,
        "S",
        TensorKind::Input,
        F32,
        &[3, 1],
        literal(&[1.0, 3.0, 5.0]),
    );
    let flag = tensor(&mut p, "F", TensorKind::Scratch, F32, &[3, 1], None);
    let out = tensor(&mut p, "O", TensorKind::Output, F32, &[3, 1], None);
    let batch = axis(&mut p, "batch", AxisKind::Dense { size: 3 });
    let call = |k: u32, a: TensorId, b: TensorId| {
        WStmt::Call(TaskCall {
            kernel: KernelId(k),
            coords: vec![var(0)],
            args: vec![view(a, vec![idx(av(0))]), view(b, vec![idx(av(0))])],
            at: None,
        })
    };
    let cond = Expr::Binary {
        op: ExprOp::Gt,
        lhs: Box::new(Expr::Elem {
            tensor: flag,
            index: vec![
                var(0),
                Expr::Const {
                    value: ScalarValue::Int(0),
                },
            ],
        }),
        rhs: Box::new(Expr::Const {
            value: ScalarValue::Float(5.0),
        }),
    };
    let w = block(
        &mut p,
        "w",
        &["b"],
        vec![WStmt::For {
            kind: LoopKind::Parallel,
            vars: vec![LoopVar(0)],
            iters: vec![Iter::Axis { axis: batch }],
            body: vec![
                call(0, src, flag),
                WStmt::When {
                    branches: vec![WhenBranch {
                        cond,
                        body: vec![call(1, flag, out)],
                    }],
                    otherwise: vec![call(2, flag, out)],
                },
            ],
        }],
    );
    let (ts, out) = run(&p, w).unwrap();
    // flags 2, 6, 10 → small, big, big.
    assert_eq!(ts[2].to_f64(), vec![-2.0, 600.0, 1000.0]);
    let ks: Vec<u32> = out.tasks.iter().map(|t| t.kernel.0).collect();
    assert_eq!(ks, vec![0, 2, 0, 1, 0, 1]);
}

#[test]
fn ragged_and_sparse_axes_iterate_their_rows() {
    let mut p = Program::new();
    p.kernels.push(scale_kernel("k", 1, 1, 1.0, false));
    let lens = tensor(
        &mut p,
        "lens",
        TensorKind::Input,
        DType::I32,
        &[3],
        ints(&[2, 0, 3]),
    );
    let indptr = tensor(
        &mut p,
        "indptr",
        TensorKind::Input,
        DType::I32,
        &[4],
        ints(&[0, 2, 2, 3]),
    );
    let indices = tensor(
        &mut p,
        "indices",
        TensorKind::Input,
        DType::I32,
        &[3],
        ints(&[1, 3, 0]),
    );
    let x = tensor(&mut p, "X", TensorKind::Scratch, F32, &[4, 4], None);
    let batch = axis(&mut p, "batch", AxisKind::Dense { size: 3 });
    let tokens = axis(
        &mut p,
        "tokens",
        AxisKind::Ragged {
            outer: batch,
            lengths: lens,
            per: None,
        },
    );
    let routing = axis(
        &mut p,
        "routing",
        AxisKind::Sparse {
            outer: batch,
            indptr,
            indices,
        },
    );
    let call = WStmt::Call(TaskCall {
        kernel: KernelId(0),
        coords: vec![var(0), var(1)],
        args: vec![
            view(x, vec![idx(av(0)), idx(av(1))]),
            view(x, vec![idx(av(0)), idx(av(1))]),
        ],
        at: None,
    });
    let w1 = block(
        &mut p,
        "ragged",
        &["b", "t"],
        vec![WStmt::For {
            kind: LoopKind::Parallel,
            vars: vec![LoopVar(0), LoopVar(1)],
            iters: vec![Iter::Axis { axis: tokens }],
            body: vec![call.clone()],
        }],
    );
    let w2 = block(
        &mut p,
        "sparse",
        &["b", "e"],
        vec![WStmt::For {
            kind: LoopKind::Parallel,
            vars: vec![LoopVar(0)],
            iters: vec![Iter::Axis { axis: batch }],
            body: vec![WStmt::For {
                kind: LoopKind::Selected,
                vars: vec![LoopVar(1)],
                iters: vec![Iter::Row {
                    axis: routing,
                    row: av(0),
                }],
                body: vec![call],
            }],
        }],
    );
    let (_, out) = run(&p, w1).unwrap();
    let c: Vec<_> = out.tasks.iter().map(|t| t.coords.clone()).collect();
    assert_eq!(
        c,
        vec![vec![0, 0], vec![0, 1], vec![2, 0], vec![2, 1], vec![2, 2]]
    );
    let (_, out) = run(&p, w2).unwrap();
    let c: Vec<_> = out.tasks.iter().map(|t| t.coords.clone()).collect();
    assert_eq!(c, vec![vec![0, 1], vec![0, 3], vec![2, 0]]);
    // A bad indptr is an error, not a panic.
    p.tensors[indptr.index()].init = ints(&[0, 2, 1, 3]);
    let e = run(&p, WorkloadId(1)).unwrap_err();
    assert!(
        e.message.contains("indptr is decreasing at row 1"),
        "{}",
        e.message
    );
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

#[test]
fn csp_pipeline_runs_round_robin_with_bounded_channels() {
    let p = csp_program(2, 4);
    let (ts, out) = run(&p, WorkloadId(0)).unwrap();
    let want: Vec<f64> = (0..8).map(|i| f64::from(i * i)).collect();
    assert_eq!(ts[3].to_f64(), want);
    let trace: Vec<String> = out
        .tasks
        .iter()
        .map(|t| format!("{}{}", t.process.clone().unwrap_or_default(), t.coords[0]))
        .collect();
    // One step is one visible action: a task (with its send), or taking a token. Round 1:
    // loader runs load 0; computer takes token 0; storer waits. Round 2: load 1; square 0
    // (sends); storer takes 0. Round 3: load 2; computer takes 1; store 0. And so on.
    assert_eq!(
        trace,
        vec![
            "loader0",
            "loader1",
            "computer0",
            "loader2",
            "storer0",
            "loader3",
            "computer1",
            "storer1",
            "computer2",
            "storer2",
            "computer3",
            "storer3"
        ]
    );
    // A rendezvous channel gives the same data.
    let (ts, _) = run(&csp_program(0, 4), WorkloadId(0)).unwrap();
    assert_eq!(ts[3].to_f64(), want);
}

#[test]
fn csp_deadlock_is_reported_with_processes_and_channels() {
    // a: consume c1 { send c2 }, b: consume c2 { send c1 } — each waits for the other.
    let mut p = Program::new();
    p.channels.push(Channel {
        name: "c1".into(),
        depth: 1,
        latency: None,
    });
    p.channels.push(Channel {
        name: "c2".into(),
        depth: 1,
        latency: None,
    });
    let relay = |name: &str, from: u32, to: u32| Process {
        name: name.into(),
        consumes: vec![ChannelId(from)],
        produces: vec![ChannelId(to)],
        vars: vec!["i".into()],
        body: vec![WStmt::Consume {
            channel: ChannelId(from),
            bindings: vec![LoopVar(0)],
            body: vec![WStmt::Send {
                channel: ChannelId(to),
                payload: SendPayload::Values {
                    values: vec![var(0)],
                },
            }],
        }],
    };
    p.processes.push(relay("a", 0, 1));
    p.processes.push(relay("b", 1, 0));
    p.workloads.push(Workload {
        name: "ring".into(),
        vars: vec![],
        body: WorkloadBody::Connect {
            processes: vec![
                ConnectItem {
                    process: ProcessId(0),
                    replicas: 1,
                },
                ConnectItem {
                    process: ProcessId(1),
                    replicas: 1,
                },
            ],
        },
    });
    let e = run(&p, WorkloadId(0)).unwrap_err();
    assert_eq!(e.code, "E0811");
    assert!(
        e.message
            .contains("`a` waits on `c1` (empty), `b` waits on `c2` (empty)")
            && e.message.contains("`c1` 0/1"),
        "{}",
        e.message
    );
}

#[test]
fn sequential_and_nested_workloads_run_in_order() {
    let mut p = Program::new();
    p.kernels.push(scale_kernel("double", 1, 1, 2.0, false));
    let x = tensor(
        &mut p,
        "X",
        TensorKind::Input,
        F32,
        &[1, 1],
        literal(&[3.0]),
    );
    let call = WStmt::Call(TaskCall {
        kernel: KernelId(0),
        coords: vec![],
        args: vec![view(x, vec![]), view(x, vec![])],
        at: None,
    });
    let a = block(&mut p, "a", &[], vec![call.clone()]);
    let b = block(&mut p, "b", &[], vec![call, WStmt::Run { workload: a }]);
    p.workloads.push(Workload {
        name: "both".into(),
        vars: vec![],
        body: WorkloadBody::Sequential { parts: vec![a, b] },
    });
    let (ts, out) = run(&p, WorkloadId(2)).unwrap();
    assert_eq!(ts[0].to_f64(), vec![24.0]);
    assert_eq!(out.tasks.len(), 3);
    // A workload that runs itself is an error, not a stack overflow.
    p.workloads.push(Workload {
        name: "loop".into(),
        vars: vec![],
        body: WorkloadBody::Sequential {
            parts: vec![WorkloadId(3)],
        },
    });
    let e = run(&p, WorkloadId(3)).unwrap_err();
    assert!(e.message.contains("nest more than 64"), "{}", e.message);
}

#[test]
fn program_json_rejects_other_versions() {
    let mut p = Program::new();
    p.version = 99;
    let e = Program::from_json(&p.to_json()).unwrap_err();
    assert!(e.contains("unsupported Program IR version 99"), "{e}");
    let e = Program::from_json("{\"kernels\": []}").unwrap_err();
    assert!(e.contains("no numeric `version`"), "{e}");
}

#[test]
fn every_ir_construct_round_trips_through_json_and_validates() {
    let mut p = csp_program(2, 4);
    p.source = Some("examples/csp.wsp".into());
    p.params.push(ProgParam {
        name: "bs".into(),
        dtype: DType::U32,
        default: ScalarValue::UInt(4),
    });
    p.params.push(ProgParam {
        name: "eps".into(),
        dtype: F32,
        default: ScalarValue::Float(f64::NAN),
    });
    let lens = tensor(
        &mut p,
        "lens",
        TensorKind::Input,
        DType::I32,
        &[4],
        Some(Init::Load {
            path: "lens.npy".into(),
        }),
    );
    tensor(
        &mut p,
        "R",
        TensorKind::Input,
        DType::Bf16,
        &[4],
        Some(Init::Random { seed: 3 }),
    );
    tensor(
        &mut p,
        "O1",
        TensorKind::Scratch,
        DType::F16,
        &[4],
        Some(Init::Ones),
    );
    tensor(
        &mut p,
        "Z",
        TensorKind::Scratch,
        DType::F16,
        &[4],
        Some(Init::Zeros),
    );
    let m = tensor(
        &mut p,
        "M",
        TensorKind::Scratch,
        F32,
        &[4],
        Some(Init::Full {
            value: ScalarValue::Float(f64::NEG_INFINITY),
        }),
    );
    p.tensors[m.index()].shape = vec![Affine::param(ProgParamId(0))];
    let dynb = axis(
        &mut p,
        "batch",
        AxisKind::DenseDyn {
            size: Expr::Param {
                param: ProgParamId(0),
            },
        },
    );
    axis(
        &mut p,
        "tokens",
        AxisKind::Ragged {
            outer: dynb,
            lengths: lens,
            per: None,
        },
    );
    axis(
        &mut p,
        "routing",
        AxisKind::Sparse {
            outer: dynb,
            indptr: lens,
            indices: lens,
        },
    );
    p.workloads.push(Workload {
        name: "both".into(),
        vars: vec![],
        body: WorkloadBody::Combine {
            parts: vec![WorkloadId(0)],
        },
    });
    p.schedules.push(Schedule {
        name: "main".into(),
        workload: WorkloadId(0),
        directives: vec![
            Directive::Policy {
                policy: Policy::RoundRobin,
                args: vec![DirValue::Int { value: 4 }],
            },
            Directive::StreamBy {
                key: DirValue::Binary {
                    op: ExprOp::Rem,
                    lhs: Box::new(DirValue::Axis { axis: dynb }),
                    rhs: Box::new(DirValue::Int { value: 4 }),
                },
            },
            Directive::Policy {
                policy: Policy::Priority,
                args: vec![DirValue::Call {
                    name: "max".into(),
                    args: vec![DirArg {
                        name: Some("key".into()),
                        value: DirValue::Float { value: 0.5 },
                    }],
                }],
            },
            Directive::Target {
                arch: "ascend910b".into(),
            },
            Directive::TaskWindow {
                size: 64,
                mode: Default::default(),
            },
        ],
    });
    p.expects.push(Expect::Close {
        actual: TensorId(3),
        expected: ExpectData::Init {
            init: Init::Load {
                path: "y.npy".into(),
            },
        },
        rtol: 1e-5,
        atol: 1e-6,
    });
    p.expects.push(Expect::Stat {
        stat: Stat::TotalCycles,
        op: CmpOp::Eq,
        value: 114688,
    });
    assert_eq!(crate::check::validate_program(&p), Vec::<String>::new());
    let json = p.to_json();
    let back = Program::from_json(&json).unwrap();
    // ScalarValue compares floats by bits, so the NaN default round-trips as equal.
    assert_eq!(back, p);
    assert!(json.contains("\"nan\"") && json.contains("\"-inf\""));

    // Broken references are reported, not panics.
    let mut bad = p.clone();
    if let WorkloadBody::Connect { processes } = &mut bad.workloads[0].body {
        processes.push(ConnectItem {
            process: ProcessId(9),
            replicas: 1,
        });
    }
    bad.processes[0].vars.clear();
    bad.axes[1].kind = AxisKind::Ragged {
        outer: AxisId(7),
        lengths: TensorId(99),
        per: None,
    };
    let errs = crate::check::validate_program(&bad);
    assert!(
        errs.iter().any(|e| e.contains("process #9 does not exist")),
        "{errs:?}"
    );
    assert!(
        errs.iter()
            .any(|e| e.contains("loop variable #0 is outside")),
        "{errs:?}"
    );
    assert!(
        errs.iter().any(|e| e.contains("axis #7 does not exist")),
        "{errs:?}"
    );
    assert!(
        errs.iter().any(|e| e.contains("tensor #99 does not exist")),
        "{errs:?}"
    );
}

#[test]
fn another_kernel_executor_can_replace_the_interpreter() {
    let p = csp_program(1, 3);
    let params = resolve_params(&p, &[]).unwrap();
    let mut ts = init_tensors(&p, &params, Path::new("."), &[]).unwrap();
    let mut calls = Vec::new();
    let mut exec = |id: KernelId, k: &Kernel, args: &mut [crate::interp::KernelArg]| {
        calls.push(id.0);
        crate::interp::run_kernel(k, args).map_err(|e| e.message)
    };
    crate::exec::run_workload_with(&p, WorkloadId(0), &params, &mut ts, &mut exec).unwrap();
    assert_eq!(calls.len(), 9);
    assert_eq!(ts[3].to_f64(), vec![0.0, 1.0, 4.0, 9.0, 16.0, 25.0]);
    let mut failing = |_: KernelId, k: &Kernel, _: &mut [crate::interp::KernelArg]| {
        Err(format!("{} is not compiled", k.name))
    };
    let e = crate::exec::run_workload_with(&p, WorkloadId(0), &params, &mut ts, &mut failing)
        .unwrap_err();
    assert_eq!(e.message, "task load_tile[0]: load_tile is not compiled");
}

#[test]
fn select_run_picks_main_the_only_schedule_or_the_only_workload() {
    let mut p = csp_program(1, 2);
    assert_eq!(p.select_run(None).unwrap().1, WorkloadId(0));
    assert!(p.select_run(None).unwrap().0.is_none());
    p.schedules.push(Schedule {
        name: "fast".into(),
        workload: WorkloadId(0),
        directives: vec![],
    });
    assert_eq!(
        p.select_run(None).unwrap().0.map(|s| s.name.as_str()),
        Some("fast")
    );
    p.schedules.push(Schedule {
        name: "slow".into(),
        workload: WorkloadId(0),
        directives: vec![],
    });
    let e = p.select_run(None).unwrap_err();
    assert!(e.contains("several schedules (fast, slow)"), "{e}");
    assert_eq!(
        p.select_run(Some("slow"))
            .unwrap()
            .0
            .map(|s| s.name.as_str()),
        Some("slow")
    );
    let e = p.select_run(Some("x")).unwrap_err();
    assert!(e.contains("no schedule `x` (schedules: fast, slow)"), "{e}");
    p.schedules.push(Schedule {
        name: "main".into(),
        workload: WorkloadId(0),
        directives: vec![],
    });
    assert_eq!(
        p.select_run(None).unwrap().0.map(|s| s.name.as_str()),
        Some("main")
    );
}

mod fuzz {
    //! Arbitrary workloads over a fixed set of tensors, axes and kernels never panic the
    //! workload interpreter: they run or fail with a message.
    use super::*;
    use proptest::prelude::*;

    fn affine() -> impl Strategy<Value = Affine> {
        (-2i64..5, proptest::option::of((0u32..3, -1i64..3))).prop_map(|(c, t)| Affine {
            constant: c,
            terms: t
                .map(|(v, k)| (Sym::Var(LoopVar(v)), k))
                .into_iter()
                .collect(),
        })
    }

    fn view() -> impl Strategy<Value = TaskArg> {
        (
            0u32..3,
            proptest::collection::vec(
                prop_oneof![
                    affine().prop_map(|at| ViewDim::Index { at }),
                    (affine(), affine()).prop_map(|(start, end)| ViewDim::Slice { start, end }),
                    Just(ViewDim::Full),
                ],
                0..4,
            ),
        )
            .prop_map(|(t, dims)| {
                TaskArg::View(View {
                    tensor: TensorId(t),
                    dims,
                })
            })
    }

    fn expr() -> impl Strategy<Value = Expr> {
        prop_oneof![
            (-2i64..6).prop_map(|i| Expr::Const {
                value: ScalarValue::Int(i)
            }),
            (0u32..3).prop_map(|v| Expr::Var { var: LoopVar(v) }),
            (0u32..2).prop_map(|p| Expr::Param {
                param: ProgParamId(p)
            }),
            (0u32..3, -1i64..5).prop_map(|(v, c)| Expr::Binary {
                op: ExprOp::Lt,
                lhs: Box::new(Expr::Elem {
                    tensor: TensorId(1),
                    index: vec![Expr::Var { var: LoopVar(v) }],
                }),
                rhs: Box::new(Expr::Const {
                    value: ScalarValue::Int(c)
                }),
            }),
        ]
    }

    fn cond() -> impl Strategy<Value = Expr> {
        prop_oneof![
            3 => (0u32..3, -1i64..5).prop_map(|(v, c)| Expr::Binary {
                op: ExprOp::Lt,
                lhs: Box::new(Expr::Elem {
                    tensor: TensorId(1),
                    index: vec![Expr::Var { var: LoopVar(v) }],
                }),
                rhs: Box::new(Expr::Const { value: ScalarValue::Int(c) }),
            }),
            1 => expr(),
        ]
    }

    fn stmt() -> impl Strategy<Value = WStmt> {
        let call = (0u32..2, view(), view(), expr()).prop_map(|(k, a, b, c)| {
            WStmt::Call(TaskCall {
                kernel: KernelId(k),
                coords: vec![c],
                args: vec![a, b],
                at: None,
            })
        });
        call.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                (
                    proptest::collection::vec(0u32..3, 1..3),
                    proptest::collection::vec(
                        prop_oneof![
                            (0u32..5).prop_map(|a| Iter::Axis { axis: AxisId(a) }),
                            (2u32..5, affine()).prop_map(|(a, row)| Iter::Row {
                                axis: AxisId(a),
                                row
                            }),
                            (expr(), expr()).prop_map(|(start, end)| Iter::Range { start, end }),
                        ],
                        1..3
                    ),
                    proptest::collection::vec(inner.clone(), 0..3),
                )
                    .prop_map(|(vars, iters, body)| WStmt::For {
                        kind: LoopKind::Parallel,
                        vars: vars.into_iter().map(LoopVar).collect(),
                        iters,
                        body,
                    }),
                (
                    cond(),
                    proptest::collection::vec(inner.clone(), 0..2),
                    proptest::collection::vec(inner, 0..2)
                )
                    .prop_map(|(cond, body, otherwise)| WStmt::When {
                        branches: vec![WhenBranch { cond, body }],
                        otherwise,
                    }),
            ]
        })
    }

    fn base() -> Program {
        let mut p = Program::new();
        p.params.push(ProgParam {
            name: "n".into(),
            dtype: DType::I32,
            default: ScalarValue::Int(3),
        });
        p.params.push(ProgParam {
            name: "f".into(),
            dtype: F32,
            default: ScalarValue::Float(0.5),
        });
        p.kernels.push(scale_kernel("partial", 2, 2, 2.0, true));
        p.kernels.push(scale_kernel("full", 1, 2, 3.0, false));
        tensor(&mut p, "T0", TensorKind::Scratch, F32, &[3, 4], None);
        tensor(
            &mut p,
            "T1",
            TensorKind::Input,
            DType::I32,
            &[4],
            ints(&[0, 2, 1, 3]),
        );
        tensor(&mut p, "T2", TensorKind::Scratch, F32, &[2, 2, 2], None);
        let d = axis(&mut p, "d", AxisKind::Dense { size: 3 });
        axis(
            &mut p,
            "dd",
            AxisKind::DenseDyn {
                size: Expr::Param {
                    param: ProgParamId(0),
                },
            },
        );
        axis(
            &mut p,
            "r",
            AxisKind::Ragged {
                outer: d,
                lengths: TensorId(1),
                per: None,
            },
        );
        axis(
            &mut p,
            "s",
            AxisKind::Sparse {
                outer: d,
                indptr: TensorId(1),
                indices: TensorId(1),
            },
        );
        axis(
            &mut p,
            "bad",
            AxisKind::Ragged {
                outer: AxisId(2),
                lengths: TensorId(0),
                per: None,
            },
        );
        p
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn arbitrary_workloads_never_panic(stmts in proptest::collection::vec(stmt(), 1..4)) {
            let mut p = base();
            p.workloads.push(Workload {
                name: "w".into(),
                vars: vec!["a".into(), "b".into(), "c".into()],
                body: WorkloadBody::Block {
                    stmts: vec![WStmt::For {
                        kind: LoopKind::Plain,
                        vars: vec![LoopVar(0), LoopVar(1), LoopVar(2)],
                        iters: (0..3)
                            .map(|_| Iter::Range {
                                start: Expr::Const { value: ScalarValue::Int(0) },
                                end: Expr::Const { value: ScalarValue::Int(2) },
                            })
                            .collect(),
                        body: stmts,
                    }],
                },
            });
            let _ = crate::check::validate_program(&p);
            let params = resolve_params(&p, &[]).unwrap();
            let mut ts = init_tensors(&p, &params, Path::new("."), &[]).unwrap();
            let _ = run_workload(&p, WorkloadId(0), &params, &mut ts);
        }
    }
}

#[test]
fn reference_run_of_a_whole_program_checks_expects() {
    let mut p = csp_program(2, 3);
    p.expects.push(Expect::Close {
        actual: TensorId(3),
        expected: ExpectData::Init {
            init: Init::Literal {
                values: [0.0, 1.0, 4.0, 9.0, 16.0, 25.0]
                    .iter()
                    .map(|v| ScalarValue::Float(*v))
                    .collect(),
            },
        },
        rtol: 0.0,
        atol: 0.0,
    });
    p.expects.push(Expect::Stat {
        stat: Stat::Tasks,
        op: CmpOp::Eq,
        value: 9,
    });
    p.expects.push(Expect::Stat {
        stat: Stat::TotalCycles,
        op: CmpOp::Eq,
        value: 1,
    });
    let r = crate::data::run_reference(&p, None, &[], &[], Path::new(".")).unwrap();
    assert_eq!(r.outcome.tasks.len(), 9);
    assert_eq!(r.expects[0].failure, None);
    assert_eq!(r.expects[1].failure, None);
    assert_eq!(
        r.expects[2].failure.as_deref(),
        Some("total_cycles was not measured in this run")
    );
    let e = crate::data::run_reference(&p, Some("nope"), &[], &[], Path::new(".")).unwrap_err();
    assert!(e.contains("no schedule `nope`"), "{e}");
}

#[test]
fn counted_loops_step_like_an_odometer_over_dependent_and_empty_levels() {
    // for i, j in 0..4, 0..i { add[i, j](a: A, b: B, c: C) }: no tensor data in the bounds,
    // so the loop is counted level by level; i = 0 has no j.
    let mut p = Program::new();
    p.kernels.push(add_kernel(2, 3));
    let a = tensor(
        &mut p,
        "A",
        TensorKind::Input,
        F32,
        &[2, 3],
        literal(&[1.0; 6]),
    );
    let b = tensor(
        &mut p,
        "B",
        TensorKind::Input,
        F32,
        &[2, 3],
        literal(&[2.0; 6]),
    );
    let c = tensor(&mut p, "C", TensorKind::Output, F32, &[2, 3], None);
    let int = |v: i64| Expr::Const {
        value: ScalarValue::Int(v),
    };
    let full = |t| view(t, vec![ViewDim::Full, ViewDim::Full]);
    let call = WStmt::Call(TaskCall {
        kernel: KernelId(0),
        coords: vec![var(0), var(1)],
        args: vec![full(a), full(b), full(c)],
        at: None,
    });
    let w = block(
        &mut p,
        "w",
        &["i", "j"],
        vec![WStmt::For {
            kind: LoopKind::Parallel,
            vars: vec![LoopVar(0), LoopVar(1)],
            iters: vec![
                Iter::Range {
                    start: int(0),
                    end: int(4),
                },
                Iter::Range {
                    start: int(0),
                    end: var(0),
                },
            ],
            body: vec![call],
        }],
    );
    let (ts, out) = run(&p, w).unwrap();
    let coords: Vec<_> = out.tasks.iter().map(|t| t.coords.clone()).collect();
    let want = [[1, 0], [2, 0], [2, 1], [3, 0], [3, 1], [3, 2]];
    assert_eq!(coords, want.map(|c| c.to_vec()));
    assert_eq!(ts[2].to_f64(), vec![3.0; 6]);
}

#[test]
fn every_directive_has_its_capability_key() {
    use wsp_vocab::schedule::Directive as D;
    let key = DirValue::Int { value: 1 };
    for d in [
        Directive::TaskWindow {
            size: 1,
            mode: Default::default(),
        },
        Directive::Streams { count: 1 },
        Directive::StreamBy { key },
        Directive::Target { arch: "x".into() },
    ] {
        assert_eq!(Some(d.capability_key()), d.kind().capability_key());
    }
    for p in Policy::ALL {
        let d = Directive::Policy {
            policy: p,
            args: vec![],
        };
        assert_eq!(d.capability_key(), p.capability_key());
        assert_ne!(d.kind(), D::Target);
    }
}

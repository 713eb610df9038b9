//! The compiled orchestration against the reference interpreter on hand-built programs: every
//! backend call (tasks with their resolved views and axis coordinates, syncs, barriers, order
//! events), the tensors and the errors must be identical. Processes run under the built-in
//! round-robin here (the backend does not schedule them); the runtime's scheduling is tested
//! in wsp-sim.

use super::*;
use wsp_ir::dtype::DType;
use wsp_ir::exec::TaskError;
use wsp_ir::interp::{run_kernel, KernelArg};
use wsp_ir::kernel::{BinaryOp, Direction, Kernel, TileType};
use wsp_ir::typing::KernelBuilder;
use wsp_vocab::codes;

const COLS: u32 = 4;

fn kernel(name: &str) -> Kernel {
    let mut kb = KernelBuilder::new(name);
    let t = TileType::new(DType::F32, 1, COLS);
    let a = kb.tile_param("a", Direction::In, t);
    let y = kb.tile_param("y", Direction::InOut, t);
    let x = kb.load(a).expect("load");
    let old = kb.load(y).expect("load");
    let s = kb.binary(BinaryOp::Add, x, old).expect("add");
    kb.store(y, s);
    kb.finish().expect("kernel")
}

/// Runs tasks in place with the reference kernel interpreter and logs every call.
#[derive(Default)]
struct Log {
    calls: Vec<String>,
}

impl TaskBackend for Log {
    fn task(&mut self, t: &TaskInstance<'_>, tensors: &mut [HostTensor]) -> Result<(), TaskError> {
        self.calls.push(format!(
            "task {} {:?} {:?} {:?} {:?}",
            t.label(),
            t.coords,
            t.args,
            t.process,
            t.axes
        ));
        let mut args = Vec::new();
        for (p, a) in t.ir.params.iter().zip(t.args) {
            match (&p.kind, a) {
                (ParamKind::Tile { tile, .. }, TaskValue::Tile(v)) => {
                    let src = tensors.get(v.tensor.index()).ok_or("bad tensor")?;
                    args.push(KernelArg::Tile(exec::gather(src, v, *tile)));
                }
                (_, TaskValue::Scalar(s)) => args.push(KernelArg::Scalar(*s)),
                _ => return Err("wrong kind".into()),
            }
        }
        run_kernel(t.ir, &mut args).map_err(|e| e.message)?;
        for ((p, a), v) in t.ir.params.iter().zip(&args).zip(t.args) {
            if let (ParamKind::Tile { dir, .. }, KernelArg::Tile(tl), TaskValue::Tile(v)) =
                (&p.kind, a, v)
            {
                if dir.writes() {
                    let dst = tensors.get_mut(v.tensor.index()).ok_or("bad tensor")?;
                    exec::scatter(tl, v, dst);
                }
            }
        }
        Ok(())
    }
    fn sync(&mut self, tensor: TensorId, _: &mut [HostTensor]) -> Result<(), String> {
        self.calls.push(format!("sync {}", tensor.0));
        Ok(())
    }
    fn barrier(&mut self, _: &mut [HostTensor]) -> Result<(), String> {
        self.calls.push("barrier".into());
        Ok(())
    }
    fn order(&mut self, event: OrderEvent) -> Result<(), String> {
        self.calls.push(format!("{event:?}"));
        Ok(())
    }
}

fn f32_tensor(p: &mut Program, name: &str, rows: i64) -> TensorId {
    p.tensors.push(TensorDecl {
        name: name.into(),
        kind: TensorKind::Scratch,
        dtype: DType::F32,
        shape: vec![Affine::constant(rows), Affine::constant(i64::from(COLS))],
        init: None,
        at: None,
    });
    TensorId(p.tensors.len() as u32 - 1)
}

fn i64_tensor(p: &mut Program, name: &str, values: &[i64]) -> TensorId {
    p.tensors.push(TensorDecl {
        name: name.into(),
        kind: TensorKind::Input,
        dtype: DType::I64,
        shape: vec![Affine::constant(values.len() as i64)],
        init: None,
        at: None,
    });
    TensorId(p.tensors.len() as u32 - 1)
}

fn tensors(p: &Program, ints: &[(TensorId, Vec<i64>)]) -> Vec<HostTensor> {
    p.tensors
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let shape: Vec<usize> = t.shape.iter().map(|a| a.constant as usize).collect();
            let n: usize = shape.iter().product();
            match ints.iter().find(|(id, _)| id.index() == i) {
                Some((_, v)) => {
                    let f: Vec<f64> = v.iter().map(|x| *x as f64).collect();
                    HostTensor::from_f64(t.dtype, shape, &f)
                }
                None => {
                    let f: Vec<f64> = (0..n).map(|k| (k as f64) * 0.5 - 1.0).collect();
                    HostTensor::from_f64(t.dtype, shape, &f)
                }
            }
        })
        .collect()
}

fn var(v: u32) -> Expr {
    Expr::Var { var: LoopVar(v) }
}

fn int(i: i64) -> Expr {
    Expr::Const {
        value: ScalarValue::Int(i),
    }
}

fn row_call(a: TensorId, ra: Affine, y: TensorId, ry: Affine, coords: Vec<Expr>) -> WStmt {
    let at = |t, r| {
        TaskArg::View(View {
            tensor: t,
            dims: vec![ViewDim::Index { at: r }],
        })
    };
    WStmt::Call(TaskCall {
        kernel: KernelId(0),
        coords,
        args: vec![at(a, ra), at(y, ry)],
        at: None,
    })
}

/// Both ways; asserts identical logs, tensors and results.
fn same(p: &Program, w: WorkloadId, t: Vec<HostTensor>) -> Result<ExecOutcome, ExecError> {
    let mut ta = t.clone();
    let mut la = Log::default();
    let a = exec::run_workload_on(p, w, &[], &mut ta, &mut la);
    let o = compile_orchestration(p, &[], &t).expect("compiles");
    let mut tb = t;
    let mut lb = Log::default();
    let b = o.run_workload_on(w, &[], &mut tb, &mut lb);
    assert_eq!(la.calls, lb.calls);
    assert_eq!(a, b);
    for (x, y) in ta.iter().zip(&tb) {
        assert_eq!(x.data.to_bytes(x.dtype), y.data.to_bytes(y.dtype));
    }
    b
}

/// Ragged and Sparse axes over data, a `when` on a tensor element, a DenseDyn size read from
/// a tensor, a `P.seq` range that depends on an earlier variable, and `sequential`.
fn dynamic_program(lens: &[i64], indptr: &[i64], indices: &[i64]) -> (Program, Vec<HostTensor>) {
    let mut p = Program::new();
    p.kernels.push(kernel("acc"));
    let x = f32_tensor(&mut p, "X", 8);
    let y = f32_tensor(&mut p, "Y", 8);
    let l = i64_tensor(&mut p, "lens", lens);
    let ip = i64_tensor(&mut p, "indptr", indptr);
    let ix = i64_tensor(&mut p, "indices", indices);
    let n = i64_tensor(&mut p, "n", &[3]);
    p.axes.push(Axis {
        name: "batch".into(),
        kind: AxisKind::Dense {
            size: lens.len() as u64,
        },
        at: None,
    });
    p.axes.push(Axis {
        name: "tokens".into(),
        kind: AxisKind::Ragged {
            outer: AxisId(0),
            lengths: l,
            per: None,
        },
        at: None,
    });
    p.axes.push(Axis {
        name: "rows".into(),
        kind: AxisKind::Dense {
            size: indptr.len() as u64 - 1,
        },
        at: None,
    });
    p.axes.push(Axis {
        name: "routing".into(),
        kind: AxisKind::Sparse {
            outer: AxisId(2),
            indptr: ip,
            indices: ix,
        },
        at: None,
    });
    p.axes.push(Axis {
        name: "dyn".into(),
        kind: AxisKind::DenseDyn {
            size: Expr::Elem {
                tensor: n,
                index: vec![int(0)],
            },
        },
        at: None,
    });
    let v = |i| Affine::var(LoopVar(i));
    let body = vec![
        // for b, t in tokens (Ragged, whole)
        WStmt::For {
            kind: LoopKind::Parallel,
            vars: vec![LoopVar(0), LoopVar(1)],
            iters: vec![Iter::Axis { axis: AxisId(1) }],
            body: vec![row_call(x, v(1), y, v(0), vec![var(0), var(1)])],
        },
        // for r in rows, e in routing[r] (Sparse row)
        WStmt::For {
            kind: LoopKind::Sequential,
            vars: vec![LoopVar(2), LoopVar(3)],
            iters: vec![
                Iter::Axis { axis: AxisId(2) },
                Iter::Row {
                    axis: AxisId(3),
                    row: v(2),
                },
            ],
            body: vec![WStmt::When {
                branches: vec![WhenBranch {
                    cond: Expr::Binary {
                        op: ExprOp::Gt,
                        lhs: Box::new(Expr::Elem {
                            tensor: y,
                            index: vec![var(3), int(0)],
                        }),
                        rhs: Box::new(Expr::Const {
                            value: ScalarValue::Float(0.0),
                        }),
                    },
                    body: vec![row_call(y, v(3), x, v(2), vec![var(2), var(3)])],
                }],
                otherwise: vec![row_call(x, v(3), y, v(2), vec![var(3)])],
            }],
        },
        // for d in dyn, k in 0 .. d + 1 (a range over an earlier variable)
        WStmt::For {
            kind: LoopKind::Plain,
            vars: vec![LoopVar(4), LoopVar(5)],
            iters: vec![
                Iter::Axis { axis: AxisId(4) },
                Iter::Range {
                    start: int(0),
                    end: Expr::Binary {
                        op: ExprOp::Add,
                        lhs: Box::new(var(4)),
                        rhs: Box::new(int(1)),
                    },
                },
            ],
            body: vec![row_call(x, v(5), y, v(4), vec![var(4), var(5)])],
        },
    ];
    p.workloads.push(Workload {
        name: "dynamic".into(),
        vars: (0..6).map(|i| format!("v{i}")).collect(),
        body: WorkloadBody::Block { stmts: body },
    });
    p.workloads.push(Workload {
        name: "twice".into(),
        vars: vec![],
        body: WorkloadBody::Sequential {
            parts: vec![WorkloadId(0), WorkloadId(0)],
        },
    });
    let t = tensors(
        &p,
        &[
            (l, lens.to_vec()),
            (ip, indptr.to_vec()),
            (ix, indices.to_vec()),
            (n, vec![3]),
        ],
    );
    (p, t)
}

#[test]
fn loops_over_dense_axes_and_ranges_keep_no_tuples() {
    // `for b, r in P(batch, rows)` and `for b, k in batch, 0 .. b + 1`: nested counted loops
    // (memory independent of the iteration space), the interpreter's calls in its order.
    let mut p = Program::new();
    p.kernels.push(kernel("acc"));
    let x = f32_tensor(&mut p, "X", 8);
    let y = f32_tensor(&mut p, "Y", 8);
    for (name, size) in [("batch", 3), ("rows", 2)] {
        p.axes.push(Axis {
            name: name.into(),
            kind: AxisKind::Dense { size },
            at: None,
        });
    }
    let v = |i| Affine::var(LoopVar(i));
    let body = vec![
        WStmt::For {
            kind: LoopKind::Parallel,
            vars: vec![LoopVar(0), LoopVar(1)],
            iters: vec![
                Iter::Axis { axis: AxisId(0) },
                Iter::Axis { axis: AxisId(1) },
            ],
            body: vec![row_call(x, v(1), y, v(0), vec![var(0), var(1)])],
        },
        WStmt::For {
            kind: LoopKind::Sequential,
            vars: vec![LoopVar(2), LoopVar(3)],
            iters: vec![
                Iter::Axis { axis: AxisId(0) },
                Iter::Range {
                    start: int(0),
                    end: Expr::Binary {
                        op: ExprOp::Add,
                        lhs: Box::new(var(2)),
                        rhs: Box::new(int(1)),
                    },
                },
            ],
            body: vec![row_call(y, v(3), x, v(2), vec![var(2), var(3)])],
        },
    ];
    p.workloads.push(Workload {
        name: "dense".into(),
        vars: (0..4).map(|i| format!("v{i}")).collect(),
        body: WorkloadBody::Block { stmts: body },
    });
    let t = tensors(&p, &[]);
    let o = compile_orchestration(&p, &[], &t).expect("compiles");
    assert_eq!(o.workloads[0].as_ref().map(|b| b.bufs), Some(0));
    let out = same(&p, WorkloadId(0), t).expect("runs");
    assert_eq!(out.tasks.len(), 3 * 2 + (1 + 2 + 3));
    // Loops over data (Ragged, Sparse rows, a DenseDyn size read from a tensor) still
    // generate their tuples first.
    let (p, t) = dynamic_program(&[2, 0, 3], &[0, 2, 2, 5], &[1, 3, 0, 2, 7]);
    let o = compile_orchestration(&p, &[], &t).expect("compiles");
    assert!(o.workloads[0].as_ref().is_some_and(|b| b.bufs >= 3));
}

#[test]
fn a_direct_loop_keeps_the_interpreters_bound_on_iterations() {
    // 8193² iterations (just over 2²⁶) of an empty body: refused as the interpreter refuses
    // them, with its message.
    let mut p = Program::new();
    p.kernels.push(kernel("acc"));
    for name in ["a", "b"] {
        p.axes.push(Axis {
            name: name.into(),
            kind: AxisKind::Dense { size: 8193 },
            at: None,
        });
    }
    p.workloads.push(Workload {
        name: "big".into(),
        vars: vec!["i".into(), "j".into()],
        body: WorkloadBody::Block {
            stmts: vec![WStmt::For {
                kind: LoopKind::Parallel,
                vars: vec![LoopVar(0), LoopVar(1)],
                iters: vec![
                    Iter::Axis { axis: AxisId(0) },
                    Iter::Axis { axis: AxisId(1) },
                ],
                body: vec![],
            }],
        },
    });
    /// Records nothing (the order events of 2²⁶ iterations would be 2²⁶ strings).
    struct Quiet;
    impl TaskBackend for Quiet {
        fn task(&mut self, _: &TaskInstance<'_>, _: &mut [HostTensor]) -> Result<(), TaskError> {
            Err("the body has no task".into())
        }
        fn sync(&mut self, _: TensorId, _: &mut [HostTensor]) -> Result<(), String> {
            Ok(())
        }
    }
    let t = tensors(&p, &[]);
    let o = compile_orchestration(&p, &[], &t).expect("compiles");
    let mut tb = t;
    let e = o
        .run_workload_on(WorkloadId(0), &[], &mut tb, &mut Quiet)
        .expect_err("too many iterations");
    assert!(
        e.message.ends_with(&format!(
            "a loop has more than {MAX_LOOP_ITERATIONS} iterations"
        )),
        "{}",
        e.message
    );
}

#[test]
fn ragged_sparse_when_and_dynamic_loops_match_the_interpreter() {
    let (p, t) = dynamic_program(&[2, 0, 3], &[0, 2, 2, 5], &[1, 3, 0, 2, 7]);
    let out = same(&p, WorkloadId(1), t).expect("runs");
    assert!(out.tasks.len() > 20);
}

#[test]
fn data_errors_are_the_interpreters() {
    // A negative Ragged length, a decreasing indptr, an index outside `indices`, a view row
    // outside the tensor.
    for (lens, indptr, indices) in [
        (vec![2, -1, 3], vec![0, 2, 2, 5], vec![1, 3, 0, 2, 7]),
        (vec![2, 0, 3], vec![0, 2, 1, 5], vec![1, 3, 0, 2, 7]),
        (vec![2, 0, 3], vec![0, 2, 2, 9], vec![1, 3, 0, 2, 7]),
        (vec![2, 0, 9], vec![0, 2, 2, 5], vec![1, 3, 0, 2, 7]),
    ] {
        let (p, t) = dynamic_program(&lens, &indptr, &indices);
        let e = same(&p, WorkloadId(1), t).expect_err("fails");
        assert_eq!(e.code, codes::E0810);
    }
}

#[test]
fn expression_errors_are_the_interpreters() {
    let (mut p, t) = dynamic_program(&[1, 1, 1], &[0, 1, 2, 3], &[0, 1, 2]);
    // A coordinate divided by zero, then a bool where an integer belongs.
    let div0 = Expr::Binary {
        op: ExprOp::Div,
        lhs: Box::new(var(0)),
        rhs: Box::new(Expr::Binary {
            op: ExprOp::Sub,
            lhs: Box::new(var(1)),
            rhs: Box::new(var(1)),
        }),
    };
    let notint = Expr::Binary {
        op: ExprOp::Lt,
        lhs: Box::new(var(0)),
        rhs: Box::new(int(1)),
    };
    for bad in [div0, notint] {
        if let WorkloadBody::Block { stmts } = &mut p.workloads[0].body {
            if let WStmt::For { body, .. } = &mut stmts[0] {
                if let WStmt::Call(c) = &mut body[0] {
                    c.coords[0] = bad;
                }
            }
        }
        let e = same(&p, WorkloadId(0), t.clone()).expect_err("fails");
        assert!(e.message.contains("workload `dynamic`"), "{}", e.message);
    }
}

/// loader → doubler → storer over `n` rows, with channels of `depth`, the doubler replicated.
fn pipeline(depth: u32, n: i64, replicas: u32) -> (Program, Vec<HostTensor>) {
    let mut p = Program::new();
    p.kernels.push(kernel("acc"));
    let x = f32_tensor(&mut p, "X", n);
    let t0 = f32_tensor(&mut p, "T0", n);
    let t1 = f32_tensor(&mut p, "T1", n);
    p.axes.push(Axis {
        name: "tiles".into(),
        kind: AxisKind::Dense { size: n as u64 },
        at: None,
    });
    for name in ["a", "b"] {
        p.channels.push(Channel {
            name: name.into(),
            depth,
            latency: None,
        });
    }
    let v0 = || Affine::var(LoopVar(0));
    let task = |a, y| TaskCall {
        kernel: KernelId(0),
        coords: vec![var(0)],
        args: vec![
            TaskArg::View(View {
                tensor: a,
                dims: vec![ViewDim::Index { at: v0() }],
            }),
            TaskArg::View(View {
                tensor: y,
                dims: vec![ViewDim::Index { at: v0() }],
            }),
        ],
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
            iters: vec![Iter::Axis { axis: AxisId(0) }],
            body: vec![WStmt::Send {
                channel: ChannelId(0),
                payload: SendPayload::Task(task(x, t0)),
            }],
        }],
    });
    p.processes.push(Process {
        name: "doubler".into(),
        consumes: vec![ChannelId(0)],
        produces: vec![ChannelId(1)],
        vars: vec!["i".into()],
        body: vec![WStmt::Consume {
            channel: ChannelId(0),
            bindings: vec![LoopVar(0)],
            body: vec![
                WStmt::Call(task(t0, t1)),
                WStmt::Send {
                    channel: ChannelId(1),
                    payload: SendPayload::Values {
                        values: vec![var(0)],
                    },
                },
            ],
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
            body: vec![WStmt::Call(task(t1, x))],
        }],
    });
    p.workloads.push(Workload {
        name: "pipe".into(),
        vars: vec![],
        body: WorkloadBody::Connect {
            processes: vec![
                ConnectItem {
                    process: ProcessId(0),
                    replicas: 1,
                },
                ConnectItem {
                    process: ProcessId(1),
                    replicas,
                },
                ConnectItem {
                    process: ProcessId(2),
                    replicas: 1,
                },
            ],
        },
    });
    let t = tensors(&p, &[]);
    (p, t)
}

#[test]
fn csp_pipelines_step_like_the_interpreter() {
    for depth in [0, 1, 3] {
        for replicas in [1, 2] {
            let (p, t) = pipeline(depth, 6, replicas);
            let out = same(&p, WorkloadId(0), t).expect("runs");
            assert_eq!(out.tasks.len(), 18);
        }
    }
}

#[test]
fn a_deadlock_is_reported_like_the_interpreter() {
    // The storer consumes a channel nobody produces: it waits forever.
    let (mut p, t) = pipeline(1, 3, 1);
    p.processes[1].produces.clear();
    p.processes[1].body = vec![WStmt::Consume {
        channel: ChannelId(0),
        bindings: vec![LoopVar(0)],
        body: vec![],
    }];
    p.processes[2].body.insert(
        0,
        WStmt::Send {
            channel: ChannelId(0),
            payload: SendPayload::Values {
                values: vec![int(1)],
            },
        },
    );
    let r = same(&p, WorkloadId(0), t);
    if let Err(e) = r {
        assert!(e.code == codes::E0811 || e.code == codes::E0810);
    }
}

#[test]
fn malformed_loops_are_refused_at_compile_time() {
    let (mut p, t) = dynamic_program(&[1], &[0, 1], &[0]);
    if let WorkloadBody::Block { stmts } = &mut p.workloads[0].body {
        if let WStmt::For { vars, .. } = &mut stmts[0] {
            vars.pop();
        }
    }
    let Err(why) = compile_orchestration(&p, &[], &t) else {
        panic!("compiled a loop binding too few variables");
    };
    assert!(why.0.contains("binds 1 variables"), "{why}");
}

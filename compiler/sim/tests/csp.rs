//! CSP pipelines on the runtime: processes are runtime processes (their own `pto_wsp_v9`
//! clocks, runtime channels with depth and closing, the runtime's deadlock report). The IR is
//! built directly (the lowering of `connect` is tested separately).

use std::path::Path;
use wsp_ir::dtype::{DType, ScalarValue};
use wsp_ir::kernel::{BinaryOp, Direction, Kernel, TileType};
use wsp_ir::typing::KernelBuilder;
use wsp_ir::workload::*;
use wsp_sim::{Options, SimError};

const F32: DType = DType::F32;
const COLS: u32 = 16;

fn kernel(name: &str, square: bool) -> Kernel {
    let mut kb = KernelBuilder::new(name);
    let t = TileType::new(F32, 1, COLS);
    let px = kb.tile_param("x", Direction::In, t);
    let po = kb.tile_param("y", Direction::Out, t);
    let x = kb.load(px).expect("load");
    let y = if square {
        kb.binary(BinaryOp::Mul, x, x).expect("mul")
    } else {
        let one = kb.constant(ScalarValue::Float(1.0), F32).expect("const");
        kb.binary(BinaryOp::Mul, x, one).expect("mul")
    };
    kb.store(po, y);
    kb.finish().expect("kernel")
}

fn tensor(p: &mut Program, name: &str, kind: TensorKind, n: i64, init: Option<Init>) -> TensorId {
    p.tensors.push(TensorDecl {
        name: name.into(),
        kind,
        dtype: F32,
        shape: vec![Affine::constant(n), Affine::constant(i64::from(COLS))],
        init,
        at: None,
    });
    TensorId(p.tensors.len() as u32 - 1)
}

fn call(k: u32, a: TensorId, b: TensorId) -> TaskCall {
    let at = |t| {
        TaskArg::View(View {
            tensor: t,
            dims: vec![ViewDim::Index {
                at: Affine::var(LoopVar(0)),
            }],
        })
    };
    TaskCall {
        kernel: KernelId(k),
        coords: vec![Expr::Var { var: LoopVar(0) }],
        args: vec![at(a), at(b)],
        at: None,
    }
}

/// load → square → store over `n` rows, channels of `depth`.
fn pipeline(depth: u32, n: i64) -> Program {
    let mut p = Program::new();
    p.kernels.push(kernel("load_tile", false));
    p.kernels.push(kernel("square_tile", true));
    p.kernels.push(kernel("store_tile", false));
    let xv = (0..n * i64::from(COLS))
        .map(|i| ScalarValue::Float(i as f64 * 0.25 - 3.0))
        .collect();
    let x = tensor(
        &mut p,
        "X",
        TensorKind::Input,
        n,
        Some(Init::Literal { values: xv }),
    );
    let t0 = tensor(&mut p, "T0", TensorKind::Scratch, n, None);
    let t1 = tensor(&mut p, "T1", TensorKind::Scratch, n, None);
    let y = tensor(&mut p, "Y", TensorKind::Output, n, None);
    p.axes.push(Axis {
        name: "tiles".into(),
        kind: AxisKind::Dense { size: n as u64 },
        at: None,
    });
    for name in ["l2c", "c2s"] {
        p.channels.push(Channel {
            name: name.into(),
            depth,
            latency: None,
        });
    }
    let consume = |ch: u32, body: WStmt| WStmt::Consume {
        channel: ChannelId(ch),
        bindings: vec![LoopVar(0)],
        body: vec![body],
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
                payload: SendPayload::Task(call(0, x, t0)),
            }],
        }],
    });
    p.processes.push(Process {
        name: "computer".into(),
        consumes: vec![ChannelId(0)],
        produces: vec![ChannelId(1)],
        vars: vec!["i".into()],
        body: vec![consume(
            0,
            WStmt::Send {
                channel: ChannelId(1),
                payload: SendPayload::Task(call(1, t0, t1)),
            },
        )],
    });
    p.processes.push(Process {
        name: "storer".into(),
        consumes: vec![ChannelId(1)],
        produces: vec![],
        vars: vec!["i".into()],
        body: vec![consume(1, WStmt::Call(call(2, t1, y)))],
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

fn opts(arch: &str) -> Options {
    Options::new(wsp_arch::Arch::builtin(arch).expect("arch"), Path::new("."))
}

fn run(p: &Program, arch: &str) -> Result<wsp_sim::SimRun, SimError> {
    // With the per-task records (Options::record), which a test below reads.
    let mut o = opts(arch);
    o.record = true;
    wsp_sim::run(p, &wsp_jit::Jit::new(), &o)
}

#[test]
fn a_pipeline_computes_the_reference_results_with_tasks_on_their_processes() {
    for depth in [0, 1, 2] {
        let p = pipeline(depth, 6);
        let r = run(&p, "ascend910b").expect("runs");
        let want =
            wsp_ir::data::run_reference(&p, None, &[], &[], Path::new(".")).expect("reference");
        assert_eq!(
            r.tensors[3].to_f64(),
            want.tensors[3].to_f64(),
            "depth {depth}"
        );
        assert_eq!(r.stats.tasks, 18);
        let mut per: Vec<(String, usize)> = Vec::new();
        for t in &r.outcome.tasks {
            let name = t.process.clone().expect("every task has its process");
            match per.iter_mut().find(|(n, _)| *n == name) {
                Some(e) => e.1 += 1,
                None => per.push((name, 1)),
            }
        }
        per.sort();
        assert_eq!(
            per,
            [
                ("computer".into(), 6),
                ("loader".into(), 6),
                ("storer".into(), 6)
            ]
        );
    }
}

#[test]
fn v9_time_is_the_largest_process_clock() {
    // Channels deep enough never to block: the loader's clock is n·L; the computer takes
    // token j (stamped (j+1)·L) then adds S; the storer likewise after the computer.
    let n = 5;
    let p = pipeline(8, n);
    let ext = [Some([1, COLS]), Some([1, COLS])];
    let c = |k: usize| wsp_ir::cost::v9_cycles(&p.kernels[k], &ext).expect("cost");
    let (l, s, t) = (c(0), c(1), c(2));
    let (mut comp, mut store) = (0u64, 0u64);
    for j in 0..n as u64 {
        comp = comp.max((j + 1) * l) + s;
        store = store.max(comp) + t;
    }
    let want = (n as u64 * l).max(comp).max(store);
    let r = run(&p, "pto_wsp_v9").expect("runs");
    assert_eq!(r.stats.total_cycles, want);
    // Under an event model the same pipeline is deterministic.
    let a = run(&p, "ascend910b").expect("runs");
    let b = run(&p, "ascend910b").expect("runs");
    assert_eq!(a.stats.total_cycles, b.stats.total_cycles);
    assert!(a.stats.total_cycles > 0);
}

#[test]
fn a_process_cycle_deadlocks_with_the_runtime_report() {
    let mut p = Program::new();
    for name in ["c1", "c2"] {
        p.channels.push(Channel {
            name: name.into(),
            depth: 1,
            latency: None,
        });
    }
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
                    values: vec![Expr::Var { var: LoopVar(0) }],
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
    match run(&p, "ascend910b") {
        Err(SimError::Deadlock(m, report)) => {
            assert!(
                m.contains("process `a` waits on channel `c1`")
                    && m.contains("process `b` waits on channel `c2`"),
                "{m}"
            );
            // The same report as a structure, for `--stats json`.
            let r = report.expect("the runtime's report");
            let blocked: Vec<(&str, &str)> = r
                .blocked
                .iter()
                .map(|b| (b.process.as_str(), b.channel.as_str()))
                .collect();
            assert_eq!(blocked, [("a", "c1"), ("b", "c2")]);
            assert_eq!(r.reason.code(), "CHANNEL_EMPTY_WAIT");
        }
        other => panic!("expected a deadlock, got {other:?}"),
    }
}

//! CSP: pipelines of processes over channels run in order and deterministically (on any
//! number of threads), rendezvous and closing channels, the `pto_wsp_v9` process clocks, runs
//! one after another, and channel deadlocks with their reports.

use super::{
    add_one_kernel, arch, arg, expect_deadlock, noop, script, send, task, task_starts, Loader,
};
use crate::*;
use std::sync::Arc;

struct Worker {
    inp: ChannelId,
    out: Option<ChannelId>,
    k: KernelId,
    x: TensorId,
    waiting: bool,
    seen: Arc<std::sync::Mutex<Vec<i64>>>,
}

impl Process for Worker {
    fn step(&mut self, cx: &mut ProcCx<'_>) -> Result<Step, String> {
        if !self.waiting {
            self.waiting = true;
            return Ok(Step::Recv { ch: self.inp });
        }
        self.waiting = false;
        match cx.received() {
            Some(Received::Token(t)) => {
                let i = t.values()[0];
                self.seen.lock().map_err(|e| e.to_string())?.push(i);
                let a = [arg(self.x, &[i, 0], &[1, 8], Direction::InOut)];
                let id = cx
                    .submit(&task(self.k, &[i], &a, 50))
                    .map_err(|e| e.to_string())?;
                match self.out {
                    Some(ch) => Ok(Step::Send {
                        ch,
                        token: t,
                        after: Some(id),
                    }),
                    None => Ok(Step::Continue),
                }
            }
            Some(Received::Closed) => Ok(Step::Finished),
            None => Err("no token".into()),
        }
    }
}

fn pipeline(arch_name: &str, depth: u32, threads: usize) -> (u64, Vec<i64>, Vec<u8>) {
    let mut cfg = Config::new(arch(arch_name));
    cfg.threads = threads;
    let mut rt = Runtime::new(cfg).unwrap();
    let k = rt.register_kernel("inc", CoreClass::Vector, add_one_kernel());
    let x = rt.add_tensor(4, &[16, 8]).unwrap();
    let l2c = rt.add_channel("l2c", depth, None);
    let c2s = rt.add_channel("c2s", depth, None);
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let specs = vec![
        ProcSpec {
            name: "loader".into(),
            body: Box::new(Loader {
                out: l2c,
                k,
                x,
                i: 0,
                n: 16,
            }),
            produces: vec![l2c],
        },
        ProcSpec {
            name: "computer".into(),
            body: Box::new(Worker {
                inp: l2c,
                out: Some(c2s),
                k,
                x,
                waiting: false,
                seen: Arc::new(std::sync::Mutex::new(Vec::new())),
            }),
            produces: vec![c2s],
        },
        ProcSpec {
            name: "storer".into(),
            body: Box::new(Worker {
                inp: c2s,
                out: None,
                k,
                x,
                waiting: false,
                seen: Arc::clone(&seen),
            }),
            produces: vec![],
        },
    ];
    run_csp(&mut rt, specs, &seen, x)
}

/// Runs `specs` to the end: `total_cycles`, the tokens the workers saw (`seen`) in order, and
/// tensor `x`'s bytes.
fn run_csp(
    rt: &mut Runtime,
    specs: Vec<ProcSpec<'_>>,
    seen: &std::sync::Mutex<Vec<i64>>,
    x: TensorId,
) -> (u64, Vec<i64>, Vec<u8>) {
    rt.run_processes(specs).unwrap();
    let s = rt.finish().unwrap();
    let order = seen.lock().unwrap().clone();
    (s.total_cycles, order, rt.tensor_bytes(x).unwrap().to_vec())
}

#[test]
fn csp_pipeline_runs_in_order_and_deterministically() {
    for depth in [0, 1, 2] {
        let (c1, o1, d1) = pipeline("ascend910b", depth, 1);
        let (c2, o2, d2) = pipeline("ascend910b", depth, 2);
        assert_eq!(o1, (0..16).collect::<Vec<_>>());
        assert_eq!((c1, &o1, &d1), (c2, &o2, &d2));
        // Every element incremented three times (loader, computer, storer).
        assert!(d1
            .chunks(4)
            .all(|b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]) == 3));
    }
}

/// Thousands of replicated workers on one channel (more than the 4,096 processes of two
/// levels of the runnable and receiver sets): every token is taken exactly once, and the run
/// is the same on 1 and 2 threads.
#[test]
fn csp_thousands_of_workers_share_a_channel() {
    let run = |threads: usize| {
        let mut cfg = Config::new(arch("ascend910b"));
        cfg.threads = threads;
        let mut rt = Runtime::new(cfg).unwrap();
        let k = rt.register_kernel("inc", CoreClass::Vector, add_one_kernel());
        let x = rt.add_tensor(4, &[6000, 8]).unwrap();
        let q = rt.add_channel("q", 4, Some(3));
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut specs = vec![ProcSpec {
            name: "loader".into(),
            body: Box::new(Loader {
                out: q,
                k,
                x,
                i: 0,
                n: 6000,
            }),
            produces: vec![q],
        }];
        for w in 0..5000 {
            specs.push(ProcSpec {
                name: format!("w{w}"),
                body: Box::new(Worker {
                    inp: q,
                    out: None,
                    k,
                    x,
                    waiting: false,
                    seen: Arc::clone(&seen),
                }),
                produces: vec![],
            });
        }
        run_csp(&mut rt, specs, &seen, x)
    };
    let (c1, o1, d1) = run(1);
    let mut sorted = o1.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..6000).collect::<Vec<_>>());
    // Loader and worker each incremented every row once.
    assert!(d1
        .chunks(4)
        .all(|b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]) == 2));
    assert_eq!((c1, o1, d1), run(2));
}

#[test]
fn csp_v9_clocks() {
    // loader: 16 × 100; computer: max(own, token) + 50 each; storer likewise.
    let (c, _, _) = pipeline("pto_wsp_v9", 2, 1);
    assert_eq!(c, 16 * 100 + 50 + 50);
}

#[test]
fn deadlock_recv_cycle() {
    let mut rt = Runtime::new(Config::new(arch("ascend910b"))).unwrap();
    let a = rt.add_channel("a", 1, None);
    let b = rt.add_channel("b", 1, None);
    let d = expect_deadlock(rt.run_processes(vec![
        script("p", vec![a], vec![Step::Recv { ch: b }, send(a, 1)]),
        script("q", vec![b], vec![Step::Recv { ch: a }, send(b, 1)]),
    ]));
    assert_eq!(d.reason, StallReason::ChannelEmptyWait);
    assert_eq!(d.blocked.len(), 2);
    assert_eq!(d.blocked[0].process, "p");
    assert_eq!(d.blocked[0].channel, "b");
    assert_eq!(d.blocked[0].wait, Wait::Empty);
    assert!(d.mitigation.contains("send before it receives"));
}

#[test]
fn deadlock_full_channel() {
    let mut rt = Runtime::new(Config::new(arch("ascend910b"))).unwrap();
    let a = rt.add_channel("a", 1, None);
    let b = rt.add_channel("b", 1, None);
    // p sends two tokens on a before reading b; q waits on b first.
    let d = expect_deadlock(rt.run_processes(vec![
        script(
            "p",
            vec![a],
            vec![send(a, 1), send(a, 2), Step::Recv { ch: b }],
        ),
        script(
            "q",
            vec![b],
            vec![Step::Recv { ch: b }, Step::Recv { ch: a }],
        ),
    ]));
    assert_eq!(d.reason, StallReason::ChannelFullWait);
    let p = &d.blocked[0];
    assert_eq!(
        (p.process.as_str(), p.wait, p.fill, p.depth),
        ("p", Wait::Full, 1, 1)
    );
    // `q` waits on `b`: the runtime names it, and says the depth is too small, not by how
    // much (it sees one stuck state, not the tokens still to come).
    assert!(
        d.mitigation.contains("raise its depth above 1") && d.mitigation.contains("(`q` on `b`)"),
        "{}",
        d.mitigation
    );
}

#[test]
fn safe_rendezvous_and_close() {
    let mut rt = Runtime::new(Config::new(arch("ascend910b"))).unwrap();
    let a = rt.add_channel("a", 0, Some(5));
    let got = Arc::new(std::sync::Mutex::new(Vec::new()));
    let g2 = Arc::clone(&got);
    let mut waiting = false;
    let consumer = move |cx: &mut ProcCx<'_>| -> Result<Step, String> {
        if waiting {
            waiting = false;
            match cx.received() {
                Some(Received::Token(t)) => {
                    g2.lock().map_err(|e| e.to_string())?.push(t.values()[0])
                }
                Some(Received::Closed) => return Ok(Step::Finished),
                None => return Err("nothing received".into()),
            }
        }
        waiting = true;
        Ok(Step::Recv { ch: a })
    };
    rt.run_processes(vec![
        script("p1", vec![a], vec![send(a, 1), send(a, 2)]),
        script("p2", vec![a], vec![send(a, 10)]),
        ProcSpec {
            name: "c".into(),
            body: Box::new(consumer),
            produces: vec![],
        },
    ])
    .unwrap();
    let mut v = got.lock().unwrap().clone();
    assert_eq!(v.len(), 3);
    v.sort();
    assert_eq!(v, vec![1, 2, 10]);
    // A rendezvous holds no token: each passes from a sender straight to the receiver.
    assert_eq!(rt.channel_high_water(a), Some(0));
    assert!(rt.finish().unwrap().total_cycles >= 5);
}

#[test]
fn a_channel_without_producers_is_closed_and_only_producers_send() {
    let mut rt = Runtime::new(Config::new(arch("ascend910b"))).unwrap();
    let c = rt.add_channel("c", 1, None);
    let mut asked = false;
    let consumer = move |cx: &mut ProcCx<'_>| -> Result<Step, String> {
        if !asked {
            asked = true;
            return Ok(Step::Recv { ch: c });
        }
        match cx.received() {
            Some(Received::Closed) => Ok(Step::Finished),
            other => Err(format!("expected the close, got {other:?}")),
        }
    };
    rt.run_processes(vec![ProcSpec {
        name: "cons".into(),
        body: Box::new(consumer),
        produces: vec![],
    }])
    .expect("no producer: the channel is closed, not a deadlock");
    let d = rt.add_channel("d", 1, None);
    let e = rt
        .run_processes(vec![script("rogue", vec![], vec![send(d, 1)])])
        .unwrap_err();
    assert!(e.to_string().contains("without producing it"), "{e}");
}

#[test]
fn runs_of_processes_one_after_another() {
    // Each run opens the channels its producers produce; a run after one that stopped is
    // refused rather than served by the stopped run's processes.
    let mut rt = Runtime::new(Config::new(arch("ascend910b"))).unwrap();
    let c = rt.add_channel("c", 2, None);
    for v in [1, 11] {
        rt.run_processes(vec![
            script("q", vec![], vec![Step::Recv { ch: c }; 3]),
            script("p", vec![c], vec![send(c, v), send(c, v + 1)]),
        ])
        .unwrap();
    }
    let d = expect_deadlock(rt.run_processes(vec![
        script("p", vec![c], vec![send(c, 1), send(c, 2), send(c, 3)]),
        script("idle", vec![], vec![]),
    ]));
    assert_eq!(d.reason, StallReason::ChannelFullWait);
    let e = rt
        .run_processes(vec![script("q", vec![], vec![Step::Recv { ch: c }])])
        .unwrap_err();
    assert!(e.to_string().contains("did not finish"), "{e}");
}

#[test]
fn a_channel_latency_past_every_limit_stops_the_run() {
    let mut rt = Runtime::new(Config::new(arch("ascend910b"))).unwrap();
    let k = rt.register_kernel("k", CoreClass::Vector, noop());
    let x = rt.add_tensor(4, &[4]).unwrap();
    rt.submit(&task(k, &[0], &[arg(x, &[0], &[4], Direction::Out)], 1000))
        .unwrap();
    rt.wait_all().unwrap();
    let c = rt.add_channel("slow", 1, Some(u64::MAX));
    let r = rt.run_processes(vec![
        script("p", vec![c], vec![send(c, 1)]),
        script("q", vec![], vec![Step::Recv { ch: c }]),
    ]);
    assert!(matches!(r, Err(RuntimeError::Limit { .. })), "{r:?}");
}

#[test]
fn a_rendezvous_sender_waits_until_its_token_is_received() {
    // A token sent after a task is sent when the task completes: through a rendezvous the
    // producer cannot submit its next task before then; through a channel of depth 1 it can.
    let starts = |depth: u32| {
        let mut cfg = Config::new(arch("ascend910b"));
        cfg.record = true;
        let mut rt = Runtime::new(cfg).unwrap();
        let k = rt.register_kernel("cp", CoreClass::Vector, noop());
        let x = rt.add_tensor(4, &[3, 8]).unwrap();
        let c = rt.add_channel("c", depth, None);
        rt.run_processes(vec![
            ProcSpec {
                name: "p".into(),
                body: Box::new(Loader {
                    out: c,
                    k,
                    x,
                    i: 0,
                    n: 3,
                }),
                produces: vec![c],
            },
            script("q", vec![], vec![Step::Recv { ch: c }; 4]),
        ])
        .unwrap();
        rt.finish().unwrap();
        task_starts(&rt)
    };
    let (rendezvous, buffered) = (starts(0), starts(1));
    assert_eq!(buffered[..2], [0, 0], "{buffered:?}");
    // Each of the loader's tasks takes 100 cycles.
    assert!(rendezvous[1] > rendezvous[0] + 100, "{rendezvous:?}");
}

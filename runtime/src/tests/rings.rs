//! The bounded rings and how a run stops: backpressure keeps every ring within its capacity,
//! scopes and the heap arena hold what they must, configurations built by hand are checked,
//! a stall nothing can end is a deadlock report naming a mitigation (the deadlock corpus), and
//! the task, cycle and idle-step limits stop runs that never end.

use super::{arch, arg, expect_deadlock, late_writer, noop, script, send, task, Loader};
use crate::*;

#[test]
fn task_ring_backpressure_bounds_memory() {
    let mut cfg = Config::new(arch("ascend910b")).with_window(16);
    cfg.execute = false;
    let mut rt = Runtime::new(cfg).unwrap();
    let k = rt.register_kernel("k", CoreClass::Vector, noop());
    let x = rt.add_tensor(4, &[1 << 16, 64]).unwrap();
    for i in 0..20_000i64 {
        let a = [
            arg(x, &[(i % 1000) * 64, 0], &[64, 64], Direction::In),
            arg(x, &[((i + 1) % 1000) * 64, 0], &[64, 64], Direction::Out),
        ];
        rt.submit(&task(k, &[i], &a, 100)).unwrap();
    }
    let s = rt.finish().unwrap();
    for r in &s.rings {
        assert!(r.high_water <= r.capacity, "{r:?}");
    }
    let ring = &s.rings[0];
    assert_eq!(ring.high_water, 16);
    assert!(ring.stalls > 0);
    assert_eq!(s.tasks, 20_000);
}

#[test]
fn huge_windows_clamp_the_pool_and_bad_pools_are_refused() {
    let cfg = Config::new(arch("ascend910b")).with_window(u32::MAX / 2);
    assert_eq!(cfg.tensormap_pool, MAX_POOL);
    assert_eq!(cfg.deplist_pool, u32::MAX);
    let mut cfg = Config::new(arch("ascend910b"));
    cfg.tensormap_pool = MAX_POOL + 1;
    match Runtime::new(cfg) {
        Err(RuntimeError::Api(m)) => assert!(m.contains("above the largest pool"), "{m}"),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("accepted a pool above the maximum"),
    }
    // The runtime and a builder used alone refuse bad windows and pools with one message.
    let refused = |window: u32, pool: u32, want: &str| {
        let mut cfg = Config::new(arch("ascend910b")).with_window(window);
        cfg.tensormap_pool = pool;
        for got in [Runtime::new(cfg).err(), Builder::new(window, pool, 0).err()] {
            match got {
                Some(RuntimeError::Api(m)) => assert!(m.contains(want), "{m}"),
                other => panic!("{window}, {pool}: {other:?}"),
            }
        }
    };
    refused(MAX_WINDOW + 1, 64, "above the largest window");
    refused(0, 64, "must be ≥ 1");
    refused(64, 0, "must be ≥ 1");
    refused(64, MAX_POOL + 1, "above the largest pool");
}

#[test]
fn models_and_policies_built_by_hand_are_checked() {
    let mut a = arch("ascend910b");
    a.cores.clear();
    assert!(Runtime::new(Config::new(a)).is_err());
    let mut a = arch("ascend910b");
    a.overheads.complete = u64::MAX;
    assert!(Runtime::new(Config::new(a)).is_err());
    let mut cfg = Config::new(arch("ascend910b"));
    cfg.policies.dispatch = Dispatch::RoundRobin(0);
    assert!(Runtime::new(cfg).is_err());
    // Streams, and v9 workers, are kept from the start: a count past the most is refused
    // (an error, not an allocation that aborts), on any model.
    for (name, n) in [
        ("ascend910b", MAX_STREAMS),
        ("ascend910b", u32::MAX),
        ("pto_wsp_v9", MAX_STREAMS + 1),
    ] {
        let mut cfg = Config::new(arch(name));
        cfg.policies.dispatch = Dispatch::Affinity;
        cfg.policies.streams = Some(Streams(n));
        assert_eq!(Runtime::new(cfg).is_ok(), n <= MAX_STREAMS, "{name} {n}");
    }
    assert!(Builder::new(8, 64, MAX_STREAMS as usize + 1).is_err());
    for (n, ok) in [
        (MAX_STREAMS, true),
        (MAX_STREAMS + 1, false),
        (u32::MAX, false),
    ] {
        let mut cfg = Config::new(arch("pto_wsp_v9"));
        cfg.policies.dispatch = Dispatch::RoundRobin(n);
        assert_eq!(Runtime::new(cfg).is_ok(), ok, "{n}");
    }
    // On an event-timed model a round robin goes round the cores it has.
    let mut cfg = Config::new(arch("ascend910b"));
    cfg.policies.dispatch = Dispatch::RoundRobin(u32::MAX);
    assert!(Runtime::new(cfg).is_ok());
    // A model with no cube cores runs cube kernels on the cores it has.
    let mut a = arch("ascend910b");
    a.cores.remove(&CoreClass::Cube);
    a.matmul_class = CoreClass::Cube;
    let mut rt = Runtime::new(Config::new(a)).unwrap();
    let k = rt.register_kernel("mm", CoreClass::Cube, noop());
    let x = rt.add_tensor(4, &[4]).unwrap();
    rt.submit(&task(k, &[0], &[arg(x, &[0], &[4], Direction::Out)], 10))
        .unwrap();
    rt.finish().unwrap();
}

// ------------------------------------------------------------------ deadlock corpus

#[test]
fn deadlock_scope_larger_than_window() {
    let mut cfg = Config::new(arch("ascend910b")).with_window(8);
    cfg.execute = false;
    let mut rt = Runtime::new(cfg).unwrap();
    let k = rt.register_kernel("k", CoreClass::Vector, noop());
    let x = rt.add_tensor(4, &[64, 64]).unwrap();
    rt.scope_begin();
    let mut last = Ok(TaskId(0));
    for i in 0..9i64 {
        let a = [arg(x, &[i, 0], &[1, 64], Direction::Out)];
        last = rt.submit(&task(k, &[i], &a, 10));
        if last.is_err() {
            break;
        }
    }
    let d = expect_deadlock(last);
    assert_eq!(d.reason, StallReason::TaskRingFull);
    assert_eq!(d.scope_depth, 1);
    assert_eq!(d.scope_held_tasks, 8);
    assert!(
        d.mitigation.contains("at least 16 (2 × the 8 tasks"),
        "{}",
        d.mitigation
    );
    assert_eq!(d.rings[0].used, 8);
    assert!(d.to_string().contains("TASK_RING_FULL"));
}

#[test]
fn safe_scope_within_window() {
    let mut cfg = Config::new(arch("ascend910b")).with_window(16);
    cfg.execute = false;
    let mut rt = Runtime::new(cfg).unwrap();
    let k = rt.register_kernel("k", CoreClass::Vector, noop());
    let x = rt.add_tensor(4, &[64, 64]).unwrap();
    for _ in 0..10 {
        rt.scope_begin();
        for i in 0..8i64 {
            let a = [arg(x, &[i, 0], &[1, 64], Direction::InOut)];
            rt.submit(&task(k, &[i], &a, 10)).unwrap();
        }
        rt.scope_end().unwrap();
    }
    assert_eq!(rt.finish().unwrap().tasks, 80);
}

#[test]
fn deadlock_heap_arena() {
    let mut cfg = Config::new(arch("ascend910b"));
    cfg.heap_arena = 1000;
    cfg.execute = false;
    let mut rt = Runtime::new(cfg).unwrap();
    assert!(rt.alloc_tensor(4, &[10]).is_err()); // no scope
    rt.scope_begin();
    rt.alloc_tensor(4, &[200]).unwrap();
    let d = expect_deadlock(rt.alloc_tensor(4, &[100]));
    assert_eq!(d.reason, StallReason::HeapArenaFull);
    assert_eq!(d.scope_held_bytes, 800);
    assert!(
        d.mitigation.contains("at least 1200 bytes"),
        "{}",
        d.mitigation
    );
    // Safe: the same allocations in consecutive scopes reuse the arena.
    let mut cfg = Config::new(arch("ascend910b"));
    cfg.heap_arena = 1000;
    let mut rt = Runtime::new(cfg).unwrap();
    for _ in 0..50 {
        rt.scope_begin();
        rt.alloc_tensor(4, &[200]).unwrap();
        rt.scope_end().unwrap();
    }
    let s = rt.finish().unwrap();
    assert_eq!(s.rings[3].high_water, 800);
}

#[test]
fn deadlock_deplist_pool() {
    let mut cfg = Config::new(arch("ascend910b"));
    cfg.deplist_pool = 2;
    cfg.execute = false;
    let mut rt = Runtime::new(cfg).unwrap();
    let k = rt.register_kernel("k", CoreClass::Vector, noop());
    let x = rt.add_tensor(4, &[4, 4]).unwrap();
    for i in 0..3 {
        let a = [arg(x, &[i, 0], &[1, 4], Direction::Out)];
        rt.submit(&task(k, &[i], &a, 10)).unwrap();
    }
    // The reader of all three rows needs three edges while they are pending, more than the
    // pool: it waits (not a deadlock) until enough have completed, then takes fewer edges.
    let a = [arg(x, &[0, 0], &[4, 4], Direction::In)];
    rt.submit(&task(k, &[9], &a, 10)).unwrap();
    let s = rt.finish().unwrap();
    let ring = s.rings.iter().find(|r| r.name == "deplist_pool").unwrap();
    assert!(ring.stalls > 0 && ring.high_water <= 2, "{ring:?}");
    assert!(s.edges <= 2, "{}", s.edges);
}

#[test]
fn deadlock_tensormap_pool() {
    let mut cfg = Config::new(arch("ascend910b"));
    cfg.tensormap_pool = 2;
    let mut rt = Runtime::new(cfg).unwrap();
    let k = rt.register_kernel("k", CoreClass::Vector, noop());
    let x = rt.add_tensor(4, &[4, 4]).unwrap();
    let a: Vec<Arg> = (0..3)
        .map(|i| arg(x, &[i, 0], &[1, 4], Direction::In))
        .collect();
    let d = expect_deadlock(rt.submit(&task(k, &[0], &a, 10)));
    assert_eq!(d.reason, StallReason::TensormapPoolFull);
    assert!(d.mitigation.contains("at least 3"));
    // Safe: two-argument tasks stream through the pool.
    let a: Vec<Arg> = (0..2)
        .map(|i| arg(x, &[i, 0], &[1, 4], Direction::InOut))
        .collect();
    for i in 0..100 {
        rt.submit(&task(k, &[i], &a, 10)).unwrap();
    }
    assert_eq!(rt.finish().unwrap().rings[1].high_water, 2);
}

#[test]
fn a_window_of_one_fits_a_task_with_many_regions() {
    // A task of 8 regions through a window of 1: the tensor map sized from the window (4
    // entries) cannot hold it; `fit_region_args` sizes it for the widest task.
    let submit8 = |fit: bool| {
        let mut cfg = Config::new(arch("ascend910b")).with_window(1);
        if fit {
            cfg.fit_region_args(8);
        }
        let mut rt = Runtime::new(cfg)?;
        let k = rt.register_kernel("k", CoreClass::Vector, noop());
        let x = rt.add_tensor(4, &[8, 4, 4]).unwrap();
        let a: Vec<Arg> = (0..8)
            .map(|i| arg(x, &[i, 0, 0], &[1, 4, 4], Direction::InOut))
            .collect();
        for i in 0..3 {
            rt.submit(&task(k, &[i], &a, 10))?;
        }
        rt.finish()
    };
    let d = expect_deadlock(submit8(false));
    assert_eq!(d.reason, StallReason::TensormapPoolFull);
    let s = submit8(true).unwrap();
    assert_eq!((s.tasks, s.rings[1].capacity), (3, 32));
}

#[test]
fn a_scratch_tensor_takes_no_task_after_its_scope() {
    for threads in [1, 2] {
        let mut cfg = Config::new(arch("ascend910b"));
        cfg.threads = threads;
        let mut rt = Runtime::new(cfg).unwrap();
        let k = rt.register_kernel("late", CoreClass::Vector, late_writer(0, 0));
        rt.scope_begin();
        let t = rt.alloc_tensor(1, &[16]).unwrap();
        rt.submit(&task(k, &[0], &[arg(t, &[0], &[1], Direction::Out)], 10))
            .unwrap();
        rt.scope_end().unwrap();
        let e = rt
            .submit(&task(k, &[1], &[arg(t, &[1], &[1], Direction::Out)], 10))
            .unwrap_err();
        assert!(e.to_string().contains("scope that has ended"), "{e}");
        rt.finish().unwrap();
    }
}

#[test]
fn a_held_batch_is_issued_before_a_stall_is_called_a_deadlock() {
    // The arena's bytes are held by a task the batch holds back: issuing it frees them.
    let mut cfg = Config::new(arch("ascend910b"));
    cfg.heap_arena = 1024;
    cfg.policies.timing = Timing::Batched(8);
    let mut rt = Runtime::new(cfg).unwrap();
    let k = rt.register_kernel("k", CoreClass::Vector, noop());
    for i in 0..3 {
        rt.scope_begin();
        let t = rt.alloc_tensor(4, &[256]).unwrap();
        rt.submit(&task(k, &[i], &[arg(t, &[0], &[256], Direction::Out)], 100))
            .unwrap();
        rt.scope_end().unwrap();
    }
    assert_eq!(rt.finish().unwrap().tasks, 3);
    // A process sends a token after a task the batch holds; its consumer receives it.
    let mut cfg = Config::new(arch("ascend910b"));
    cfg.policies.timing = Timing::Batched(4);
    let mut rt = Runtime::new(cfg).unwrap();
    let k = rt.register_kernel("k", CoreClass::Vector, noop());
    let x = rt.add_tensor(4, &[1, 8]).unwrap();
    let ch = rt.add_channel("ready", 1, None);
    let sent = Box::new(Loader {
        out: ch,
        k,
        x,
        i: 0,
        n: 1,
    });
    rt.run_processes(vec![
        ProcSpec {
            name: "producer".into(),
            body: sent,
            produces: vec![ch],
        },
        script(
            "consumer",
            vec![],
            vec![Step::Recv { ch }, Step::Recv { ch }],
        ),
    ])
    .unwrap();
}

#[test]
fn a_nested_scope_asks_for_a_window_that_holds_every_open_scope() {
    let mut rt = Runtime::new(Config::new(arch("ascend910b")).with_window(8)).unwrap();
    let k = rt.register_kernel("k", CoreClass::Vector, noop());
    let x = rt.add_tensor(4, &[64]).unwrap();
    rt.scope_begin();
    for i in 0..7 {
        rt.submit(&task(k, &[i], &[arg(x, &[i], &[1], Direction::Out)], 10))
            .unwrap();
    }
    rt.scope_begin();
    rt.submit(&task(k, &[7], &[arg(x, &[7], &[1], Direction::Out)], 10))
        .unwrap();
    let d = expect_deadlock(rt.submit(&task(k, &[8], &[arg(x, &[8], &[1], Direction::Out)], 10)));
    assert_eq!(d.reason, StallReason::TaskRingFull);
    assert!(
        d.mitigation
            .contains("at least 16 (2 × the 8 tasks the 2 open scopes hold"),
        "{}",
        d.mitigation
    );
}

#[test]
fn modeled_time_never_wraps() {
    let mut cfg = Config::new(arch("ascend910b"));
    cfg.execute = false;
    let mut rt = Runtime::new(cfg).unwrap();
    let k = rt.register_kernel("k", CoreClass::Vector, noop());
    let x = rt.add_tensor(4, &[1, 64]).unwrap();
    let a = [arg(x, &[0, 0], &[1, 64], Direction::InOut)];
    // A task priced beyond MAX_TASK_CYCLES (a model with absurd costs) is refused.
    match rt.submit(&task(k, &[0], &a, u64::MAX)) {
        Err(RuntimeError::Api(m)) => assert!(m.contains("check the architecture model"), "{m}"),
        other => panic!("expected an API error, got {other:?}"),
    }
    // A chain of the longest tasks stops at MAX_CYCLES instead of wrapping round.
    let mut stopped = None;
    for i in 0..(1 << 15) {
        if let Err(e) = rt.submit(&task(k, &[i], &a, MAX_TASK_CYCLES - 10_000)) {
            stopped = Some(e);
            break;
        }
    }
    let e = match stopped {
        Some(e) => e,
        None => rt.finish().map(|s| s.total_cycles).unwrap_err(),
    };
    match e {
        RuntimeError::Limit(l) => {
            assert_eq!((l.what, l.limit), ("cycles", MAX_CYCLES));
            assert!(l.cycle >= MAX_CYCLES && l.cycle < MAX_CYCLES + 2 * MAX_TASK_CYCLES);
        }
        other => panic!("expected the cycle limit, got {other:?}"),
    }
}

/// A process that never finishes: one task a step, each after the last.
struct Endless {
    k: KernelId,
    x: TensorId,
}

impl Process for Endless {
    fn step(&mut self, cx: &mut ProcCx<'_>) -> Result<Step, String> {
        let a = [arg(self.x, &[0, 0], &[1, 8], Direction::InOut)];
        cx.submit(&task(self.k, &[0], &a, 100))
            .map_err(|e| e.to_string())?;
        Ok(Step::Continue)
    }
}

/// Sends on `out` and receives on `inp` in turn, forever.
struct Bounce {
    out: ChannelId,
    inp: ChannelId,
    send: bool,
}

impl Process for Bounce {
    fn step(&mut self, cx: &mut ProcCx<'_>) -> Result<Step, String> {
        let _ = cx.received();
        self.send = !self.send;
        Ok(if self.send {
            Step::Recv { ch: self.inp }
        } else {
            send(self.out, 0)
        })
    }
}

fn endless(arch_name: &str, max_tasks: u64, max_cycles: u64) -> (RuntimeError, Runtime) {
    let mut cfg = Config::new(arch(arch_name)).with_window(4);
    cfg.execute = false;
    cfg.max_tasks = max_tasks;
    cfg.max_cycles = max_cycles;
    let mut rt = Runtime::new(cfg).unwrap();
    let k = rt.register_kernel("k", CoreClass::Vector, noop());
    let x = rt.add_tensor(4, &[1, 8]).unwrap();
    let spec = ProcSpec {
        name: "endless".into(),
        body: Box::new(Endless { k, x }),
        produces: vec![],
    };
    let e = rt.run_processes(vec![spec]).expect_err("a limit stops it");
    (e, rt)
}

#[test]
fn limits_stop_a_run_that_never_ends() {
    // Tasks: exactly `max_tasks` are submitted; the error passes through the process as
    // text, and the runtime keeps the limit for its caller.
    let (e, rt) = endless("ascend910b", 1000, u64::MAX);
    let l = rt.limit_reached().expect("kept");
    assert_eq!((l.what, l.limit, l.tasks), ("tasks", 1000, 1000));
    assert!(e.to_string().contains("limit of 1000 tasks"), "{e}");
    // Cycles on the event clock: the run stops at the first event past the limit.
    let (_, rt) = endless("ascend910b", u64::MAX, 50_000);
    let l = rt.limit_reached().expect("kept");
    assert_eq!((l.what, l.limit), ("cycles", 50_000));
    assert!(l.cycle > 50_000 && l.cycle < 51_000, "{l:?}");
    assert!(l.tasks > 10 && l.tasks < 100, "{l:?}");
    // Under v9 the limit is on v9's clocks: 100 cycles a task on one process.
    let (_, rt) = endless("pto_wsp_v9", u64::MAX, 50_000);
    let l = rt.limit_reached().expect("kept");
    assert_eq!((l.what, l.tasks, l.cycle), ("cycles", 501, 50_100), "{l:?}");
    // Tokens passed round forever at one instant: no task, no cycle passing.
    let mut rt = Runtime::new(Config::new(arch("ascend910b"))).unwrap();
    let (ab, ba) = (rt.add_channel("ab", 1, None), rt.add_channel("ba", 1, None));
    let bounce = |name: &str, out, inp, send_first| ProcSpec {
        name: name.into(),
        body: Box::new(Bounce {
            out,
            inp,
            send: send_first,
        }),
        produces: vec![out],
    };
    let e = rt
        .run_processes(vec![
            bounce("ping", ab, ba, true),
            bounce("pong", ba, ab, false),
        ])
        .expect_err("a livelock");
    let l = rt.limit_reached().expect("kept");
    assert_eq!((l.limit, l.tasks, l.cycle), (MAX_IDLE_STEPS, 0, 0), "{l:?}");
    assert!(
        e.to_string().contains("without a task or a cycle passing"),
        "{e}"
    );
    // Without limits nothing is kept.
    let rt = Runtime::new(Config::new(arch("ascend910b"))).unwrap();
    assert!(rt.limit_reached().is_none());
}

//! The runtime's tests, by topic: `timing` (policies, the `pto_wsp_v9` clocks, program order,
//! the submission cost), `exec` (kernels on the host, threads and failures), `deps`
//! (dependency inference against its oracle, region checks), `rings` (the bounded rings,
//! scopes, the heap arena, deadlocks and limits), `csp` (channels and processes) and `trace`
//! (statistics, the trace and the graph). This file holds what several of them share: a model
//! without submission cost, task and argument builders, kernels, and scripted processes.

use crate::*;
use std::sync::Arc;

mod csp;
mod deps;
mod exec;
mod rings;
mod timing;
mod trace;

/// A built-in model without the orchestration's submission cost: these tests submit at cycle 0
/// and are about the graph, the rings and the event clock (`submit_cost_*` test the cost).
fn arch(name: &str) -> Arch {
    let mut a = Arch::builtin(name).unwrap();
    a.overheads.submit = 0;
    a
}

fn noop() -> Arc<dyn Kernel> {
    Arc::new(|_: &RawTask| -> Result<(), String> { Ok(()) })
}

fn task<'a>(k: KernelId, coords: &'a [i64], args: &'a [Arg], cycles: u64) -> TaskDesc<'a> {
    TaskDesc {
        kernel: k,
        coords,
        args,
        scalars: &[],
        cycles,
        key: 0,
        priority: 0,
        stream: 0,
        place: None,
    }
}

fn arg(t: TensorId, off: &[i64], ext: &[i64], dir: Direction) -> Arg {
    Arg {
        region: Region::dense(t, off, ext).unwrap(),
        dir,
    }
}

/// Event-model runs of `steps` steps of `width` independent 1,000-cycle tasks (disjoint
/// rows), in a `Seq` or `Par` group of steps, each step a `Par` group; recorded.
fn order_run(order: Option<Order>, steps: i64, width: i64) -> Runtime {
    let mut cfg = Config::new(arch("ascend910b"));
    cfg.execute = false;
    cfg.record = true;
    let mut rt = Runtime::new(cfg).unwrap();
    let k = rt.register_kernel("t", CoreClass::Vector, noop());
    let x = rt.add_tensor(4, &[steps * width, 16]).unwrap();
    if let Some(o) = order {
        rt.order_begin(o);
    }
    for i in 0..steps {
        if order.is_some() && i > 0 {
            rt.order_step();
        }
        rt.order_begin(Order::Par);
        for j in 0..width {
            let a = [arg(x, &[i * width + j, 0], &[1, 16], Direction::InOut)];
            rt.submit(&task(k, &[i, j], &a, 1000)).unwrap();
        }
        rt.order_end().unwrap();
    }
    if order.is_some() {
        rt.order_end().unwrap();
    }
    rt
}

fn add_one_kernel() -> Arc<dyn Kernel> {
    // Adds 1 to every i32 of its single inout region (2-D, strided).
    Arc::new(|t: &RawTask| -> Result<(), String> {
        // SAFETY: the runtime passes one valid argument inside a live i32 tensor.
        let a = unsafe { &*t.args };
        for i in 0..a.extents[0] {
            for j in 0..a.extents[1] {
                let r = a.offsets[0] + a.strides[0] * i;
                let c = a.offsets[1] + a.strides[1] * j;
                let idx = (r * a.dims[1] + c) as usize;
                // SAFETY: in bounds (validated at submit), no concurrent conflicting writer.
                unsafe {
                    let p = (a.base as *mut i32).add(idx);
                    *p += 1;
                }
            }
        }
        Ok(())
    })
}

/// Closes a relation given as a square boolean matrix under transitivity.
#[allow(clippy::needless_range_loop)]
pub(crate) fn close(reach: &mut [Vec<bool>]) {
    let n = reach.len();
    for k in 0..n {
        for i in 0..n {
            if reach[i][k] {
                for j in 0..n {
                    if reach[k][j] {
                        reach[i][j] = true;
                    }
                }
            }
        }
    }
}

/// Start cycles of the tasks of a recorded run, in trace order.
fn task_starts(rt: &Runtime) -> Vec<u64> {
    let trace: serde_json::Value = serde_json::from_str(&rt.chrome_trace()).unwrap();
    let mut starts: Vec<u64> = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == "task")
        .map(|e| e["args"]["start_cycle"].as_u64().unwrap())
        .collect();
    starts.sort_unstable();
    starts
}

fn expect_deadlock(r: Result<impl std::fmt::Debug, RuntimeError>) -> DeadlockReport {
    match r {
        Err(RuntimeError::Deadlock(d)) => *d,
        other => panic!("expected a deadlock, got {other:?}"),
    }
}

/// A kernel that sleeps `ms` milliseconds for tasks numbered `from` on, then writes 0xAB at
/// its one-byte-element argument's offset.
fn late_writer(from: u64, ms: u64) -> Arc<dyn Kernel> {
    Arc::new(move |t: &RawTask| -> Result<(), String> {
        let wait = if t.task >= from { ms * 1000 } else { 0 } + 20;
        std::thread::sleep(std::time::Duration::from_micros(wait));
        // SAFETY: one valid rank-1 argument of a one-byte tensor.
        let a = unsafe { &*t.args };
        unsafe { *a.base.add(a.offsets[0] as usize) = 0xAB };
        Ok(())
    })
}

struct Loader {
    out: ChannelId,
    k: KernelId,
    x: TensorId,
    i: i64,
    n: i64,
}

impl Process for Loader {
    fn step(&mut self, cx: &mut ProcCx<'_>) -> Result<Step, String> {
        if self.i == self.n {
            return Ok(Step::Finished);
        }
        let a = [arg(self.x, &[self.i, 0], &[1, 8], Direction::Out)];
        let t = cx
            .submit(&task(self.k, &[self.i], &a, 100))
            .map_err(|e| e.to_string())?;
        self.i += 1;
        Ok(Step::Send {
            ch: self.out,
            token: Token::new(&[self.i - 1]),
            after: Some(t),
        })
    }
}

struct Script {
    steps: Vec<Step>,
    i: usize,
}

impl Process for Script {
    fn step(&mut self, cx: &mut ProcCx<'_>) -> Result<Step, String> {
        let _ = cx.received();
        let s = self.steps.get(self.i).copied().unwrap_or(Step::Finished);
        self.i += 1;
        Ok(s)
    }
}

fn script(name: &str, produces: Vec<ChannelId>, steps: Vec<Step>) -> ProcSpec<'static> {
    ProcSpec {
        name: name.into(),
        body: Box::new(Script { steps, i: 0 }),
        produces,
    }
}

fn send(ch: ChannelId, v: i64) -> Step {
    Step::Send {
        ch,
        token: Token::new(&[v]),
        after: None,
    }
}

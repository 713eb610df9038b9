//! Host execution of kernels: at the task's submission on this thread when every earlier
//! kernel has run and none is on the pool, otherwise at its dispatch from the task's record,
//! here or on the thread pool. Kernels run in a dependency order and nothing depends on host
//! timing: the failure reported is the earliest failing task's whatever the threads. With a
//! pool, a kernel's host time is sampled to decide whether its tasks are worth the round trip.

use super::{
    ExecData, Failure, Job, KernelEntry, Pool, Runtime, RuntimeError, State, ON_POOL, RAN,
};
use crate::api::{Kernel, RawArg, RawTask, TaskDesc, TensorId};
use crate::exec::RAW_ARG;
use std::sync::{mpsc, Arc, Mutex};
use std::time::Instant;

/// Tasks whose kernels take less than this run on the orchestrating thread even with a pool.
const OFFLOAD_NS: u64 = 5_000;
const SAMPLE_FIRST: u64 = 8;
const SAMPLE_EVERY: u64 = 256;

fn run_job(
    seq: u64,
    coords: &[i64],
    args: &[RawArg],
    scalars: &[i64],
    k: &dyn Kernel,
) -> Result<(), String> {
    let raw = RawTask {
        task: seq,
        coords: coords.as_ptr(),
        ncoords: coords.len() as u64,
        args: args.as_ptr(),
        nargs: args.len() as u64,
        scalars: scalars.as_ptr(),
        nscalars: scalars.len() as u64,
    };
    k.run(&raw)
}

/// Runs task `seq`'s kernel (`ke`, kernel `ki`) on this thread; a failure goes to `failed`
/// unless an earlier one is there. With a pool (`threads` > 1) the first runs of a kernel and
/// then a sample are timed, for the estimate that decides what goes to the pool.
#[allow(clippy::too_many_arguments)]
fn run_inline(
    ke: &mut KernelEntry,
    failed: &mut Option<Failure>,
    threads: usize,
    seq: u64,
    ki: usize,
    coords: &[i64],
    args: &[RawArg],
    scalars: &[i64],
) {
    let timed = threads > 1 && (ke.sampled < SAMPLE_FIRST || seq.is_multiple_of(SAMPLE_EVERY));
    let t0 = timed.then(Instant::now);
    let r = run_job(seq, coords, args, scalars, &*ke.body);
    if let Some(t0) = t0 {
        ke.sampled += 1;
        ke.measured(t0.elapsed().as_nanos() as u64);
    }
    if let Err(m) = r {
        Failure::keep_earliest(failed, seq, || Failure::new(seq, ki, m, coords));
    }
}

impl KernelEntry {
    /// A measured run of `ns` host nanoseconds.
    fn measured(&mut self, ns: u64) {
        self.est_ns = estimate(self.est_ns, ns);
        self.offload = self.est_ns >= OFFLOAD_NS;
    }
}

impl Pool {
    /// A pool of up to `n` workers: as many as the system lets start (a pool without any
    /// fails the tasks given to it instead of waiting for them forever).
    fn new(n: usize) -> Pool {
        let (tx, jrx) = mpsc::channel::<Job>();
        let (dtx, rx) = mpsc::channel();
        let jrx = Arc::new(Mutex::new(jrx));
        let mut spawn_error = None;
        let mut handles = Vec::with_capacity(n);
        for i in 0..n {
            let jrx = Arc::clone(&jrx);
            let dtx = dtx.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("wsp-kernel-{i}"))
                .spawn(move || loop {
                    let job = match jrx.lock() {
                        Ok(g) => g.recv(),
                        Err(_) => return,
                    };
                    let Ok(job) = job else { return };
                    let Job { seq, kernel, data } = job;
                    let t0 = Instant::now();
                    let r = run_job(seq, &data.coords, &data.args, &data.scalars, &*kernel);
                    let ns = t0.elapsed().as_nanos() as u64;
                    drop(kernel);
                    if dtx.send((seq, r, data, ns)).is_err() {
                        return;
                    }
                });
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    spawn_error =
                        Some(format!("could not start host thread {} of {n}: {e}", i + 1));
                    break;
                }
            }
        }
        Pool {
            tx: (!handles.is_empty()).then_some(tx),
            spawn_error,
            rx,
            handles,
            failed: None,
            in_flight: 0,
        }
    }
}

impl Runtime {
    /// Runs a deferred task's kernel from its record, here or on the pool (out of line: one
    /// thread never defers).
    #[inline(never)]
    pub(super) fn start_exec(&mut self, seq: u64, inline: bool) {
        let si = (seq & self.ring_mask) as usize;
        let Some(&pos) = self.exec_at.get(si) else {
            return;
        };
        let ki = self.ring[si].kernel as usize;
        // The kernel's view of its arguments, from the task's record.
        let rec = self.exec.record(pos);
        let mut raw = std::mem::take(&mut self.raw_args);
        let mut n = 0;
        for a in rec.args() {
            let t = self
                .build
                .tensor(TensorId(a.tensor))
                .expect("a checked tensor");
            let base = self.bufs[a.tensor as usize].as_mut_ptr();
            if n == raw.len() {
                raw.push(RAW_ARG);
            }
            a.fill(&mut raw[n], base, t.elem_size, &t.dims);
            n += 1;
        }
        let raw_n = &raw[..n];
        if inline || self.cfg.threads <= 1 {
            self.deferred -= 1;
            let ke = &mut self.kernels[ki];
            let failed = &mut self.failed_inline;
            run_inline(
                ke,
                failed,
                self.cfg.threads,
                seq,
                ki,
                rec.coords,
                raw_n,
                rec.scalars,
            );
            self.raw_args = raw;
            return;
        }
        let mut data = self.exec_free.pop().unwrap_or_else(|| {
            Box::new(ExecData {
                coords: Vec::new(),
                args: Vec::new(),
                scalars: Vec::new(),
            })
        });
        data.coords.clear();
        data.coords.extend_from_slice(rec.coords);
        data.scalars.clear();
        data.scalars.extend_from_slice(rec.scalars);
        data.args.clear();
        data.args.extend_from_slice(raw_n);
        self.raw_args = raw;
        let threads = self.cfg.threads;
        let pool = self.pool.get_or_insert_with(|| Pool::new(threads));
        let kernel = Arc::clone(&self.kernels[ki].body);
        if let Some(tx) = &pool.tx {
            if tx.send(Job { seq, kernel, data }).is_ok() {
                pool.in_flight += 1;
                self.ring[si].flags |= ON_POOL;
                return;
            }
        }
        let why = pool
            .spawn_error
            .clone()
            .unwrap_or_else(|| "the host thread pool stopped".into());
        Failure::keep_earliest(&mut pool.failed, seq, || Failure::new(seq, ki, why, &[]));
        self.deferred -= 1;
    }

    /// Whether a task of kernel `ki` runs at its submission: when every earlier task's kernel
    /// has run (none waits for its dispatch or is on the pool) and its own is not one to
    /// offload. On one thread that is always (nothing is timed, so nothing is offloaded), and
    /// one thread and a pool take the same path until a kernel is measured slow.
    #[inline]
    pub(super) fn runs_at_submission(&self, ki: usize) -> bool {
        self.deferred == 0 && !self.kernels[ki].offload
    }

    /// Runs task `seq`'s kernel (`ki`) at its submission, with its arguments as submitted.
    pub(super) fn run_now(&mut self, seq: u64, ki: usize, t: &TaskDesc<'_>) {
        let raw = &mut self.raw_args;
        for (n, a) in t.args.iter().enumerate() {
            let r = &a.region;
            let ten = self.build.tensor(r.tensor).expect("a checked tensor");
            if n == raw.len() {
                raw.push(RAW_ARG);
            }
            let x = &mut raw[n];
            x.base = self.bufs[r.tensor.0 as usize].as_mut_ptr();
            x.elem_size = ten.elem_size;
            // A checked region has its tensor's rank.
            x.set_dims(ten.rank, &ten.dims, &r.offsets, &r.extents, &r.strides);
            x.dir = a.dir.code();
        }
        run_inline(
            &mut self.kernels[ki],
            &mut self.failed_inline,
            self.cfg.threads,
            seq,
            ki,
            t.coords,
            &raw[..t.args.len()],
            t.scalars,
        );
    }

    /// Waits until task `seq`'s kernel is not on the pool.
    pub(super) fn wait_exec(&mut self, seq: u64) {
        while self.ring[(seq & self.ring_mask) as usize].flags & ON_POOL != 0 {
            if !self.recv_pooled() {
                return;
            }
        }
    }

    /// Waits until no kernel is on the pool: no host thread writes a tensor after this.
    pub(super) fn drain_pool(&mut self) {
        while self.pool.as_ref().is_some_and(|p| p.in_flight > 0) {
            if !self.recv_pooled() {
                return;
            }
        }
    }

    /// Takes the next result of a kernel on the pool (waiting for one). False when there is
    /// no pool or it has stopped.
    fn recv_pooled(&mut self) -> bool {
        let Some(pool) = &mut self.pool else {
            return false;
        };
        let Ok((s, r, data, ns)) = pool.rx.recv() else {
            return false;
        };
        let w = self.ring_mask;
        pool.in_flight -= 1;
        if let Err(m) = r {
            let k = self.ring[(s & w) as usize].kernel as usize;
            Failure::keep_earliest(&mut pool.failed, s, || Failure::new(s, k, m, &data.coords));
        }
        let slot = &mut self.ring[(s & w) as usize];
        slot.flags &= !ON_POOL;
        if let Some(k) = self.kernels.get_mut(slot.kernel as usize) {
            k.measured(ns);
        }
        self.deferred -= 1;
        self.exec_free.push(data);
        true
    }

    pub(super) fn check_failure(&mut self) -> Result<(), RuntimeError> {
        let first = |f: &Option<Failure>| f.as_ref().map(|f| f.seq);
        let Some(seq) = [
            first(&self.failed_inline),
            self.pool.as_ref().and_then(|p| first(&p.failed)),
        ]
        .into_iter()
        .flatten()
        .min() else {
            return Ok(());
        };
        // The failure reported is the earliest task's among those that fail, whatever the
        // threads: on one thread every kernel ran at its task's submission, in order. So every
        // kernel on the pool finishes, and every earlier one still waiting for its dispatch
        // runs now, in submission order (a dependency order), before one is chosen.
        self.drain_pool();
        for s in self.head..seq {
            let slot = &mut self.ring[(s & self.ring_mask) as usize];
            if matches!(slot.state, State::Waiting | State::Ready) && slot.flags & RAN == 0 {
                slot.flags |= RAN;
                self.start_exec(s, true);
            }
        }
        let pooled = self.pool.as_mut().and_then(|p| p.failed.take());
        let failed = match (self.failed_inline.take(), pooled) {
            (Some(a), Some(b)) => Some(if a.seq <= b.seq { a } else { b }),
            (a, b) => a.or(b),
        };
        if let Some(f) = failed {
            let e = RuntimeError::Kernel {
                task: f.seq,
                kernel: self.kernels[f.kernel].name.clone(),
                coords: f.coords,
                message: f.message,
            };
            self.last_kernel_failure = Some(Box::new(e.clone()));
            return Err(e);
        }
        Ok(())
    }
}

/// A running estimate of a kernel's host time.
fn estimate(old: u64, sample: u64) -> u64 {
    if old == u64::MAX {
        sample
    } else {
        (3 * old + sample) / 4
    }
}

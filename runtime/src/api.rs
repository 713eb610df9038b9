//! The submit API: the types an orchestration (the JIT's, or an Ascend emitter's) uses to talk
//! to the runtime. Nothing here knows about the compiler.

use std::fmt;
pub use wsp_arch::CoreClass;

/// Largest tensor rank a region may have.
pub const MAX_RANK: usize = 8;

/// A registered kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KernelId(pub u32);

/// A tensor known to the runtime.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TensorId(pub u32);

/// A channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ChannelId(pub u32);

/// A submitted task, by its submission sequence number (0, 1, 2, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TaskId(pub u64);

/// How a task accesses a region.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    In,
    Out,
    InOut,
}

impl Direction {
    pub fn reads(self) -> bool {
        matches!(self, Direction::In | Direction::InOut)
    }
    pub fn writes(self) -> bool {
        matches!(self, Direction::Out | Direction::InOut)
    }
    /// The code a kernel sees in [`RawArg::dir`].
    pub fn code(self) -> u64 {
        match self {
            Direction::In => 0,
            Direction::Out => 1,
            Direction::InOut => 2,
        }
    }
}

/// A strided hyper-rectangle of a tensor's index space: along dimension `d` it covers the
/// indices `offsets[d] + strides[d] · i` for `0 ≤ i < extents[d]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Region {
    pub tensor: TensorId,
    pub rank: u8,
    pub offsets: [i64; MAX_RANK],
    pub extents: [i64; MAX_RANK],
    pub strides: [i64; MAX_RANK],
}

/// An invalid argument to the submit API.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiError(pub String);

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Region {
    /// A region; `strides` may be empty (all 1). Extents ≥ 1, strides ≥ 1, offsets ≥ 0.
    #[inline]
    pub fn new(
        tensor: TensorId,
        offsets: &[i64],
        extents: &[i64],
        strides: &[i64],
    ) -> Result<Region, ApiError> {
        let rank = offsets.len();
        if rank == 0 || rank > MAX_RANK {
            return Err(ApiError(format!(
                "a region has rank 1 to {MAX_RANK}, found {rank}"
            )));
        }
        if extents.len() != rank || !(strides.is_empty() || strides.len() == rank) {
            return Err(ApiError(format!(
                "region of rank {rank} has {} extents and {} strides",
                extents.len(),
                strides.len()
            )));
        }
        let mut r = Region {
            tensor,
            rank: rank as u8,
            offsets: [0; MAX_RANK],
            extents: [1; MAX_RANK],
            strides: [1; MAX_RANK],
        };
        for d in 0..rank {
            let (o, e) = (offsets[d], extents[d]);
            let s = strides.get(d).copied().unwrap_or(1);
            if let Some(m) = malformed_dimension(d, o, e, s) {
                return Err(ApiError(m));
            }
            r.offsets[d] = o;
            r.extents[d] = e;
            r.strides[d] = s;
        }
        Ok(r)
    }

    /// A dense region (all strides 1).
    #[inline]
    pub fn dense(tensor: TensorId, offsets: &[i64], extents: &[i64]) -> Result<Region, ApiError> {
        Region::new(tensor, offsets, extents, &[])
    }

    /// Number of elements covered.
    #[inline]
    pub fn elements(&self) -> u64 {
        (0..self.rank as usize).fold(1u64, |a, d| a.saturating_mul(self.extents[d] as u64))
    }

    /// Largest index covered along `d` (saturating: a region of [`Region::new`] may reach
    /// past `i64::MAX`, and so past any tensor).
    #[inline]
    pub fn last(&self, d: usize) -> i64 {
        let steps = self.extents[d].saturating_sub(1);
        self.offsets[d].saturating_add(self.strides[d].saturating_mul(steps))
    }
}

/// Why dimension `d` of a region (offset `o`, extent `e`, stride `s`) is malformed, if it is.
/// Inline, with the message out of line: `Region::new` checks every dimension of every region.
#[inline]
pub(crate) fn malformed_dimension(d: usize, o: i64, e: i64, s: i64) -> Option<String> {
    if o < 0 || e < 1 || s < 1 {
        Some(dimension_message(d, o, e, s))
    } else {
        None
    }
}

#[cold]
#[inline(never)]
fn dimension_message(d: usize, o: i64, e: i64, s: i64) -> String {
    format!("dimension {d}: offset {o} must be ≥ 0, extent {e} ≥ 1, stride {s} ≥ 1")
}

/// A region argument of a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arg {
    pub region: Region,
    pub dir: Direction,
}

/// A task as submitted.
#[derive(Clone, Copy, Debug)]
pub struct TaskDesc<'a> {
    pub kernel: KernelId,
    /// The task's coordinates in its workload's iteration space.
    pub coords: &'a [i64],
    pub args: &'a [Arg],
    /// Scalar arguments (integers, or f64 bit patterns), passed to the kernel as given.
    pub scalars: &'a [i64],
    /// Compute cycles of the task from the architecture model's cost tables (the submitter
    /// computes them; the runtime adds dispatch and transfer time per the model).
    pub cycles: u64,
    /// The dispatch key (`affinity`, `hash`); 0 when unused.
    pub key: i64,
    /// The ready-order key (`priority`: higher first); 0 when unused.
    pub priority: i64,
    /// The stream key (`streams(n)`: the task joins stream `stream mod n`); 0 when unused.
    pub stream: i64,
    /// A fixed core of the task's class (a spatial map's cell, a shard's owner), below the
    /// class's core count ([`crate::Runtime::kernel_cores`]): the dispatch policy is not
    /// consulted for the task. `None`: the policy places it.
    pub place: Option<u32>,
}

/// One region argument as a kernel sees it (C layout, for JIT-compiled entries). The arrays
/// hold `rank` meaningful entries; past the rank, a region made by [`Region::new`] gives 1
/// (0 for offsets).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct RawArg {
    /// The tensor's first byte.
    pub base: *mut u8,
    pub elem_size: u64,
    pub rank: u64,
    /// The tensor's shape (row-major, elements).
    pub dims: [i64; MAX_RANK],
    pub offsets: [i64; MAX_RANK],
    pub extents: [i64; MAX_RANK],
    pub strides: [i64; MAX_RANK],
    /// 0 in, 1 out, 2 inout.
    pub dir: u64,
}

impl RawArg {
    /// Sets the argument's rank (1 to `MAX_RANK`) and per-dimension arrays from arrays whose
    /// entries past `rank` are canonical (1, and 0 for offsets), in place: the runtime reuses
    /// its arguments from task to task. Entries are copied in a block of 2, 4 or 8 (copying
    /// the four arrays whole took 16 vector copies; the block saves about 12 instructions an
    /// argument of rank 2), and entries a reused argument of higher rank set past the new rank
    /// go back to canonical.
    #[inline(always)]
    pub(crate) fn set_dims(
        &mut self,
        rank: usize,
        dims: &[i64; MAX_RANK],
        offsets: &[i64; MAX_RANK],
        extents: &[i64; MAX_RANK],
        strides: &[i64; MAX_RANK],
    ) {
        #[inline(always)]
        fn head<const N: usize>(a: &mut RawArg, s: [&[i64; MAX_RANK]; 4]) {
            a.dims[..N].copy_from_slice(&s[0][..N]);
            a.offsets[..N].copy_from_slice(&s[1][..N]);
            a.extents[..N].copy_from_slice(&s[2][..N]);
            a.strides[..N].copy_from_slice(&s[3][..N]);
        }
        let old = self.rank as usize;
        if old > rank {
            for d in rank..old.min(MAX_RANK) {
                self.dims[d] = 1;
                self.offsets[d] = 0;
                self.extents[d] = 1;
                self.strides[d] = 1;
            }
        }
        self.rank = rank as u64;
        let s = [dims, offsets, extents, strides];
        match rank {
            0..=2 => head::<2>(self, s),
            3 | 4 => head::<4>(self, s),
            _ => head::<MAX_RANK>(self, s),
        }
    }
}

/// Everything a kernel entry receives (C layout).
#[repr(C)]
#[derive(Debug)]
pub struct RawTask {
    pub task: u64,
    pub coords: *const i64,
    pub ncoords: u64,
    pub args: *const RawArg,
    pub nargs: u64,
    pub scalars: *const i64,
    pub nscalars: u64,
}

/// A JIT-compiled kernel entry: returns 0 on success, a nonzero error code otherwise.
///
/// # Safety
/// The runtime passes a valid `RawTask` whose arguments point into live tensor buffers; the
/// entry may write only through `out`/`inout` arguments and only inside their regions.
pub type KernelFn = unsafe extern "C" fn(task: *const RawTask) -> i32;

/// A kernel the runtime can run. Implementations must touch only the regions they are given.
pub trait Kernel: Send + Sync {
    /// Runs one task. `task` is valid for the duration of the call.
    fn run(&self, task: &RawTask) -> Result<(), String>;
}

/// A kernel given as a C entry point (what a Cranelift JIT provides).
pub struct FnKernel(pub KernelFn);

impl Kernel for FnKernel {
    fn run(&self, task: &RawTask) -> Result<(), String> {
        // SAFETY: the runtime builds `task` from live buffers and in-bounds regions, and the
        // dependency engine guarantees no conflicting task runs concurrently.
        let rc = unsafe { (self.0)(task) };
        if rc == 0 {
            Ok(())
        } else {
            Err(format!("kernel entry returned error code {rc}"))
        }
    }
}

impl<F> Kernel for F
where
    F: Fn(&RawTask) -> Result<(), String> + Send + Sync,
{
    fn run(&self, task: &RawTask) -> Result<(), String> {
        self(task)
    }
}

/// A token carried by a channel: the producing task's coordinates or a plain index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Token {
    pub len: u8,
    pub vals: [i64; MAX_RANK],
}

impl Token {
    pub fn new(vals: &[i64]) -> Token {
        let mut t = Token {
            len: vals.len().min(MAX_RANK) as u8,
            vals: [0; MAX_RANK],
        };
        for (i, v) in vals.iter().take(MAX_RANK).enumerate() {
            t.vals[i] = *v;
        }
        t
    }
    pub fn values(&self) -> &[i64] {
        &self.vals[..self.len as usize]
    }
}

/// What a process step wants next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Keep stepping (e.g. after submitting a task).
    Continue,
    /// Send `token` on `ch`; with `after`, the token is delivered once that task completes.
    Send {
        ch: ChannelId,
        token: Token,
        after: Option<TaskId>,
    },
    /// Receive from `ch`; the result is in [`crate::ProcCx::received`] at the next step.
    Recv { ch: ChannelId },
    /// The process has ended.
    Finished,
}

/// What a receive produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Received {
    Token(Token),
    /// The channel is closed and empty.
    Closed,
}

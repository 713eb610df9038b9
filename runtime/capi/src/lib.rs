//! The C ABI of the wsp runtime (`include/wsp_runtime.h`): an opaque handle over
//! [`wsp_runtime::Runtime`] for orchestrations written in C — the Ascend backend's emitted
//! orchestration links this crate's static library in its CPU build, so its tasks run on the
//! same dependency-tracking runtime (and the same modeled clock) as `wsp run`'s.
//!
//! Every entry point checks its pointers, catches panics and returns a `WSP_RT_*` code; the
//! handle keeps the last error's message. A handle starts in a configuration phase and builds
//! its [`Runtime`] on the first call that needs one.

use std::ffi::{c_char, c_void, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use wsp_arch::Arch;
use wsp_runtime::{
    Arg, ChannelId, Config, CoreClass, Direction, FnKernel, KernelFn, KernelId, ProcCx, ProcSpec,
    Received, Region, Runtime, RuntimeError, Step, TaskDesc, TaskId, TensorId, Token, MAX_RANK,
};

pub const WSP_RT_OK: i32 = 0;
pub const WSP_RT_ERR_NULL: i32 = 1;
pub const WSP_RT_ERR_ARG: i32 = 2;
pub const WSP_RT_ERR_STATE: i32 = 3;
pub const WSP_RT_ERR_KERNEL: i32 = 4;
pub const WSP_RT_ERR_DEADLOCK: i32 = 5;
pub const WSP_RT_ERR_LIMIT: i32 = 6;
pub const WSP_RT_ERR_PROCESS: i32 = 7;
pub const WSP_RT_ERR_PANIC: i32 = 8;
pub const WSP_RT_ERR_WINDOW: i32 = 9;

pub const WSP_STEP_CONTINUE: u32 = 0;
pub const WSP_STEP_SEND: u32 = 1;
pub const WSP_STEP_RECV: u32 = 2;
pub const WSP_STEP_FINISHED: u32 = 3;

/// `struct wsp_rt_arg`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct WspRtArg {
    pub tensor: u32,
    pub rank: u32,
    pub offsets: [i64; MAX_RANK],
    pub extents: [i64; MAX_RANK],
    pub strides: [i64; MAX_RANK],
    pub dir: u32,
}

/// `struct wsp_rt_task`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct WspRtTask {
    pub kernel: u32,
    pub coords: *const i64,
    pub ncoords: u64,
    pub args: *const WspRtArg,
    pub nargs: u64,
    pub scalars: *const i64,
    pub nscalars: u64,
    pub cycles: u64,
    pub key: i64,
    pub priority: i64,
    pub stream: i64,
}

/// `struct wsp_rt_stats`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WspRtStats {
    pub tasks: u64,
    pub edges: u64,
    pub total_cycles: u64,
}

/// `struct wsp_rt_step`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct WspRtStep {
    pub kind: u32,
    pub channel: u32,
    pub token_len: u32,
    pub token: [i64; MAX_RANK],
    pub has_after: i32,
    pub after: u64,
}

/// `wsp_rt_step_fn`.
pub type WspRtStepFn =
    unsafe extern "C" fn(user: *mut c_void, cx: *mut WspRtProc, step: *mut WspRtStep) -> i32;

/// `struct wsp_rt_process`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct WspRtProcess {
    pub name: *const c_char,
    pub step: Option<WspRtStepFn>,
    pub user: *mut c_void,
    pub produces: *const u32,
    pub nproduces: u32,
}

/// The opaque `wsp_rt` handle.
pub struct WspRt {
    /// The configuration, until the runtime is built.
    cfg: Option<Config>,
    rt: Option<Runtime>,
    /// The most region arguments a task has ([`Config::fit_region_args`] at the start).
    region_args: usize,
    last_error: CString,
    json: CString,
    dot: CString,
    deadlock: CString,
}

/// The opaque `wsp_rt_proc` handle a process step receives.
pub struct WspRtProc {
    cx: *mut ProcCx<'static>,
    error: String,
}

/// An error: its code and message.
struct Fail(i32, String);

impl From<RuntimeError> for Fail {
    fn from(e: RuntimeError) -> Fail {
        let code = match &e {
            RuntimeError::Api(_) => WSP_RT_ERR_ARG,
            RuntimeError::Kernel { .. } => WSP_RT_ERR_KERNEL,
            RuntimeError::Process { .. } => WSP_RT_ERR_PROCESS,
            RuntimeError::Deadlock(_) => WSP_RT_ERR_DEADLOCK,
            RuntimeError::Limit(_) => WSP_RT_ERR_LIMIT,
            RuntimeError::WindowFull { .. } => WSP_RT_ERR_WINDOW,
        };
        Fail(code, e.to_string())
    }
}

fn arg_err(m: impl Into<String>) -> Fail {
    Fail(WSP_RT_ERR_ARG, m.into())
}

fn null(what: &str) -> Fail {
    Fail(WSP_RT_ERR_NULL, format!("`{what}` is a null pointer"))
}

fn c_string(s: &str) -> CString {
    CString::new(s.replace('\0', " ")).unwrap_or_default()
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    let m = p
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    format!("the runtime panicked: {m}")
}

/// Runs `f` on the handle `h`, catching panics; an error's message is kept in the handle.
fn with_rt(h: *mut WspRt, f: impl FnOnce(&mut WspRt) -> Result<(), Fail>) -> i32 {
    if h.is_null() {
        return WSP_RT_ERR_NULL;
    }
    // SAFETY: a non-null handle comes from `wsp_rt_create` and is used from one thread.
    let h = unsafe { &mut *h };
    let r = catch_unwind(AssertUnwindSafe(|| f(h)));
    let (code, msg) = match r {
        Ok(Ok(())) => return WSP_RT_OK,
        Ok(Err(Fail(c, m))) => (c, m),
        Err(p) => (WSP_RT_ERR_PANIC, panic_message(&*p)),
    };
    h.last_error = c_string(&msg);
    code
}

/// A C string argument.
unsafe fn str_arg<'a>(p: *const c_char, what: &str) -> Result<&'a str, Fail> {
    if p.is_null() {
        return Err(null(what));
    }
    // SAFETY: the caller passes a NUL-terminated string.
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .map_err(|_| arg_err(format!("`{what}` is not UTF-8")))
}

/// A C array argument (`n` elements; null only when `n` is 0).
unsafe fn slice_arg<'a, T>(p: *const T, n: u64, what: &str) -> Result<&'a [T], Fail> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(null(what));
    }
    let n = usize::try_from(n).map_err(|_| arg_err(format!("`{what}`: too many elements")))?;
    // SAFETY: the caller passes `n` valid elements.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

fn out_ptr<T>(p: *mut T, v: T) {
    if !p.is_null() {
        // SAFETY: a non-null out pointer addresses a writable `T`.
        unsafe { p.write(v) };
    }
}

impl WspRt {
    fn config(&mut self) -> Result<&mut Config, Fail> {
        self.cfg.as_mut().ok_or_else(|| {
            Fail(
                WSP_RT_ERR_STATE,
                "the runtime has started: configure it before adding tensors, kernels or tasks"
                    .into(),
            )
        })
    }

    fn runtime(&mut self) -> Result<&mut Runtime, Fail> {
        if let Some(mut cfg) = self.cfg.take() {
            cfg.fit_region_args(self.region_args);
            self.rt = Some(Runtime::new(cfg)?);
        }
        self.rt
            .as_mut()
            .ok_or_else(|| Fail(WSP_RT_ERR_STATE, "the runtime could not be built".into()))
    }
}

/// A task of the C ABI as the runtime's [`TaskDesc`]: its arguments are converted into
/// `args` (reused by the caller).
unsafe fn task_desc<'a>(t: *const WspRtTask, args: &'a mut Vec<Arg>) -> Result<TaskDesc<'a>, Fail> {
    if t.is_null() {
        return Err(null("task"));
    }
    // SAFETY: a non-null task pointer addresses a valid `wsp_rt_task`.
    let t = unsafe { &*t };
    // SAFETY: the arrays hold the counts the task gives.
    let coords = unsafe { slice_arg(t.coords, t.ncoords, "task.coords")? };
    let raw = unsafe { slice_arg(t.args, t.nargs, "task.args")? };
    let scalars = unsafe { slice_arg(t.scalars, t.nscalars, "task.scalars")? };
    args.clear();
    for (i, a) in raw.iter().enumerate() {
        let rank = a.rank as usize;
        if rank == 0 || rank > MAX_RANK {
            return Err(arg_err(format!(
                "argument {i}: a region has rank 1 to {MAX_RANK}, found {}",
                a.rank
            )));
        }
        let dir = match a.dir {
            0 => Direction::In,
            1 => Direction::Out,
            2 => Direction::InOut,
            d => return Err(arg_err(format!("argument {i}: unknown direction {d}"))),
        };
        let region = Region::new(
            TensorId(a.tensor),
            &a.offsets[..rank],
            &a.extents[..rank],
            &a.strides[..rank],
        )
        .map_err(|e| arg_err(format!("argument {i}: {e}")))?;
        args.push(Arg { region, dir });
    }
    Ok(TaskDesc {
        kernel: KernelId(t.kernel),
        coords,
        args,
        scalars,
        cycles: t.cycles,
        key: t.key,
        priority: t.priority,
        stream: t.stream,
        place: None,
    })
}

fn write_err(buf: *mut c_char, len: u64, msg: &str) {
    if buf.is_null() || len == 0 {
        return;
    }
    let n = msg
        .len()
        .min(usize::try_from(len - 1).unwrap_or(usize::MAX));
    // SAFETY: the caller gives a writable buffer of `len` bytes.
    unsafe {
        std::ptr::copy_nonoverlapping(msg.as_ptr(), buf.cast::<u8>(), n);
        *buf.add(n) = 0;
    }
}

/// `wsp_rt_create`.
///
/// # Safety
/// Pointers as `wsp_runtime.h` describes them.
#[no_mangle]
pub unsafe extern "C" fn wsp_rt_create(
    arch_name: *const c_char,
    model_toml: *const c_char,
    out: *mut *mut WspRt,
    err_buf: *mut c_char,
    err_len: u64,
) -> i32 {
    if out.is_null() {
        write_err(err_buf, err_len, "`out` is a null pointer");
        return WSP_RT_ERR_NULL;
    }
    // SAFETY: `out` is writable.
    unsafe { out.write(std::ptr::null_mut()) };
    let r = catch_unwind(AssertUnwindSafe(|| -> Result<Box<WspRt>, Fail> {
        // SAFETY: NUL-terminated strings per the header.
        let name = unsafe { str_arg(arch_name, "arch_name")? };
        let arch = if model_toml.is_null() {
            Arch::builtin(name)
        } else {
            let src = unsafe { str_arg(model_toml, "model_toml")? };
            Arch::parse(src, name)
        }
        .map_err(|e| arg_err(e.to_string()))?;
        Ok(Box::new(WspRt {
            cfg: Some(Config::new(arch)),
            rt: None,
            region_args: 0,
            last_error: CString::default(),
            json: CString::default(),
            dot: CString::default(),
            deadlock: CString::default(),
        }))
    }));
    match r {
        Ok(Ok(h)) => {
            // SAFETY: as above.
            unsafe { out.write(Box::into_raw(h)) };
            WSP_RT_OK
        }
        Ok(Err(Fail(c, m))) => {
            write_err(err_buf, err_len, &m);
            c
        }
        Err(p) => {
            write_err(err_buf, err_len, &panic_message(&*p));
            WSP_RT_ERR_PANIC
        }
    }
}

/// `wsp_rt_destroy`.
///
/// # Safety
/// `rt` comes from `wsp_rt_create` (or is null) and is not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn wsp_rt_destroy(rt: *mut WspRt) {
    if rt.is_null() {
        return;
    }
    // SAFETY: the handle was made by `Box::into_raw`; a panic while dropping (joining the
    // kernel threads) is not let out into C.
    let b = unsafe { Box::from_raw(rt) };
    let _ = catch_unwind(AssertUnwindSafe(move || drop(b)));
}

/// `wsp_rt_set_task_window`.
///
/// # Safety
/// `rt` is a handle of `wsp_rt_create`.
#[no_mangle]
pub unsafe extern "C" fn wsp_rt_set_task_window(rt: *mut WspRt, window: u32) -> i32 {
    with_rt(rt, |h| {
        if window == 0 {
            return Err(arg_err("the task window is at least 1"));
        }
        let c = h.config()?;
        *c = c.clone().with_window(window);
        Ok(())
    })
}

/// `wsp_rt_set_threads`.
///
/// # Safety
/// `rt` is a handle of `wsp_rt_create`.
#[no_mangle]
pub unsafe extern "C" fn wsp_rt_set_threads(rt: *mut WspRt, threads: u32) -> i32 {
    with_rt(rt, |h| {
        h.config()?.threads = (threads as usize).max(1);
        Ok(())
    })
}

/// `wsp_rt_set_policy`.
///
/// # Safety
/// `rt` is a handle of `wsp_rt_create`; `form` a C string; `args` holds `nargs` values.
#[no_mangle]
pub unsafe extern "C" fn wsp_rt_set_policy(
    rt: *mut WspRt,
    form: *const c_char,
    args: *const u32,
    nargs: u32,
) -> i32 {
    with_rt(rt, |h| {
        // SAFETY: per the header.
        let form = unsafe { str_arg(form, "form")? };
        let args = unsafe { slice_arg(args, u64::from(nargs), "args")? };
        let c = h.config()?;
        let mut p = c.policies;
        p.apply(form, args).map_err(arg_err)?;
        if p.task_window != c.policies.task_window {
            // The rings are sized from the window, as `Config::with_window` does.
            *c = c.clone().with_window(p.task_window);
        }
        c.policies = p;
        Ok(())
    })
}

/// `wsp_rt_fit_region_args`.
///
/// # Safety
/// `rt` is a handle of `wsp_rt_create`.
#[no_mangle]
pub unsafe extern "C" fn wsp_rt_fit_region_args(rt: *mut WspRt, nargs: u32) -> i32 {
    with_rt(rt, |h| {
        h.config()?;
        h.region_args = h.region_args.max(nargs as usize);
        Ok(())
    })
}

/// `wsp_rt_set_record`.
///
/// # Safety
/// `rt` is a handle of `wsp_rt_create`.
#[no_mangle]
pub unsafe extern "C" fn wsp_rt_set_record(rt: *mut WspRt, record: i32) -> i32 {
    with_rt(rt, |h| {
        h.config()?.record = record != 0;
        Ok(())
    })
}

/// `wsp_rt_set_execute`.
///
/// # Safety
/// `rt` is a handle of `wsp_rt_create`.
#[no_mangle]
pub unsafe extern "C" fn wsp_rt_set_execute(rt: *mut WspRt, execute: i32) -> i32 {
    with_rt(rt, |h| {
        h.config()?.execute = execute != 0;
        Ok(())
    })
}

/// `wsp_rt_set_limits`.
///
/// # Safety
/// `rt` is a handle of `wsp_rt_create`.
#[no_mangle]
pub unsafe extern "C" fn wsp_rt_set_limits(rt: *mut WspRt, max_tasks: u64, max_cycles: u64) -> i32 {
    with_rt(rt, |h| {
        let c = h.config()?;
        c.max_tasks = if max_tasks == 0 { u64::MAX } else { max_tasks };
        c.max_cycles = if max_cycles == 0 {
            wsp_runtime::MAX_CYCLES
        } else {
            max_cycles
        };
        Ok(())
    })
}

/// `wsp_rt_start`.
///
/// # Safety
/// `rt` is a handle of `wsp_rt_create`.
#[no_mangle]
pub unsafe extern "C" fn wsp_rt_start(rt: *mut WspRt) -> i32 {
    with_rt(rt, |h| h.runtime().map(|_| ()))
}

/// `wsp_rt_register_kernel`.
///
/// # Safety
/// `rt` is a handle of `wsp_rt_create`; strings are C strings; `entry` a valid kernel entry.
#[no_mangle]
pub unsafe extern "C" fn wsp_rt_register_kernel(
    rt: *mut WspRt,
    name: *const c_char,
    entry: Option<KernelFn>,
    core_class: *const c_char,
    out: *mut u32,
) -> i32 {
    with_rt(rt, |h| {
        // SAFETY: per the header.
        let name = unsafe { str_arg(name, "name")? };
        let class = unsafe { str_arg(core_class, "core_class")? };
        let entry = entry.ok_or_else(|| null("entry"))?;
        if out.is_null() {
            return Err(null("out"));
        }
        let class = CoreClass::from_name(class).ok_or_else(|| {
            arg_err(format!(
                "unknown core class `{class}` (cube, vector or aicpu)"
            ))
        })?;
        let id = h
            .runtime()?
            .register_kernel(name, class, Arc::new(FnKernel(entry)));
        out_ptr(out, id.0);
        Ok(())
    })
}

fn dims_arg<'a>(dims: *const i64, rank: u32) -> Result<&'a [i64], Fail> {
    if rank == 0 || rank as usize > MAX_RANK {
        return Err(arg_err(format!(
            "a tensor has rank 1 to {MAX_RANK}, found {rank}"
        )));
    }
    // SAFETY: `dims` holds `rank` values per the header.
    unsafe { slice_arg(dims, u64::from(rank), "dims") }
}

/// `wsp_rt_add_tensor`.
///
/// # Safety
/// `rt` is a handle of `wsp_rt_create`; `dims` holds `rank` values; `data` (or null) `nbytes`.
#[no_mangle]
pub unsafe extern "C" fn wsp_rt_add_tensor(
    rt: *mut WspRt,
    elem_size: u64,
    dims: *const i64,
    rank: u32,
    data: *const c_void,
    nbytes: u64,
    out: *mut u32,
) -> i32 {
    with_rt(rt, |h| {
        if out.is_null() {
            return Err(null("out"));
        }
        let dims = dims_arg(dims, rank)?;
        let bytes = if data.is_null() {
            None
        } else {
            // SAFETY: `data` holds `nbytes` bytes.
            Some(unsafe { slice_arg(data.cast::<u8>(), nbytes, "data")? }.to_vec())
        };
        let id = h.runtime()?.add_tensor_data(elem_size, dims, bytes)?;
        out_ptr(out, id.0);
        Ok(())
    })
}

/// `wsp_rt_tensor_size`.
///
/// # Safety
/// `rt` is a handle of `wsp_rt_create`; `out` writable.
#[no_mangle]
pub unsafe extern "C" fn wsp_rt_tensor_size(rt: *mut WspRt, tensor: u32, out: *mut u64) -> i32 {
    with_rt(rt, |h| {
        if out.is_null() {
            return Err(null("out"));
        }
        let b = h
            .runtime()?
            .tensor_bytes(TensorId(tensor))
            .ok_or_else(|| arg_err(format!("unknown tensor id {tensor}")))?;
        out_ptr(out, b.len() as u64);
        Ok(())
    })
}

fn copy_out(
    r: &mut Runtime,
    tensor: u32,
    offset: u64,
    dst: *mut c_void,
    nbytes: u64,
) -> Result<(), Fail> {
    if dst.is_null() && nbytes > 0 {
        return Err(null("dst"));
    }
    let b = r
        .tensor_bytes(TensorId(tensor))
        .ok_or_else(|| arg_err(format!("unknown tensor id {tensor}")))?;
    let end = offset.checked_add(nbytes).filter(|e| *e <= b.len() as u64);
    let Some(end) = end else {
        return Err(arg_err(format!(
            "bytes {offset}..+{nbytes} of tensor {tensor}, which has {} bytes (or no buffer in a timing-only run)",
            b.len()
        )));
    };
    let src = &b[offset as usize..end as usize];
    // SAFETY: `dst` holds `nbytes` writable bytes.
    unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst.cast::<u8>(), src.len()) };
    Ok(())
}

/// `wsp_rt_read_tensor`.
///
/// # Safety
/// `rt` is a handle of `wsp_rt_create`; `dst` holds `nbytes` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn wsp_rt_read_tensor(
    rt: *mut WspRt,
    tensor: u32,
    offset: u64,
    dst: *mut c_void,
    nbytes: u64,
) -> i32 {
    with_rt(rt, |h| copy_out(h.runtime()?, tensor, offset, dst, nbytes))
}

/// `wsp_rt_submit`.
///
/// # Safety
/// `rt` is a handle of `wsp_rt_create`; `task` a valid task; `out` writable or null.
#[no_mangle]
pub unsafe extern "C" fn wsp_rt_submit(
    rt: *mut WspRt,
    task: *const WspRtTask,
    out: *mut u64,
) -> i32 {
    with_rt(rt, |h| {
        let mut args = Vec::new();
        // SAFETY: per the header.
        let desc = unsafe { task_desc(task, &mut args)? };
        let id = h.runtime()?.submit(&desc)?;
        out_ptr(out, id.0);
        Ok(())
    })
}

/// `wsp_rt_wait_tensor`.
///
/// # Safety
/// `rt` is a handle of `wsp_rt_create`.
#[no_mangle]
pub unsafe extern "C" fn wsp_rt_wait_tensor(rt: *mut WspRt, tensor: u32) -> i32 {
    with_rt(rt, |h| Ok(h.runtime()?.wait_tensor(TensorId(tensor))?))
}

/// `wsp_rt_wait_all`.
///
/// # Safety
/// `rt` is a handle of `wsp_rt_create`.
#[no_mangle]
pub unsafe extern "C" fn wsp_rt_wait_all(rt: *mut WspRt) -> i32 {
    with_rt(rt, |h| Ok(h.runtime()?.wait_all()?))
}

/// `wsp_rt_scope_begin`.
///
/// # Safety
/// `rt` is a handle of `wsp_rt_create`.
#[no_mangle]
pub unsafe extern "C" fn wsp_rt_scope_begin(rt: *mut WspRt) -> i32 {
    with_rt(rt, |h| {
        h.runtime()?.scope_begin();
        Ok(())
    })
}

/// `wsp_rt_alloc_scope_begin`.
///
/// # Safety
/// `rt` is a handle of `wsp_rt_create`.
#[no_mangle]
pub unsafe extern "C" fn wsp_rt_alloc_scope_begin(rt: *mut WspRt) -> i32 {
    with_rt(rt, |h| {
        h.runtime()?.alloc_scope_begin();
        Ok(())
    })
}

/// `wsp_rt_scope_end`.
///
/// # Safety
/// `rt` is a handle of `wsp_rt_create`.
#[no_mangle]
pub unsafe extern "C" fn wsp_rt_scope_end(rt: *mut WspRt) -> i32 {
    with_rt(rt, |h| Ok(h.runtime()?.scope_end()?))
}

/// `wsp_rt_alloc_tensor`.
///
/// # Safety
/// `rt` is a handle of `wsp_rt_create`; `dims` holds `rank` values; `out` writable.
#[no_mangle]
pub unsafe extern "C" fn wsp_rt_alloc_tensor(
    rt: *mut WspRt,
    elem_size: u64,
    dims: *const i64,
    rank: u32,
    out: *mut u32,
) -> i32 {
    with_rt(rt, |h| {
        if out.is_null() {
            return Err(null("out"));
        }
        let dims = dims_arg(dims, rank)?;
        let id = h.runtime()?.alloc_tensor(elem_size, dims)?;
        out_ptr(out, id.0);
        Ok(())
    })
}

/// `wsp_rt_order_begin`.
///
/// # Safety
/// `rt` is a handle of `wsp_rt_create`.
#[no_mangle]
pub unsafe extern "C" fn wsp_rt_order_begin(rt: *mut WspRt, seq: i32) -> i32 {
    with_rt(rt, |h| {
        let o = if seq != 0 {
            wsp_runtime::Order::Seq
        } else {
            wsp_runtime::Order::Par
        };
        h.runtime()?.order_begin(o);
        Ok(())
    })
}

/// `wsp_rt_order_step`.
///
/// # Safety
/// `rt` is a handle of `wsp_rt_create`.
#[no_mangle]
pub unsafe extern "C" fn wsp_rt_order_step(rt: *mut WspRt) -> i32 {
    with_rt(rt, |h| {
        h.runtime()?.order_step();
        Ok(())
    })
}

/// `wsp_rt_order_end`.
///
/// # Safety
/// `rt` is a handle of `wsp_rt_create`.
#[no_mangle]
pub unsafe extern "C" fn wsp_rt_order_end(rt: *mut WspRt) -> i32 {
    with_rt(rt, |h| Ok(h.runtime()?.order_end()?))
}

/// `wsp_rt_add_channel`.
///
/// # Safety
/// `rt` is a handle of `wsp_rt_create`; `name` a C string; `out` writable.
#[no_mangle]
pub unsafe extern "C" fn wsp_rt_add_channel(
    rt: *mut WspRt,
    name: *const c_char,
    depth: u32,
    latency: i64,
    out: *mut u32,
) -> i32 {
    with_rt(rt, |h| {
        // SAFETY: per the header.
        let name = unsafe { str_arg(name, "name")? };
        if out.is_null() {
            return Err(null("out"));
        }
        let lat = u64::try_from(latency).ok();
        let id = h.runtime()?.add_channel(name, depth, lat);
        out_ptr(out, id.0);
        Ok(())
    })
}

/// A process step's action from the callback's `wsp_rt_step`.
fn step_of(s: &WspRtStep) -> Result<Step, String> {
    Ok(match s.kind {
        WSP_STEP_CONTINUE => Step::Continue,
        WSP_STEP_FINISHED => Step::Finished,
        WSP_STEP_RECV => Step::Recv {
            ch: ChannelId(s.channel),
        },
        WSP_STEP_SEND => {
            let n = s.token_len as usize;
            if n > MAX_RANK {
                return Err(format!("a token of {n} values (at most {MAX_RANK})"));
            }
            Step::Send {
                ch: ChannelId(s.channel),
                token: Token::new(&s.token[..n]),
                after: (s.has_after != 0).then_some(TaskId(s.after)),
            }
        }
        k => return Err(format!("unknown step kind {k}")),
    })
}

/// `wsp_rt_run_processes`.
///
/// # Safety
/// `rt` is a handle of `wsp_rt_create`; `procs` holds `nprocs` valid process descriptions
/// whose callbacks and user pointers stay valid for the call.
#[no_mangle]
pub unsafe extern "C" fn wsp_rt_run_processes(
    rt: *mut WspRt,
    procs: *const WspRtProcess,
    nprocs: u32,
) -> i32 {
    with_rt(rt, |h| {
        // SAFETY: per the header.
        let procs = unsafe { slice_arg(procs, u64::from(nprocs), "procs")? };
        let mut specs = Vec::with_capacity(procs.len());
        for (i, p) in procs.iter().enumerate() {
            // SAFETY: per the header.
            let name = unsafe { str_arg(p.name, "process name")? }.to_string();
            let step = p.step.ok_or_else(|| null(&format!("procs[{i}].step")))?;
            let produces = unsafe { slice_arg(p.produces, u64::from(p.nproduces), "produces")? }
                .iter()
                .map(|c| ChannelId(*c))
                .collect();
            let user = p.user;
            let body = move |cx: &mut ProcCx<'_>| -> Result<Step, String> {
                let mut handle = WspRtProc {
                    // The handle lives for this step only; C sees it as an opaque pointer.
                    cx: (cx as *mut ProcCx<'_>).cast::<ProcCx<'static>>(),
                    error: String::new(),
                };
                let mut s = WspRtStep {
                    kind: WSP_STEP_CONTINUE,
                    channel: 0,
                    token_len: 0,
                    token: [0; MAX_RANK],
                    has_after: 0,
                    after: 0,
                };
                // SAFETY: the callback and its user pointer are valid for the run (header).
                let rc = unsafe { step(user, &mut handle, &mut s) };
                if rc != 0 {
                    let why = if handle.error.is_empty() {
                        String::new()
                    } else {
                        format!(": {}", handle.error)
                    };
                    return Err(format!("step returned error code {rc}{why}"));
                }
                step_of(&s)
            };
            specs.push(ProcSpec {
                name,
                body: Box::new(body),
                produces,
            });
        }
        Ok(h.runtime()?.run_processes(specs)?)
    })
}

/// Runs `f` on a process handle, catching panics; an error's message is kept in the handle.
fn with_proc(p: *mut WspRtProc, f: impl FnOnce(&mut ProcCx<'_>) -> Result<(), Fail>) -> i32 {
    if p.is_null() {
        return WSP_RT_ERR_NULL;
    }
    // SAFETY: a process handle is valid during the step it was passed to.
    let p = unsafe { &mut *p };
    // SAFETY: `cx` points at the step's live context.
    let cx = unsafe { &mut *p.cx };
    let r = catch_unwind(AssertUnwindSafe(|| f(cx)));
    let (code, msg) = match r {
        Ok(Ok(())) => return WSP_RT_OK,
        Ok(Err(Fail(c, m))) => (c, m),
        Err(e) => (WSP_RT_ERR_PANIC, panic_message(&*e)),
    };
    p.error = msg;
    code
}

/// `wsp_rt_proc_submit`.
///
/// # Safety
/// `cx` is the handle of the current step; `task` a valid task; `out` writable or null.
#[no_mangle]
pub unsafe extern "C" fn wsp_rt_proc_submit(
    cx: *mut WspRtProc,
    task: *const WspRtTask,
    out: *mut u64,
) -> i32 {
    with_proc(cx, |cx| {
        let mut args = Vec::new();
        // SAFETY: per the header.
        let desc = unsafe { task_desc(task, &mut args)? };
        let id = cx.submit(&desc)?;
        out_ptr(out, id.0);
        Ok(())
    })
}

/// `wsp_rt_proc_received`.
///
/// # Safety
/// `cx` is the handle of the current step; `token` holds `WSP_MAX_RANK` writable values.
#[no_mangle]
pub unsafe extern "C" fn wsp_rt_proc_received(
    cx: *mut WspRtProc,
    status: *mut i32,
    token: *mut i64,
    token_len: *mut u32,
) -> i32 {
    with_proc(cx, |cx| {
        if status.is_null() {
            return Err(null("status"));
        }
        match cx.received() {
            None => out_ptr(status, 0),
            Some(Received::Closed) => out_ptr(status, 2),
            Some(Received::Token(t)) => {
                if token.is_null() || token_len.is_null() {
                    return Err(null("token"));
                }
                let v = t.values();
                // SAFETY: `token` holds WSP_MAX_RANK values and a token has at most as many.
                unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), token, v.len()) };
                out_ptr(token_len, v.len() as u32);
                out_ptr(status, 1);
            }
        }
        Ok(())
    })
}

/// `wsp_rt_proc_wait_tensor`.
///
/// # Safety
/// `cx` is the handle of the current step.
#[no_mangle]
pub unsafe extern "C" fn wsp_rt_proc_wait_tensor(cx: *mut WspRtProc, tensor: u32) -> i32 {
    with_proc(cx, |cx| Ok(cx.runtime().wait_tensor(TensorId(tensor))?))
}

/// `wsp_rt_proc_wait_all`.
///
/// # Safety
/// `cx` is the handle of the current step.
#[no_mangle]
pub unsafe extern "C" fn wsp_rt_proc_wait_all(cx: *mut WspRtProc) -> i32 {
    with_proc(cx, |cx| Ok(cx.runtime().wait_all()?))
}

/// `wsp_rt_proc_read_tensor`.
///
/// # Safety
/// `cx` is the handle of the current step; `dst` holds `nbytes` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn wsp_rt_proc_read_tensor(
    cx: *mut WspRtProc,
    tensor: u32,
    offset: u64,
    dst: *mut c_void,
    nbytes: u64,
) -> i32 {
    with_proc(cx, |cx| copy_out(cx.runtime(), tensor, offset, dst, nbytes))
}

/// `wsp_rt_finish`.
///
/// # Safety
/// `rt` is a handle of `wsp_rt_create`; `out` writable or null.
#[no_mangle]
pub unsafe extern "C" fn wsp_rt_finish(rt: *mut WspRt, out: *mut WspRtStats) -> i32 {
    with_rt(rt, |h| {
        let s = h.runtime()?.finish()?;
        out_ptr(
            out,
            WspRtStats {
                tasks: s.tasks,
                edges: s.edges,
                total_cycles: s.total_cycles,
            },
        );
        Ok(())
    })
}

/// Which of the handle's strings a call returns.
#[derive(Clone, Copy)]
enum Slot {
    Json,
    Dot,
    Deadlock,
}

/// Fills one of the handle's strings; null for a null handle or a failure (the error is kept).
fn string_of(
    rt: *mut WspRt,
    slot: Slot,
    f: impl FnOnce(&mut WspRt) -> Result<String, Fail>,
) -> *const c_char {
    let mut ptr = std::ptr::null();
    with_rt(rt, |h| {
        let s = c_string(&f(h)?);
        let kept = match slot {
            Slot::Json => &mut h.json,
            Slot::Dot => &mut h.dot,
            Slot::Deadlock => &mut h.deadlock,
        };
        *kept = s;
        ptr = kept.as_ptr();
        Ok(())
    });
    ptr
}

/// `wsp_rt_stats_json`.
///
/// # Safety
/// `rt` is a handle of `wsp_rt_create`.
#[no_mangle]
pub unsafe extern "C" fn wsp_rt_stats_json(rt: *mut WspRt) -> *const c_char {
    string_of(rt, Slot::Json, |h| Ok(h.runtime()?.stats().to_json()))
}

/// `wsp_rt_dot`.
///
/// # Safety
/// `rt` is a handle of `wsp_rt_create`.
#[no_mangle]
pub unsafe extern "C" fn wsp_rt_dot(rt: *mut WspRt) -> *const c_char {
    string_of(rt, Slot::Dot, |h| Ok(h.runtime()?.dot()))
}

/// `wsp_rt_deadlock_report`.
///
/// # Safety
/// `rt` is a handle of `wsp_rt_create`.
#[no_mangle]
pub unsafe extern "C" fn wsp_rt_deadlock_report(rt: *mut WspRt) -> *const c_char {
    string_of(rt, Slot::Deadlock, |h| {
        Ok(h.rt
            .as_ref()
            .and_then(|r| r.deadlock_report())
            .map(|d| d.to_string())
            .unwrap_or_default())
    })
}

/// `wsp_rt_last_error`.
///
/// # Safety
/// `rt` is a handle of `wsp_rt_create` (or null).
#[no_mangle]
pub unsafe extern "C" fn wsp_rt_last_error(rt: *const WspRt) -> *const c_char {
    if rt.is_null() {
        return c"null runtime handle".as_ptr();
    }
    // SAFETY: a non-null handle of `wsp_rt_create`.
    unsafe { (*rt).last_error.as_ptr() }
}

#[cfg(test)]
mod tests;

//! Cranelift JIT of wsp kernels.
//!
//! [`Jit::compile`] turns a [`Kernel`] of the kernel IR into native code (see
//! [`kernel_codegen`] for the code shape: fused elementwise loops over `F32X4` with scalar
//! tails, vector reductions in the IR's canonical summation order, register-blocked matmul),
//! cached by the kernel's content within the [`Jit`]. The compiled entry follows the ABI of
//! [`abi`]; [`CompiledKernel::run`] is a drop-in for the reference interpreter's
//! [`wsp_ir::interp::run_kernel`], and [`CompiledKernel::call_raw`] is the zero-copy entry
//! for a runtime that owns its buffers.
//!
//! Coverage: tiles of f32, f16, bf16 (their real bit layouts in memory, computed in f32 and
//! rounded to the dtype per operation and on store, ties to even), i32 and bool; scalars of
//! those and i64; every operation of the kernel IR — elementwise, comparison, select,
//! reduction, matmul (f16/bf16 operands accumulate in f32), transpose, cast between any two
//! of those dtypes, full, iota, slice, `rowtopk`, `for`, `var`, store, and kernel pipes
//! (`cube`/`vector` sections, talloc/tpush/tpop/tfree, with the interpreter's semantics:
//! sections run one after another, producers of a pipe first, FIFO queues, the same errors for
//! a `tpop` on an empty pipe, a `tpush` of an unreserved slot and a `tfree` without `tpop`;
//! each pipe's queue is a ring in the scratch frame sized by a static bound, `pipes.rs`).
//! Other dtypes (f64, i8, i16, u8–u64, i64 tiles) and pipe queues that cannot be bounded
//! (more than 1 GiB queued at once, or a queue length overflowing) are rejected with
//! [`JitErrorKind::Unsupported`] (the caller falls back to the interpreter).

pub mod abi;
mod disk;
mod helpers;
mod kernel_codegen;
pub mod orch;
mod pipes;

pub use disk::DiskCache;
pub use orch::{compile_orchestration, CompiledOrch, CompiledProc, OrchRefusal};

use abi::{Layout, ParamSlot};
use cranelift::prelude::*;
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{default_libcall_names, FuncId, FuncOrDataId, Linkage, Module, ModuleReloc};
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use wsp_ir::interp::{tile_arg_mismatch, KernelArg, KernelError};
use wsp_ir::kernel::*;
use wsp_ir::tensor::Data;

/// What went wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JitErrorKind {
    /// The kernel uses something the JIT does not compile (a clear refusal, never garbage).
    Unsupported,
    /// The kernel IR is malformed.
    Invalid,
    /// Cranelift failed.
    Codegen,
    /// A run-time check failed (extent or region out of range, bad arguments).
    Runtime,
}

/// An error of compiling or running a kernel; names the kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JitError {
    pub kind: JitErrorKind,
    pub kernel: String,
    pub message: String,
}

impl JitError {
    fn new(kind: JitErrorKind, k: &Kernel, message: String) -> JitError {
        JitError {
            kind,
            kernel: k.name.clone(),
            message,
        }
    }
    pub(crate) fn unsupported(k: &Kernel, what: String) -> JitError {
        JitError::new(
            JitErrorKind::Unsupported,
            k,
            format!("the JIT does not compile {what}"),
        )
    }
    pub(crate) fn invalid(k: &Kernel, m: String) -> JitError {
        JitError::new(JitErrorKind::Invalid, k, m)
    }
}

impl fmt::Display for JitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "in kernel `{}`: {}", self.kernel, self.message)
    }
}

impl std::error::Error for JitError {}

type Entry = unsafe extern "C" fn(*const u64, *mut u8) -> i32;

/// A compiled kernel. Keeps its code alive.
pub struct CompiledKernel {
    name: String,
    kernel: Kernel,
    layout: Layout,
    errors: Vec<String>,
    entry: Entry,
    _module: JITModule,
}

// SAFETY: the module's code is immutable after finalisation and the entry is reentrant (all
// state is in the caller's argument block and scratch frame).
unsafe impl Send for CompiledKernel {}
unsafe impl Sync for CompiledKernel {}

/// A scratch frame for [`CompiledKernel::call_raw`] (16-byte aligned).
pub struct Scratch(Vec<u128>);

impl Scratch {
    pub fn new(bytes: usize) -> Scratch {
        Scratch(vec![0; bytes.div_ceil(16).max(1)])
    }
    /// Grows the frame to at least `bytes` (a frame reused by kernels of different sizes;
    /// kernels need no initialised scratch).
    pub fn ensure(&mut self, bytes: usize) {
        let n = bytes.div_ceil(16).max(1);
        if self.0.len() < n {
            self.0.resize(n, 0);
        }
    }
    fn ptr(&mut self) -> *mut u8 {
        self.0.as_mut_ptr().cast()
    }
    fn bytes(&self) -> usize {
        self.0.len() * 16
    }
}

impl CompiledKernel {
    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn layout(&self) -> &Layout {
        &self.layout
    }
    pub fn new_scratch(&self) -> Scratch {
        Scratch::new(self.layout.scratch_bytes)
    }

    /// Runs the kernel on an argument block laid out as [`abi`] describes.
    ///
    /// # Safety
    /// Every tile slot must hold a pointer valid for reads (and writes, for `out`/`inout`
    /// parameters) of `(valid_rows − 1)·stride + valid_cols` elements of the parameter's
    /// dtype in its bit layout (see [`abi`]); the kernel checks
    /// the extents against the static shapes itself.
    pub unsafe fn call_raw(&self, args: &[u64], scratch: &mut Scratch) -> Result<(), JitError> {
        if args.len() != self.layout.arg_slots || scratch.bytes() < self.layout.scratch_bytes {
            return Err(JitError::new(
                JitErrorKind::Runtime,
                &self.kernel,
                format!(
                    "argument block of {} slots (expected {}) or scratch of {} bytes (expected {})",
                    args.len(),
                    self.layout.arg_slots,
                    scratch.bytes(),
                    self.layout.scratch_bytes
                ),
            ));
        }
        // SAFETY: sizes checked above; pointer validity is the caller's contract.
        let code = unsafe { (self.entry)(args.as_ptr(), scratch.ptr()) };
        if code == 0 {
            return Ok(());
        }
        let msg = usize::try_from(code - 1)
            .ok()
            .and_then(|i| self.errors.get(i))
            .cloned()
            .unwrap_or_else(|| format!("unknown error code {code}"));
        Err(JitError::new(JitErrorKind::Runtime, &self.kernel, msg))
    }

    /// Runs the kernel on interpreter-style arguments (one per parameter), updating
    /// `out`/`inout` tiles in place, like [`wsp_ir::interp::run_kernel`].
    pub fn run(&self, args: &mut [KernelArg]) -> Result<(), KernelError> {
        let kerr = |m: String| KernelError {
            kernel: self.name.clone(),
            message: m,
        };
        if args.len() != self.kernel.params.len() {
            return Err(kerr(format!(
                "expected {} arguments, found {}",
                self.kernel.params.len(),
                args.len()
            )));
        }
        let mut bufs: Vec<Vec<u8>> = Vec::new();
        let mut block = vec![0u64; self.layout.arg_slots];
        for (i, (a, p)) in args.iter().zip(&self.kernel.params).enumerate() {
            match (a, &p.kind, self.layout.params.get(i)) {
                (KernelArg::Tile(t), ParamKind::Tile { tile, .. }, Some(ParamSlot::Tile(_))) => {
                    if t.dtype != tile.dtype || t.shape != tile.shape || t.data.len() != tile.len()
                    {
                        return Err(kerr(tile_arg_mismatch(&p.name, t, tile)));
                    }
                    bufs.push(t.data.to_bytes(tile.dtype));
                }
                (KernelArg::Scalar(_), ParamKind::Scalar { .. }, _) => bufs.push(Vec::new()),
                _ => {
                    return Err(kerr(format!(
                        "argument `{}` is of the wrong kind (tile vs scalar)",
                        p.name
                    )))
                }
            }
        }
        for (i, (a, p)) in args.iter().zip(&self.kernel.params).enumerate() {
            match (a, &p.kind, self.layout.params.get(i)) {
                (KernelArg::Tile(t), _, Some(ParamSlot::Tile(s))) => {
                    block[*s] = bufs[i].as_mut_ptr() as u64;
                    block[s + 1] = u64::from(t.shape[1]);
                    block[s + 2] = u64::from(t.valid[0]);
                    block[s + 3] = u64::from(t.valid[1]);
                }
                (
                    KernelArg::Scalar(v),
                    ParamKind::Scalar { dtype, .. },
                    Some(ParamSlot::Scalar(s)),
                ) => {
                    block[*s] = abi::scalar_slot(*dtype, *v);
                }
                _ => return Err(kerr("argument layout mismatch".into())),
            }
        }
        let mut scratch = self.new_scratch();
        // SAFETY: every tile pointer addresses a buffer of the full static shape in the
        // parameter's dtype with row stride = static columns, and the kernel checks the valid
        // extents at entry.
        unsafe { self.call_raw(&block, &mut scratch) }.map_err(|e| kerr(e.message))?;
        for (i, (a, p)) in args.iter_mut().zip(&self.kernel.params).enumerate() {
            if let (KernelArg::Tile(t), ParamKind::Tile { dir, tile, .. }) = (a, &p.kind) {
                if dir.writes() {
                    t.data = Data::from_bytes(tile.dtype, &bufs[i], tile.len(), false)
                        .ok_or_else(|| kerr(format!("short buffer of `{}`", p.name)))?;
                }
            }
        }
        Ok(())
    }
}

/// The JIT: compiles kernels and caches them by content within the process, and across
/// processes in a [`DiskCache`] when it has one.
#[derive(Default)]
pub struct Jit {
    cache: Mutex<HashMap<String, Arc<CompiledKernel>>>,
    disk: Option<DiskCache>,
    /// Kernels loaded from the disk cache, and compiled by Cranelift.
    loaded: AtomicUsize,
    compiled: AtomicUsize,
}

impl Jit {
    /// A JIT without a disk cache.
    pub fn new() -> Jit {
        Jit::default()
    }

    /// A JIT that also keeps compiled kernels in `disk` (none: as [`Jit::new`]).
    pub fn with_disk_cache(disk: Option<DiskCache>) -> Jit {
        Jit {
            disk,
            ..Jit::default()
        }
    }

    /// The disk cache, if any.
    pub fn disk_cache(&self) -> Option<&DiskCache> {
        self.disk.as_ref()
    }

    /// How many kernels were loaded from the disk cache and how many compiled by Cranelift.
    pub fn counts(&self) -> (usize, usize) {
        (
            self.loaded.load(Ordering::Relaxed),
            self.compiled.load(Ordering::Relaxed),
        )
    }

    /// Number of cached kernels.
    pub fn cached(&self) -> usize {
        self.cache.lock().map(|c| c.len()).unwrap_or(0)
    }

    /// Compiles `k` (or returns the cached code of an identical kernel).
    pub fn compile(&self, k: &Kernel) -> Result<Arc<CompiledKernel>, JitError> {
        let key = serde_json::to_string(k)
            .map_err(|e| JitError::invalid(k, format!("kernel does not serialise: {e}")))?;
        if let Ok(c) = self.cache.lock() {
            if let Some(ck) = c.get(&key) {
                return Ok(ck.clone());
            }
        }
        let (ck, hit) = compile_with(k, self.disk.as_ref().map(|d| (d, key.as_str())))?;
        let n = if hit { &self.loaded } else { &self.compiled };
        n.fetch_add(1, Ordering::Relaxed);
        let ck = Arc::new(ck);
        if let Ok(mut c) = self.cache.lock() {
            c.insert(key, ck.clone());
        }
        Ok(ck)
    }
}

/// The host ISA with `opt_level = none` (verifier in debug builds only), built once per
/// process. The lowering already emits fused, vectorised, unrolled code; Cranelift's e-graph
/// optimisations (`speed`) found nothing to improve in it and cost a quarter of the compile
/// time (docs/perf.md).
fn host_isa() -> Result<cranelift::codegen::isa::OwnedTargetIsa, String> {
    static ISA: OnceLock<Result<cranelift::codegen::isa::OwnedTargetIsa, String>> = OnceLock::new();
    ISA.get_or_init(|| {
        let mut flags = settings::builder();
        flags.set("opt_level", "none").map_err(|e| e.to_string())?;
        // The IR verifier runs in debug builds (every test and fuzz run); release builds
        // skip it, it is a fifth of the compile time.
        let verify = if cfg!(debug_assertions) {
            "true"
        } else {
            "false"
        };
        flags
            .set("enable_verifier", verify)
            .map_err(|e| e.to_string())?;
        cranelift_native::builder()
            .map_err(|e| e.to_string())?
            .finish(settings::Flags::new(flags))
            .map_err(|e| e.to_string())
    })
    .clone()
}

fn codegen(k: &Kernel, e: impl fmt::Display) -> JitError {
    JitError::new(
        JitErrorKind::Codegen,
        k,
        format!("code generation failed: {e}"),
    )
}

/// The host in a disk cache key: the target triple and Cranelift's flags (the CPU features the
/// code is compiled for), worked out once per process.
fn host_key(isa: &dyn cranelift::codegen::isa::TargetIsa) -> &'static str {
    static KEY: OnceLock<String> = OnceLock::new();
    KEY.get_or_init(|| {
        let mut s = format!("{}\n{}", isa.triple(), isa.flags());
        for v in isa.isa_flags() {
            s.push('\n');
            s.push_str(&v.to_string());
        }
        s
    })
}

/// A fresh module with the helpers' symbols and the kernel's entry declared.
fn new_module(
    k: &Kernel,
    isa: &cranelift::codegen::isa::OwnedTargetIsa,
) -> Result<(JITModule, FuncId), JitError> {
    let mut jb = JITBuilder::with_isa(isa.clone(), default_libcall_names());
    helpers::register(&mut jb);
    let mut module = JITModule::new(jb);
    let ptr = module.target_config().pointer_type();
    let mut sig = module.make_signature();
    sig.params.push(AbiParam::new(ptr));
    sig.params.push(AbiParam::new(ptr));
    sig.returns.push(AbiParam::new(types::I32));
    let fid = module
        .declare_function("wsp_kernel", Linkage::Local, &sig)
        .map_err(|e| codegen(k, e))?;
    Ok((module, fid))
}

/// The kernel of a disk cache entry, linked into `module` without Cranelift; `None` when the
/// entry does not fit the module (then the kernel is compiled).
fn load_entry(
    k: &Kernel,
    mut module: JITModule,
    fid: FuncId,
    layout: Layout,
    e: disk::Entry,
) -> Option<CompiledKernel> {
    helpers::declare_ids(&mut module).ok()?;
    let id_of = |name: &str| match module.get_name(name) {
        Some(FuncOrDataId::Func(id)) => Some(id.as_u32()),
        _ => None,
    };
    let relocs: Option<Vec<ModuleReloc>> = e
        .relocs
        .iter()
        .map(|r| disk::module_reloc(r, fid, id_of))
        .collect();
    module
        .define_function_bytes(fid, e.alignment, &e.code, &relocs?)
        .ok()?;
    module.finalize_definitions().ok()?;
    Some(finished(k, module, fid, layout, e.errors))
}

/// The kernel whose code is `module`'s finalised function `fid`.
fn finished(
    k: &Kernel,
    module: JITModule,
    fid: FuncId,
    layout: Layout,
    errors: Vec<String>,
) -> CompiledKernel {
    let code = module.get_finalized_function(fid);
    // SAFETY: `code` is the finalised function declared with the `Entry` signature: compiled
    // for this kernel, or loaded from a disk cache entry keyed by its IR, the wsp build and
    // the host.
    let entry: Entry = unsafe { std::mem::transmute::<*const u8, Entry>(code) };
    CompiledKernel {
        name: k.name.clone(),
        kernel: k.clone(),
        layout,
        errors,
        entry,
        _module: module,
    }
}

/// Compiles `k` without any cache.
pub fn compile_uncached(k: &Kernel) -> Result<CompiledKernel, JitError> {
    compile_with(k, None).map(|(ck, _)| ck)
}

/// Compiles `k`, or loads it from `disk` (the cache and the kernel's IR as JSON); whether it
/// was loaded.
fn compile_with(
    k: &Kernel,
    disk: Option<(&DiskCache, &str)>,
) -> Result<(CompiledKernel, bool), JitError> {
    let body = k.body.as_ref().ok_or_else(|| {
        JitError::unsupported(k, "a kernel without a `.wsp` body (extern only)".into())
    })?;
    wsp_ir::typing::validate(k).map_err(|m| JitError::invalid(k, m))?;
    kernel_codegen::check_supported(k)?;
    let queued = pipes::max_queued(k).map_err(|m| {
        JitError::unsupported(k, format!("{m} (the JIT sizes pipe queues statically)"))
    })?;
    let isa = host_isa().map_err(|e| codegen(k, e))?;
    let layout = Layout::new(k, &queued);
    let key = disk.map(|(d, ir)| (d, DiskCache::key(ir, host_key(&*isa))));
    if let Some((d, key)) = &key {
        if let Some(e) = d.load(key) {
            let (module, fid) = new_module(k, &isa)?;
            if let Some(ck) = load_entry(k, module, fid, layout.clone(), e) {
                return Ok((ck, true));
            }
        }
    }
    let (mut module, fid) = new_module(k, &isa)?;
    let mut ctx = module.make_context();
    ctx.func.signature = module
        .declarations()
        .get_function_decl(fid)
        .signature
        .clone();
    let mut fctx = FunctionBuilderContext::new();
    let mut errors = Vec::new();
    {
        let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
        let h = helpers::declare(&mut module, b.func).map_err(|e| codegen(k, e))?;
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        b.seal_block(entry);
        let args = b.block_params(entry)[0];
        let scratch = b.block_params(entry)[1];
        let fail = b.create_block();
        b.append_block_param(fail, types::I32);
        let mut l = kernel_codegen::Lower::new(k, b, h, &layout, args, scratch, fail, &mut errors);
        l.entry(body)?;
        l.block(body)?;
        let zero = l.b.ins().iconst(types::I32, 0);
        l.b.ins().return_(&[zero]);
        l.b.switch_to_block(fail);
        l.b.seal_block(fail);
        let code = l.b.block_params(fail)[0];
        l.b.ins().return_(&[code]);
        l.b.seal_all_blocks();
        l.b.finalize(module.target_config());
    }
    module
        .define_function(fid, &mut ctx)
        .map_err(|e| codegen(k, format!("{e:?}")))?;
    if let Some((d, key)) = &key {
        if let Some(e) = cache_entry(&ctx, &module, fid, &errors) {
            d.store(key, &e);
        }
    }
    module.clear_context(&mut ctx);
    module.finalize_definitions().map_err(|e| codegen(k, e))?;
    Ok((finished(k, module, fid, layout, errors), false))
}

/// The disk cache entry of the function just compiled in `ctx`, or `None` when one of its
/// relocations cannot be stored.
fn cache_entry(
    ctx: &cranelift::codegen::Context,
    module: &JITModule,
    fid: FuncId,
    errors: &[String],
) -> Option<disk::Entry> {
    let cc = ctx.compiled_code()?;
    let name_of = |i: u32| {
        module
            .declarations()
            .get_function_decl(FuncId::from_u32(i))
            .name
            .clone()
    };
    let relocs = cc
        .buffer
        .relocs()
        .iter()
        .map(|r| disk::relocation(&ModuleReloc::from_mach_reloc(r, &ctx.func, fid), name_of))
        .collect::<Option<Vec<_>>>()?;
    Some(disk::Entry {
        code: cc.code_buffer().to_vec(),
        alignment: u64::from(cc.buffer.alignment),
        relocs,
        errors: errors.to_vec(),
    })
}

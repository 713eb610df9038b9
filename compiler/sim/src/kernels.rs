//! Kernel adapters: a program kernel as a runtime kernel on the runtime's own tensor buffers,
//! JIT-compiled or run by the reference interpreter.

use std::sync::Arc;
use wsp_ir::dtype::{DType, ScalarValue};
use wsp_ir::interp::{run_kernel, KernelArg, Tile};
use wsp_ir::kernel::{Kernel, ParamKind};
use wsp_ir::tensor::{decode_el, encode_el};
use wsp_runtime as rt;
use wsp_runtime::RawTask;

/// How a tile parameter of a task maps onto its region argument: scalars passed to the
/// kernel hold, per parameter in order, `[row_dim, col_dim]` (−1 for none) for a tile and
/// the value for a scalar (f64 bits for floats, the integer otherwise).
struct TileArg<'a> {
    raw: &'a rt::RawArg,
    origin: usize,
    row_stride: usize,
    col_stride: usize,
    rows: usize,
    cols: usize,
}

/// Copies the strided region of `a` (elements of `es` bytes) into the dense row-major `v`
/// (`gather`), or `v` back into the region.
fn copy_region(a: &TileArg, es: usize, v: &mut [u8], gather: bool) {
    for r in 0..a.rows {
        for c in 0..a.cols {
            let e = a.origin + r * a.row_stride + c * a.col_stride;
            let d = &mut v[(r * a.cols + c) * es..][..es];
            // SAFETY: element `e` is inside the task's region of the tensor buffer (a view the
            // runtime resolved), and a written region is touched by no other running task.
            unsafe {
                let t = a.raw.base.add(e * es);
                if gather {
                    std::ptr::copy_nonoverlapping(t, d.as_mut_ptr(), es)
                } else {
                    std::ptr::copy_nonoverlapping(d.as_ptr(), t, es)
                }
            };
        }
    }
}

fn tile_args<'a>(k: &Kernel, task: &'a RawTask) -> Result<(Vec<TileArg<'a>>, Vec<i64>), String> {
    // SAFETY: the runtime passes `nargs` valid arguments and `nscalars` scalars.
    let raws = unsafe { std::slice::from_raw_parts(task.args, task.nargs as usize) };
    let scalars = unsafe { std::slice::from_raw_parts(task.scalars, task.nscalars as usize) };
    let mut tiles = Vec::new();
    let mut vals = Vec::new();
    let mut si = 0;
    let mut ri = 0;
    for p in &k.params {
        match p.kind {
            ParamKind::Tile { .. } => {
                let raw = raws.get(ri).ok_or("missing region argument")?;
                ri += 1;
                let (rd, cd) = (
                    *scalars.get(si).ok_or("missing tile layout")?,
                    *scalars.get(si + 1).ok_or("missing tile layout")?,
                );
                si += 2;
                let rank = raw.rank as usize;
                let mut ts = [0usize; rt::MAX_RANK];
                let mut acc = 1usize;
                for d in (0..rank).rev() {
                    ts[d] = acc;
                    acc *= raw.dims[d] as usize;
                }
                let origin = (0..rank).map(|d| raw.offsets[d] as usize * ts[d]).sum();
                let dim = |x: i64| usize::try_from(x).ok().filter(|d| *d < rank);
                let (rdim, cdim) = (dim(rd), dim(cd));
                tiles.push(TileArg {
                    raw,
                    origin,
                    row_stride: rdim.map(|d| ts[d]).unwrap_or(0),
                    col_stride: cdim.map(|d| ts[d]).unwrap_or(0),
                    rows: rdim.map(|d| raw.extents[d] as usize).unwrap_or(1),
                    cols: cdim.map(|d| raw.extents[d] as usize).unwrap_or(1),
                });
            }
            ParamKind::Scalar { .. } => {
                vals.push(*scalars.get(si).ok_or("missing scalar argument")?);
                si += 1;
            }
        }
    }
    Ok((tiles, vals))
}

fn scalar_of(dtype: DType, bits: i64) -> ScalarValue {
    if dtype.is_float() {
        ScalarValue::Float(f64::from_bits(bits as u64))
    } else if dtype == DType::Bool {
        ScalarValue::Bool(bits != 0)
    } else {
        ScalarValue::Int(bits)
    }
}

/// A kernel run by the reference interpreter on the runtime's buffers.
pub(crate) struct Interpreted {
    pub(crate) k: Kernel,
}

impl rt::Kernel for Interpreted {
    fn run(&self, task: &RawTask) -> Result<(), String> {
        let (tiles, vals) = tile_args(&self.k, task)?;
        let mut args = Vec::with_capacity(self.k.params.len());
        let (mut ti, mut vi) = (0, 0);
        for p in &self.k.params {
            match p.kind {
                ParamKind::Tile { tile, .. } => {
                    let a = &tiles[ti];
                    ti += 1;
                    let es = a.raw.elem_size as usize;
                    let mut tl = Tile::zeros(tile);
                    tl.valid = [a.rows as u32, a.cols as u32];
                    for r in 0..a.rows {
                        for c in 0..a.cols {
                            let i = a.origin + r * a.row_stride + c * a.col_stride;
                            // SAFETY: the region lies inside the tensor (the runtime validated
                            // it) and element `i` is inside the region.
                            let b =
                                unsafe { std::slice::from_raw_parts(a.raw.base.add(i * es), es) };
                            tl.set(r, c, decode_el(tile.dtype, b, false));
                        }
                    }
                    args.push(KernelArg::Tile(tl));
                }
                ParamKind::Scalar { dtype, .. } => {
                    args.push(KernelArg::Scalar(scalar_of(dtype, vals[vi])));
                    vi += 1;
                }
            }
        }
        run_kernel(&self.k, &mut args).map_err(|e| e.message)?;
        let mut ti = 0;
        let mut buf = Vec::new();
        for (p, arg) in self.k.params.iter().zip(&args) {
            let (ParamKind::Tile { tile, dir, .. }, KernelArg::Tile(tl)) = (&p.kind, arg) else {
                continue;
            };
            let a = &tiles[ti];
            ti += 1;
            if !dir.writes() {
                continue;
            }
            let es = a.raw.elem_size as usize;
            for r in 0..a.rows {
                for c in 0..a.cols {
                    let i = a.origin + r * a.row_stride + c * a.col_stride;
                    buf.clear();
                    encode_el(tl.get(r, c), tile.dtype, &mut buf, false);
                    // SAFETY: as above; the parameter writes, so the region is `out`/`inout`
                    // and no other running task touches it.
                    unsafe {
                        std::ptr::copy_nonoverlapping(buf.as_ptr(), a.raw.base.add(i * es), es)
                    };
                }
            }
        }
        Ok(())
    }
}

/// A JIT-compiled kernel on the runtime's buffers (the tensors' real bit layouts, which are
/// the JIT's ABI): row-contiguous views are passed in place, others are gathered into a dense
/// copy and written back.
pub(crate) struct Compiled {
    pub(crate) ck: Arc<wsp_jit::CompiledKernel>,
    pub(crate) k: Kernel,
}

thread_local! {
    /// The argument block and scratch frame of the compiled kernels a thread runs, reused from
    /// task to task (a kernel call never runs another kernel on its thread).
    static FRAME: std::cell::RefCell<(Vec<u64>, wsp_jit::Scratch)> =
        std::cell::RefCell::new((Vec::new(), wsp_jit::Scratch::new(0)));
}

impl rt::Kernel for Compiled {
    fn run(&self, task: &RawTask) -> Result<(), String> {
        FRAME.with_borrow_mut(|(block, scratch)| self.run_in(task, block, scratch))
    }
}

impl Compiled {
    fn run_in(
        &self,
        task: &RawTask,
        block: &mut Vec<u64>,
        scratch: &mut wsp_jit::Scratch,
    ) -> Result<(), String> {
        let (tiles, vals) = tile_args(&self.k, task)?;
        let layout = self.ck.layout();
        block.clear();
        block.resize(layout.arg_slots, 0);
        scratch.ensure(layout.scratch_bytes);
        let mut copies: Vec<(usize, Vec<u8>)> = Vec::new();
        let (mut ti, mut vi) = (0, 0);
        for (i, p) in self.k.params.iter().enumerate() {
            match (&p.kind, layout.params.get(i)) {
                (ParamKind::Tile { tile, .. }, Some(wsp_jit::abi::ParamSlot::Tile(s))) => {
                    let a = &tiles[ti];
                    ti += 1;
                    let es = tile.dtype.size_bytes();
                    if a.raw.elem_size as usize != es {
                        return Err(format!(
                            "argument `{}`: {}-byte tensor elements for a {} tile",
                            p.name, a.raw.elem_size, tile.dtype
                        ));
                    }
                    if a.col_stride <= 1 {
                        // SAFETY: `origin` is inside the tensor buffer.
                        let ptr = unsafe { a.raw.base.add(a.origin * es) };
                        block[*s] = ptr as u64;
                        block[s + 1] = a.row_stride as u64;
                    } else {
                        let mut v = vec![0u8; a.rows * a.cols * es];
                        copy_region(a, es, &mut v, true);
                        block[*s] = v.as_ptr() as u64;
                        block[s + 1] = a.cols as u64;
                        copies.push((ti - 1, v));
                    }
                    block[s + 2] = a.rows as u64;
                    block[s + 3] = a.cols as u64;
                }
                (ParamKind::Scalar { dtype, .. }, Some(wsp_jit::abi::ParamSlot::Scalar(s))) => {
                    block[*s] = wsp_jit::abi::scalar_slot(*dtype, scalar_of(*dtype, vals[vi]));
                    vi += 1;
                }
                _ => return Err("argument layout mismatch".into()),
            }
        }
        // SAFETY: every tile pointer addresses `rows` rows of `cols` valid elements of the
        // parameter's dtype at the given row stride, inside a live tensor buffer or a dense
        // copy; the kernel checks the extents against its static shapes before any access.
        unsafe { self.ck.call_raw(block, scratch) }.map_err(|e| e.message)?;
        let mut ti = 0;
        for p in &self.k.params {
            let ParamKind::Tile { dir, tile, .. } = p.kind else {
                continue;
            };
            let this = ti;
            ti += 1;
            if !dir.writes() {
                continue;
            }
            if let Some((_, v)) = copies.iter_mut().find(|(i, _)| *i == this) {
                copy_region(&tiles[this], tile.dtype.size_bytes(), v, false);
            }
        }
        Ok(())
    }
}

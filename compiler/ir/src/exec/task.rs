//! Task calls: waiting for the data a call reads, resolving its coordinates, arguments and
//! tile views, and handing the task to the backend.

use super::eval::V;
use super::{
    expr_reads, task_label, xerr, ExecError, Machine, TaskInstance, TaskRecord, TaskValue, Thread,
    TileView,
};
use crate::dtype::ScalarValue;
use crate::kernel::{Kernel, ParamKind, TileType};
use crate::tensor::HostTensor;
use crate::workload::*;
use std::fmt;

impl<'p> Machine<'p, '_> {
    /// Waits (through the backend) until the tensors in `reads` hold their producers' data.
    pub(super) fn sync(&mut self, reads: &[TensorId]) -> Result<(), ExecError> {
        for t in reads {
            self.backend.sync(*t, self.tensors).map_err(xerr)?;
        }
        Ok(())
    }

    /// Runs one task; returns its coordinates.
    /// Runs one task call. Errors of the call itself (its coordinates, views, arguments, and
    /// what the backend says of it) are placed at the call; a failure elsewhere that surfaces
    /// meanwhile (waiting for data, submitting) is reported as it is.
    pub(super) fn exec_task(
        &mut self,
        th: &Thread<'p>,
        call: &TaskCall,
    ) -> Result<Vec<i64>, ExecError> {
        let p = self.p;
        let k: &Kernel = p
            .kernel(call.kernel)
            .ok_or_else(|| xerr(format!("kernel #{} does not exist", call.kernel.0)))?;
        let mut reads = Vec::new();
        call.coords.iter().for_each(|c| expr_reads(c, &mut reads));
        for a in &call.args {
            if let TaskArg::Scalar { value } = a {
                expr_reads(value, &mut reads);
            }
        }
        self.sync(&reads)?;
        let (coords, args, task) = self
            .resolve_call(th, call, k)
            .map_err(|e| e.within(&call.at))?;
        let axes: Vec<(AxisId, i64)> = th
            .var_axes
            .iter()
            .zip(&th.vars)
            .filter_map(|(a, v)| Some(((*a)?, (*v)?)))
            .collect();
        let process = th.process.map(|_| th.name.as_str());
        let inst = TaskInstance {
            kernel: call.kernel,
            ir: k,
            coords: &coords,
            args: &args,
            process,
            axes: &axes,
            at: call.at.as_ref(),
        };
        self.backend
            .task(&inst, self.tensors)
            .map_err(|e| e.of_task(&task, &call.at))?;
        if !self.backend.keeps_records() {
            return Ok(coords);
        }
        self.out
            .tasks
            .push(TaskRecord::new(call.kernel, &coords, process, &args));
        Ok(coords)
    }

    /// A call's coordinates, arguments and name.
    fn resolve_call(
        &self,
        th: &Thread<'p>,
        call: &TaskCall,
        k: &Kernel,
    ) -> Result<(Vec<i64>, Vec<TaskValue>, String), ExecError> {
        let coords = call
            .coords
            .iter()
            .map(|c| self.eval_int(th, c, "a task coordinate"))
            .collect::<Result<Vec<_>, _>>()?;
        let task = task_label(k, &coords);
        if call.args.len() != k.params.len() {
            return Err(xerr(format!(
                "{task}: {} arguments for {} parameters",
                call.args.len(),
                k.params.len()
            )));
        }
        let mut args = Vec::with_capacity(k.params.len());
        for (param, arg) in k.params.iter().zip(&call.args) {
            match (&param.kind, arg) {
                (ParamKind::Tile { tile, partial, .. }, TaskArg::View(view)) => {
                    let v = self.resolve_view(th, view, *tile, *partial, &task, &param.name)?;
                    args.push(TaskValue::Tile(v));
                }
                (ParamKind::Scalar { .. }, TaskArg::Scalar { value }) => {
                    let v = self.eval(th, value)?;
                    args.push(TaskValue::Scalar(match v {
                        V::I(i) => ScalarValue::Int(i),
                        V::F(f) => ScalarValue::Float(f),
                        V::B(b) => ScalarValue::Bool(b),
                    }));
                }
                _ => {
                    return Err(xerr(format!(
                        "{task}: argument `{}` is of the wrong kind (view vs scalar)",
                        param.name
                    )))
                }
            }
        }
        Ok((coords, args, task))
    }

    fn resolve_view(
        &self,
        th: &Thread<'p>,
        view: &View,
        tile: TileType,
        partial: [bool; 2],
        task: &str,
        pname: &str,
    ) -> Result<TileView, ExecError> {
        self.p
            .tensors
            .get(view.tensor.index())
            .ok_or_else(|| xerr(format!("tensor #{} does not exist", view.tensor.0)))?;
        let t = self
            .tensors
            .get(view.tensor.index())
            .ok_or_else(|| xerr("bad tensor"))?;
        let rank = t.shape.len();
        // Evaluate every dimension first, for the message.
        let mut dims: Vec<(i64, Option<i64>)> = Vec::with_capacity(rank);
        for d in 0..rank {
            dims.push(match view.dims.get(d) {
                Some(ViewDim::Index { at }) => (self.affine(th, at)?, None),
                Some(ViewDim::Slice { start, end }) => {
                    (self.affine(th, start)?, Some(self.affine(th, end)?))
                }
                Some(ViewDim::Full) | None => (0, Some(t.shape[d] as i64)),
            });
        }
        let mut out = TileView::empty();
        resolve_view_dims(
            self.p,
            self.tensors,
            view,
            &dims,
            tile,
            partial,
            &task,
            pname,
            &mut out,
        )?;
        Ok(out)
    }
}

/// Resolves a view of a task whose dimensions are evaluated into `out`: per tensor dimension,
/// the index (`(i, None)`) or the slice (`(start, Some(end))`; a whole dimension is
/// `(0, Some(size))`). Checks the view against the tensor and the kernel parameter (`pname`
/// of tile type `tile`, `partial` per tile dimension); `task` names the task in messages
/// (formatted only for one). `out`'s vector is reused (a caller resolving many views keeps one
/// per argument); `out` is unspecified after an error.
#[allow(clippy::too_many_arguments)]
pub fn resolve_view_dims(
    p: &Program,
    tensors: &[HostTensor],
    view: &View,
    dims: &[(i64, Option<i64>)],
    tile: TileType,
    partial: [bool; 2],
    task: &dyn fmt::Display,
    pname: &str,
    out: &mut TileView,
) -> Result<(), ExecError> {
    let decl = p
        .tensors
        .get(view.tensor.index())
        .ok_or_else(|| xerr(format!("tensor #{} does not exist", view.tensor.0)))?;
    let t = tensors
        .get(view.tensor.index())
        .ok_or_else(|| xerr("bad tensor"))?;
    let rank = t.shape.len();
    if dims.len() != rank {
        return Err(xerr(format!(
            "{task}: view of `{}` has {} evaluated dimensions for rank {rank}",
            decl.name,
            dims.len()
        )));
    }
    // Only error messages use these: built on demand, not per task.
    let shown = || {
        format!(
            "`{pname}: {}[{}]`",
            decl.name,
            dims.iter()
                .map(|(s, e)| match e {
                    None => s.to_string(),
                    Some(e) => format!("{s}..{e}"),
                })
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let shape_s = || format!("{:?}", t.shape);
    if view.dims.len() > rank {
        return Err(xerr(format!(
            "{task}: view {shown} indexes {} dimensions of `{}` of shape {shape_s}",
            view.dims.len(),
            decl.name,
            shown = shown(),
            shape_s = shape_s()
        )));
    }
    if t.dtype != tile.dtype {
        return Err(xerr(format!(
            "{task}: view {shown} is {} but parameter `{pname}` is {}",
            t.dtype,
            tile.dtype,
            shown = shown()
        )));
    }
    // The kept (sliced) dimensions hold the tile's: one kept dimension is the tile's
    // columns, two are its rows and columns.
    let mut kept = [0usize; 2];
    let mut nkept = 0;
    for (d, (_, e)) in dims.iter().enumerate() {
        if e.is_some() {
            if nkept == 2 {
                let n = dims.iter().filter(|(_, e)| e.is_some()).count();
                return Err(xerr(format!(
                    "{task}: view {shown} keeps {n} dimensions; a tile has at most 2",
                    shown = shown()
                )));
            }
            kept[nkept] = d;
            nkept += 1;
        }
    }
    // Tile dimension (0 rows, 1 columns) to tensor dimension.
    let (row_dim, col_dim) = match nkept {
        0 => (None, None),
        1 => (None, Some(kept[0])),
        _ => (Some(kept[0]), Some(kept[1])),
    };
    if nkept < 2 && tile.shape[0] != 1 || nkept == 0 && tile.shape[1] != 1 {
        return Err(xerr(format!(
            "{task}: view {shown} has fewer dimensions than parameter `{pname}` of shape [{}, {}]",
            tile.shape[0],
            tile.shape[1],
            shown = shown()
        )));
    }
    let mut valid = [1u32, 1u32];
    let oob = |d: usize| {
        xerr(format!(
            "{task}: view {shown} is out of range in dimension {d} of `{}` (shape {shape_s})",
            decl.name,
            shown = shown(),
            shape_s = shape_s()
        ))
    };
    let mut extents = std::mem::take(&mut out.dims);
    extents.clear();
    for (d, &(s, e)) in dims.iter().enumerate() {
        let size = t.shape[d] as i64;
        match e {
            None => {
                if s < 0 || s >= size {
                    return Err(oob(d));
                }
                extents.push((s, 1));
            }
            Some(e) => {
                let td = usize::from(Some(d) == col_dim);
                let len = e - s;
                let stat = i64::from(tile.shape[td]);
                let part = partial[td];
                if s < 0 || len < 0 || (part && len > stat) || (!part && len != stat) {
                    if s >= 0 && len >= 0 {
                        return Err(xerr(format!(
                            "{task}: view {shown} has extent {len} in dimension {d}, parameter `{pname}` needs {}{stat}",
                            if part { "at most " } else { "" }, shown = shown())));
                    }
                    return Err(oob(d));
                }
                let clipped = if e > size {
                    if !part || s > size {
                        return Err(oob(d));
                    }
                    size - s
                } else {
                    len
                };
                valid[td] = clipped as u32;
                extents.push((s, clipped));
            }
        }
    }
    // Row-major strides, from the last dimension: the origin and the kept dimensions' strides.
    let (mut origin, mut stride) = (0usize, 1usize);
    let (mut row_stride, mut col_stride) = (0usize, 0usize);
    for d in (0..rank).rev() {
        origin += extents[d].0 as usize * stride;
        if Some(d) == row_dim {
            row_stride = stride;
        }
        if Some(d) == col_dim {
            col_stride = stride;
        }
        stride *= t.shape[d];
    }
    *out = TileView {
        tensor: view.tensor,
        origin,
        row_stride,
        col_stride,
        valid,
        dims: extents,
        row_dim,
        col_dim,
    };
    Ok(())
}

//! The tensor data the orchestration reads: which tensors an iterator or an expression reads
//! (synchronised before), and the checked reads themselves (Ragged lengths, Sparse positions
//! and columns, tensor elements).

use super::{xerr, ExecError, MAX_LOOP_ITERATIONS};
use crate::dtype::ScalarValue;
use crate::tensor::{El, HostTensor};
use crate::workload::*;

fn axis_of(p: &Program, a: AxisId) -> Result<&Axis, ExecError> {
    p.axes
        .get(a.index())
        .ok_or_else(|| xerr(format!("axis #{} does not exist", a.0)))
}

/// Element `i` of `t`, one of the integer tensors describing axis `ax` (`what`: `lengths`,
/// `indptr` or `indices`), read by `thread`.
fn axis_data(
    p: &Program,
    tensors: &[HostTensor],
    ax: &Axis,
    t: TensorId,
    i: i64,
    what: &str,
    thread: &str,
) -> Result<i64, ExecError> {
    let tensor = tensors
        .get(t.index())
        .ok_or_else(|| xerr(format!("tensor #{} does not exist", t.0)))?;
    match tensor.at(&[i]) {
        Some(El::I(v)) => i64::try_from(v).map_err(|_| xerr("axis data overflow")),
        Some(_) => Err(xerr(format!(
            "axis `{}`: {what} `{}` must be an integer tensor",
            ax.name,
            tensor_name(p, t)
        ))),
        None => Err(xerr(format!(
            "axis `{}`: index {i} is outside {what} `{}` of shape {:?} (in {thread})",
            ax.name,
            tensor_name(p, t),
            tensor.shape,
        ))),
    }
}

/// The length of row `b` of Ragged axis `a` (its `lengths[b]`, checked).
pub fn ragged_row_len(
    p: &Program,
    tensors: &[HostTensor],
    a: AxisId,
    b: i64,
    thread: &str,
) -> Result<i64, ExecError> {
    let ax = axis_of(p, a)?;
    let AxisKind::Ragged { lengths, per, .. } = &ax.kind else {
        return Err(xerr(format!("axis `{}` is not Ragged", ax.name)));
    };
    let n =
        axis_data(p, tensors, ax, *lengths, b, "lengths", thread).map_err(|e| e.on_axis(&ax.at))?;
    if n < 0 || n > MAX_LOOP_ITERATIONS as i64 {
        return Err(xerr(format!(
            "axis `{}`: row {b} has length {n}, outside 0..={MAX_LOOP_ITERATIONS}",
            ax.name
        ))
        .on_axis(&ax.at));
    }
    // Tiles of `per` elements: the last one partial.
    Ok(match per {
        Some(k) if *k > 0 => (n + i64::from(*k) - 1) / i64::from(*k),
        _ => n,
    })
}

/// The positions `indptr[b] .. indptr[b+1]` of row `b` of Sparse axis `a` (checked).
pub fn sparse_row_span(
    p: &Program,
    tensors: &[HostTensor],
    a: AxisId,
    b: i64,
    thread: &str,
) -> Result<(i64, i64), ExecError> {
    let ax = axis_of(p, a)?;
    let AxisKind::Sparse { indptr, .. } = &ax.kind else {
        return Err(xerr(format!("axis `{}` is not Sparse", ax.name)));
    };
    let on_axis = |e: ExecError| e.on_axis(&ax.at);
    let s = axis_data(p, tensors, ax, *indptr, b, "indptr", thread).map_err(on_axis)?;
    let e = axis_data(p, tensors, ax, *indptr, b + 1, "indptr", thread).map_err(on_axis)?;
    if e < s {
        return Err(on_axis(xerr(format!(
            "axis `{}`: indptr is decreasing at row {b} ({s} then {e})",
            ax.name
        ))));
    }
    Ok((s, e))
}

/// The column stored at position `i` of Sparse axis `a` (`indices[i]`).
pub fn sparse_col(
    p: &Program,
    tensors: &[HostTensor],
    a: AxisId,
    i: i64,
    thread: &str,
) -> Result<i64, ExecError> {
    let ax = axis_of(p, a)?;
    let AxisKind::Sparse { indices, .. } = &ax.kind else {
        return Err(xerr(format!("axis `{}` is not Sparse", ax.name)));
    };
    axis_data(p, tensors, ax, *indices, i, "indices", thread).map_err(|e| e.on_axis(&ax.at))
}

/// Element `idx` of tensor `t` as the orchestration reads it (`Expr::Elem`), by `thread`:
/// floats as `Float`, integers as `Int` (an error if outside i64), bools as `Bool`.
pub fn read_elem(
    p: &Program,
    tensors: &[HostTensor],
    t: TensorId,
    idx: &[i64],
    thread: &str,
) -> Result<ScalarValue, ExecError> {
    let tensor = tensors
        .get(t.index())
        .ok_or_else(|| xerr(format!("tensor #{} does not exist", t.0)))?;
    match tensor.at(idx) {
        Some(El::F(f)) => Ok(ScalarValue::Float(f)),
        Some(El::I(i)) => Ok(ScalarValue::Int(i64::try_from(i).map_err(|_| {
            xerr(format!(
                "element {idx:?} of `{}` does not fit in i64",
                tensor_name(p, t)
            ))
        })?)),
        Some(El::B(b)) => Ok(ScalarValue::Bool(b)),
        None => Err(xerr(format!(
            "in {thread}: element {idx:?} is outside `{}` of shape {:?}",
            tensor_name(p, t),
            tensor.shape
        ))),
    }
}

/// The tensors an iterator reads (Ragged lengths, Sparse indptr/indices, sizes).
pub fn iter_reads(p: &Program, it: &Iter, out: &mut Vec<TensorId>) {
    let axis_reads = |a: AxisId, out: &mut Vec<TensorId>| {
        let Some(ax) = p.axes.get(a.index()) else {
            return;
        };
        match &ax.kind {
            AxisKind::Dense { .. } => {}
            AxisKind::DenseDyn { size } => expr_reads(size, out),
            AxisKind::Ragged { lengths, .. } => out.push(*lengths),
            AxisKind::Sparse {
                indptr, indices, ..
            } => {
                out.push(*indptr);
                out.push(*indices);
            }
        }
    };
    match it {
        Iter::Range { start, end } => {
            expr_reads(start, out);
            expr_reads(end, out);
        }
        Iter::Row { axis, .. } => axis_reads(*axis, out),
        Iter::Axis { axis } => {
            axis_reads(*axis, out);
            if let Some(ax) = p.axes.get(axis.index()) {
                if let AxisKind::Ragged { outer, .. } | AxisKind::Sparse { outer, .. } = ax.kind {
                    axis_reads(outer, out);
                }
            }
        }
    }
}

/// The tensors an expression reads elements of (each once, in order).
pub fn expr_reads(e: &Expr, out: &mut Vec<TensorId>) {
    match e {
        Expr::Const { .. } | Expr::Param { .. } | Expr::Var { .. } => {}
        Expr::Elem { tensor, index } => {
            if !out.contains(tensor) {
                out.push(*tensor);
            }
            index.iter().for_each(|i| expr_reads(i, out));
        }
        Expr::Neg { x } | Expr::Not { x } => expr_reads(x, out),
        Expr::Binary { lhs, rhs, .. } => {
            expr_reads(lhs, out);
            expr_reads(rhs, out);
        }
    }
}

fn tensor_name(p: &Program, t: TensorId) -> &str {
    p.tensors
        .get(t.index())
        .map(|t| t.name.as_str())
        .unwrap_or("?")
}

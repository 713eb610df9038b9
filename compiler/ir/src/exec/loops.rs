//! Loops and axes: the iteration tuples of a `for` (counted level by level like an odometer,
//! or listed up front when their domains read data), the domains of ranges and of Dense,
//! DenseDyn, Ragged and Sparse axes, and the limits on iterations.

use super::{
    ragged_row_len, sparse_col, sparse_row_span, xerr, ExecError, Machine, Thread, Tuples,
    MAX_LOOP_ITERATIONS,
};
use crate::workload::*;

impl<'p> Machine<'p, '_> {
    /// Binds the loop's variables to its next tuple (iteration `n`); false when there is none.
    pub(super) fn next_tuple(
        &self,
        th: &mut Thread<'p>,
        vars: &[LoopVar],
        tuples: &mut Tuples<'p>,
        n: usize,
    ) -> Result<bool, ExecError> {
        match tuples {
            Tuples::Listed { flat, width, len } => {
                if n >= *len {
                    return Ok(false);
                }
                let Some(tuple) = flat.get(n * *width..(n + 1) * *width) else {
                    return Ok(false);
                };
                for (v, x) in vars.iter().zip(tuple) {
                    set_var(th, *v, *x)?;
                }
                Ok(true)
            }
            Tuples::Counted { iters, at } => {
                // An odometer: step the innermost level, and (re)start the levels inside
                // one that stepped from their first values, whose bounds may read the
                // variables outside them; an empty level steps the one outside it.
                let mut k = if n == 0 {
                    0
                } else {
                    let last = iters.len() - 1;
                    at[last].0 += 1;
                    last
                };
                let mut start = n == 0;
                loop {
                    if start {
                        at[k] = self.level_bounds(th, &iters[k])?;
                    }
                    if at[k].0 < at[k].1 {
                        set_var(th, vars[k], at[k].0)?;
                        if k + 1 == iters.len() {
                            // The listed form (and the compiled orchestration) refuse as many.
                            if n >= MAX_LOOP_ITERATIONS {
                                return Err(too_many_iterations(th));
                            }
                            return Ok(true);
                        }
                        k += 1;
                        start = true;
                    } else {
                        if k == 0 {
                            return Ok(false);
                        }
                        k -= 1;
                        at[k].0 += 1;
                        start = false;
                    }
                }
            }
            Tuples::Moved => Err(xerr("a loop's tuples were taken")),
        }
    }

    /// The (first, end) of one level of a counted loop: a range, or a Dense/DenseDyn axis.
    fn level_bounds(&self, th: &Thread<'p>, it: &Iter) -> Result<(i64, i64), ExecError> {
        match it {
            Iter::Range { start, end } => {
                let s = self.eval_int(th, start, "a range start")?;
                let e = self.eval_int(th, end, "a range end")?;
                range_ok(th, s, e)?;
                Ok((s, e))
            }
            Iter::Axis { axis } => Ok((0, self.flat_len(th, *axis)?)),
            Iter::Row { .. } => Err(xerr("a row iterator in a counted loop")),
        }
    }

    /// Generates the iteration tuples of a `for`, binding variables as it goes so that later
    /// iterators may depend on earlier ones.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn iterate(
        &self,
        th: &Thread<'p>,
        vars: &[LoopVar],
        iters: &[Iter],
        k: usize,
        env: &mut Vec<Option<i64>>,
        prefix: &mut Vec<i64>,
        out: &mut (Vec<i64>, usize),
    ) -> Result<(), ExecError> {
        let Some(it) = iters.get(k) else {
            if prefix.len() != vars.len() {
                return Err(arity_error(th, vars.len(), prefix.len()));
            }
            if out.1 >= MAX_LOOP_ITERATIONS {
                return Err(too_many_iterations(th));
            }
            out.0.extend_from_slice(prefix);
            out.1 += 1;
            return Ok(());
        };
        let scratch = Thread {
            name: th.name.clone(),
            vars: env.clone(),
            var_names: th.var_names,
            frames: Vec::new(),
            pending: None,
            awaiting: None,
            process: None,
            waiting: None,
            var_axes: Vec::new(),
            external: None,
        };
        let domain = self.domain(&scratch, it)?;
        for tuple in domain {
            let n = tuple.len();
            for (j, x) in tuple.iter().enumerate() {
                if let Some(v) = vars.get(prefix.len() + j) {
                    if let Some(slot) = env.get_mut(v.index()) {
                        *slot = Some(*x);
                    }
                }
            }
            prefix.extend(tuple);
            self.iterate(th, vars, iters, k + 1, env, prefix, out)?;
            prefix.truncate(prefix.len() - n);
        }
        Ok(())
    }

    /// The values one iterator ranges over (tuples of 1 or 2 values).
    fn domain(&self, th: &Thread<'p>, it: &Iter) -> Result<Vec<Vec<i64>>, ExecError> {
        match it {
            Iter::Range { start, end } => {
                let s = self.eval_int(th, start, "a range start")?;
                let e = self.eval_int(th, end, "a range end")?;
                range_ok(th, s, e)?;
                Ok((s..e).map(|i| vec![i]).collect())
            }
            Iter::Row { axis, row } => {
                let b = self.affine(th, row)?;
                Ok(self
                    .row(th, *axis, b)?
                    .into_iter()
                    .map(|i| vec![i])
                    .collect())
            }
            Iter::Axis { axis } => {
                let a = self.axis(*axis)?;
                match &a.kind {
                    AxisKind::Dense { .. } | AxisKind::DenseDyn { .. } => {
                        Ok(self.flat(th, *axis)?.into_iter().map(|i| vec![i]).collect())
                    }
                    AxisKind::Ragged { outer, .. } | AxisKind::Sparse { outer, .. } => {
                        let mut out = Vec::new();
                        for b in self.flat(th, *outer)? {
                            for i in self.row(th, *axis, b)? {
                                out.push(vec![b, i]);
                            }
                        }
                        Ok(out)
                    }
                }
            }
        }
    }

    pub(super) fn axis(&self, a: AxisId) -> Result<&'p Axis, ExecError> {
        self.p
            .axes
            .get(a.index())
            .ok_or_else(|| xerr(format!("axis #{} does not exist", a.0)))
    }

    /// A Dense/DenseDyn axis as a flat range.
    fn flat(&self, th: &Thread<'p>, a: AxisId) -> Result<Vec<i64>, ExecError> {
        Ok((0..self.flat_len(th, a)?).collect())
    }

    /// The size of a Dense/DenseDyn axis.
    fn flat_len(&self, th: &Thread<'p>, a: AxisId) -> Result<i64, ExecError> {
        let ax = self.axis(a)?;
        let n = match &ax.kind {
            AxisKind::Dense { size } => i64::try_from(*size).unwrap_or(i64::MAX),
            AxisKind::DenseDyn { size } => self.eval_int(th, size, "an axis size")?,
            _ => {
                return Err(xerr(format!(
                    "axis `{}` is nested; iterate it with its row (`{}[b]`) or as a whole",
                    ax.name, ax.name
                )))
            }
        };
        if n < 0 {
            return Err(
                xerr(format!("axis `{}` has a negative size ({n})", ax.name)).on_axis(&ax.at),
            );
        }
        Ok(n)
    }

    /// Row `b` of a Ragged or Sparse axis.
    fn row(&self, th: &Thread<'p>, a: AxisId, b: i64) -> Result<Vec<i64>, ExecError> {
        let ax = self.axis(a)?;
        match &ax.kind {
            AxisKind::Ragged { .. } => {
                let n = ragged_row_len(self.p, self.tensors, a, b, &th.name)?;
                Ok((0..n).collect())
            }
            AxisKind::Sparse { .. } => {
                let (s, e) = sparse_row_span(self.p, self.tensors, a, b, &th.name)?;
                (s..e)
                    .map(|i| sparse_col(self.p, self.tensors, a, i, &th.name))
                    .collect()
            }
            _ => Err(xerr(format!(
                "axis `{}` is not Ragged or Sparse; it has no rows",
                ax.name
            ))),
        }
    }
}

/// Whether a loop runs counted level by level (no materialised tuples): its iterators
/// (`reads`: the tensors their bounds read) read no data and are ranges or Dense/DenseDyn
/// axes. Both orchestration engines decide by this.
pub fn counted_loop(p: &Program, iters: &[Iter], reads: &[TensorId]) -> bool {
    reads.is_empty()
        && !iters.is_empty()
        && iters.iter().all(|it| match it {
            Iter::Range { .. } => true,
            Iter::Axis { axis } => matches!(
                p.axes.get(axis.index()).map(|a| &a.kind),
                Some(AxisKind::Dense { .. } | AxisKind::DenseDyn { .. })
            ),
            Iter::Row { .. } => false,
        })
}

pub(super) fn arity_error(th: &Thread<'_>, vars: usize, values: usize) -> ExecError {
    xerr(format!(
        "in {}: a loop binds {vars} variables but its iterators give {values}",
        th.name
    ))
}

fn too_many_iterations(th: &Thread<'_>) -> ExecError {
    xerr(format!(
        "in {}: a loop has more than {MAX_LOOP_ITERATIONS} iterations",
        th.name
    ))
}

fn range_ok(th: &Thread<'_>, s: i64, e: i64) -> Result<(), ExecError> {
    if e.saturating_sub(s) > MAX_LOOP_ITERATIONS as i64 {
        return Err(xerr(format!(
            "in {}: range {s}..{e} has more than {MAX_LOOP_ITERATIONS} iterations",
            th.name
        )));
    }
    Ok(())
}

pub(super) fn set_var(th: &mut Thread<'_>, v: LoopVar, x: i64) -> Result<(), ExecError> {
    match th.vars.get_mut(v.index()) {
        Some(slot) => {
            *slot = Some(x);
            Ok(())
        }
        None => Err(xerr(format!("loop variable #{} does not exist", v.0))),
    }
}

//! Axis declarations: Dense, DenseDyn, Ragged (with `per`) and Sparse.

use crate::{is_name, Lowerer, R};
use std::collections::BTreeMap;
use wsp_ir::workload as w;
use wsp_syntax::ast::{self, ExprKind};

impl Lowerer {
    pub(super) fn axis(&mut self, a: &ast::AxisDecl) -> R<()> {
        let kind = match &a.ctor.kind {
            ExprKind::Index { base, indices } if is_name(base, "Dense") && indices.len() == 1 => {
                let n = self.const_int(&indices[0])?;
                w::AxisKind::Dense {
                    size: n.max(0) as u64,
                }
            }
            ExprKind::Call {
                callee,
                coords: None,
                args,
            } => {
                let get_tensor = |i: usize| -> R<w::TensorId> {
                    match args.get(i).map(|a| &a.value.kind) {
                        Some(ExprKind::Name(n)) => self
                            .tensors
                            .get(&n.name)
                            .copied()
                            .ok_or_else(|| self.unsupported(a.ctor.span, "this axis argument")),
                        _ => Err(self.unsupported(a.ctor.span, "this axis argument")),
                    }
                };
                let get_axis = || -> R<w::AxisId> {
                    match args.first().map(|a| &a.value.kind) {
                        Some(ExprKind::Name(n)) => {
                            self.axes.get(&n.name).copied().ok_or_else(|| {
                                self.unsupported(a.ctor.span, "an axis declared after its use")
                            })
                        }
                        _ => Err(self.unsupported(a.ctor.span, "this axis argument")),
                    }
                };
                if is_name(callee, "DenseDyn") {
                    let Some(arg) = args.first() else {
                        return Err(self.unsupported(a.ctor.span, "this axis"));
                    };
                    w::AxisKind::DenseDyn {
                        size: self.rexpr(&arg.value, &BTreeMap::new())?,
                    }
                } else if is_name(callee, "Ragged") {
                    let per = match args
                        .iter()
                        .find(|x| x.name.as_ref().is_some_and(|n| n.name == "per"))
                    {
                        Some(x) => Some(
                            u32::try_from(self.const_int(&x.value)?)
                                .ok()
                                .filter(|k| *k > 0)
                                .ok_or_else(|| self.unsupported(x.value.span, "this `per`"))?,
                        ),
                        None => None,
                    };
                    w::AxisKind::Ragged {
                        outer: get_axis()?,
                        lengths: get_tensor(1)?,
                        per,
                    }
                } else if is_name(callee, "Sparse") {
                    w::AxisKind::Sparse {
                        outer: get_axis()?,
                        indptr: get_tensor(1)?,
                        indices: get_tensor(2)?,
                    }
                } else {
                    return Err(self.unsupported(a.ctor.span, "this axis constructor"));
                }
            }
            _ => return Err(self.unsupported(a.ctor.span, "this axis constructor")),
        };
        self.axes
            .insert(a.name.name.clone(), w::AxisId(self.p.axes.len() as u32));
        self.p.axes.push(w::Axis {
            name: a.name.name.clone(),
            kind,
            at: Some(self.src_span(a.ctor.span)),
        });
        Ok(())
    }
}

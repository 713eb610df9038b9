//! Global tensor shapes: each dimension is a constant or an affine form of params
//! (`seq`, `T * 64`, `seq + 1`), which is what a run evaluates once the params are bound
//! (E0215); a dimension with no value as a constant is E0213 elsewhere.

use super::*;

impl Checker<'_> {
    /// The dimensions of global tensor `d`.
    pub(super) fn tensor_dims(&mut self, d: &wsp_syntax::ast::TensorDecl) {
        for dim in d.ty.dims.iter().flatten() {
            let e = &dim.size;
            if crate::types::eval_int(e, self.consts).is_some() {
                continue;
            }
            let Some(names) = crate::races::affine_names(e, self.consts) else {
                self.diags.push(
                    Diagnostic::new(
                        codes::E0215,
                        format!(
                            "a dimension of tensor `{}` is neither a constant nor an affine form of params",
                            d.name.name
                        ),
                        self.label(e.span, "divides, multiplies params, or calls a function"),
                    )
                    .with_help(
                        "a dimension is a sum of params times constants plus a constant \
                         (`T * 64`, `seq + 1`): make the quotient the param (`param T: i64` and \
                         `f32[T * 64, 128]`), or keep the rows in one dimension (`f32[seq, 1]`) \
                         and view tiles of it (`M[i * 64..i * 64 + 64, :]`)",
                    ),
                );
                continue;
            };
            // Names that are not params (an axis, a tensor) have no value when a run binds
            // the params; unknown names are E0101 already.
            for n in names {
                let Some(sc) = self.scope.get(&n) else {
                    continue;
                };
                if !matches!(
                    sc.symbol,
                    crate::db::Symbol::Param | crate::db::Symbol::Const
                ) {
                    self.diags.push(
                        Diagnostic::new(
                            codes::E0215,
                            format!(
                                "a dimension of tensor `{}` names `{n}`, which is not a param",
                                d.name.name
                            ),
                            self.label(e.span, "not a constant or an affine form of params"),
                        )
                        .with_help(
                            "a dimension is a sum of params times constants plus a constant; \
                             declare the size as a `param` (`param n: i64 = 8`)",
                        ),
                    );
                }
            }
        }
    }
}

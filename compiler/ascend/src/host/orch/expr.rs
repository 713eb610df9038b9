//! Expressions of the orchestration as C: axis sizes, affine offsets, scalar and key
//! expressions, with the types they have in the generated code.

use super::*;

impl Orch<'_> {
    /// The size of a Dense/DenseDyn axis, as C (negative: an error at run time).
    pub(super) fn flat_len(&mut self, a: AxisId, cx: &Cx) -> Option<String> {
        let ax = self.p.axes.get(a.index())?;
        match &ax.kind {
            AxisKind::Dense { size } => Some(c_i64(i64::try_from(*size).unwrap_or(i64::MAX))),
            AxisKind::DenseDyn { size } => {
                let e = self.expr_ty(size, Ty::I, cx, "an axis size")?;
                Some(format!(
                    "({{ int64_t n_ = {e}; if (n_ < 0 && !wsp_err) wsp_err = \"axis `{}` has a negative size\"; n_; }})",
                    ax.name.replace(['"', '\\'], "_")
                ))
            }
            _ => {
                self.diags.push(diag(
                    format!(
                        "axis `{}` is nested; iterate it with its row (`{}[b]`) or as a whole",
                        ax.name, ax.name
                    ),
                    ax.at.clone(),
                ));
                None
            }
        }
    }

    pub(super) fn affine(&mut self, a: &Affine, _cx: &Cx) -> Option<String> {
        if a.terms.is_empty() {
            return Some(c_i64(a.constant));
        }
        if let (0, [(Sym::Var(v), 1)]) = (a.constant, a.terms.as_slice()) {
            return Some(format!("st->v[{}]", v.0));
        }
        let mut coef = Vec::new();
        let mut val = Vec::new();
        for (s, c) in &a.terms {
            coef.push(c_i64(*c));
            val.push(match s {
                Sym::Var(v) => format!("st->v[{}]", v.0),
                Sym::Param(p) => match self.params.get(p.index()) {
                    Some(ScalarValue::Int(i)) => c_i64(*i),
                    Some(ScalarValue::UInt(u)) => c_i64(i64::try_from(*u).unwrap_or(i64::MAX)),
                    _ => {
                        self.diags
                            .push(diag(format!("param #{} is not an integer", p.0), None));
                        return None;
                    }
                },
            });
        }
        Some(format!(
            "wsp_affine({}, {}, (const int64_t[]){{{}}}, (const int64_t[]){{{}}})",
            c_i64(a.constant),
            coef.len(),
            coef.join(", "),
            val.join(", ")
        ))
    }

    /// An expression of type `want` (ints are not widened: the interpreter's checks).
    pub(super) fn expr_ty(&mut self, e: &Expr, want: Ty, cx: &Cx, what: &str) -> Option<String> {
        let (c, t) = self.expr(e, cx)?;
        if t != want {
            self.diags.push(diag(
                format!(
                    "in {}: {what} is {}, not {}",
                    cx.where_.trim_matches('"'),
                    ty_name(t),
                    ty_name(want)
                ),
                None,
            ));
            return None;
        }
        Some(c)
    }

    pub(super) fn scalar(&mut self, v: ScalarValue) -> (String, Ty) {
        match v {
            ScalarValue::Float(f) => (format!("wsp_fbits(UINT64_C({:#x}))", f.to_bits()), Ty::F),
            ScalarValue::Int(i) => (c_i64(i), Ty::I),
            ScalarValue::UInt(u) => (c_i64(i64::try_from(u).unwrap_or(i64::MAX)), Ty::I),
            ScalarValue::Bool(b) => (i32::from(b).to_string(), Ty::B),
        }
    }

    pub(super) fn expr(&mut self, e: &Expr, cx: &Cx) -> Option<(String, Ty)> {
        Some(match e {
            Expr::Const { value } => self.scalar(*value),
            Expr::Param { param } => match self.params.get(param.index()) {
                Some(v) => self.scalar(*v),
                None => {
                    self.diags
                        .push(diag(format!("param #{} does not exist", param.0), None));
                    return None;
                }
            },
            Expr::Var { var } => {
                if var.index() >= cx.nvars {
                    self.diags.push(diag(
                        format!("loop variable #{} does not exist", var.0),
                        None,
                    ));
                    return None;
                }
                (format!("st->v[{}]", var.0), Ty::I)
            }
            Expr::Elem { tensor, index } => {
                let Some(decl) = self.p.tensors.get(tensor.index()) else {
                    self.diags
                        .push(diag(format!("tensor #{} does not exist", tensor.0), None));
                    return None;
                };
                let mut idx = Vec::new();
                for i in index {
                    idx.push(self.expr_ty(i, Ty::I, cx, "a tensor index")?);
                }
                let flat = format!(
                    "wsp_flat({}, {}, (const int64_t[]){{{}}})",
                    tensor.0,
                    idx.len(),
                    if idx.is_empty() {
                        "0".to_string()
                    } else {
                        idx.join(", ")
                    }
                );
                let flat = if idx.is_empty() {
                    // A rank-0 tensor is one element (rank 1 in the runtime).
                    "INT64_C(0)".to_string()
                } else {
                    flat
                };
                if decl.dtype.is_float() {
                    (format!("wsp_elem_f(cx, {}, {flat})", tensor.0), Ty::F)
                } else if decl.dtype.is_bool() {
                    (format!("wsp_elem_b(cx, {}, {flat})", tensor.0), Ty::B)
                } else {
                    (format!("wsp_elem_i(cx, {}, {flat})", tensor.0), Ty::I)
                }
            }
            Expr::Neg { x } => {
                let (c, t) = self.expr(x, cx)?;
                match t {
                    Ty::I => (format!("wsp_neg({c})"), Ty::I),
                    Ty::F => (format!("(-({c}))"), Ty::F),
                    Ty::B => {
                        self.diags.push(diag("negation of a bool", None));
                        return None;
                    }
                }
            }
            Expr::Not { x } => {
                let (c, t) = self.expr(x, cx)?;
                if t != Ty::B {
                    self.diags.push(diag("`!` of a number", None));
                    return None;
                }
                (format!("(!({c}))"), Ty::B)
            }
            Expr::Binary { op, lhs, rhs } => {
                let (a, ta) = self.expr(lhs, cx)?;
                let (b, tb) = self.expr(rhs, cx)?;
                return self.binary(*op, (a, ta), (b, tb));
            }
        })
    }

    pub(super) fn binary(
        &mut self,
        op: ExprOp,
        (a, ta): (String, Ty),
        (b, tb): (String, Ty),
    ) -> Option<(String, Ty)> {
        use ExprOp::*;
        let bad = |s: &mut Self, m: String| {
            s.diags.push(diag(m, None));
            None
        };
        // Evaluated left to right as the interpreter does (C leaves argument order open:
        // both operands are read into temporaries first).
        let ab = |body: &str, ty: &str| format!("({{ {ty} a_ = {a}; {ty} b_ = {b}; {body}; }})");
        Some(match (ta, tb) {
            (Ty::I, Ty::I) => {
                let r = |f: &str| (ab(&format!("{f}(a_, b_)"), "int64_t"), Ty::I);
                let c = |o: &str| (ab(&format!("(int)(a_ {o} b_)"), "int64_t"), Ty::B);
                match op {
                    Add => r("wsp_add"),
                    Sub => r("wsp_sub"),
                    Mul => r("wsp_mul"),
                    Div => r("wsp_div"),
                    Rem => r("wsp_rem"),
                    Min => r("wsp_imin"),
                    Max => r("wsp_imax"),
                    Eq => c("=="),
                    Ne => c("!="),
                    Lt => c("<"),
                    Le => c("<="),
                    Gt => c(">"),
                    Ge => c(">="),
                    And | Or => return bad(self, "`&&`/`||` on integers".into()),
                }
            }
            (Ty::B, Ty::B) => {
                let c = |o: &str| (ab(&format!("(int)(a_ {o} b_)"), "int"), Ty::B);
                match op {
                    And => c("&&"),
                    Or => c("||"),
                    Eq => c("=="),
                    Ne => c("!="),
                    _ => return bad(self, format!("{op:?} on bools")),
                }
            }
            (Ty::B, _) | (_, Ty::B) => {
                return bad(self, format!("{op:?} mixes a bool and a number"))
            }
            _ => {
                let a = if ta == Ty::I {
                    format!("(double)({a})")
                } else {
                    a
                };
                let b = if tb == Ty::I {
                    format!("(double)({b})")
                } else {
                    b
                };
                let ab = |body: &str| format!("({{ double a_ = {a}; double b_ = {b}; {body}; }})");
                let f = |o: &str| (ab(&format!("a_ {o} b_")), Ty::F);
                let c = |o: &str| (ab(&format!("(int)(a_ {o} b_)")), Ty::B);
                match op {
                    Add => f("+"),
                    Sub => f("-"),
                    Mul => f("*"),
                    Div => f("/"),
                    Rem => (ab("fmod(a_, b_)"), Ty::F),
                    Min => (ab("wsp_fmin(a_, b_)"), Ty::F),
                    Max => (ab("wsp_fmax(a_, b_)"), Ty::F),
                    Eq => c("=="),
                    Ne => c("!="),
                    Lt => c("<"),
                    Le => c("<="),
                    Gt => c(">"),
                    Ge => c(">="),
                    And | Or => return bad(self, "`&&`/`||` on numbers".into()),
                }
            }
        })
    }

    /// A schedule key as C over the loop variables bound to axes around the call.
    pub(super) fn key(&mut self, k: &Key, cx: &Cx, at: &Option<SrcSpan>) -> Option<String> {
        Some(match k {
            Key::Int(v) => c_i64(*v),
            Key::Axis(a, name) => {
                // The innermost-numbered variable bound from the axis (the simulator's
                // `axes.iter().rev().find(..)`).
                let var = cx
                    .var_axes
                    .iter()
                    .enumerate()
                    .rev()
                    .find(|(_, x)| **x == Some(*a))
                    .map(|(i, _)| i);
                match var {
                    Some(i) => format!("st->v[{i}]"),
                    None => {
                        self.diags.push(diag(
                            format!("the schedule's key uses axis `{name}`, but the task is not inside a loop over it"),
                            at.clone(),
                        ));
                        return None;
                    }
                }
            }
            Key::Binary(op, l, r) => {
                let (a, b) = (self.key(l, cx, at)?, self.key(r, cx, at)?);
                let f = match op {
                    ExprOp::Add => "wsp_add",
                    ExprOp::Sub => "wsp_sub",
                    ExprOp::Mul => "wsp_mul",
                    ExprOp::Div => "wsp_div",
                    ExprOp::Rem => "wsp_rem",
                    ExprOp::Min => "wsp_imin",
                    ExprOp::Max => "wsp_imax",
                    other => {
                        self.diags
                            .push(diag(format!("`{other:?}` in a schedule key"), at.clone()));
                        return None;
                    }
                };
                format!("({{ int64_t a_ = {a}; int64_t b_ = {b}; {f}(a_, b_); }})")
            }
        })
    }
}

//! Ops on scalars: plain C++ with wsp's numeric rules (compute in f32 or f64, round to the
//! dtype; integers wrap; integer division by zero is an error).

use wsp_ir::kernel::*;
use wsp_ir::{DType, ScalarValue};

use super::emit::{compute_dtype, is_16, Cg, R};
use super::scalar::{constant, round_fn, scalar_ty};
use super::ErrorCode;

impl Cg<'_> {
    pub(super) fn scalar_op(&mut self, res: ValueId, d: DType, op: &Op) -> R<()> {
        let ty = scalar_ty(d);
        let r = format!("s{}", res.0);
        let e = match op {
            Op::Param { param } => match self.k.params.get(param.index()).map(|p| &p.kind) {
                Some(ParamKind::Scalar { .. }) => format!("p{}", param.0),
                _ => return Err(self.err(format!("parameter #{} is not a scalar", param.0))),
            },
            Op::Const { value, dtype } => constant(*value, *dtype),
            Op::Binary { op: bop, lhs, rhs } => {
                let (a, b) = (self.scalar_of(*lhs)?, self.scalar_of(*rhs)?);
                self.scalar_binary(*bop, d, &a, &b)?
            }
            Op::Cmp { op: cop, lhs, rhs } => {
                let (a, b) = (self.scalar_of(*lhs)?, self.scalar_of(*rhs)?);
                format!("({a} {} {b})", cop.symbol())
            }
            Op::Select {
                cond,
                on_true,
                on_false,
            } => {
                let (c, a, b) = (
                    self.scalar_of(*cond)?,
                    self.scalar_of(*on_true)?,
                    self.scalar_of(*on_false)?,
                );
                format!("({c} ? {a} : {b})")
            }
            Op::Unary { op: uop, x } => {
                let x = self.scalar_of(*x)?;
                self.scalar_unary(*uop, d, &x)?
            }
            Op::Cast { x, dtype } => {
                let from = self.value_type(*x)?.dtype();
                let x = self.scalar_of(*x)?;
                scalar_cast(&x, from, *dtype)
            }
            Op::VarRead { var } => match self.k.vars.get(var.index()).map(|v| v.ty) {
                Some(Type::Scalar { .. }) => format!("x{}", var.0),
                _ => return Err(self.err(format!("variable #{} is not a scalar", var.0))),
            },
            other => {
                return Err(self.err(format!(
                    "`{}` with a scalar result",
                    format!("{other:?}")
                        .split([' ', '{'])
                        .next()
                        .unwrap_or("op")
                )))
            }
        };
        self.line(format!("const {ty} {r} = {e};"));
        Ok(())
    }

    fn scalar_binary(&mut self, op: BinaryOp, d: DType, a: &str, b: &str) -> R<String> {
        if d == DType::Bool {
            return match op {
                BinaryOp::And => Ok(format!("({a} && {b})")),
                BinaryOp::Or => Ok(format!("({a} || {b})")),
                _ => Err(self.err(format!("`{}` on bool", op.symbol()))),
            };
        }
        let ty = scalar_ty(d);
        if d.is_float() {
            let e = match op {
                BinaryOp::Add => format!("({a} + {b})"),
                BinaryOp::Sub => format!("({a} - {b})"),
                BinaryOp::Mul => format!("({a} * {b})"),
                BinaryOp::Div => format!("({a} / {b})"),
                BinaryOp::Rem => format!("std::fmod({a}, {b})"),
                BinaryOp::Pow => format!("std::pow({a}, {b})"),
                BinaryOp::Max => format!("wsp_maximum<{ty}>({a}, {b})"),
                BinaryOp::Min => format!("wsp_minimum<{ty}>({a}, {b})"),
                BinaryOp::And | BinaryOp::Or => {
                    return Err(self.err(format!("`{}` on {d}", op.symbol())))
                }
            };
            return Ok(round(d, &format!("({ty}){e}")));
        }
        Ok(match op {
            BinaryOp::Add => format!("wsp_wrap<{ty}>((uint64_t){a} + (uint64_t){b})"),
            BinaryOp::Sub => format!("wsp_wrap<{ty}>((uint64_t){a} - (uint64_t){b})"),
            BinaryOp::Mul => format!("wsp_wrap<{ty}>((uint64_t){a} * (uint64_t){b})"),
            BinaryOp::Max => format!("({a} < {b} ? {b} : {a})"),
            BinaryOp::Min => format!("({b} < {a} ? {b} : {a})"),
            BinaryOp::Div | BinaryOp::Rem => {
                self.line(format!("if ({b} == 0) return {};", ErrorCode::Body as i32));
                let signed = matches!(d, DType::I8 | DType::I16 | DType::I32 | DType::I64);
                match (op, signed) {
                    (BinaryOp::Div, true) => format!(
                        "({b} == -1 ? wsp_wrap<{ty}>(0 - (uint64_t){a}) : ({ty})({a} / {b}))"
                    ),
                    (BinaryOp::Rem, true) => format!("({b} == -1 ? ({ty})0 : ({ty})({a} % {b}))"),
                    (BinaryOp::Div, false) => format!("({ty})({a} / {b})"),
                    _ => format!("({ty})({a} % {b})"),
                }
            }
            BinaryOp::Pow | BinaryOp::And | BinaryOp::Or => {
                return Err(self.err(format!("`{}` on {d}", op.symbol())))
            }
        })
    }

    fn scalar_unary(&self, op: UnaryOp, d: DType, x: &str) -> R<String> {
        if d == DType::Bool {
            return match op {
                UnaryOp::Not => Ok(format!("(!{x})")),
                _ => Err(self.err(format!("`{}` on bool", op.name()))),
            };
        }
        let ty = scalar_ty(d);
        if !d.is_float() {
            return match op {
                UnaryOp::Neg => Ok(format!("wsp_wrap<{ty}>(0 - (uint64_t){x})")),
                UnaryOp::Abs => Ok(format!(
                    "({x} < 0 ? wsp_wrap<{ty}>(0 - (uint64_t){x}) : {x})"
                )),
                UnaryOp::Relu => Ok(format!("({x} < 0 ? ({ty})0 : {x})")),
                _ => Err(self.err(format!("`{}` on {d}", op.name()))),
            };
        }
        let p = scalar_ty(compute_dtype(d));
        let c = |v: f64| constant(ScalarValue::Float(v), compute_dtype(d));
        let one = format!("({p})1");
        let e = match op {
            UnaryOp::Exp => format!("wsp_math_exp({x})"),
            UnaryOp::Log => format!("wsp_math_log({x})"),
            UnaryOp::Sqrt => format!("std::sqrt({x})"),
            UnaryOp::Rsqrt => format!("({one} / std::sqrt({x}))"),
            UnaryOp::Recip => format!("({one} / {x})"),
            UnaryOp::Tanh => format!("wsp_math_tanh({x})"),
            UnaryOp::Sin => format!("std::sin({x})"),
            UnaryOp::Cos => format!("std::cos({x})"),
            UnaryOp::Sigmoid => format!("({one} / ({one} + wsp_math_exp(-{x})))"),
            UnaryOp::Silu => format!("({x} * ({one} / ({one} + wsp_math_exp(-{x}))))"),
            UnaryOp::Relu => format!("wsp_maximum<{p}>({x}, ({p})0)"),
            UnaryOp::Gelu => format!(
                "(({p})0.5 * {x} * ({one} + wsp_math_tanh({} * ({x} + {} * {x} * {x} * {x}))))",
                c(0.797_884_560_802_865_4),
                c(0.044715)
            ),
            UnaryOp::Abs => format!("std::fabs({x})"),
            UnaryOp::Neg => format!("(-{x})"),
            UnaryOp::Not => return Err(self.err(format!("`not` on {d}"))),
        };
        Ok(round(d, &format!("({p}){e}")))
    }
}

fn round(d: DType, e: &str) -> String {
    match round_fn(d) {
        Some(f) => format!("{f}({e})"),
        None => e.to_string(),
    }
}

/// `cast(x)` of a scalar from `from` to `to` (the `cast` rules of the kernel IR).
pub(super) fn scalar_cast(x: &str, from: DType, to: DType) -> String {
    let ty = scalar_ty(to);
    if to == DType::Bool {
        return format!("({x} != 0)");
    }
    if from == DType::Bool {
        return format!("({ty})({x} ? 1 : 0)");
    }
    let signed = |d: DType| matches!(d, DType::I8 | DType::I16 | DType::I32 | DType::I64);
    if to.is_float() {
        if is_16(to) {
            let f32_odd = if from == DType::F64 {
                format!("wsp_f64_odd({x})")
            } else if from.is_float() {
                x.to_string()
            } else if signed(from) {
                format!("wsp_i64_odd((int64_t){x})")
            } else {
                format!("wsp_u64_odd((uint64_t){x})")
            };
            return round(to, &f32_odd);
        }
        return format!("({ty}){x}");
    }
    if from.is_float() {
        return format!("wsp_sat<{ty}>((double){x})");
    }
    format!("wsp_wrap<{ty}>((uint64_t){x})")
}

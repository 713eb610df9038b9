//! Expectations of the root file: `close(actual, expected, rtol, atol)` and comparisons of
//! run statistics (`total_cycles`, `tasks`).

use crate::consts::as_f64;
use crate::{is_name, Lowerer, R};
use wsp_ir::kernel as k;
use wsp_ir::workload as w;
use wsp_syntax::ast::{self, BinOp, ExprKind};

impl Lowerer {
    pub(super) fn expect(&mut self, e: &ast::Expect) -> R<()> {
        let x = &e.expr;
        let ex = match &x.kind {
            ExprKind::Call {
                callee,
                coords: None,
                args,
            } if is_name(callee, "close") => {
                let named = |n: &str| {
                    args.iter()
                        .find(|a| a.name.as_ref().is_some_and(|i| i.name == n))
                };
                let pos: Vec<&ast::Arg> = args.iter().filter(|a| a.name.is_none()).collect();
                let (Some(actual), Some(expected)) = (pos.first(), pos.get(1)) else {
                    return Err(self.unsupported(x.span, "this `close`"));
                };
                let actual = match &actual.value.kind {
                    ExprKind::Name(n) if self.tensors.contains_key(&n.name) => {
                        self.tensors[&n.name]
                    }
                    _ => return Err(self.unsupported(actual.span, "this `close` operand")),
                };
                let expected = match &expected.value.kind {
                    ExprKind::Name(n) if self.tensors.contains_key(&n.name) => {
                        w::ExpectData::Tensor {
                            tensor: self.tensors[&n.name],
                        }
                    }
                    _ => w::ExpectData::Init {
                        init: self.init(&expected.value)?,
                    },
                };
                let f = |n: &str| -> R<f64> {
                    match named(n) {
                        Some(a) => as_f64(self.scalar_const(&a.value)?)
                            .ok_or_else(|| self.unsupported(a.span, "this tolerance")),
                        None => Ok(0.0),
                    }
                };
                w::Expect::Close {
                    actual,
                    expected,
                    rtol: f("rtol")?,
                    atol: f("atol")?,
                }
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let stat = match &lhs.kind {
                    ExprKind::Name(n) if n.name == "total_cycles" => w::Stat::TotalCycles,
                    ExprKind::Name(n) if n.name == "tasks" => w::Stat::Tasks,
                    _ => return Err(self.unsupported(lhs.span, "this expectation")),
                };
                let op = match op {
                    BinOp::Eq => k::CmpOp::Eq,
                    BinOp::Ne => k::CmpOp::Ne,
                    BinOp::Lt => k::CmpOp::Lt,
                    BinOp::Le => k::CmpOp::Le,
                    BinOp::Gt => k::CmpOp::Gt,
                    BinOp::Ge => k::CmpOp::Ge,
                    _ => return Err(self.unsupported(x.span, "this expectation")),
                };
                w::Expect::Stat {
                    stat,
                    op,
                    value: self.const_int(rhs)?,
                }
            }
            _ => return Err(self.unsupported(x.span, "this expectation")),
        };
        self.p.expects.push(ex);
        Ok(())
    }
}

//! Schedules and their directives in typed IR form, with the values of directive arguments.

use crate::exprs::expr_op;
use crate::{is_name, Lowerer, R};
use wsp_ir::dtype::ScalarValue;
use wsp_ir::workload as w;
use wsp_syntax::ast::{self, ExprKind};

impl Lowerer {
    fn dir_value(&self, e: &ast::Expr) -> R<w::DirValue> {
        Ok(match &e.kind {
            ExprKind::Int(_) => w::DirValue::Int {
                value: self.const_int(e)?,
            },
            ExprKind::Float(f) => w::DirValue::Float { value: f.0 },
            ExprKind::Str(s) => w::DirValue::Str { value: s.clone() },
            ExprKind::Name(n) => match (self.axes.get(&n.name), self.consts.get(&n.name)) {
                (Some(a), _) => w::DirValue::Axis { axis: *a },
                (None, Some(ScalarValue::Int(i))) => w::DirValue::Int { value: *i },
                _ => w::DirValue::Ident {
                    name: n.name.clone(),
                },
            },
            ExprKind::Call {
                callee,
                coords: None,
                args,
            } => {
                let ExprKind::Name(n) = &callee.kind else {
                    return Err(self.unsupported(e.span, "this directive argument"));
                };
                w::DirValue::Call {
                    name: n.name.clone(),
                    args: self.dir_args(args)?,
                }
            }
            ExprKind::Binary { op, lhs, rhs } => w::DirValue::Binary {
                op: expr_op(*op),
                lhs: Box::new(self.dir_value(lhs)?),
                rhs: Box::new(self.dir_value(rhs)?),
            },
            _ => return Err(self.unsupported(e.span, "this directive argument")),
        })
    }

    fn dir_args(&self, args: &[ast::Arg]) -> R<Vec<w::DirArg>> {
        args.iter()
            .map(|a| {
                Ok(w::DirArg {
                    name: a.name.as_ref().map(|n| n.name.clone()),
                    value: self.dir_value(&a.value)?,
                })
            })
            .collect()
    }

    /// A schedule directive in its typed IR form. The checker has validated the directive and
    /// its policy (E0601-E0607); what does not fit here is E0813.
    fn directive<'a>(&self, d: &'a ast::Directive) -> R<w::Directive> {
        use wsp_vocab::schedule::{Directive as D, DirectiveArg, Policy};
        let unsupported = || self.unsupported(d.span, "this schedule directive");
        let kind = D::from_name(&d.name.name).ok_or_else(unsupported)?;
        if kind.arg() == DirectiveArg::Pools {
            // Named ring sizes; the last of a name applies (W0601).
            let mut sizes = [None::<i64>; 4];
            for a in &d.args {
                let i = a
                    .name
                    .as_ref()
                    .and_then(|n| {
                        wsp_vocab::schedule::POOL_NAMES
                            .iter()
                            .position(|p| *p == n.name)
                    })
                    .ok_or_else(unsupported)?;
                sizes[i] = Some(self.const_int(&a.value)?);
            }
            let small = |v: Option<i64>| -> R<Option<u32>> {
                v.map(|v| u32::try_from(v).map_err(|_| unsupported()))
                    .transpose()
            };
            return Ok(w::Directive::TaskGraph {
                tensormap: small(sizes[0])?,
                deplist: small(sizes[1])?,
                ready: small(sizes[2])?,
                heap: sizes[3]
                    .map(|v| u64::try_from(v).map_err(|_| unsupported()))
                    .transpose()?,
            });
        }
        if kind.arg() == DirectiveArg::Grid {
            // `grid: (rows, cols), at: (row, col)`, as the checker has validated them.
            let named = |n: &str| {
                d.args
                    .iter()
                    .find(|a| a.name.as_ref().is_some_and(|x| x.name == n))
                    .map(|a| &a.value)
            };
            let pair = |e: Option<&'a ast::Expr>| match e.map(|e| &e.kind) {
                Some(ExprKind::Tuple(xs)) if xs.len() == 2 => Ok((&xs[0], &xs[1])),
                _ => Err(unsupported()),
            };
            let (r, c) = pair(named("grid"))?;
            let (row, col) = pair(named("at"))?;
            let size = |e: &ast::Expr| -> R<u32> {
                u32::try_from(self.const_int(e)?)
                    .ok()
                    .filter(|v| *v > 0)
                    .ok_or_else(unsupported)
            };
            return Ok(w::Directive::SpatialMap {
                rows: size(r)?,
                cols: size(c)?,
                row: self.dir_value(row)?,
                col: self.dir_value(col)?,
            });
        }
        if kind.arg() == DirectiveArg::Shard {
            // `T, shard(dim: d, parts: n)` (or `shard(d, n)`).
            let [t, sh] = d.args.as_slice() else {
                return Err(unsupported());
            };
            let tensor = match &t.value.kind {
                ExprKind::Name(n) => self.tensors.get(&n.name).copied(),
                _ => None,
            }
            .ok_or_else(unsupported)?;
            let ExprKind::Call {
                callee,
                coords: None,
                args,
            } = &sh.value.kind
            else {
                return Err(unsupported());
            };
            if !is_name(callee, wsp_vocab::schedule::SHARD) {
                return Err(unsupported());
            }
            let arg = |i: usize| {
                let name = wsp_vocab::schedule::SHARD_NAMES[i];
                args.iter()
                    .find(|a| a.name.as_ref().is_some_and(|x| x.name == name))
                    .or_else(|| args.get(i).filter(|a| a.name.is_none()))
                    .ok_or_else(unsupported)
                    .and_then(|a| {
                        u32::try_from(self.const_int(&a.value)?).map_err(|_| unsupported())
                    })
            };
            return Ok(w::Directive::Layout {
                tensor,
                dim: arg(0)?,
                parts: arg(1)?,
            });
        }
        // `.task_window(n, mode)` alone takes a second argument.
        let (arg, mode) = match d.args.as_slice() {
            [arg] => (arg, None),
            [arg, mode] if kind == D::TaskWindow => (arg, Some(&mode.value)),
            _ => return Err(unsupported()),
        };
        let arg = &arg.value;
        let mode = match mode.map(|m| &m.kind) {
            None => wsp_vocab::schedule::WindowMode::Stall,
            Some(ExprKind::Name(n)) => {
                wsp_vocab::schedule::WindowMode::from_name(&n.name).ok_or_else(unsupported)?
            }
            Some(_) => return Err(unsupported()),
        };
        Ok(match kind.arg() {
            DirectiveArg::Policy => {
                let (name, args) = match &arg.kind {
                    ExprKind::Name(n) => (n, &[][..]),
                    ExprKind::Call {
                        callee,
                        coords: None,
                        args,
                    } => match &callee.kind {
                        ExprKind::Name(n) => (n, args.as_slice()),
                        _ => return Err(unsupported()),
                    },
                    _ => return Err(unsupported()),
                };
                let policy = Policy::from_name(&name.name)
                    .filter(|p| p.directive() == kind)
                    .ok_or_else(unsupported)?;
                w::Directive::Policy {
                    policy,
                    args: args
                        .iter()
                        .map(|a| self.dir_value(&a.value))
                        .collect::<R<_>>()?,
                }
            }
            DirectiveArg::Count => {
                let n = self.const_int(arg)?;
                match kind {
                    D::TaskWindow => w::Directive::TaskWindow { size: n, mode },
                    _ => w::Directive::Streams { count: n },
                }
            }
            // `.dispatch_by(e)` is `.dispatch(by(e))`.
            DirectiveArg::Key if kind == D::DispatchBy => w::Directive::Policy {
                policy: Policy::By,
                args: vec![self.dir_value(arg)?],
            },
            DirectiveArg::Key => w::Directive::StreamBy {
                key: self.dir_value(arg)?,
            },
            DirectiveArg::Pools | DirectiveArg::Grid | DirectiveArg::Shard => {
                return Err(unsupported())
            }
            DirectiveArg::Arch => match &arg.kind {
                ExprKind::Name(n) => w::Directive::Target {
                    arch: n.name.clone(),
                },
                ExprKind::Str(s) => w::Directive::Target { arch: s.clone() },
                _ => return Err(unsupported()),
            },
        })
    }

    pub(super) fn schedule(&mut self, s: &ast::Schedule) -> R<()> {
        let Some(wid) = self.workloads.get(&s.workload.name).copied() else {
            return Err(self.unsupported(s.workload.span, "a schedule of an unknown workload"));
        };
        let mut directives = Vec::new();
        for d in &s.directives {
            directives.push(self.directive(d)?);
        }
        self.p.schedules.push(w::Schedule {
            name: s.name.name.clone(),
            workload: wid,
            directives,
        });
        Ok(())
    }
}

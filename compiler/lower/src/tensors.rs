//! Tensor declarations and their initialisers (literals, `zeros`, `ones`, `full`, `random`,
//! `load`).

use crate::{dtype, Lowerer, R};
use std::collections::BTreeMap;
use wsp_ir::workload as w;
use wsp_syntax::ast::{self, ExprKind};

impl Lowerer {
    pub(super) fn init(&self, e: &ast::Expr) -> R<w::Init> {
        if let ExprKind::List(xs) = &e.kind {
            let values = xs
                .iter()
                .map(|x| self.scalar_const(x))
                .collect::<R<Vec<_>>>()?;
            return Ok(w::Init::Literal { values });
        }
        if let ExprKind::Name(n) = &e.kind {
            match n.name.as_str() {
                "zeros" => return Ok(w::Init::Zeros),
                "ones" => return Ok(w::Init::Ones),
                _ => {}
            }
        }
        let ExprKind::Call {
            callee,
            coords: None,
            args,
        } = &e.kind
        else {
            return Err(self.unsupported(e.span, "this initialiser"));
        };
        let ExprKind::Name(f) = &callee.kind else {
            return Err(self.unsupported(e.span, "this initialiser"));
        };
        let arg = |i: usize| args.get(i).map(|a| &a.value);
        match f.name.as_str() {
            "load" => match arg(0).map(|a| &a.kind) {
                Some(ExprKind::Str(s)) => Ok(w::Init::Load { path: s.clone() }),
                _ => Err(self.unsupported(e.span, "`load` without a string path")),
            },
            "random" => {
                let seed = match args
                    .iter()
                    .find(|a| a.name.as_ref().is_some_and(|n| n.name == "seed"))
                    .or(args.first())
                {
                    Some(a) => self.const_int(&a.value)?,
                    None => 0,
                };
                Ok(w::Init::Random { seed: seed as u64 })
            }
            "zeros" => Ok(w::Init::Zeros),
            "ones" => Ok(w::Init::Ones),
            "full" => match args.last() {
                Some(a) => Ok(w::Init::Full {
                    value: self.scalar_const(&a.value)?,
                }),
                None => Err(self.unsupported(e.span, "`full` without a value")),
            },
            _ => Err(self.unsupported(e.span, format!("the initialiser `{}`", f.name))),
        }
    }

    pub(super) fn tensor(&mut self, t: &ast::TensorDecl) -> R<()> {
        let dt = dtype(&t.ty.dtype).ok_or_else(|| self.unsupported(t.ty.span, "this dtype"))?;
        let mut shape = Vec::new();
        for d in t.ty.dims.iter().flatten() {
            shape.push(self.affine(&d.size, &BTreeMap::new())?);
        }
        let init = match &t.init {
            Some(e) => Some(self.init(e)?),
            None => None,
        };
        let id = w::TensorId(self.p.tensors.len() as u32);
        self.p.tensors.push(w::TensorDecl {
            name: t.name.name.clone(),
            kind: match t.kind {
                ast::TensorKind::Input => w::TensorKind::Input,
                ast::TensorKind::Output => w::TensorKind::Output,
                ast::TensorKind::Scratch => w::TensorKind::Scratch,
                ast::TensorKind::Local => w::TensorKind::Local,
            },
            dtype: dt,
            shape,
            init,
            at: Some(self.src_span(t.init.as_ref().map_or(t.name.span, |e| e.span))),
        });
        self.tensors.insert(t.name.name.clone(), id);
        Ok(())
    }
}

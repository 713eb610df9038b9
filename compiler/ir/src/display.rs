//! A readable text form of kernels, for dumps and error messages:
//!
//! ```text
//! kernel add(a: in f32[32, 32], c: out f32[32, 32]) {
//!   %0: f32[32, 32] = param a
//!   %1: f32[32, 32] = add %0, %0
//!   store c, %1
//! }
//! ```

use crate::kernel::*;
use std::fmt::{self, Write};

fn ty(t: &Type) -> String {
    match t {
        Type::Scalar { dtype } => dtype.to_string(),
        Type::Tile(t) => format!("{}[{}, {}]", t.dtype, t.shape[0], t.shape[1]),
    }
}

fn kindex(i: &KIndex) -> String {
    let mut s = String::new();
    for (v, c) in &i.terms {
        if !s.is_empty() {
            s.push_str(" + ");
        }
        if *c == 1 {
            let _ = write!(s, "%{}", v.0);
        } else {
            let _ = write!(s, "{c}*%{}", v.0);
        }
    }
    if s.is_empty() {
        i.constant.to_string()
    } else if i.constant != 0 {
        format!("{s} + {}", i.constant)
    } else {
        s
    }
}

fn region(r: &Region) -> String {
    format!(
        "[{} +{}, {} +{}]",
        kindex(&r.row_start),
        r.rows,
        kindex(&r.col_start),
        r.cols
    )
}

impl Kernel {
    fn pname(&self, p: ParamId) -> String {
        self.params
            .get(p.index())
            .map(|p| p.name.clone())
            .unwrap_or_else(|| format!("#{}", p.0))
    }

    fn op_text(&self, op: &Op) -> String {
        let v = |x: &ValueId| format!("%{}", x.0);
        match op {
            Op::Param { param } => format!("param {}", self.pname(*param)),
            Op::Const { value, dtype } => format!("const {} {dtype}", value.as_f64()),
            Op::Binary { op, lhs, rhs } => {
                format!(
                    "{} {}, {}",
                    format!("{op:?}").to_lowercase(),
                    v(lhs),
                    v(rhs)
                )
            }
            Op::Cmp { op, lhs, rhs } => {
                format!(
                    "{} {}, {}",
                    format!("{op:?}").to_lowercase(),
                    v(lhs),
                    v(rhs)
                )
            }
            Op::Select {
                cond,
                on_true,
                on_false,
            } => format!("select {}, {}, {}", v(cond), v(on_true), v(on_false)),
            Op::Unary { op, x } => format!("{} {}", op.name(), v(x)),
            Op::Reduce { op, x } => format!("{} {}", format!("{op:?}").to_lowercase(), v(x)),
            Op::Matmul { a, b, acc } => match acc {
                Some(c) => format!("matmul {}, {}, acc {}", v(a), v(b), v(c)),
                None => format!("matmul {}, {}", v(a), v(b)),
            },
            Op::Transpose { x } => format!("transpose {}", v(x)),
            Op::Cast { x, dtype } => format!("cast {} to {dtype}", v(x)),
            Op::Full {
                shape,
                dtype,
                value,
            } => format!("full [{}, {}] {dtype} {}", shape[0], shape[1], v(value)),
            Op::Iota { shape, dtype } => format!("iota [{}, {}] {dtype}", shape[0], shape[1]),
            Op::RowTopK { x, k } => format!("rowtopk {}, {k}", v(x)),
            Op::Slice { x, region: r } => format!("slice {}{}", v(x), region(r)),
            Op::VarRead { var } => format!("read {}", self.var_name(*var)),
            Op::TPop { pipe } => format!("tpop {}", self.pipe_name(*pipe)),
        }
    }

    fn var_name(&self, v: VarId) -> String {
        self.vars
            .get(v.index())
            .map(|x| x.name.clone())
            .unwrap_or_else(|| format!("#{}", v.0))
    }

    fn pipe_name(&self, p: PipeId) -> String {
        self.pipes
            .get(p.index())
            .map(|x| x.name.clone())
            .unwrap_or_else(|| format!("#{}", p.0))
    }

    fn stmts_text(&self, stmts: &[Stmt], depth: usize, out: &mut String) {
        let pad = "  ".repeat(depth);
        for s in stmts {
            match s {
                Stmt::Op { results, op } => {
                    let lhs = results
                        .iter()
                        .map(|r| {
                            let t = self
                                .value_type(*r)
                                .map(|t| ty(&t))
                                .unwrap_or_else(|| "?".into());
                            match self.values.get(r.index()).and_then(|i| i.name.as_deref()) {
                                Some(n) => format!("%{} {n}: {t}", r.0),
                                None => format!("%{}: {t}", r.0),
                            }
                        })
                        .collect::<Vec<_>>()
                        .join(", ");
                    let _ = writeln!(out, "{pad}{lhs} = {}", self.op_text(op));
                }
                Stmt::Store {
                    param,
                    region: r,
                    value,
                } => {
                    let _ = writeln!(
                        out,
                        "{pad}store {}{}, %{}",
                        self.pname(*param),
                        r.as_ref().map(region).unwrap_or_default(),
                        value.0
                    );
                }
                Stmt::Assign {
                    var,
                    region: r,
                    value,
                } => {
                    let _ = writeln!(
                        out,
                        "{pad}{}{} = %{}",
                        self.var_name(*var),
                        r.as_ref().map(region).unwrap_or_default(),
                        value.0
                    );
                }
                Stmt::For {
                    index,
                    start,
                    end,
                    body,
                } => {
                    let _ = writeln!(out, "{pad}for %{} in {start}..{end} {{", index.0);
                    self.stmts_text(body, depth + 1, out);
                    let _ = writeln!(out, "{pad}}}");
                }
                Stmt::Section { kind, body } => {
                    let k = match kind {
                        SectionKind::Cube => "cube",
                        SectionKind::Vector => "vector",
                    };
                    let _ = writeln!(out, "{pad}{k} {{");
                    self.stmts_text(body, depth + 1, out);
                    let _ = writeln!(out, "{pad}}}");
                }
                Stmt::TAlloc { pipe, slot } => {
                    let _ = writeln!(
                        out,
                        "{pad}{} = talloc {}",
                        self.var_name(*slot),
                        self.pipe_name(*pipe)
                    );
                }
                Stmt::TPush { pipe, slot } => {
                    let _ = writeln!(
                        out,
                        "{pad}tpush {}, {}",
                        self.pipe_name(*pipe),
                        self.var_name(*slot)
                    );
                }
                Stmt::TFree { pipe, value } => {
                    let _ = writeln!(out, "{pad}tfree {}, %{}", self.pipe_name(*pipe), value.0);
                }
            }
        }
    }
}

impl fmt::Display for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let params = self
            .params
            .iter()
            .map(|p| match &p.kind {
                ParamKind::Tile { dir, tile, partial } => {
                    let d = match dir {
                        Direction::In => "in",
                        Direction::Out => "out",
                        Direction::InOut => "inout",
                    };
                    let dim = |i: usize| {
                        format!("{}{}", if partial[i] { ".." } else { "" }, tile.shape[i])
                    };
                    format!("{}: {d} {}[{}, {}]", p.name, tile.dtype, dim(0), dim(1))
                }
                ParamKind::Scalar { dtype, default } => match default {
                    Some(v) => format!("{}: {dtype} = {}", p.name, v.as_f64()),
                    None => format!("{}: {dtype}", p.name),
                },
            })
            .collect::<Vec<_>>()
            .join(", ");
        writeln!(f, "kernel {}({params}) {{", self.name)?;
        let mut out = String::new();
        for v in &self.vars {
            let _ = writeln!(out, "  var {}: {}", v.name, ty(&v.ty));
        }
        for p in &self.pipes {
            let _ = writeln!(
                out,
                "  pipe {}: Pipe[{}, slots: {}]",
                p.name,
                ty(&Type::Tile(p.elem)),
                p.slots
            );
        }
        match &self.body {
            Some(body) => self.stmts_text(body, 1, &mut out),
            None => {
                for e in &self.externs {
                    let _ = writeln!(out, "  extern {}: {:?}", e.target, e.path);
                }
            }
        }
        f.write_str(&out)?;
        writeln!(f, "}}")
    }
}

#[cfg(test)]
mod tests {
    use crate::typing::KernelBuilder;
    use crate::*;

    #[test]
    fn kernels_print_readably() {
        let mut kb = KernelBuilder::new("add");
        let t = TileType::new(DType::F32, 32, 32);
        let pa = kb.partial_tile_param("a", Direction::In, t, [true, false]);
        let pc = kb.tile_param("c", Direction::Out, t);
        kb.scalar_param("eps", DType::F32, Some(ScalarValue::Float(0.5)));
        let a = kb.load(pa).unwrap();
        kb.name(a, "x");
        let s = kb.binary(BinaryOp::Add, a, a).unwrap();
        let i = kb.begin_for(0, 2);
        let r = kb
            .op(Op::Slice {
                x: s,
                region: Region {
                    row_start: KIndex {
                        constant: 1,
                        terms: vec![(i, 2)],
                    },
                    rows: 1,
                    col_start: KIndex::constant(0),
                    cols: 32,
                },
            })
            .unwrap();
        let _ = r;
        kb.end_for().unwrap();
        kb.store(pc, s);
        let k = kb.finish().unwrap();
        assert_eq!(
            k.to_string(),
            "kernel add(a: in f32[..32, 32], c: out f32[32, 32], eps: f32 = 0.5) {\n\
             \x20 %0 x: f32[32, 32] = param a\n\
             \x20 %1: f32[32, 32] = add %0, %0\n\
             \x20 for %2 in 0..2 {\n\
             \x20   %3: f32[1, 32] = slice %1[2*%2 + 1 +1, 0 +32]\n\
             \x20 }\n\
             \x20 store c, %1\n\
             }\n"
        );
    }
}

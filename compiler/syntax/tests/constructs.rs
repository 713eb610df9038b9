//! One snapshot per construct of the language: the parsed AST printed as a compact
//! S-expression (spans left out), so a reviewer can read what each construct maps to.

use std::fmt::Write;

use wsp_syntax::ast::*;
use wsp_syntax::parse;

fn id(i: &Ident) -> &str {
    &i.name
}

fn ids(v: &[Ident]) -> String {
    v.iter().map(id).collect::<Vec<_>>().join(" ")
}

fn ty(t: &TypeExpr) -> String {
    match &t.dims {
        None => t.dtype.name.clone(),
        Some(dims) => {
            let d: Vec<String> = dims
                .iter()
                .map(|d| format!("{}{}", if d.partial { ".." } else { "" }, expr(&d.size)))
                .collect();
            format!("{}[{}]", t.dtype.name, d.join(", "))
        }
    }
}

fn args(a: &[Arg]) -> String {
    a.iter()
        .map(|a| match &a.name {
            Some(n) => format!("{}: {}", n.name, expr(&a.value)),
            None => expr(&a.value),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn exprs(v: &[Expr]) -> String {
    v.iter().map(expr).collect::<Vec<_>>().join(" ")
}

fn expr(e: &Expr) -> String {
    match &e.kind {
        ExprKind::Int(v) => v.to_string(),
        ExprKind::Float(f) => format!("{:?}", f.0),
        ExprKind::Str(s) => format!("{s:?}"),
        ExprKind::Bool(b) => b.to_string(),
        ExprKind::Name(n) => n.name.clone(),
        ExprKind::Field { base, field } => format!("(. {} {})", expr(base), field.name),
        ExprKind::Unary { op, expr: x } => format!("({op:?} {})", expr(x)),
        ExprKind::Binary { op, lhs, rhs } => format!("({op:?} {} {})", expr(lhs), expr(rhs)),
        ExprKind::Call {
            callee,
            coords,
            args: a,
        } => match coords {
            Some(c) => format!("(task {} [{}] {})", expr(callee), exprs(c), args(a)),
            None => format!("(call {} {})", expr(callee), args(a)),
        },
        ExprKind::Index { base, indices } => format!("(index {} {})", expr(base), exprs(indices)),
        ExprKind::Range { start, end } => format!(
            "(range {} {})",
            start.as_ref().map_or("_".into(), |s| expr(s)),
            end.as_ref().map_or("_".into(), |s| expr(s))
        ),
        ExprKind::FullSlice => ":".into(),
        ExprKind::List(v) => format!("[{}]", exprs(v)),
        ExprKind::Tuple(v) => format!("(tuple {})", exprs(v)),
        ExprKind::Error => "<error>".into(),
    }
}

fn block(b: &Block, depth: usize, out: &mut String) {
    for s in &b.stmts {
        stmt(s, depth, out);
    }
}

fn stmt(s: &Stmt, depth: usize, out: &mut String) {
    let pad = "  ".repeat(depth);
    let _ = match &s.kind {
        StmtKind::Let {
            names,
            tuple,
            ty: t,
            value,
        } => writeln!(
            out,
            "{pad}let{} {}{} = {}",
            if *tuple { "-tuple" } else { "" },
            ids(names),
            t.as_ref().map_or(String::new(), |t| format!(": {}", ty(t))),
            expr(value)
        ),
        StmtKind::Var { name, ty: t, value } => writeln!(
            out,
            "{pad}var {}{} = {}",
            name.name,
            t.as_ref().map_or(String::new(), |t| format!(": {}", ty(t))),
            expr(value)
        ),
        StmtKind::Assign { target, op, value } => writeln!(
            out,
            "{pad}assign{} {} = {}",
            op.map_or(String::new(), |o| format!("({o:?})")),
            expr(target),
            expr(value)
        ),
        StmtKind::For { vars, iter, body } => {
            let _ = writeln!(out, "{pad}for {} in {}", ids(vars), expr(iter));
            block(body, depth + 1, out);
            Ok(())
        }
        StmtKind::When {
            branches,
            otherwise,
        } => {
            for (i, (c, b)) in branches.iter().enumerate() {
                let kw = if i == 0 { "when" } else { "else when" };
                let _ = writeln!(out, "{pad}{kw} {}", expr(c));
                block(b, depth + 1, out);
            }
            if let Some(b) = otherwise {
                let _ = writeln!(out, "{pad}else");
                block(b, depth + 1, out);
            }
            Ok(())
        }
        StmtKind::Send { channel, value } => {
            writeln!(out, "{pad}send {} {}", channel.name, expr(value))
        }
        StmtKind::Consume {
            channel,
            bindings,
            body,
        } => {
            let _ = writeln!(out, "{pad}consume {} as ({})", channel.name, ids(bindings));
            block(body, depth + 1, out);
            Ok(())
        }
        StmtKind::Pipe {
            name,
            elem,
            args: a,
        } => writeln!(out, "{pad}pipe {} {} {}", name.name, ty(elem), args(a)),
        StmtKind::Section { kind, body, .. } => {
            let _ = writeln!(out, "{pad}section {kind:?}");
            block(body, depth + 1, out);
            Ok(())
        }
        StmtKind::Expr(e) => writeln!(out, "{pad}{}", expr(e)),
        StmtKind::Error => writeln!(out, "{pad}<error stmt>"),
    };
}

fn sexp(src: &str) -> String {
    let p = parse(src);
    let mut out = String::new();
    for e in &p.errors {
        let _ = writeln!(out, "ERROR {} {}", e.code, e.message);
    }
    for node in &p.file.items {
        let it = &node.item;
        if let Some(d) = &it.docs {
            let _ = writeln!(out, "doc {d:?}");
        }
        let _ = match &it.kind {
            ItemKind::Import(i) => writeln!(
                out,
                "import {}{}",
                ids(&i.path),
                i.names
                    .as_ref()
                    .map_or(String::new(), |n| format!(" {{{}}}", ids(n)))
            ),
            ItemKind::Const(c) => writeln!(
                out,
                "const {}{} = {}",
                c.name.name,
                c.ty.as_ref()
                    .map_or(String::new(), |t| format!(": {}", ty(t))),
                expr(&c.value)
            ),
            ItemKind::Param(p) => writeln!(
                out,
                "param {}: {}{}",
                p.name.name,
                ty(&p.ty),
                p.default
                    .as_ref()
                    .map_or(String::new(), |d| format!(" = {}", expr(d)))
            ),
            ItemKind::Axis(a) => writeln!(out, "axis {} = {}", a.name.name, expr(&a.ctor)),
            ItemKind::Tensor(t) => writeln!(
                out,
                "{:?} {}: {}{}",
                t.kind,
                t.name.name,
                ty(&t.ty),
                t.init
                    .as_ref()
                    .map_or(String::new(), |d| format!(" = {}", expr(d)))
            ),
            ItemKind::Kernel(k) => {
                let ps: Vec<String> = k
                    .params
                    .iter()
                    .map(|p| {
                        format!(
                            "{}: {}{}{}",
                            p.name.name,
                            p.dir.map_or(String::new(), |(d, _)| format!("{d:?} ")),
                            ty(&p.ty),
                            p.default
                                .as_ref()
                                .map_or(String::new(), |d| format!(" = {}", expr(d)))
                        )
                    })
                    .collect();
                let _ = writeln!(
                    out,
                    "{}kernel {}({})",
                    if k.extern_span.is_some() {
                        "extern "
                    } else {
                        ""
                    },
                    k.name.name,
                    ps.join(", ")
                );
                match &k.body {
                    KernelBody::Block(b) => block(b, 1, &mut out),
                    KernelBody::Extern(bs) => {
                        for b in bs {
                            let value = match &b.value {
                                ExternValue::Path(p) => format!("{:?}", p.value),
                                ExternValue::Expr(e) => format!("{:?}", e.kind),
                            };
                            let _ = writeln!(out, "  {} -> {value}", b.target.name);
                        }
                    }
                }
                Ok(())
            }
            ItemKind::Workload(w) => match &w.body {
                WorkloadBody::Block(b) => {
                    let _ = writeln!(out, "workload {}", w.name.name);
                    block(b, 1, &mut out);
                    Ok(())
                }
                WorkloadBody::Expr(e) => writeln!(out, "workload {} = {}", w.name.name, expr(e)),
            },
            ItemKind::Channel(c) => writeln!(
                out,
                "channel {}: {} {}",
                c.name.name,
                c.ty_name.as_ref().map_or("_", id),
                args(&c.args)
            ),
            ItemKind::Process(p) => {
                let _ = writeln!(
                    out,
                    "process {} consumes({}) produces({})",
                    p.name.name,
                    ids(&p.consumes),
                    ids(&p.produces)
                );
                block(&p.body, 1, &mut out);
                Ok(())
            }
            ItemKind::Schedule(s) => {
                let _ = writeln!(out, "schedule {} = {}", s.name.name, s.workload.name);
                for d in &s.directives {
                    let _ = writeln!(out, "  .{}({})", d.name.name, args(&d.args));
                }
                Ok(())
            }
            ItemKind::Expect(e) => writeln!(out, "expect {}", expr(&e.expr)),
            ItemKind::Error => writeln!(out, "<error item>"),
        };
    }
    out
}

macro_rules! construct {
    ($name:ident, $src:expr) => {
        #[test]
        fn $name() {
            insta::assert_snapshot!(stringify!($name), sexp($src), $src);
        }
    };
}

construct!(
    imports,
    "import std.attention\nimport std.nn.{rmsnorm, softmax}\nimport lib.util.{}\n"
);
construct!(
    consts_and_params,
    "const D = 128\nconst E: f32 = 1e-6\nconst M = 0x2a + 1_024 * (D - 1) / 2 % 3\nparam batch_size: u32 = 4\nparam n: i64\n"
);
construct!(
    axes,
    "axis heads = Dense[8]\naxis batch = DenseDyn(batch_size)\naxis tokens = Ragged(batch, lens)\naxis routing = Sparse(batch, indptr, indices)\n"
);
construct!(
    tensors,
    "input X: f16[N, 64] = load(\"x.npy\")\ninput R: f32[4] = random(seed: 7)\ninput L: i32[3] = [1, 2, 3]\noutput Y: f32[N, 64]\ntensor T0: f32[N, 64] = full(-1e30)\ntensor Z: bf16[2] = zeros\n"
);
construct!(
    kernel_params_and_body,
    "kernel k(x: in f32[..64, 128], acc: inout f32[64, 1], out: out f32[64, 128], eps: f32 = 1e-6, n: i32) {\n    let s = x * rsqrt(rowmean(x * x) + eps)\n    let (v, i) = rowtopk(s, 2)\n    var m = full([64, 1], -1e30)\n    for j in 0..4 {\n        m = max(m, rowmax(s))\n        acc += rowsum(s)\n    }\n    out[0..16, :] = s[0..16, :]\n    out[16.., :] = select(s[16.., :] > 0.0, s[16.., :], neg(s[16.., :])); out[:, 0..1] = cast(m, f32)\n}\n"
);
construct!(
    pipes_and_sections,
    "kernel fused(a: in f32[128, 256], out: out f32[128, 256]) {\n    pipe s: Pipe[f32[128, 256], slots: 2]\n    cube {\n        let slot = talloc(s)\n        slot[:, 0..128] = matmul(a, a, acc: a)\n        tpush(s, slot)\n    }\n    vector {\n        let t = tpop(s)\n        out = t\n        tfree(s, t)\n    }\n}\n"
);
construct!(
    extern_kernel,
    "extern kernel k(x: in f32[8, 8], y: out f32[8, 8]) { ascend: \"k.cpp\" }\n"
);
construct!(
    workload_blocks,
    "workload moe {\n    for b in P(batch) {\n        for e in P.sel(routing[b]) {\n            expert[b, e](x: X[b], w: W[e], out: Y[b, e, 0..8, :])\n        }\n    }\n    for i in P.seq(tiles) { k[i](x: X[i * 64 .. i * 64 + 64, :]) }\n}\n"
);
construct!(
    when_chains,
    "workload tiered {\n    for b in P(batch) {\n        when lens[b] <= 2048 { attn_2k[b](x: X[b]) }\n        else when lens[b] <= 8192 && b != 0 { attn_8k[b](x: X[b]) }\n        else { attn_32k[b](x: X[b]) }\n    }\n}\n"
);
construct!(
    workload_expressions,
    "workload layer = sequential(rmsnorm_all, attention, ffn)\nworkload both = combine(left, right)\nworkload pipe = connect(a, replicate(w, 4))\n"
);
construct!(
    channels_and_processes,
    "channel c: Channel[depth: 2]\nprocess p consumes a, b produces c {\n    consume a as i { send c, k[i](x: X[i]) }\n    consume b as (x, y) { send c, x + y }\n}\nprocess q produces c {\n    for i in P.seq(t) { send c, i }\n}\n"
);
construct!(
    schedule_chain,
    "schedule main = attention\n    .dispatch(affinity(batch))   // comment between links\n    .streams(4)\n\n    .stream_by(heads % 4)\n    .timing(batched(8)).ready(priority(-b))\n    .target(ascend910b)\n"
);
construct!(
    expects,
    "expect close(O, load(\"o.npy\"), rtol: 1e-4, atol: 1e-5)\nexpect total_cycles == 4864\n"
);
construct!(
    doc_comments,
    "/// first line\n/// second line\nkernel k(x: in f32[8]) {\n    x\n}\n// plain comment\nconst A = 1\n"
);
construct!(
    continuation_lines,
    "const A = 1 +\n    2\nconst B = 3\n    * 4\n    - 5\nconst C = f(1,\n    2)\n"
);
construct!(
    precedence,
    "const A = -a * b + c / d % e - f < g && h == i || !j\nconst B = (a + b) * c\nconst C = (a, b)\nconst D = x.y.z[1](2)\n"
);

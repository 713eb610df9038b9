//! Recovery suite: each case has one or more mistakes; the parser reports each exactly once
//! (with the expected code on the expected line) and keeps the good parts of the tree.

use wsp_syntax::ast::*;
use wsp_syntax::{parse, Parse};

/// (code, 1-based line) of every error, in order.
fn errs(src: &str, p: &Parse) -> Vec<(&'static str, usize)> {
    p.errors
        .iter()
        .map(|e| {
            let line = src[..e.span.start as usize].matches('\n').count() + 1;
            (e.code, line)
        })
        .collect()
}

fn kinds(p: &Parse) -> Vec<&'static str> {
    p.file
        .items
        .iter()
        .map(|i| match &i.item.kind {
            ItemKind::Import(_) => "import",
            ItemKind::Const(_) => "const",
            ItemKind::Param(_) => "param",
            ItemKind::Axis(_) => "axis",
            ItemKind::Tensor(_) => "tensor",
            ItemKind::Kernel(_) => "kernel",
            ItemKind::Workload(_) => "workload",
            ItemKind::Channel(_) => "channel",
            ItemKind::Process(_) => "process",
            ItemKind::Schedule(_) => "schedule",
            ItemKind::Expect(_) => "expect",
            ItemKind::Error => "error",
        })
        .collect()
}

fn kernel_stmts(p: &Parse, idx: usize) -> Vec<&'static str> {
    let Some(ItemKind::Kernel(k)) = p.file.items.get(idx).map(|i| &i.item.kind) else {
        panic!("item {idx} is not a kernel: {:?}", kinds(p));
    };
    let KernelBody::Block(b) = &k.body else {
        panic!("extern kernel")
    };
    b.stmts
        .iter()
        .map(|s| match s.kind {
            StmtKind::Let { .. } => "let",
            StmtKind::Var { .. } => "var",
            StmtKind::Assign { .. } => "assign",
            StmtKind::For { .. } => "for",
            StmtKind::Error => "error",
            _ => "other",
        })
        .collect()
}

#[test]
fn unclosed_paren_in_statement_recovers_at_next_line() {
    let src = "kernel k(x: in f32[8, 8], y: out f32[8, 8]) {\n    let a = f(1, 2\n    let b = x\n    y = x\n}\n";
    let p = parse(src);
    assert_eq!(errs(src, &p), vec![("E0002", 2)]);
    assert_eq!(kernel_stmts(&p, 0), vec!["error", "let", "assign"]);
}

#[test]
fn three_bad_statements_three_errors() {
    let src = "kernel k(x: in f32[8, 8], y: out f32[8, 8]) {\n    let = x\n    var v = * 2\n    let c = x +* x\n    y = x\n}\n";
    let p = parse(src);
    assert_eq!(
        errs(src, &p),
        vec![("E0001", 2), ("E0001", 3), ("E0001", 4)]
    );
    assert_eq!(
        kernel_stmts(&p, 0),
        vec!["error", "error", "error", "assign"]
    );
}

#[test]
fn bad_item_between_good_items() {
    let src = "const A = 1\nkernel (x) {}\nconst B = 2\naxis = Dense[4]\nconst C = 3\n";
    let p = parse(src);
    assert_eq!(errs(src, &p), vec![("E0001", 2), ("E0001", 4)]);
    assert_eq!(kinds(&p), vec!["const", "error", "const", "error", "const"]);
}

#[test]
fn unclosed_bracket_in_item_header_keeps_next_items() {
    let src = "input X: f32[4, 4 = zeros\noutput Y: f32[4, 4]\nconst N = 1\n";
    let p = parse(src);
    assert_eq!(errs(src, &p).len(), 1, "{:?}", p.errors);
    assert_eq!(kinds(&p)[1..], ["tensor", "const"]);
}

#[test]
fn bad_task_argument_keeps_other_arguments_and_statements() {
    let src = "workload w {\n    for b in P(batch) {\n        k[b](x: X[b], y: * , z: Z[b])\n        k[b](x: X[b], y: Y[b])\n    }\n}\n";
    let p = parse(src);
    assert_eq!(errs(src, &p), vec![("E0001", 3)]);
    let ItemKind::Workload(w) = &p.file.items[0].item.kind else {
        panic!()
    };
    let WorkloadBody::Block(b) = &w.body else {
        panic!()
    };
    let StmtKind::For { body, .. } = &b.stmts[0].kind else {
        panic!()
    };
    assert_eq!(body.stmts.len(), 2);
    let StmtKind::Expr(Expr {
        kind: ExprKind::Call { args, .. },
        ..
    }) = &body.stmts[0].kind
    else {
        panic!("{:?}", body.stmts[0].kind)
    };
    let names: Vec<_> = args
        .iter()
        .map(|a| a.name.as_ref().map_or("", |n| n.name.as_str()))
        .collect();
    assert_eq!(names, ["x", "y", "z"]);
    assert!(matches!(args[1].value.kind, ExprKind::Error));
}

#[test]
fn schedule_with_a_broken_link_keeps_the_others() {
    let src = "schedule main = w\n    .dispatch(round_robin(4)\n    .streams(4)\nexpect total_cycles == 1\n";
    let p = parse(src);
    assert_eq!(errs(src, &p).len(), 1, "{:?}", p.errors);
    assert_eq!(kinds(&p).last(), Some(&"expect"));
}

#[test]
fn lexical_errors_do_not_stop_parsing() {
    let src = "const A = 1 $ 2\nconst B = \"open\nconst C = 99999999999999999999999\nconst D = 4\n";
    let p = parse(src);
    let e = errs(src, &p);
    assert!(e.contains(&("E0005", 1)), "{e:?}");
    assert!(e.contains(&("E0004", 2)), "{e:?}");
    assert!(e.contains(&("E0003", 3)), "{e:?}");
    assert_eq!(kinds(&p).last(), Some(&"const"));
    assert_eq!(p.file.items.len(), 4);
}

#[test]
fn unclosed_process_block_does_not_swallow_schedule() {
    let src = "process p produces c {\n    for i in P.seq(t) { send c, i }\nworkload w = connect(p)\nschedule s = w\n";
    let p = parse(src);
    assert_eq!(errs(src, &p), vec![("E0002", 1)]);
    assert_eq!(kinds(&p), ["process", "workload", "schedule"]);
}

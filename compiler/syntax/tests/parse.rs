//! Parser integration tests: the language contract's examples parse cleanly, recovery
//! keeps going after mistakes, and no input panics.

use std::path::Path;

use proptest::prelude::*;
use wsp_syntax::ast::*;
use wsp_syntax::{parse, Parse, Span};

fn data(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn codes(p: &Parse) -> Vec<&'static str> {
    p.errors.iter().map(|e| e.code).collect()
}

fn assert_clean(src: &str) -> Parse {
    let p = parse(src);
    assert!(
        p.errors.is_empty(),
        "unexpected errors: {:#?}",
        p.errors
            .iter()
            .map(|e| (e.code, &e.message, &src[e.span.range()]))
            .collect::<Vec<_>>()
    );
    p
}

/// Checks the structural invariants: spans in bounds, items ordered and non-overlapping,
/// item-relative spans inside their item.
fn check_invariants(src: &str, p: &Parse) {
    let len = src.len() as u32;
    let mut prev_end = 0;
    for item in &p.file.items {
        assert!(item.range.start <= item.range.end && item.range.end <= len);
        assert!(item.range.start >= prev_end, "items overlap");
        prev_end = item.range.end;
        assert!(item.item.span.end <= item.range.len() + 1);
    }
    for e in &p.errors {
        assert!(e.span.start <= e.span.end && e.span.end <= len, "{e:?}");
    }
}

#[test]
fn language_md_examples_parse_cleanly() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "wsp") {
            let src = std::fs::read_to_string(&path).unwrap();
            let p = parse(&src);
            assert!(
                p.errors.is_empty(),
                "{}: {:#?}",
                path.display(),
                p.errors
                    .iter()
                    .map(|e| (e.code, &e.message, &src[e.span.range()]))
                    .collect::<Vec<_>>()
            );
            check_invariants(&src, &p);
            n += 1;
        }
    }
    assert!(n >= 6, "expected the language.md examples, found {n}");
}

#[test]
fn attention_program_structure() {
    let src = data("language_md_1.wsp");
    let p = assert_clean(&src);
    let names: Vec<_> = p
        .file
        .items
        .iter()
        .filter_map(|i| i.item.name().map(|n| n.name.clone()))
        .collect();
    assert_eq!(
        names,
        [
            "B",
            "H",
            "T",
            "TS",
            "D",
            "batch",
            "heads",
            "tiles",
            "Q",
            "Kt",
            "V",
            "O",
            "attention_tile",
            "attention",
            "main"
        ]
    );
    let kernel = p
        .file
        .items
        .iter()
        .find_map(|i| match &i.item.kind {
            ItemKind::Kernel(k) => Some((i, k)),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        kernel.0.item.docs.as_deref(),
        Some("softmax(q kᵀ / √D) v on one tile")
    );
    assert_eq!(kernel.1.params.len(), 4);
    assert_eq!(kernel.1.params[3].dir.map(|d| d.0), Some(Direction::Out));
    // Item-relative spans: the kernel name's span, shifted by the item start, is the name.
    let abs = kernel.1.name.span.shift(kernel.0.range.start);
    assert_eq!(&src[abs.range()], "attention_tile");
    let sched = p
        .file
        .items
        .iter()
        .find_map(|i| match &i.item.kind {
            ItemKind::Schedule(s) => Some(s),
            _ => None,
        })
        .unwrap();
    let dirs: Vec<_> = sched
        .directives
        .iter()
        .map(|d| d.name.name.as_str())
        .collect();
    assert_eq!(dirs, ["dispatch", "task_window"]);
}

#[test]
fn task_call_has_coords_and_named_args() {
    let p =
        assert_clean("workload w {\n  for i in P(x) { k[i, 0](a: A[i, 0..8, :], b: B[i]) }\n}\n");
    let ItemKind::Workload(w) = &p.file.items[0].item.kind else {
        panic!()
    };
    let WorkloadBody::Block(b) = &w.body else {
        panic!()
    };
    let StmtKind::For { body, iter, .. } = &b.stmts[0].kind else {
        panic!()
    };
    assert!(matches!(iter.kind, ExprKind::Call { .. }));
    let StmtKind::Expr(call) = &body.stmts[0].kind else {
        panic!()
    };
    let ExprKind::Call { coords, args, .. } = &call.kind else {
        panic!()
    };
    assert_eq!(coords.as_ref().map(Vec::len), Some(2));
    assert_eq!(args[0].name.as_ref().map(|n| n.name.as_str()), Some("a"));
    let ExprKind::Index { indices, .. } = &args[0].value.kind else {
        panic!()
    };
    assert!(matches!(indices[1].kind, ExprKind::Range { .. }));
    assert!(matches!(indices[2].kind, ExprKind::FullSlice));
}

#[test]
fn kernel_features() {
    let src = "kernel k(x: in f32[..64, 128], s: out f32[64, 128], eps: f32 = 1e-6) {\n\
        pipe p: Pipe[f32[128, 256], slots: 2]\n\
        cube {\n  let slot = talloc(p)\n  slot[:, 0..128] = x\n  tpush(p, slot)\n}\n\
        vector {\n  let t = tpop(p)\n  tfree(p, t)\n}\n\
        var m = full([64, 1], -1e30)\n\
        for i in 0..4 { m = max(m, rowmax(x)) }\n\
        let (v, idx) = rowtopk(x, 8)\n\
        s[0..16, :] += x[0..16, :] * 2.0\n\
        s = select(x > 0.0, x, -x)\n}\n\
        extern kernel k2(a: in f16[16, 16]) { ascend: \"k2.cpp\", aie: \"k2.cc\" }\n";
    let p = assert_clean(src);
    let ItemKind::Kernel(k) = &p.file.items[0].item.kind else {
        panic!()
    };
    assert!(k.params[0].ty.dims.as_ref().unwrap()[0].partial);
    let KernelBody::Block(b) = &k.body else {
        panic!()
    };
    assert!(matches!(b.stmts[0].kind, StmtKind::Pipe { .. }));
    assert!(matches!(
        b.stmts[1].kind,
        StmtKind::Section {
            kind: SectionKind::Cube,
            ..
        }
    ));
    assert!(matches!(b.stmts[5].kind, StmtKind::Let { tuple: true, .. }));
    assert!(matches!(
        b.stmts[6].kind,
        StmtKind::Assign {
            op: Some(BinOp::Add),
            ..
        }
    ));
    let ItemKind::Kernel(k2) = &p.file.items[1].item.kind else {
        panic!()
    };
    let KernelBody::Extern(bind) = &k2.body else {
        panic!()
    };
    assert_eq!(bind[1].path().map(|p| p.value.as_str()), Some("k2.cc"));
}

#[test]
fn csp_and_composition() {
    let src = data("language_md_5.wsp");
    let p = assert_clean(&src);
    let ItemKind::Process(pr) = &p.file.items[3].item.kind else {
        panic!()
    };
    assert_eq!(pr.name.name, "computer");
    assert_eq!(pr.consumes[0].name, "l2c");
    assert_eq!(pr.produces[0].name, "c2s");
    let src = "workload all = connect(a, replicate(w, 4), b)\nworkload l = sequential(x, y, z)\n";
    let p = assert_clean(src);
    assert_eq!(p.file.items.len(), 2);
}

#[test]
fn when_else_chain() {
    let src = "workload t {\n  for b in P(batch) {\n    when lens[b] <= 2048 { a[b](x: X[b]) }\n    else when lens[b] <= 8192 { c[b](x: X[b]) }\n    else { d[b](x: X[b]) }\n  }\n}\n";
    let p = assert_clean(src);
    let ItemKind::Workload(w) = &p.file.items[0].item.kind else {
        panic!()
    };
    let WorkloadBody::Block(b) = &w.body else {
        panic!()
    };
    let StmtKind::For { body, .. } = &b.stmts[0].kind else {
        panic!()
    };
    let StmtKind::When {
        branches,
        otherwise,
    } = &body.stmts[0].kind
    else {
        panic!()
    };
    assert_eq!(branches.len(), 2);
    assert!(otherwise.is_some());
}

#[test]
fn continuation_lines() {
    let p = assert_clean(
        "const X = 1 +\n  2\nconst Y = 3\n  * 4\nschedule s = w\n  .streams(4)\n\n  .ready(fifo)\n",
    );
    assert_eq!(p.file.items.len(), 3);
    let ItemKind::Schedule(s) = &p.file.items[2].item.kind else {
        panic!()
    };
    assert_eq!(s.directives.len(), 2);
}

#[test]
fn two_bad_statements_give_two_errors() {
    let src = "kernel k(x: in f32[8, 8], y: out f32[8, 8]) {\n  let a = x +\n  let b = )\n  y = x\n  let c = (x\n}\n";
    let p = parse(src);
    assert!(p.errors.len() >= 2, "{:#?}", p.errors);
    let ItemKind::Kernel(k) = &p.file.items[0].item.kind else {
        panic!("{:#?}", p.file)
    };
    let KernelBody::Block(b) = &k.body else {
        panic!()
    };
    assert!(b
        .stmts
        .iter()
        .any(|s| matches!(s.kind, StmtKind::Assign { .. })));
}

#[test]
fn bad_argument_keeps_the_others() {
    let p = parse("expect close(Y, ), rtol: 1e-4)\n");
    assert_eq!(codes(&p), ["E0001"]);
    let p = parse("workload w { k[0](a: A[0], b: +, c: C[0]) }\n");
    assert_eq!(codes(&p), ["E0001"]);
    let ItemKind::Workload(w) = &p.file.items[0].item.kind else {
        panic!()
    };
    let WorkloadBody::Block(b) = &w.body else {
        panic!()
    };
    let StmtKind::Expr(e) = &b.stmts[0].kind else {
        panic!()
    };
    let ExprKind::Call { args, .. } = &e.kind else {
        panic!()
    };
    assert_eq!(args.len(), 3);
    assert!(matches!(args[1].value.kind, ExprKind::Error));
}

#[test]
fn unclosed_brace_does_not_swallow_next_item() {
    let src = "kernel k(x: in f32[8, 8], y: out f32[8, 8]) {\n  y = x\n\nworkload w {\n  k[0](x: X, y: Y)\n}\n";
    let p = parse(src);
    assert_eq!(codes(&p), ["E0002"]);
    assert_eq!(&src[p.errors[0].span.range()], "{");
    assert_eq!(p.file.items.len(), 2);
    assert!(matches!(p.file.items[1].item.kind, ItemKind::Workload(_)));
    assert!(matches!(p.file.items[0].item.kind, ItemKind::Kernel(_)));
}

#[test]
fn lexical_errors() {
    let p = parse(
        "const A = 99999999999999999999999\nconst B = 1 @ 2\ninput X: f32[4] = load(\"x.npy)\n",
    );
    let c = codes(&p);
    assert!(c.contains(&"E0003"), "{c:?}");
    assert!(c.contains(&"E0005"), "{c:?}");
    assert!(c.contains(&"E0004"), "{c:?}");
}

#[test]
fn garbage_before_first_item() {
    let p = parse("hello world\nconst A = 1\n");
    assert_eq!(codes(&p), ["E0007"]);
    assert_eq!(p.file.items.len(), 1);
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let src = format!(
        "const A = {}1{}\n",
        "(".repeat(100_000),
        ")".repeat(100_000)
    );
    let p = parse(&src);
    assert!(codes(&p).contains(&"E0006"));
    let src = format!("kernel k() {{\n{}\n", "for i in 0..1 {\n".repeat(50_000));
    let p = parse(&src);
    assert!(!p.errors.is_empty());
    let src = format!("const A = {}1\n", "-".repeat(100_000));
    let p = parse(&src);
    assert!(codes(&p).contains(&"E0006"));
    // Long operator chains are deep trees too (every later pass recurses over them).
    for op in [" + ", " * ", " && ", "."] {
        let src = format!("const A = {}\n", vec!["x"; 100_000].join(op));
        assert!(codes(&parse(&src)).contains(&"E0006"), "{op}");
    }
    let src = format!(
        "kernel k(x: f32[4]) {{\n  y = {}\n}}\n",
        vec!["x"; 20_000].join(" + ")
    );
    assert!(codes(&parse(&src)).contains(&"E0006"));
    // So are postfix chains: indexing, calls and task calls (`a[0][0]…`, `f(1)(1)…`,
    // `k[0][0]…`), which every pass walks recursively as well.
    for link in ["[0]", "(1)", "[0](x: X)"] {
        let src = format!(
            "kernel k(a: in f32[8, 8], c: out f32[8, 8]) {{\n    c = a{}\n}}\n",
            link.repeat(20_000)
        );
        assert!(codes(&parse(&src)).contains(&"E0006"), "{link}");
    }
    let ok = format!("const A = a{}\n", "[0]".repeat(500));
    assert!(parse(&ok).errors.is_empty());
    // Separate expressions each start their own chain.
    let ok = format!("const A = f({})\n", vec!["x + x"; 2_000].join(", "));
    assert!(parse(&ok).errors.is_empty());
}

#[test]
fn spans_point_at_the_mistake() {
    let src = "const A = 1\naxis a = Dense[4\nconst B = 2\n";
    let p = parse(src);
    assert_eq!(codes(&p), ["E0002"]);
    assert_eq!(p.errors[0].span, Span::new(26, 27));
}

const TOKENS: &[&str] = &[
    "kernel", "workload", "for", "in", "P", "(", ")", "[", "]", "{", "}", ",", ":", "..", ".", "=",
    "+", "-", "*", "/", "==", "<=", "&&", "\n", "x", "1", "2.0", "\"s\"", "let", "var", "when",
    "else", "send", "consume", "as", "channel", "process", "schedule", "input", "f32", "out",
    "inout", "pipe", "cube", "///d\n", "//c\n", ";", "@", "\"", "0x", "1e",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn never_panics_on_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let src = String::from_utf8_lossy(&bytes);
        let p = parse(&src);
        check_invariants(&src, &p);
    }

    #[test]
    fn never_panics_on_token_soup(idx in proptest::collection::vec(0..TOKENS.len(), 0..200)) {
        let src: String = idx.iter().map(|&i| format!("{} ", TOKENS[i])).collect();
        let p = parse(&src);
        check_invariants(&src, &p);
    }

    #[test]
    fn never_panics_on_mutated_examples(cut in 0usize..2000, len in 0usize..40, ins in 0..TOKENS.len()) {
        let src = data("language_md_1.wsp");
        let cut = cut.min(src.len());
        let mut s = src.as_bytes()[..cut].to_vec();
        s.extend_from_slice(TOKENS[ins].as_bytes());
        let rest = (cut + len).min(src.len());
        s.extend_from_slice(&src.as_bytes()[rest..]);
        let s = String::from_utf8_lossy(&s);
        let p = parse(&s);
        check_invariants(&s, &p);
    }
}

#[test]
fn nesting_just_under_the_limit_parses_without_overflow() {
    // The deepest accepted nesting must not overflow the stack (test threads have 2 MiB).
    // 8 levels are parsed on the caller's stack, deeper items on a stack of their own.
    for n in [8, 9, wsp_syntax::parser::MAX_DEPTH as usize - 1] {
        for src in [
            format!("const A = {}1{}\n", "(".repeat(n), ")".repeat(n)),
            format!("const A = {}1{}\n", "[".repeat(n), "]".repeat(n)),
            format!("const A = {}1\n", "-".repeat(n)),
            format!("const A = {}1{}\n", "f(-".repeat(n / 2), ")".repeat(n / 2)),
            format!(
                "kernel k() {{\n{}y = x\n{}}}\n",
                "for i in 0..1 {\n".repeat(n - 1),
                "}\n".repeat(n - 1)
            ),
        ] {
            let p = parse(&src);
            assert!(p.errors.is_empty(), "{:?}", codes(&p));
        }
    }
}

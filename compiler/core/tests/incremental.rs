//! Invariant 4: editing the body of one kernel re-runs no check of any other item.

use wsp_core::Workspace;

const PROGRAM: &str = "const N = 4
axis rows = Dense[N]
input X: f32[N, 8, 8] = load(\"x.npy\")
output Y: f32[N, 8, 8]

kernel double(x: in f32[8, 8], y: out f32[8, 8]) {
    y = x * 2.0
}

kernel square(x: in f32[8, 8], y: out f32[8, 8]) {
    y = x * x
}

workload w {
    for i in P(rows) { double[i](x: X[i], y: Y[i]) }
}

schedule main = w.dispatch(round_robin(4))
";

#[test]
fn editing_one_kernel_body_rechecks_only_that_kernel() {
    let (mut ws, log) = Workspace::with_query_log();
    ws.set_file("p.wsp", PROGRAM.to_string());
    assert!(ws.check("p.wsp").is_empty(), "{:#?}", ws.check("p.wsp"));
    assert_eq!(ws.workload_types("p.wsp").len(), 1);
    log.lock().unwrap().clear();

    // Edit inside `double`'s body only; the text before `square` changes length too.
    let edited = PROGRAM.replace("y = x * 2.0", "y = x * 2.0 + x * 0.5");
    ws.set_file("p.wsp", edited);
    assert!(ws.check("p.wsp").is_empty());

    let ran: Vec<String> = log.lock().unwrap().clone();
    let item_checks: Vec<&String> = ran.iter().filter(|q| q.contains("check_item")).collect();
    assert_eq!(
        item_checks.len(),
        1,
        "item checks that re-ran: {item_checks:#?}\nall: {ran:#?}"
    );
    // Only `double`'s type/flow query re-ran; no race query of any workload re-ran.
    let types: Vec<&String> = ran.iter().filter(|q| q.contains("kernel_types")).collect();
    assert_eq!(types.len(), 1, "kernel type checks that re-ran: {types:#?}");
    assert!(
        !ran.iter().any(|q| q.contains("item_races")),
        "a race check re-ran: {ran:#?}"
    );
    // Workload types are per item too: asking for them again re-runs none.
    log.lock().unwrap().clear();
    assert_eq!(ws.workload_types("p.wsp").len(), 1);
    let ran_types: Vec<String> = log.lock().unwrap().clone();
    assert!(
        !ran_types.iter().any(|q| q.contains("workload_type")),
        "a workload type re-ran: {ran_types:#?}"
    );
    // The checks read the file item by item: the whole file's parse is not assembled.
    assert!(!ran.iter().any(|q| q.contains("parse_file")), "{ran:#?}");
    // Only the edited item was parsed again (issue 27 item 5: an edit re-parses the items it
    // touches), and the file's parse is the one a whole-file parse gives.
    let parsed: Vec<&String> = ran.iter().filter(|q| q.contains("parse_item")).collect();
    assert_eq!(parsed.len(), 1, "items parsed again: {parsed:#?}");
    let file = ws.file_handle("p.wsp").expect("loaded");
    let edited = PROGRAM.replace("y = x * 2.0", "y = x * 2.0 + x * 0.5");
    assert_eq!(
        *wsp_core::db::parse_file(ws.db(), file),
        wsp_syntax::parse(&edited)
    );
}

#[test]
fn an_edit_that_splits_an_item_parses_both_halves_and_no_other() {
    let (mut ws, log) = Workspace::with_query_log();
    ws.set_file("p.wsp", PROGRAM.to_string());
    let _ = ws.check("p.wsp");
    log.lock().unwrap().clear();
    // A new item keyword at a line start inside `square`'s body cuts it in two.
    let edited = PROGRAM.replace("    y = x * x\n", "const BROKEN = 1\n    y = x * x\n");
    ws.set_file("p.wsp", edited.clone());
    let diags = ws.check("p.wsp");
    assert!(!diags.is_empty());
    let ran = log.lock().unwrap().clone();
    let parsed = ran.iter().filter(|q| q.contains("parse_item")).count();
    assert_eq!(parsed, 2, "{ran:#?}");
    let file = ws.file_handle("p.wsp").expect("loaded");
    assert_eq!(
        *wsp_core::db::parse_file(ws.db(), file),
        wsp_syntax::parse(&edited)
    );
}

#[test]
fn changing_a_kernel_signature_rechecks_its_callers() {
    let (mut ws, log) = Workspace::with_query_log();
    ws.set_file("p.wsp", PROGRAM.to_string());
    let _ = ws.check("p.wsp");
    log.lock().unwrap().clear();
    let edited = PROGRAM.replace("kernel double(x: in", "kernel double(z: in");
    ws.set_file("p.wsp", edited);
    let diags = ws.check("p.wsp");
    assert!(diags.iter().any(|d| d.code == "E0106"), "{diags:#?}");
    let ran = log.lock().unwrap().clone();
    assert!(ran.iter().filter(|q| q.contains("check_item")).count() >= 2);
}

/// Edits applied one after another to a workspace give, after each, the diagnostics a fresh
/// workspace gives for the same text: for every fixture of `tests/ui`, seeded edits that
/// insert and delete text anywhere (new items, doc comments, braces, line breaks) — the re-cut,
/// the per-item inputs, the virtual offsets and the durable interfaces against a check from
/// scratch.
#[test]
fn edits_check_as_from_scratch() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let std::result::Result::Ok(rd) = std::fs::read_dir(root.join("tests/ui")) else {
        panic!("tests/ui");
    };
    let mut paths: Vec<_> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "wsp"))
        .collect();
    paths.sort();
    assert!(paths.len() > 50);
    let snippets = [
        "\n",
        " ",
        "x",
        "}",
        "{",
        "(",
        "1",
        "\nkernel k9(a: in f32[4, 4], b: out f32[4, 4]) {\n    b = a\n}\n",
        "/// doc\n",
        "const Q = 3\n",
        " * 2.0",
    ];
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n.max(1) as u64) as usize
    };
    let read = |m: &str| std::fs::read_to_string(root.join(m));
    let mut checked = 0;
    for p in &paths {
        let name = p
            .strip_prefix(&root)
            .unwrap_or(p)
            .to_string_lossy()
            .replace('\\', "/");
        let mut text = std::fs::read_to_string(p).unwrap_or_default();
        let mut ws = Workspace::new();
        ws.set_file(&name, text.clone());
        ws.load_imports(read);
        let _ = ws.check(&name);
        for _ in 0..6 {
            let mut at = next(text.len() + 1);
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            if next(3) == 0 && at < text.len() {
                let mut end = (at + 1 + next(12)).min(text.len());
                while !text.is_char_boundary(end) {
                    end += 1;
                }
                text.replace_range(at..end, "");
            } else {
                text.insert_str(at, snippets[next(snippets.len())]);
            }
            ws.set_file(&name, text.clone());
            ws.load_imports(read);
            let mut fresh = Workspace::new();
            fresh.set_file(&name, text.clone());
            fresh.load_imports(read);
            assert_eq!(
                ws.check(&name),
                fresh.check(&name),
                "{name} after edits:\n{text}"
            );
            checked += 1;
        }
    }
    assert!(checked > 300);
}

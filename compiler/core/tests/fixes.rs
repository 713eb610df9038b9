//! Machine-applicable fixes, applied: the fixed program checks clean of that diagnostic.

use wsp_core::Workspace;
use wsp_diagnostics::Diagnostic;

/// The diagnostic's first fix applied to `text`, the file the diagnostic is about.
fn apply(text: &str, d: &Diagnostic) -> String {
    let fix = d
        .fixes
        .first()
        .unwrap_or_else(|| panic!("{} has no fix", d.code));
    fix.apply_to(&d.primary.file, text)
}

fn codes(ws: &Workspace, path: &str) -> Vec<String> {
    ws.check(path).iter().map(|d| d.code.to_string()).collect()
}

const PIPELINE: &str = "axis tiles = Dense[4]
input X: f32[4, 8, 8] = random(seed: 1)
tensor T: f32[4, 8, 8]
output Y: f32[4, 8, 8]
kernel copy(src: in f32[8, 8], dst: out f32[8, 8]) { dst = src }
channel a: Channel[depth: 2]
channel b: Channel[depth: 2]
process loader produces a {
    for i in P.seq(tiles) { send a, copy[i](src: X[i], dst: T[i]); send b, copy[i](src: X[i], dst: T[i]) }
}
process storer {
    consume a as i { copy[i](src: T[i], dst: Y[i]) }
}
workload w = connect(loader, storer)
";

#[test]
fn undeclared_channels_are_declared_in_the_process_header() {
    let mut ws = Workspace::new();
    let mut text = PIPELINE.to_string();
    // Sending on `b` (a list exists: `, b`), consuming `a` (no list: ` consumes a`).
    for (code, header) in [
        ("E0501", "process loader produces a, b {"),
        ("E0502", "process storer consumes a {"),
    ] {
        ws.set_file("p.wsp", text.clone());
        let diags = ws.check("p.wsp");
        let d = diags
            .iter()
            .find(|d| d.code == code)
            .unwrap_or_else(|| panic!("no {code}: {diags:#?}"));
        text = apply(&text, d);
        assert!(text.contains(header), "{text}");
    }
    ws.set_file("p.wsp", text.clone());
    let left = codes(&ws, "p.wsp");
    assert!(
        !left.iter().any(|c| c == "E0501" || c == "E0502"),
        "{left:?}\n{text}"
    );
}

/// `split` sends all of `a` before `b`; `join` takes one `b`, then drains `a`.
fn split_join(a: &str, b: &str) -> String {
    format!(
        "axis tiles = Dense[4]
input X: f32[4, 4, 4] = random(seed: 1)
tensor T: f32[4, 4, 4]
output Y: f32[4, 4, 4]
kernel copy(src: in f32[4, 4], dst: out f32[4, 4]) {{ dst = src }}
channel a{a}
channel b{b}
process split produces a, b {{
    for i in P.seq(tiles) {{ send a, copy[i](src: X[i], dst: T[i]) }}
    for i in P.seq(tiles) {{ send b, i }}
}}
process join consumes a, b {{
    consume b as i {{
        consume a as j {{ copy[j](src: T[j], dst: Y[j]) }}
    }}
}}
workload w = connect(split, join)
"
    )
}

#[test]
fn deadlocking_depths_are_raised_to_the_smallest_that_complete() {
    // Every way a channel can be written: a depth to replace, other arguments, a bare
    // `Channel`, nothing at all.
    for (a, b, want_a, want_b) in [
        (
            ": Channel[depth: 1]",
            ": Channel[depth: 1]",
            "[depth: 4]",
            "[depth: 3]",
        ),
        (
            ": Channel[latency: 2]",
            ": Channel",
            "[depth: 4, latency: 2]",
            "[depth: 3]",
        ),
        (
            "",
            ": Channel[depth: 0]",
            "a: Channel[depth: 4]",
            "[depth: 3]",
        ),
    ] {
        let mut ws = Workspace::new();
        let text = split_join(a, b);
        ws.set_file("p.wsp", text.clone());
        let diags = ws.check("p.wsp");
        let d = diags
            .iter()
            .find(|d| d.code == "E0509")
            .unwrap_or_else(|| panic!("no E0509: {diags:#?}"));
        let fixed = apply(&text, d);
        assert!(fixed.contains(want_a) && fixed.contains(want_b), "{fixed}");
        ws.set_file("p.wsp", fixed.clone());
        let left = codes(&ws, "p.wsp");
        assert!(left.is_empty(), "{left:?}\n{fixed}");
    }
}

const LIB: &str = "/// y = 2x
kernel double(x: in f32[8, 8], y: out f32[8, 8]) {
    y = x * 2.0
}
output Z: f32[4, 8, 8]
";

fn main_using(header: &str) -> String {
    format!(
        "{header}axis rows = Dense[4]
input X: f32[4, 8, 8] = random(seed: 1)
output Y: f32[4, 8, 8]
workload w {{
    for i in P(rows) {{ double[i](x: X[i], y: Y[i]) }}
}}
"
    )
}

#[test]
fn an_unknown_name_another_file_declares_is_imported() {
    // No import yet: a line `import lib.{double}` at the top; an import of the module with a
    // name list: the name joins the list; another import only: the new line goes after it.
    for (header, fixed) in [
        ("", "import lib.{double}\naxis rows"),
        ("import lib.{Z}\n", "import lib.{Z, double}\naxis rows"),
        (
            "import other.{K}\n",
            "import other.{K}\nimport lib.{double}\naxis rows",
        ),
    ] {
        let mut ws = Workspace::new();
        ws.set_file("dir/lib.wsp", LIB.to_string());
        ws.set_file("dir/other.wsp", "const K = 1\n".to_string());
        let text = main_using(header);
        ws.set_file("dir/main.wsp", text.clone());
        let diags = ws.check("dir/main.wsp");
        let d = diags
            .iter()
            .find(|d| d.code == "E0101")
            .unwrap_or_else(|| panic!("no E0101: {diags:#?}"));
        assert_eq!(d.fixes.len(), 1, "{d:#?}");
        assert_eq!(d.fixes[0].title, "import `double` from `lib`");
        let text = apply(&text, d);
        assert!(text.starts_with(fixed), "{text}");
        ws.set_file("dir/main.wsp", text.clone());
        // Only the header's own names (`Z`, `K`) are left over: unused, W0103.
        let left = codes(&ws, "dir/main.wsp");
        assert!(left.iter().all(|c| c == "W0103"), "{left:?}\n{text}");
        assert_eq!(
            left.len(),
            usize::from(!header.is_empty()),
            "{left:?}\n{text}"
        );
    }
    // A module outside the file's directory cannot be imported: no fix.
    let mut ws = Workspace::new();
    ws.set_file("elsewhere/lib.wsp", LIB.to_string());
    ws.set_file("dir/main.wsp", main_using(""));
    let diags = ws.check("dir/main.wsp");
    let d = diags.iter().find(|d| d.code == "E0101").unwrap();
    assert!(d.fixes.is_empty(), "{d:#?}");
    assert_eq!(
        wsp_core::check::import_module_name("main.wsp", "std/nn.wsp").as_deref(),
        Some("std.nn")
    );
    assert_eq!(
        wsp_core::check::import_module_name("a/main.wsp", "a/layers/norm.wsp").as_deref(),
        Some("layers.norm")
    );
}

const VIEWS: &str = "axis batch = Dense[2]
axis tiles = Dense[2]
input X: f32[2, 128, 64] = random(seed: 1)
output Y: f32[2, 128, 64]
kernel copy(x: in f32[64, 64], y: out f32[64, 64]) {
    y = x
}
workload w {
    for b, i in P(batch, tiles) {
        copy[b, i](x: VIEW, y: Y[b, i*64 .. i*64 + 64, :])
    }
}
";

#[test]
fn a_view_slice_is_fixed_to_the_tile_shape() {
    let mut ws = Workspace::new();
    for (broken, fixed) in [
        ("X[b, i*64 .. i*64+32, :]", "X[b, i*64 .. i*64+64, :]"),
        ("X[b, 0..16, :]", "X[b, 0..64, :]"),
        ("X[b, ..16, :]", "X[b, ..64, :]"),
        ("X[b, 64..96, 0..32]", "X[b, 64..128, 0..64]"),
    ] {
        let text = VIEWS.replace("VIEW", broken);
        ws.set_file("v.wsp", text.clone());
        let diags = ws.check("v.wsp");
        let d = diags
            .iter()
            .find(|d| d.code == "E0209")
            .unwrap_or_else(|| panic!("no E0209: {diags:#?}"));
        assert_eq!(
            d.fixes[0].title,
            format!(
                "slice `{}` to `copy`'s [64, 64] tile",
                d.message.split('`').nth(1).unwrap_or("")
            )
        );
        let text = apply(&text, d);
        assert_eq!(text, VIEWS.replace("VIEW", fixed));
        ws.set_file("v.wsp", text.clone());
        assert!(
            codes(&ws, "v.wsp").is_empty(),
            "{:?}\n{text}",
            codes(&ws, "v.wsp")
        );
    }
    // Ambiguous: a dimension the view leaves whole (`X[b]` is [128, 64]): no fix.
    ws.set_file("v.wsp", VIEWS.replace("VIEW", "X[b]"));
    let diags = ws.check("v.wsp");
    let d = diags.iter().find(|d| d.code == "E0209").expect("E0209");
    assert!(d.fixes.is_empty(), "{d:#?}");
}

#[test]
fn unused_imported_names_are_removed() {
    let lib = "kernel a(x: in f32[4, 4], y: out f32[4, 4]) { y = x }\nkernel b(x: in f32[4, 4], y: out f32[4, 4]) { y = x }\nkernel c(x: in f32[4, 4], y: out f32[4, 4]) { y = x }\n";
    let body =
        "input X: f32[4, 4] = ones\noutput Y: f32[4, 4]\nworkload w {\n    b[0](x: X, y: Y)\n}\n";
    for (import, fixed) in [
        ("import lib.{a, b, c}\n", "import lib.{b}\n"),
        ("import lib.{b, c}\n", "import lib.{b}\n"),
        ("import lib.{a, b}\nimport lib.{c}\n", "import lib.{b}\n\n"),
    ] {
        let mut ws = Workspace::new();
        ws.set_file("lib.wsp", lib.to_string());
        let mut text = format!("{import}{body}");
        // Apply one fix at a time, as an editor would.
        for _ in 0..3 {
            ws.set_file("main.wsp", text.clone());
            let diags = ws.check("main.wsp");
            let Some(d) = diags.iter().find(|d| d.code == "W0103") else {
                break;
            };
            assert_eq!(d.tags, vec![wsp_diagnostics::Tag::Unnecessary]);
            text = apply(&text, d);
        }
        assert_eq!(text, format!("{fixed}{body}"));
        ws.set_file("main.wsp", text.clone());
        assert!(codes(&ws, "main.wsp").is_empty(), "{text}");
    }
}

/// The opt-in `narrowing` lint (W0201) writes the conversion out, and is silent when it is off.
#[test]
fn a_narrowing_store_gets_its_cast_written() {
    let mut ws = Workspace::new();
    let text = "kernel half(x: in f32[16, 16], y: out f16[16, 16]) {\n    y = x * 0.5\n}\n";
    ws.set_file("n.wsp", text.to_string());
    assert!(codes(&ws, "n.wsp").is_empty(), "off by default");
    assert!(ws.set_lints(&["narrow"]).is_err(), "an unknown lint");
    ws.set_lints(&["narrowing"]).expect("a lint");
    let diags = ws.check("n.wsp");
    let d = diags.iter().find(|d| d.code == "W0201").expect("W0201");
    let fixed = apply(text, d);
    assert!(fixed.contains("y = cast(x * 0.5, f16)"), "{fixed}");
    ws.set_file("n.wsp", fixed);
    assert!(codes(&ws, "n.wsp").is_empty());
}

/// A kernel called like a function in a workload (E0109) becomes a task that runs once.
#[test]
fn a_kernel_called_like_a_function_becomes_a_task() {
    let mut ws = Workspace::new();
    let text = "input X: f32[8, 8] = random(seed: 1)\noutput Y: f32[8, 8]\n\
                kernel copy(src: in f32[8, 8], dst: out f32[8, 8]) { dst = src }\n\
                workload w { copy(src: X, dst: Y) }\n";
    ws.set_file("t.wsp", text.to_string());
    let diags = ws.check("t.wsp");
    let d = diags.iter().find(|d| d.code == "E0109").expect("E0109");
    let fixed = apply(text, d);
    assert!(
        fixed.contains("workload w { copy[](src: X, dst: Y) }"),
        "{fixed}"
    );
    ws.set_file("t.wsp", fixed);
    assert!(codes(&ws, "t.wsp").is_empty());
}

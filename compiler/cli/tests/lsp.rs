//! `wsp lsp` driven over stdio by a minimal JSON-RPC client: diagnostics on open and on change,
//! hover, definition, symbols, formatting, quick fixes, and panics contained per request.

mod common;

use common::{pos, setup, Client};
use serde_json::{json, Value};

const SRC: &str = "axis rows = Dense[4]\ninput X: f32[4, 8, 8] = random(seed: 1)\noutput Y: f32[4, 8, 8]\n/// doubles a tile\nkernel double(x: in f32[8, 8], y: out f32[8, 8]) {\n    y = x * 2.0\n}\nworkload w {\n    for i in P(rows) { double[i](x: X[i], y: Yy[i]) }\n}\n";

#[test]
fn a_session_with_a_real_server() {
    let (dir, uri) = setup("session");
    let mut c = Client::start(&dir, false);
    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "wsp", "version": 1, "text": SRC}}),
    );
    let d = c.diagnostics(&uri);
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0]["code"], "E0101");
    // The code links to its explanation.
    let href = d[0]["codeDescription"]["href"].as_str().unwrap_or_default();
    assert!(
        href.ends_with("/compiler/diagnostics/explanations/E0101.md"),
        "{}",
        d[0]
    );
    assert_eq!(d[0]["range"]["start"], json!({"line": 8, "character": 45}));

    // Hover on `double` in the task call: declaration, doc, footprint.
    let h = c.request("textDocument/hover", pos(8, 25, &uri));
    let md = h["result"]["contents"]["value"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        md.contains("kernel double(") && md.contains("doubles a tile"),
        "{h}"
    );
    assert!(md.contains("UB 512 / 196,608 B"), "{md}");
    assert!(md.contains("estimated per task on ascend910b: "), "{md}");
    // Hover on the parameter `x` in the kernel body: the tile and its buffer.
    let h = c.request("textDocument/hover", pos(5, 8, &uri));
    let md = h["result"]["contents"]["value"]
        .as_str()
        .unwrap_or_default();
    assert!(
        md.contains("x: in f32[8, 8]") && md.contains("lives in UB on ascend910b"),
        "{h}"
    );

    // Definition of `X` in the view.
    let r = c.request("textDocument/definition", pos(8, 36, &uri));
    assert_eq!(r["result"]["uri"], uri.as_str(), "{r}");
    assert_eq!(
        r["result"]["range"]["start"],
        json!({"line": 1, "character": 6})
    );

    let s = c.request(
        "textDocument/documentSymbol",
        json!({"textDocument": {"uri": uri}}),
    );
    let names: Vec<&str> = s["result"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|x| x["name"].as_str())
        .collect();
    assert_eq!(names, ["rows", "X", "Y", "double", "w"]);

    // Fix the error: the diagnostics clear.
    let fixed = SRC.replace("Yy[i]", "Y[i]").replace("x * 2.0", "x*2.0");
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": fixed}]}),
    );
    assert!(c.diagnostics(&uri).is_empty());

    let f = c.request(
        "textDocument/formatting",
        json!({"textDocument": {"uri": uri}, "options": {"tabSize": 4, "insertSpaces": true}}),
    );
    let edits = f["result"].as_array().cloned().unwrap_or_default();
    assert_eq!(edits.len(), 1, "{f}");
    assert!(edits[0]["newText"]
        .as_str()
        .unwrap()
        .contains("    y = x * 2.0\n"));

    // Out-of-range and invalid positions are answered, not crashed on.
    let h = c.request("textDocument/hover", pos(999, 999, &uri));
    assert!(h.get("error").is_none(), "{h}");
    c.stop();
}

#[test]
fn quick_fix_from_a_race() {
    let (dir, uri) = setup("fix");
    let src = "axis t = Dense[4]\ninput X: f32[4, 8] = random(seed: 1)\noutput Y: f32[8]\nkernel copy(x: in f32[1, 8], y: out f32[1, 8]) {\n    y = x\n}\nworkload w {\n    for i in P(t) { copy[i](x: X[i], y: Y) }\n}\n";
    let mut c = Client::start(&dir, false);
    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "wsp", "version": 1, "text": src}}),
    );
    let d = c.diagnostics(&uri);
    assert!(d.iter().any(|x| x["code"] == "E0409"), "{d:?}");
    let r = c.request(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": uri}, "range": {"start": {"line": 7, "character": 0}, "end": {"line": 7, "character": 40}}, "context": {"diagnostics": []}}),
    );
    let actions = r["result"].as_array().cloned().unwrap_or_default();
    let edit = actions
        .iter()
        .find_map(|a| a["edit"]["changes"][uri.as_str()][0]["newText"].as_str())
        .unwrap_or_default()
        .to_string();
    assert!(edit.contains("P.seq"), "{r}");
    c.stop();
}

#[test]
fn panics_in_handlers_are_contained() {
    let (dir, uri) = setup("panic");
    let mut c = Client::start(&dir, true);
    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "wsp", "version": 1, "text": SRC}}),
    );
    for method in [
        "textDocument/hover",
        "textDocument/definition",
        "textDocument/documentSymbol",
        "textDocument/formatting",
        "textDocument/codeAction",
        "textDocument/inlayHint",
        "textDocument/references",
        "textDocument/documentHighlight",
        "textDocument/completion",
        "textDocument/signatureHelp",
        "textDocument/semanticTokens/full",
        "textDocument/foldingRange",
        "textDocument/prepareRename",
        "textDocument/rename",
        "workspace/symbol",
    ] {
        let r = c.request(method, any_params(&uri));
        assert_eq!(r["error"]["code"], -32603, "{method}: {r}");
    }
    // Still serving.
    c.stop();
}

/// Parameters every document request accepts (the extra fields are ignored).
fn any_params(uri: &str) -> Value {
    let mut params = pos(0, 0, uri);
    let range = json!({"start": {"line": 0, "character": 0}, "end": {"line": 9, "character": 0}});
    params["options"] = json!({"tabSize": 4, "insertSpaces": true});
    params["range"] = range;
    params["context"] = json!({"diagnostics": [], "includeDeclaration": true, "triggerKind": 1, "isRetrigger": false});
    params["newName"] = json!("z");
    params["query"] = json!("");
    params
}

#[test]
fn a_panic_in_one_handler_leaves_the_others_serving() {
    let (dir, uri) = setup("panic-some");
    let mut c = Client::start_with(
        &dir,
        &[(
            "WSP_LSP_INJECT_PANIC",
            "codeAction,inlayHint,documentHighlight",
        )],
    );
    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "wsp", "version": 1, "text": SRC}}),
    );
    assert_eq!(c.diagnostics(&uri).len(), 1);
    for method in [
        "textDocument/codeAction",
        "textDocument/inlayHint",
        "textDocument/documentHighlight",
    ] {
        let r = c.request(method, any_params(&uri));
        assert_eq!(r["error"]["code"], -32603, "{method}: {r}");
        assert!(
            r["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .contains("the server keeps running"),
            "{r}"
        );
        // A normal request right after is answered normally.
        let h = c.request("textDocument/hover", pos(8, 25, &uri));
        let md = h["result"]["contents"]["value"]
            .as_str()
            .unwrap_or_default();
        assert!(md.contains("kernel double("), "after {method}: {h}");
    }
    c.stop();
}

#[test]
fn a_request_whose_document_changes_meanwhile_answers_content_modified() {
    let (dir, uri) = setup("modified");
    let mut c = Client::start_with(&dir, &[("WSP_LSP_REQUEST_DELAY_MS", "400")]);
    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "wsp", "version": 1, "text": SRC}}),
    );
    assert_eq!(c.diagnostics(&uri).len(), 1);
    // The hover waits 400 ms before it starts; the edit arrives meanwhile.
    let id = c.send_request("textDocument/hover", pos(8, 25, &uri));
    let edited = format!("// a new first line\n{SRC}");
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": edited}]}),
    );
    let r = c.reply(id);
    assert_eq!(r["error"]["code"], -32801, "{r}");
    // Asked again, it is answered (for the new text: the call moved down a line).
    let h = c.request("textDocument/hover", pos(9, 25, &uri));
    let md = h["result"]["contents"]["value"]
        .as_str()
        .unwrap_or_default();
    assert!(md.contains("kernel double("), "{h}");
    c.stop();
}

/// A long request answers from a snapshot: an edit meanwhile is applied and checked at once
/// (it cancels the request, which answers ContentModified) instead of waiting for it.
#[test]
fn a_long_request_does_not_hold_up_an_edit() {
    let (dir, uri) = setup("long");
    // Every request takes 5 s over its snapshot (checking for cancellation as it goes).
    let mut c = Client::start_with(&dir, &[("WSP_LSP_REQUEST_DELAY_MS", "5000")]);
    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "wsp", "version": 1, "text": SRC}}),
    );
    assert_eq!(c.diagnostics(&uri).len(), 1);
    let id = c.send_request("textDocument/hover", pos(8, 25, &uri));
    std::thread::sleep(std::time::Duration::from_millis(200));
    let t0 = std::time::Instant::now();
    let fixed = SRC.replace("Yy[i]", "Y[i]");
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": fixed}]}),
    );
    let (mut diags, mut reply) = (None, None);
    while diags.is_none() || reply.is_none() {
        let Some(m) = c.next_message(std::time::Duration::from_secs(20)) else {
            panic!("no answer: diagnostics {diags:?}, reply {reply:?}");
        };
        if m["method"] == "textDocument/publishDiagnostics" && m["params"]["uri"] == uri {
            diags = Some((t0.elapsed(), m["params"]["diagnostics"].clone()));
        } else if m["id"] == json!(id) {
            reply = Some((t0.elapsed(), m));
        }
    }
    let (when, d) = diags.unwrap_or_default();
    assert_eq!(d, json!([]), "the edit's diagnostics");
    assert!(
        when < std::time::Duration::from_millis(2500),
        "the edit waited {when:?} for the request"
    );
    let (replied, r) = reply.unwrap_or_default();
    assert_eq!(r["error"]["code"], -32801, "{r}");
    assert!(
        replied < std::time::Duration::from_millis(2500),
        "{replied:?}"
    );
    c.stop();
}

#[test]
fn an_edit_republishes_the_files_that_import_it() {
    let (dir, uri) = setup("imports");
    let lib = "kernel double(x: in f32[8, 8], y: out f32[8, 8]) {\n    y = x * 2.0\n}\n";
    let main = "import helpers.{double}\naxis rows = Dense[4]\ninput X: f32[4, 8, 8] = random(seed: 1)\noutput Y: f32[4, 8, 8]\nworkload w {\n    for i in P(rows) { double[i](x: X[i], y: Y[i]) }\n}\n";
    std::fs::write(dir.join("helpers.wsp"), lib).unwrap();
    let lib_uri = format!("file://{}/helpers.wsp", dir.display());
    let mut c = Client::start(&dir, false);
    for (u, t) in [(&lib_uri, lib), (&uri, main)] {
        c.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": u, "languageId": "wsp", "version": 1, "text": t}}),
        );
        assert!(c.diagnostics(u).is_empty());
    }
    // Renaming the kernel in helpers.wsp breaks a.wsp's import: both are published.
    let renamed = lib.replace("double", "twice");
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": lib_uri, "version": 2}, "contentChanges": [{"text": renamed}]}),
    );
    assert!(c.diagnostics(&lib_uri).is_empty());
    let codes = |d: Vec<Value>| -> Vec<String> {
        d.iter()
            .filter_map(|x| x["code"].as_str().map(String::from))
            .collect()
    };
    assert_eq!(codes(c.diagnostics(&uri)), ["E0104", "E0101"]);
    // a.wsp follows the rename; then helpers.wsp reverts it, and a.wsp breaks again.
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": main.replace("double", "twice")}]}),
    );
    assert!(c.diagnostics(&uri).is_empty());
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": lib_uri, "version": 3}, "contentChanges": [{"text": lib}]}),
    );
    assert!(c.diagnostics(&lib_uri).is_empty());
    assert_eq!(codes(c.diagnostics(&uri)), ["E0104", "E0101"]);
    c.stop();
}

/// The quick fixes offered over `range` of `uri`: `(title, edits per URI)`.
fn code_actions(c: &mut Client, uri: &str, line: u32) -> Vec<(String, Value)> {
    let r = c.request(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": uri}, "range": {"start": {"line": line, "character": 0}, "end": {"line": line, "character": 200}}, "context": {"diagnostics": []}}),
    );
    r["result"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|a| {
            (
                a["title"].as_str().unwrap_or_default().to_string(),
                a["edit"]["changes"].clone(),
            )
        })
        .collect()
}

/// Applies one URI's text edits (LSP ranges, ASCII text) to `text`.
fn apply_edits(text: &str, edits: &Value) -> String {
    let offset = |p: &Value| -> usize {
        let line = p["line"].as_u64().unwrap_or(0) as usize;
        let ch = p["character"].as_u64().unwrap_or(0) as usize;
        let start: usize = text.split_inclusive('\n').take(line).map(str::len).sum();
        start + ch
    };
    let mut list: Vec<(usize, usize, String)> = edits
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|e| {
            (
                offset(&e["range"]["start"]),
                offset(&e["range"]["end"]),
                e["newText"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    list.sort_by_key(|e| std::cmp::Reverse(e.0));
    let mut out = text.to_string();
    for (a, b, t) in list {
        out.replace_range(a..b, &t);
    }
    out
}

fn open_and_fix(c: &mut Client, uri: &str, src: &str, code: &str, line: u32) -> String {
    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "wsp", "version": 1, "text": src}}),
    );
    let d = c.diagnostics(uri);
    assert!(d.iter().any(|x| x["code"] == code), "{d:?}");
    let actions = code_actions(c, uri, line);
    let (title, changes) = actions
        .iter()
        .find(|(t, _)| t.ends_with(&format!("({code})")))
        .unwrap_or_else(|| panic!("no {code} quick fix: {actions:?}"));
    assert!(!title.is_empty());
    let fixed = apply_edits(src, &changes[uri]);
    // The fixed text checks clean.
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": fixed}]}),
    );
    let left = c.diagnostics(uri);
    assert!(left.is_empty(), "{left:?}\n{fixed}");
    fixed
}

#[test]
fn quick_fix_imports_a_name_another_file_declares() {
    let (dir, uri) = setup("fix-import");
    let lib = "kernel double(x: in f32[8, 8], y: out f32[8, 8]) {\n    y = x * 2.0\n}\n";
    std::fs::write(dir.join("helpers.wsp"), lib).unwrap();
    let lib_uri = format!("file://{}/helpers.wsp", dir.display());
    let main = "axis rows = Dense[4]\ninput X: f32[4, 8, 8] = random(seed: 1)\noutput Y: f32[4, 8, 8]\nworkload w {\n    for i in P(rows) { double[i](x: X[i], y: Y[i]) }\n}\n";
    let mut c = Client::start(&dir, false);
    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": lib_uri, "languageId": "wsp", "version": 1, "text": lib}}),
    );
    assert!(c.diagnostics(&lib_uri).is_empty());
    let fixed = open_and_fix(&mut c, &uri, main, "E0101", 4);
    assert!(
        fixed.starts_with("import helpers.{double}\naxis rows"),
        "{fixed}"
    );
    c.stop();
}

#[test]
fn quick_fix_slices_a_view_to_the_tile_shape() {
    let (dir, uri) = setup("fix-view");
    let src = "axis batch = Dense[2]\naxis tiles = Dense[2]\ninput X: f32[2, 128, 64] = random(seed: 1)\noutput Y: f32[2, 128, 64]\nkernel copy(x: in f32[64, 64], y: out f32[64, 64]) {\n    y = x\n}\nworkload w {\n    for b, i in P(batch, tiles) {\n        copy[b, i](x: X[b, i*64 .. i*64+32, :], y: Y[b, i*64 .. i*64 + 64, :])\n    }\n}\n";
    let mut c = Client::start(&dir, false);
    let fixed = open_and_fix(&mut c, &uri, src, "E0209", 9);
    assert!(fixed.contains("x: X[b, i*64 .. i*64+64, :]"), "{fixed}");
    c.stop();
}

#[test]
fn quick_fix_raises_a_deadlocking_channel_depth() {
    let (dir, uri) = setup("fix-depth");
    // `split` sends all of `a` before `b`; `join` takes one `b`, then drains `a`.
    let src = "axis tiles = Dense[4]\ninput X: f32[4, 4, 4] = random(seed: 1)\ntensor T: f32[4, 4, 4]\noutput Y: f32[4, 4, 4]\nkernel copy(src: in f32[4, 4], dst: out f32[4, 4]) { dst = src }\nchannel a: Channel[depth: 1]\nchannel b: Channel[depth: 1]\nprocess split produces a, b {\n    for i in P.seq(tiles) { send a, copy[i](src: X[i], dst: T[i]) }\n    for i in P.seq(tiles) { send b, i }\n}\nprocess join consumes a, b {\n    consume b as i {\n        consume a as j { copy[j](src: T[j], dst: Y[j]) }\n    }\n}\nworkload w = connect(split, join)\n";
    let mut c = Client::start(&dir, false);
    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "wsp", "version": 1, "text": src}}),
    );
    let d = c.diagnostics(&uri);
    let w = d
        .iter()
        .find(|x| x["code"] == "E0509")
        .unwrap_or_else(|| panic!("no E0509: {d:?}"));
    let line = w["range"]["start"]["line"].as_u64().unwrap_or(0) as u32;
    let actions = code_actions(&mut c, &uri, line);
    let (_, changes) = actions
        .iter()
        .find(|(t, _)| t.ends_with("(E0509)"))
        .unwrap_or_else(|| panic!("no E0509 quick fix: {actions:?}"));
    let fixed = apply_edits(src, &changes[uri.as_str()]);
    assert!(
        fixed.contains("channel a: Channel[depth: 4]")
            && fixed.contains("channel b: Channel[depth: 3]"),
        "{fixed}"
    );
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": fixed}]}),
    );
    let left = c.diagnostics(&uri);
    assert!(left.is_empty(), "{left:?}\n{fixed}");
    c.stop();
}

/// A schedule AIE cannot express in full, and a kernel that fits Ascend's UB but not AIE-ML's
/// 64 KB data memory.
const CAPS: &str = "axis batch = Dense[2]\ninput X: f32[2, 80, 256] = random(seed: 1)\noutput Y: f32[2, 80, 256]\nkernel copy(x: in f32[80, 256], y: out f32[80, 256]) { y = x }\nworkload w {\n    for b in P(batch) { copy[b](x: X[b], y: Y[b]) }\n}\nschedule main = w\n    .timing(batched(8))\n    .streams(2)\n";

fn codes(d: &[Value]) -> Vec<String> {
    let mut c: Vec<String> = d
        .iter()
        .map(|x| x["code"].as_str().unwrap_or_default().to_string())
        .collect();
    c.sort();
    c
}

/// The opt-in `narrowing` lint as a setting (VS Code's `wsp.check.lints`), as `--warn narrowing`.
#[test]
fn the_lints_setting_turns_on_the_narrowing_lint() {
    let (dir, uri) = setup("lints");
    let text = "kernel half(x: in f32[16, 16], y: out f16[16, 16]) {\n    y = x * 0.5\n}\n";
    let open =
        json!({"textDocument": {"uri": uri, "languageId": "wsp", "version": 1, "text": text}});
    let mut c = Client::start(&dir, false);
    c.notify("textDocument/didOpen", open);
    assert!(c.diagnostics(&uri).is_empty(), "off by default");
    c.notify(
        "workspace/didChangeConfiguration",
        json!({"settings": {"wsp": {"check": {"lints": ["narrowing"]}}}}),
    );
    let d = c.diagnostics(&uri);
    assert_eq!(codes(&d), ["W0201"], "{d:?}");
    c.notify(
        "workspace/didChangeConfiguration",
        json!({"settings": {"wsp": {"check": {"lints": []}}}}),
    );
    assert!(c.diagnostics(&uri).is_empty());
    c.stop();
}

#[test]
fn settings_choose_the_target_backend_and_architecture_like_wsp_check() {
    let (dir, uri) = setup("settings");
    let open =
        json!({"textDocument": {"uri": uri, "languageId": "wsp", "version": 1, "text": CAPS}});
    // No settings: the simulator's view, no capability or AIE memory diagnostics.
    let mut c = Client::start(&dir, false);
    c.notify("textDocument/didOpen", open.clone());
    assert!(c.diagnostics(&uri).is_empty());
    // `wsp check --target aie --arch aie-ml`: a recorded directive warns, an unsupported one
    // is an error, and the tile overflows the data memory.
    c.notify(
        "workspace/didChangeConfiguration",
        json!({"settings": {"wsp": {"target": "aie", "arch": "aie-ml"}}}),
    );
    let d = c.diagnostics(&uri);
    assert_eq!(codes(&d), ["E0701", "E0712", "W0710"], "{d:?}");
    // Back to the defaults.
    // VS Code's shape: the whole `wsp` section, the check settings under `check`.
    c.notify(
        "workspace/didChangeConfiguration",
        json!({"settings": {"wsp": {"server": {"path": "wsp"}, "check": {"target": "", "arch": "", "strict": false}}}}),
    );
    assert!(c.diagnostics(&uri).is_empty());
    c.stop();

    // The same as initialization options, strict: the warning becomes an error.
    let mut c = Client::start_configured(
        &dir,
        &[],
        json!({"target": "aie", "strict": true, "arch": "aie-ml"}),
    );
    c.notify("textDocument/didOpen", open);
    let d = c.diagnostics(&uri);
    assert_eq!(codes(&d), ["E0701", "E0711", "E0712"], "{d:?}");
    c.stop();
}

#[test]
fn unused_imports_are_tagged_unnecessary() {
    let (dir, uri) = setup("unused");
    let mut c = Client::start(&dir, false);
    let src = "import std.nn.{rmsnorm, softmax}\naxis tiles = Dense[2]\ninput X: f32[2, 64, 128] = random(seed: 1)\ninput W: f32[1, 128] = ones\noutput Y: f32[2, 64, 128]\nworkload w {\n    for t in P(tiles) { rmsnorm[t](x: X[t], w: W, out: Y[t]) }\n}\n";
    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "wsp", "version": 1, "text": src}}),
    );
    let d = c.diagnostics(&uri);
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0]["code"], "W0103");
    assert_eq!(
        d[0]["tags"],
        json!([1]),
        "DiagnosticTag.Unnecessary: {}",
        d[0]
    );
    assert_eq!(d[0]["range"]["start"], json!({"line": 0, "character": 24}));
    c.stop();
}

/// Edits arrive as ranges (the server asks for incremental changes), each applied to the text
/// the previous ones left: an error fixed by deleting one character, a new kernel typed in a
/// line at a time (cut in as an item of its own), two changes in one notification.
#[test]
fn incremental_changes_edit_the_text_the_server_has() {
    let (dir, uri) = setup("incremental");
    let mut c = Client::start(&dir, false);
    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "wsp", "version": 1, "text": SRC}}),
    );
    assert_eq!(codes(&c.diagnostics(&uri)), ["E0101"]);
    let range = |l0: u32, c0: u32, l1: u32, c1: u32| json!({"start": {"line": l0, "character": c0}, "end": {"line": l1, "character": c1}});
    let mut version = 1;
    let mut change = |c: &mut Client, changes: Value| {
        version += 1;
        c.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": changes}),
        );
        c.diagnostics(&uri)
    };
    // `Yy` → `Y`: clean.
    let d = change(&mut c, json!([{"range": range(8, 46, 8, 47), "text": ""}]));
    assert!(d.is_empty(), "{d:?}");
    // A kernel's first line above the workload: its `{` is not closed yet.
    let head = "kernel half(x: in f32[8, 8], y: out f32[8, 8]) {\n";
    let d = change(&mut c, json!([{"range": range(7, 0, 7, 0), "text": head}]));
    assert!(!d.is_empty(), "an unclosed kernel checks clean");
    // Its body and closing brace: clean again.
    let body = "    y = x * 0.5\n}\n";
    let d = change(&mut c, json!([{"range": range(8, 0, 8, 0), "text": body}]));
    assert!(d.is_empty(), "{d:?}");
    // Two changes in one notification, the second on the text the first left: the task calls
    // `half`, then a name no item has.
    let d = change(
        &mut c,
        json!([
            {"range": range(11, 23, 11, 29), "text": "half"},
            {"range": range(11, 23, 11, 27), "text": "halver"},
        ]),
    );
    assert_eq!(codes(&d), ["E0101"], "{d:?}");
    let at = &d[0]["range"]["start"];
    assert_eq!(*at, json!({"line": 11, "character": 23}), "{d:?}");
    c.stop();
}

//! `wsp lsp` driven over stdio: references, rename (with refusals), completion, signature
//! help, inlay hints, semantic tokens and folding ranges, each answered by the real server.

mod common;
use common::{pos, setup, Client};
use serde_json::{json, Value};

const SRC: &str = "axis rows = Dense[4]\ninput X: f32[4, 8, 8] = random(seed: 1)\noutput Y: f32[4, 8, 8]\n// two comment\n// lines\nkernel double(x: in f32[8, 8], y: out f32[8, 8]) {\n    let t = x * 2.0\n    y = t\n}\nworkload w {\n    for i in P(rows) { double[i](x: X[i], y: Y[i]) }\n}\nschedule s = w .dispatch(round_robin(4))\n";

fn open(c: &mut Client, uri: &str, text: &str) {
    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "wsp", "version": 1, "text": text}}),
    );
    assert!(c.diagnostics(uri).is_empty());
}

#[test]
fn the_server_announces_every_feature() {
    let (dir, _) = setup("caps");
    let c = Client::start(&dir, false);
    let caps = c.capabilities.clone();
    for cap in [
        "hoverProvider",
        "referencesProvider",
        "completionProvider",
        "signatureHelpProvider",
        "inlayHintProvider",
        "semanticTokensProvider",
        "foldingRangeProvider",
        "documentHighlightProvider",
        "workspaceSymbolProvider",
    ] {
        assert!(
            !caps[cap].is_null() && caps[cap] != json!(false),
            "{cap}: {caps}"
        );
    }
    assert_eq!(
        caps["renameProvider"]["prepareProvider"],
        json!(true),
        "{caps}"
    );
    c.stop();
}

#[test]
fn references_and_rename() {
    let (dir, uri) = setup("refs");
    let mut c = Client::start(&dir, false);
    open(&mut c, &uri, SRC);
    // `X` in the view at line 10.
    let mut p = pos(10, 36, &uri);
    p["context"] = json!({"includeDeclaration": true});
    let r = c.request("textDocument/references", p.clone());
    let locs = r["result"].as_array().cloned().unwrap_or_default();
    assert_eq!(locs.len(), 2, "{r}");
    assert_eq!(
        locs[0]["range"]["start"],
        json!({"line": 1, "character": 6})
    );
    p["context"] = json!({"includeDeclaration": false});
    let r = c.request("textDocument/references", p);
    assert_eq!(r["result"].as_array().map(Vec::len), Some(1), "{r}");

    let r = c.request("textDocument/prepareRename", pos(10, 24, &uri));
    assert_eq!(
        r["result"]["start"],
        json!({"line": 10, "character": 23}),
        "{r}"
    );
    let r = c.request("textDocument/prepareRename", pos(5, 2, &uri));
    let msg = r["error"]["message"].as_str().unwrap_or_default();
    assert!(msg.contains("keyword"), "{r}");
    let r = c.request("textDocument/prepareRename", pos(5, 21, &uri));
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("builtin"),
        "{r}"
    );

    let mut p = pos(10, 24, &uri);
    p["newName"] = json!("twice");
    let r = c.request("textDocument/rename", p.clone());
    let edits = r["result"]["changes"][uri.as_str()]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(edits.len(), 2, "{r}");
    assert!(edits.iter().all(|e| e["newText"] == "twice"));
    p["newName"] = json!("workload");
    let r = c.request("textDocument/rename", p.clone());
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("keyword"),
        "{r}"
    );
    // Clashes are refused: the kernel cannot take the tensor `X`'s name, nor the loop
    // variable `i` the axis `rows` it iterates.
    p["newName"] = json!("X");
    let r = c.request("textDocument/rename", p);
    let msg = r["error"]["message"].as_str().unwrap_or_default();
    assert!(
        msg.contains("cannot rename to `X`: `X` is already declared"),
        "{r}"
    );
    assert!(r["result"].is_null(), "{r}");
    let mut p = pos(10, 8, &uri);
    p["newName"] = json!("rows");
    let r = c.request("textDocument/rename", p);
    let msg = r["error"]["message"].as_str().unwrap_or_default();
    assert!(msg.contains("already used in `w`"), "{r}");
    c.stop();
}

#[test]
fn document_highlight_and_workspace_symbols() {
    let (dir, uri) = setup("highlight");
    let mut c = Client::start(&dir, false);
    open(&mut c, &uri, SRC);
    // `double` at its call on line 10: the declaration (write) and the call (read).
    let r = c.request("textDocument/documentHighlight", pos(10, 24, &uri));
    let hl = r["result"].as_array().cloned().unwrap_or_default();
    assert_eq!(hl.len(), 2, "{r}");
    assert_eq!(hl[0]["range"]["start"], json!({"line": 5, "character": 7}));
    assert_eq!(hl[0]["kind"], 3, "the declaration is a write: {r}");
    assert_eq!(
        hl[1]["range"]["start"],
        json!({"line": 10, "character": 23})
    );
    assert_eq!(hl[1]["kind"], 2, "{r}");
    // Workspace symbols over the loaded files, filtered by the query.
    let other = format!("file://{}/b.wsp", dir.display());
    open(&mut c, &other, "const Rows = 4\n");
    let names = |q: &str, c: &mut Client| -> Vec<(String, String)> {
        let r = c.request("workspace/symbol", json!({"query": q}));
        r["result"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .map(|s| {
                (
                    s["name"].as_str().unwrap_or_default().to_string(),
                    s["location"]["uri"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                )
            })
            .collect()
    };
    assert_eq!(
        names("rows", &mut c),
        [
            ("rows".to_string(), uri.clone()),
            ("Rows".to_string(), other.clone())
        ]
    );
    assert_eq!(names("", &mut c).len(), 7);
    assert!(names("nothing", &mut c).is_empty());
    c.stop();
}

fn labels(r: &Value) -> Vec<String> {
    r["result"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter_map(|i| i["label"].as_str().map(String::from))
        .collect()
}

#[test]
fn completion_and_signature_help() {
    let (dir, uri) = setup("complete");
    let mut c = Client::start(&dir, false);
    open(&mut c, &uri, SRC);
    let l = labels(&c.request("textDocument/completion", pos(12, 16, &uri)));
    assert!(l.contains(&"task_window".to_string()), "{l:?}");
    let l = labels(&c.request("textDocument/completion", pos(1, 9, &uri)));
    assert!(l.contains(&"bf16".to_string()), "{l:?}");
    let l = labels(&c.request("textDocument/completion", pos(9, 0, &uri)));
    assert!(l.contains(&"kernel".to_string()), "{l:?}");
    let l = labels(&c.request("textDocument/completion", pos(10, 35, &uri)));
    assert!(
        l.contains(&"rows".to_string()) && l.contains(&"double".to_string()),
        "{l:?}"
    );
    // Right after `double[i](`: the parameters.
    let l = labels(&c.request("textDocument/completion", pos(10, 33, &uri)));
    assert_eq!(l, ["x", "y"]);

    let r = c.request("textDocument/signatureHelp", pos(10, 43, &uri));
    let sig = &r["result"]["signatures"][0];
    assert_eq!(
        sig["label"], "double(x: in f32[8, 8], y: out f32[8, 8])",
        "{r}"
    );
    assert_eq!(r["result"]["activeParameter"], 1, "{r}");
    assert_eq!(sig["parameters"][1]["label"], json!([24, 40]), "{r}");

    // Policies inside `.dispatch(`.
    let l = labels(&c.request("textDocument/completion", pos(12, 25, &uri)));
    assert!(
        l.contains(&"round_robin".to_string()) && l.contains(&"work_steal".to_string()),
        "{l:?}"
    );
    assert!(!l.contains(&"fifo".to_string()), "{l:?}");
    // In the kernel body: tile operations with their signatures.
    let r = c.request("textDocument/completion", pos(6, 12, &uri));
    let items = r["result"].as_array().cloned().unwrap_or_default();
    let rowsum = items.iter().find(|i| i["label"] == "rowsum");
    assert_eq!(
        rowsum.map(|i| i["detail"].clone()),
        Some(json!("rowsum(x) -> [R, 1]")),
        "{r}"
    );
    // After `import `: the modules next to the file on disk.
    std::fs::write(dir.join("helpers.wsp"), "const H = 1\n").unwrap();
    let other = format!("file://{}/c.wsp", dir.display());
    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": other, "languageId": "wsp", "version": 1, "text": "import "}}),
    );
    let l = labels(&c.request("textDocument/completion", pos(0, 7, &other)));
    assert!(l.contains(&"helpers".to_string()), "{l:?}");
    // After `axis x =`: the axis constructors.
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": other, "version": 2}, "contentChanges": [{"text": "axis z = "}]}),
    );
    let l = labels(&c.request("textDocument/completion", pos(0, 9, &other)));
    assert_eq!(l, ["Dense", "DenseDyn", "Ragged", "Sparse"]);
    c.stop();
}

#[test]
fn hints_tokens_and_folding() {
    let (dir, uri) = setup("hints");
    let mut c = Client::start(&dir, false);
    open(&mut c, &uri, SRC);
    let r = c.request(
        "textDocument/inlayHint",
        json!({"textDocument": {"uri": uri}, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 20, "character": 0}}}),
    );
    let hints = r["result"].as_array().cloned().unwrap_or_default();
    assert!(
        hints
            .iter()
            .any(|h| h["position"] == json!({"line": 9, "character": 10})
                && h["label"]
                    .as_str()
                    .unwrap_or_default()
                    .starts_with(": Workload[")),
        "{r}"
    );
    assert!(
        hints
            .iter()
            .any(|h| h["position"] == json!({"line": 6, "character": 9})
                && h["label"] == ": f32[8, 8]"),
        "{r}"
    );

    let r = c.request(
        "textDocument/semanticTokens/full",
        json!({"textDocument": {"uri": uri}}),
    );
    let data: Vec<u64> = r["result"]["data"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter_map(Value::as_u64)
        .collect();
    assert_eq!(data.len() % 5, 0, "{r}");
    // First token: `axis` keyword (type 0) at 0:0, length 4; then `rows` an axis (type 4).
    assert_eq!(&data[..5], &[0, 0, 4, 0, 0], "{r}");
    assert_eq!(&data[5..10], &[0, 5, 4, 4, 0], "{r}");
    // Decode and find the comment on line 3 and `double` as a function on line 10.
    let (mut line, mut col) = (0u64, 0u64);
    let mut toks = Vec::new();
    for t in data.chunks(5) {
        if t[0] > 0 {
            line += t[0];
            col = t[1];
        } else {
            col += t[1];
        }
        toks.push((line, col, t[2], t[3]));
    }
    assert!(toks.contains(&(3, 0, 14, 6)), "{toks:?}");
    assert!(toks.contains(&(10, 23, 6, 2)), "{toks:?}");

    let r = c.request(
        "textDocument/foldingRange",
        json!({"textDocument": {"uri": uri}}),
    );
    let f = r["result"].as_array().cloned().unwrap_or_default();
    let has = |s: u64, e: u64, kind: &str| {
        f.iter()
            .any(|x| x["startLine"] == s && x["endLine"] == e && x["kind"] == kind)
    };
    assert!(has(3, 4, "comment"), "{r}");
    assert!(has(5, 7, "region"), "{r}");
    c.stop();
}

#[test]
fn panics_in_new_handlers_are_contained() {
    let (dir, uri) = setup("fpanic");
    let mut c = Client::start(&dir, true);
    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "wsp", "version": 1, "text": SRC}}),
    );
    for method in [
        "textDocument/references",
        "textDocument/rename",
        "textDocument/prepareRename",
        "textDocument/completion",
        "textDocument/signatureHelp",
        "textDocument/semanticTokens/full",
        "textDocument/foldingRange",
    ] {
        let mut params = pos(0, 0, &uri);
        params["context"] =
            json!({"includeDeclaration": true, "triggerKind": 1, "isRetrigger": false});
        params["newName"] = json!("z");
        let r = c.request(method, params);
        assert_eq!(r["error"]["code"], -32603, "{method}: {r}");
    }
    c.stop();
}

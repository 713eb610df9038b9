//! A scripted session of 10,000 random edits against the real `wsp lsp` (issue #5, item 6):
//! unbalanced braces and brackets, multi-byte and astral characters, deletions across lines,
//! and requests at random positions — including past the end of a line or of the file and in
//! the middle of a UTF-16 surrogate pair — and, every 50 edits, a malformed frame. Every
//! request must be answered (a result or an error), the server must never crash or hang, and
//! it must end in a consistent state.

mod common;

use common::{pos, setup, Client};
use serde_json::{json, Value};

/// xorshift64*: deterministic, so a failure replays.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const PIECES: &[&str] = &[
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    "\n",
    " ",
    ",",
    ":",
    "..",
    "=",
    "+",
    "*",
    "//",
    "/*",
    "\"",
    "kernel",
    "workload",
    "for",
    "in",
    "P(",
    "P.seq(",
    "when",
    "else",
    "channel",
    "process",
    "send",
    "consume",
    "schedule",
    "expect",
    "f32[16, 16]",
    "matmul(",
    "rowmax(",
    "x",
    "Q[i]",
    "é",
    "𝔸",
    "→",
    "\u{0}",
    "\t",
    "1e-30",
    "99999999999999999999",
    "let",
    "var",
    "import std.",
];

/// Applies one random edit to `text` (always on char boundaries).
fn edit(text: &mut String, rng: &mut Rng) {
    let bounds: Vec<usize> = text
        .char_indices()
        .map(|(i, _)| i)
        .chain(std::iter::once(text.len()))
        .collect();
    let at = bounds[rng.below(bounds.len())];
    match rng.below(10) {
        0..=5 => text.insert_str(at, PIECES[rng.below(PIECES.len())]),
        6..=8 => {
            let end_i = bounds.iter().position(|b| *b == at).unwrap_or(0) + 1 + rng.below(12);
            let end = bounds.get(end_i).copied().unwrap_or(text.len());
            if end > at {
                text.replace_range(at..end, "");
            }
        }
        _ => {
            // Duplicate a line: grows the file, keeps it mostly valid.
            let start = text[..at].rfind('\n').map(|i| i + 1).unwrap_or(0);
            let end = text[at..]
                .find('\n')
                .map(|i| at + i + 1)
                .unwrap_or(text.len());
            let line = text[start..end].to_string();
            text.insert_str(start, &line);
        }
    }
    if text.len() > 20_000 {
        // At a boundary of the edited text (`bounds` are the text's before the edit).
        let cut = (0..=10_000).rev().find(|&b| text.is_char_boundary(b));
        text.truncate(cut.unwrap_or(0));
    }
}

/// A position that may be anywhere: inside the text, past a line's end, past the file's
/// end, or inside a surrogate pair.
fn position(text: &str, rng: &mut Rng) -> (u32, u32) {
    let lines: Vec<&str> = text.split('\n').collect();
    let line = rng.below(lines.len() + 2);
    let width = lines
        .get(line)
        .map(|l| l.encode_utf16().count())
        .unwrap_or(0);
    (line as u32, rng.below(width + 4) as u32)
}

/// A malformed frame that delimits itself (a wrong length would swallow the next real message,
/// which the server cannot tell from a slow client): a message cut short, a lone surrogate, a
/// JSON value that is not a request, a bad or missing Content-Length, a header without `\r\n`,
/// left-over bytes that run into the next header.
fn malformed(rng: &mut Rng, text: &str) -> Vec<u8> {
    let frame = |body: &[u8]| {
        let mut f = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
        f.extend_from_slice(body);
        f
    };
    let msg = json!({"jsonrpc": "2.0", "method": "textDocument/didChange",
                     "params": {"textDocument": {"uri": "file:///elsewhere.wsp", "version": 1},
                                "contentChanges": [{"text": text}]}})
    .to_string();
    match rng.below(7) {
        0 => {
            let cut = (0..=rng.below(msg.len()))
                .rev()
                .find(|&b| msg.is_char_boundary(b))
                .unwrap_or(0);
            frame(&msg.as_bytes()[..cut])
        }
        1 => frame(br#"{"jsonrpc":"2.0","method":"x","params":{"t":"\ud800"}}"#),
        2 => frame(b"[1, 2, 3]"),
        3 => b"Content-Length: -7\r\n\r\n".to_vec(),
        4 => b"Content-Type: application/json\r\n\r\n".to_vec(),
        5 => b"Content-Length: 2\n\n{}".to_vec(),
        _ => b"Content-Length: 2\r\n\r\n{}zz".to_vec(),
    }
}

fn answered(r: &Value) -> bool {
    r.get("result").is_some() || r.get("error").is_some()
}

#[test]
fn ten_thousand_random_edits_never_crash_or_hang_the_server() {
    let (dir, uri) = setup("robust");
    let base = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/flash_attention/flash_attention.wsp");
    let mut text = std::fs::read_to_string(base).expect("example");
    let mut c = Client::start(&dir, false);
    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "wsp", "version": 1, "text": text}}),
    );
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let methods = [
        "textDocument/hover",
        "textDocument/definition",
        "textDocument/documentSymbol",
        "textDocument/formatting",
        "textDocument/codeAction",
        "textDocument/completion",
        "textDocument/signatureHelp",
        "textDocument/references",
        "textDocument/prepareRename",
        "textDocument/rename",
        "textDocument/inlayHint",
        "textDocument/semanticTokens/full",
        "textDocument/foldingRange",
    ];
    for version in 2..10_002 {
        edit(&mut text, &mut rng);
        if version % 50 == 25 {
            let bad = malformed(&mut rng, &text);
            c.send_raw(&bad);
        }
        c.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": version},
                   "contentChanges": [{"text": text}]}),
        );
        if version % 20 == 0 {
            let (l, ch) = position(&text, &mut rng);
            let m = methods[rng.below(methods.len())];
            let params = match m {
                "textDocument/documentSymbol" => json!({"textDocument": {"uri": uri}}),
                "textDocument/formatting" => json!({"textDocument": {"uri": uri},
                    "options": {"tabSize": 4, "insertSpaces": true}}),
                "textDocument/codeAction" => json!({"textDocument": {"uri": uri},
                    "range": {"start": {"line": l, "character": ch},
                              "end": {"line": l + 1, "character": 0}},
                    "context": {"diagnostics": []}}),
                "textDocument/semanticTokens/full" | "textDocument/foldingRange" => {
                    json!({"textDocument": {"uri": uri}})
                }
                "textDocument/inlayHint" => json!({"textDocument": {"uri": uri},
                    "range": {"start": {"line": l, "character": ch},
                              "end": {"line": l + 40, "character": 0}}}),
                _ => {
                    let mut p = pos(l, ch, &uri);
                    p["context"] = json!({"includeDeclaration": true, "triggerKind": 1,
                                          "isRetrigger": false});
                    p["newName"] = json!("renamed");
                    p
                }
            };
            let r = c.request(m, params);
            assert!(answered(&r), "edit {version}: {m} got {r}");
        }
    }
    // Still consistent: a final known text gets exactly its diagnostics.
    let clean = "axis rows = Dense[2]\ninput X: f32[2, 8, 8] = random(seed: 1)\noutput Y: f32[2, 8, 8]\nkernel k(x: in f32[8, 8], y: out f32[8, 8]) { y = x }\nworkload w { for i in P(rows) { k[i](x: X[i], y: Y[i]) } }\n";
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 20_000}, "contentChanges": [{"text": clean}]}),
    );
    // Earlier publications may still arrive; wait for the clean one.
    let mut last = Vec::new();
    for _ in 0..200 {
        last = c.diagnostics(&uri);
        if last.is_empty() {
            break;
        }
    }
    assert!(last.is_empty(), "{last:?}");
    let s = c.request(
        "textDocument/documentSymbol",
        json!({"textDocument": {"uri": uri}}),
    );
    assert_eq!(s["result"].as_array().map(|a| a.len()), Some(5), "{s}");
    c.stop();
}

/// Malformed messages (a lone surrogate, truncated JSON, a JSON value that is not an object, a
/// negative or missing Content-Length, a header without `\r\n`, a length shorter than the
/// body) are skipped: the server keeps answering. `exit` without `shutdown` exits 1, with it 0
/// (the LSP specification).
#[test]
fn malformed_messages_do_not_end_the_server_and_exit_codes_follow_the_specification() {
    let (dir, uri) = setup("malformed");
    let mut c = Client::start(&dir, false);
    let frame = |body: &str| format!("Content-Length: {}\r\n\r\n{body}", body.len());
    let bad = [
        frame(
            r#"{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"textDocument":{"uri":"file:///x.wsp","languageId":"wsp","version":1,"text":"\ud800"}}}"#,
        ),
        frame(r#"{"jsonrpc":"#),
        frame("[1, 2, 3]"),
        "Content-Length: -5\r\n\r\n{}".to_string(),
        "Content-Type: application/json\r\n\r\n".to_string(),
        "Content-Length: 2\n\n{}".to_string(),
        "Content-Length: 2\r\n\r\n{}xx".to_string(),
    ];
    for b in &bad {
        c.send_raw(b.as_bytes());
        // Still serving: a request after each is answered.
        c.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "wsp", "version": 1, "text": "const A = 1\n"}}),
        );
        let r = c.request("textDocument/hover", pos(0, 6, &uri));
        assert!(
            r.get("result").is_some() || r.get("error").is_some(),
            "{b:?}: {r}"
        );
    }
    assert_eq!(c.exit_without_shutdown(), Some(1));
    let c = Client::start(&dir, false);
    assert_eq!(c.stop_code(), Some(0));
}

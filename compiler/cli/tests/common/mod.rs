//! Helpers shared by the integration tests (`mod common;` in each test file): here, a minimal
//! JSON-RPC client that drives the real `wsp lsp` over stdio, for the language-server tests;
//! in [`run`], those of the `wsp run` tests.
#![allow(dead_code)]

pub mod run;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::Duration;

use serde_json::{json, Value};

pub struct Client {
    pub child: Child,
    stdin: ChildStdin,
    rx: Receiver<Value>,
    next: i64,
    /// The server's `initialize` capabilities.
    pub capabilities: Value,
}

pub fn reader(out: ChildStdout) -> Receiver<Value> {
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        let mut r = BufReader::new(out);
        loop {
            let mut len = 0usize;
            loop {
                let mut line = String::new();
                if r.read_line(&mut line).unwrap_or(0) == 0 {
                    return;
                }
                let line = line.trim();
                if line.is_empty() {
                    break;
                }
                if let Some(v) = line.strip_prefix("Content-Length:") {
                    len = v.trim().parse().unwrap_or(0);
                }
            }
            let mut buf = vec![0; len];
            if r.read_exact(&mut buf).is_err() {
                return;
            }
            if let Ok(v) = serde_json::from_slice(&buf) {
                if tx.send(v).is_err() {
                    return;
                }
            }
        }
    });
    rx
}

impl Client {
    pub fn start(dir: &Path, inject_panic: bool) -> Client {
        let env: &[(&str, &str)] = if inject_panic {
            &[("WSP_LSP_INJECT_PANIC", "1")]
        } else {
            &[]
        };
        Client::start_with(dir, env)
    }

    /// Starts the server with extra environment variables (the testing hooks).
    pub fn start_with(dir: &Path, env: &[(&str, &str)]) -> Client {
        Client::start_configured(dir, env, Value::Null)
    }

    /// Starts the server with environment variables and `initializationOptions` (settings).
    pub fn start_configured(dir: &Path, env: &[(&str, &str)], options: Value) -> Client {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_wsp"));
        cmd.arg("lsp")
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("start wsp lsp");
        let stdin = child.stdin.take().unwrap();
        let rx = reader(child.stdout.take().unwrap());
        let mut c = Client {
            child,
            stdin,
            rx,
            next: 1,
            capabilities: Value::Null,
        };
        let mut params = json!({"capabilities": {}});
        if !options.is_null() {
            params["initializationOptions"] = options;
        }
        let r = c.request("initialize", params);
        assert!(
            r["result"]["capabilities"]["hoverProvider"] == json!(true),
            "{r}"
        );
        c.capabilities = r["result"]["capabilities"].clone();
        c.notify("initialized", json!({}));
        c
    }

    pub fn send(&mut self, v: Value) {
        let s = v.to_string();
        write!(self.stdin, "Content-Length: {}\r\n\r\n{s}", s.len()).unwrap();
        self.stdin.flush().unwrap();
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params);
        self.reply(id)
    }

    /// Sends a request without waiting for its reply; returns its id.
    pub fn send_request(&mut self, method: &str, params: Value) -> i64 {
        let id = self.next;
        self.next += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// The reply to request `id` (other messages before it are dropped).
    pub fn reply(&mut self, id: i64) -> Value {
        loop {
            let v = self
                .rx
                .recv_timeout(Duration::from_secs(20))
                .expect("reply");
            if v["id"] == json!(id) {
                return v;
            }
        }
    }

    /// The next message from the server, if one comes within `timeout`.
    pub fn next_message(&mut self, timeout: Duration) -> Option<Value> {
        self.rx.recv_timeout(timeout).ok()
    }

    /// The next `publishDiagnostics` for `uri`.
    pub fn diagnostics(&mut self, uri: &str) -> Vec<Value> {
        loop {
            let v = self
                .rx
                .recv_timeout(Duration::from_secs(20))
                .expect("diagnostics");
            if v["method"] == "textDocument/publishDiagnostics" && v["params"]["uri"] == uri {
                return v["params"]["diagnostics"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
            }
        }
    }

    /// Writes bytes as they are (malformed frames).
    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.stdin.write_all(bytes).unwrap();
        self.stdin.flush().unwrap();
    }

    /// Sends `exit` without `shutdown`; the server's exit code.
    pub fn exit_without_shutdown(mut self) -> Option<i32> {
        self.notify("exit", Value::Null);
        self.child.wait().ok().and_then(|s| s.code())
    }

    /// Ends the session politely; the server's exit code.
    pub fn stop_code(mut self) -> Option<i32> {
        let r = self.request("shutdown", Value::Null);
        assert!(r.get("error").is_none(), "{r}");
        self.notify("exit", Value::Null);
        self.child.wait().ok().and_then(|s| s.code())
    }

    pub fn stop(mut self) {
        let r = self.request("shutdown", Value::Null);
        assert!(r.get("error").is_none(), "{r}");
        self.notify("exit", Value::Null);
        let _ = self.child.wait();
    }
}

pub fn setup(name: &str) -> (std::path::PathBuf, String) {
    let d = std::env::temp_dir().join(format!("wsp-lsp-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let d = d.canonicalize().unwrap();
    let uri = format!("file://{}/a.wsp", d.display());
    (d, uri)
}

pub fn pos(line: u32, character: u32, uri: &str) -> Value {
    json!({"textDocument": {"uri": uri}, "position": {"line": line, "character": character}})
}

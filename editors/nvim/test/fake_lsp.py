#!/usr/bin/env python3
"""A minimal stdio LSP server for the Neovim configuration test: answers `initialize`,
records the methods it receives (one per line) in the file named by argv[1], publishes one
diagnostic on didOpen, and exits on `exit`."""
import json
import sys

log = open(sys.argv[1], "a", buffering=1)


def read():
    length = None
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            return None
        line = line.strip()
        if not line:
            break
        k, _, v = line.partition(b":")
        if k.lower() == b"content-length":
            length = int(v)
    return json.loads(sys.stdin.buffer.read(length))


def send(msg):
    body = json.dumps(msg).encode()
    sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    sys.stdout.buffer.flush()


while True:
    msg = read()
    if msg is None:
        break
    method = msg.get("method")
    log.write(f"{method}\n")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"capabilities": {"textDocumentSync": 1}}})
    elif method == "shutdown":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
    elif method == "exit":
        break
    elif method == "textDocument/didOpen":
        uri = msg["params"]["textDocument"]["uri"]
        send({
            "jsonrpc": "2.0",
            "method": "textDocument/publishDiagnostics",
            "params": {"uri": uri, "diagnostics": [{
                "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 5}},
                "severity": 1, "code": "E0101", "source": "wsp", "message": "fake diagnostic",
            }]},
        })
    elif "id" in msg:
        send({"jsonrpc": "2.0", "id": msg["id"], "result": None})

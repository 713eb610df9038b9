"""`wsp lsp` driven by a real LSP client (pytest-lsp over stdio), issue #5 item 9.

Opens a file with an error, waits for its diagnostics, then hovers, goes to a definition,
renames and formats, checking each answer against the text. The server binary is `$WSP_BIN`
(default: the workspace's debug build).
"""

import os
import pathlib
import sys

import pytest
import pytest_lsp
from lsprotocol import types as t
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

ROOT = pathlib.Path(__file__).resolve().parents[2]
WSP = os.environ.get("WSP_BIN", str(ROOT / "target" / "debug" / "wsp"))

# Line 12 has an error: `round_robin` needs its worker count (E0606).
SRC = """axis rows = Dense[4]
input X: f32[4, 8, 8] = random(seed: 1)
output Y: f32[4, 8, 8]

/// y = 2x on one tile
kernel double(x: in f32[8, 8], y: out f32[8, 8]) {
    y = x * 2.0
}
workload w {
    for i in P(rows) { double[i](x: X[i], y: Y[i]) }
}
schedule s = w .dispatch(round_robin)
"""


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[WSP, "lsp"]))
async def client(lsp_client: LanguageClient, tmp_path_factory):
    root = tmp_path_factory.mktemp("ws")
    await lsp_client.initialize_session(
        t.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            root_uri=root.as_uri(),
        )
    )
    lsp_client.root = root
    yield
    await lsp_client.shutdown_session()


async def open_file(client: LanguageClient, text: str) -> str:
    path = client.root / "model.wsp"
    path.write_text(text)
    uri = path.as_uri()
    client.text_document_did_open(
        t.DidOpenTextDocumentParams(
            text_document=t.TextDocumentItem(uri=uri, language_id="wsp", version=1, text=text)
        )
    )
    await client.wait_for_notification(t.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    return uri


def doc(uri: str) -> t.TextDocumentIdentifier:
    return t.TextDocumentIdentifier(uri=uri)


async def test_diagnostics_of_a_file_with_an_error(client: LanguageClient):
    uri = await open_file(client, SRC)
    diags = client.diagnostics[uri]
    assert [d.code for d in diags] == ["E0606"], diags
    d = diags[0]
    assert d.severity == t.DiagnosticSeverity.Error
    assert d.range.start == t.Position(line=11, character=25)
    assert "round_robin" in d.message

    # Fixing the error clears the diagnostics.
    fixed = SRC.replace("round_robin)", "round_robin(4))")
    client.text_document_did_change(
        t.DidChangeTextDocumentParams(
            text_document=t.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[t.TextDocumentContentChangeWholeDocument(text=fixed)],
        )
    )
    await client.wait_for_notification(t.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    assert len(client.diagnostics[uri]) == 0


async def test_hover_definition_rename_format(client: LanguageClient):
    uri = await open_file(client, SRC)
    call = t.Position(line=9, character=25)  # inside `double` at the call

    hover = await client.text_document_hover_async(
        t.HoverParams(text_document=doc(uri), position=call)
    )
    assert hover is not None
    text = hover.contents.value
    assert "double" in text and "f32[8, 8]" in text, text
    assert "y = 2x on one tile" in text, text

    defn = await client.text_document_definition_async(
        t.DefinitionParams(text_document=doc(uri), position=call)
    )
    locs = defn if isinstance(defn, list) else [defn]
    assert len(locs) == 1
    assert locs[0].uri == uri
    assert locs[0].range.start == t.Position(line=5, character=7)

    edit = await client.text_document_rename_async(
        t.RenameParams(text_document=doc(uri), position=call, new_name="twice")
    )
    edits = edit.changes[uri]
    assert sorted((e.range.start.line, e.range.start.character) for e in edits) == [
        (5, 7),
        (9, 23),
    ]
    assert all(e.new_text == "twice" for e in edits)

    messy = SRC.replace("y = x * 2.0", "y   =  x*2.0").replace("round_robin)", "round_robin(4))")
    client.text_document_did_change(
        t.DidChangeTextDocumentParams(
            text_document=t.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[t.TextDocumentContentChangeWholeDocument(text=messy)],
        )
    )
    fmt = await client.text_document_formatting_async(
        t.DocumentFormattingParams(
            text_document=doc(uri), options=t.FormattingOptions(tab_size=4, insert_spaces=True)
        )
    )
    assert fmt, "formatting a messy file returns edits"
    formatted = apply(messy, fmt)
    assert "    y = x * 2.0\n" in formatted, formatted
    assert formatted.count("\n") >= messy.count("\n") - 1


def apply(text: str, edits) -> str:
    """Applies LSP text edits (UTF-16 positions; the test text is ASCII)."""
    lines = text.split("\n")

    def offset(p: t.Position) -> int:
        return sum(len(l) + 1 for l in lines[: p.line]) + p.character

    for e in sorted(edits, key=lambda e: offset(e.range.start), reverse=True):
        a, b = offset(e.range.start), offset(e.range.end)
        text = text[:a] + e.new_text + text[b:]
    return text


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))

// Drives src/extension.ts with stand-ins for the `vscode` API and the language client (an
// extension host cannot run here): activation with and without the wsp binary, the status
// bar, and the Run file command.
import { strict as assert } from 'assert';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { test } from 'node:test';
// eslint-disable-next-line @typescript-eslint/no-var-requires
const Module = require('module');

type Listener = (e: unknown) => void;

function makeFakes(settings: Record<string, unknown>, docPath = '/work/p/my prog.wsp') {
  const record = {
    errors: [] as string[],
    commands: new Map<string, (...a: unknown[]) => unknown>(),
    clients: [] as Array<{ command: string; args: string[]; started: boolean; fire: Listener }>,
    terminalText: [] as string[],
    panels: [] as Array<{ title: string; scripts: boolean; webview: { html: string }; message?: (m: unknown) => void }>,
    shown: [] as Array<{ file: string; start: unknown; end: unknown }>,
    status: { text: '', tooltip: '', command: '', show() {}, dispose() {} },
    diagnostics: [] as Array<[{ path: string }, Array<{ severity: number }>]>,
    diagListener: undefined as undefined | (() => void),
  };
  const disposable = { dispose() {} };
  const vscode = {
    StatusBarAlignment: { Left: 1 },
    DiagnosticSeverity: { Error: 0, Warning: 1 },
    ProgressLocation: { Notification: 15 },
    ViewColumn: { Beside: -2, One: 1 },
    Range: class {
      constructor(
        public start: unknown,
        public end: unknown,
      ) {}
    },
    window: {
      createStatusBarItem: () => record.status,
      showErrorMessage: (m: string) => {
        record.errors.push(m);
        return Promise.resolve(undefined);
      },
      showWarningMessage: (m: string) => {
        record.errors.push(m);
        return Promise.resolve(undefined);
      },
      activeTextEditor: {
        document: { languageId: 'wsp', isUntitled: false, uri: { fsPath: docPath }, save: async () => true },
      },
      createTerminal: () => ({ show() {}, sendText: (t: string) => record.terminalText.push(t) }),
      withProgress: (_o: unknown, f: () => Promise<void>) => f(),
      createWebviewPanel: (_id: string, title: string, _col: unknown, opts: { enableScripts?: boolean }) => {
        const panel: (typeof record.panels)[number] = { title, scripts: opts.enableScripts === true, webview: { html: '' } };
        const webview = Object.assign(panel.webview, {
          onDidReceiveMessage: (f: (m: unknown) => void) => {
            panel.message = f;
            return disposable;
          },
        });
        record.panels.push(panel);
        return { title, webview };
      },
      showTextDocument: async (doc: { file: string }, o: { selection: { start: unknown; end: unknown } }) => {
        record.shown.push({ file: doc.file, start: o.selection.start, end: o.selection.end });
      },
    },
    languages: {
      getDiagnostics: () => record.diagnostics,
      onDidChangeDiagnostics: (f: () => void) => {
        record.diagListener = f;
        return disposable;
      },
    },
    commands: {
      registerCommand: (name: string, f: (...a: unknown[]) => unknown) => {
        record.commands.set(name, f);
        return disposable;
      },
      executeCommand: async () => undefined,
    },
    workspace: {
      getConfiguration: () => ({ get: (k: string) => settings[k] }),
      openTextDocument: async (file: string) => ({
        file,
        getText: () => fs.readFileSync(file, 'utf8'),
        positionAt: (offset: number) => offset,
      }),
      onDidChangeConfiguration: () => disposable,
      createFileSystemWatcher: () => disposable,
    },
  };
  const State = { Stopped: 1, Running: 2, Starting: 3 };
  class LanguageClient {
    entry: { command: string; args: string[]; started: boolean; fire: Listener };
    constructor(_id: string, _name: string, server: { run: { command: string; args: string[] } }) {
      this.entry = { command: server.run.command, args: server.run.args, started: false, fire: () => {} };
      record.clients.push(this.entry);
    }
    onDidChangeState(f: Listener) {
      this.entry.fire = f;
      return disposable;
    }
    async start() {
      this.entry.started = true;
    }
    async stop() {}
  }
  const client = { LanguageClient, State, TransportKind: { stdio: 0 } };
  return { vscode, client, record };
}

function loadExtension(fakes: ReturnType<typeof makeFakes>) {
  const origLoad = Module._load;
  Module._load = function (request: string, ...rest: unknown[]) {
    if (request === 'vscode') return fakes.vscode;
    if (request === 'vscode-languageclient/node') return fakes.client;
    return origLoad.call(this, request, ...rest);
  };
  try {
    const p = require.resolve('../../src/extension');
    delete require.cache[p];
    return require(p);
  } finally {
    Module._load = origLoad;
  }
}

const context = () => ({ subscriptions: [] as unknown[] });

test('a missing binary is reported with an install hint and shown in the status bar', async () => {
  const fakes = makeFakes({ 'server.path': '/nonexistent/dir/wsp' });
  const ext = loadExtension(fakes);
  await ext.activate(context());
  assert.equal(fakes.record.clients.length, 0);
  assert.equal(fakes.record.errors.length, 1);
  assert.match(fakes.record.errors[0], /\/nonexistent\/dir\/wsp/);
  assert.match(fakes.record.errors[0], /cargo install/);
  assert.match(fakes.record.status.text, /not installed/);
});

test('with the binary the client starts `<path> lsp` and the status bar follows the diagnostics', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wsp-ext-'));
  const bin = path.join(dir, 'wsp');
  fs.writeFileSync(bin, '#!/bin/sh\nexit 0\n', { mode: 0o755 });
  try {
    const fakes = makeFakes({ 'server.path': bin, 'server.extraArgs': ['--verbose'], 'run.extraArgs': ['--set', 'n=2'] });
    const ext = loadExtension(fakes);
    await ext.activate(context());
    assert.equal(fakes.record.errors.length, 0);
    assert.equal(fakes.record.clients.length, 1);
    const c = fakes.record.clients[0];
    assert.equal(c.command, bin);
    assert.deepEqual(c.args, ['lsp', '--verbose']);
    assert.ok(c.started);

    c.fire({ oldState: 3, newState: 2 });
    assert.equal(fakes.record.status.text, '$(check) wsp');
    fakes.record.diagnostics.push([{ path: '/p/a.wsp' }, [{ severity: 0 }, { severity: 1 }]]);
    fakes.record.diagnostics.push([{ path: '/p/notes.md' }, [{ severity: 0 }]]);
    fakes.record.diagListener?.();
    assert.equal(fakes.record.status.text, '$(error) wsp: 1 error, 1 warning');

    await fakes.record.commands.get('wsp.runFile')?.();
    assert.deepEqual(fakes.record.terminalText, [`${bin} run --set n=2 '/work/p/my prog.wsp'`]);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('Show task graph runs wsp with --timing-only --graph, draws the DOT with Graphviz and opens a clicked task\'s call', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wsp-ext-'));
  const bin = path.join(dir, 'wsp');
  // A stand-in for `wsp run --timing-only --graph <dot> <file>`: writes a two-task graph whose
  // tasks link to bytes 10..22 of prog.wsp (`w` is preceded by a 3-byte character).
  fs.writeFileSync(
    bin,
    '#!/bin/sh\n[ "$1 $2 $3" = "run --timing-only --graph" ] || { echo "bad args: $*" >&2; exit 2; }\n' +
      'printf \'digraph { t0 [label="k[0]", URL="wsp-site:10:22:prog.wsp"]; t1 [label="k[1]"]; t0 -> t1 }\' > "$4"\n',
    { mode: 0o755 },
  );
  try {
    const doc = path.join(dir, 'prog.wsp');
    fs.writeFileSync(doc, '// \u20ac\u20ac\nworkload w {}\n');
    const fakes = makeFakes({ 'server.path': bin }, doc);
    const ext = loadExtension(fakes);
    await ext.activate(context());
    await fakes.record.commands.get('wsp.showTaskGraph')?.();
    assert.deepEqual(fakes.record.errors, []);
    assert.equal(fakes.record.panels.length, 1);
    const panel = fakes.record.panels[0];
    assert.ok(panel.scripts, 'the drawn graph has its zoom/pan/click script');
    const html = panel.webview.html;
    assert.match(html, /2 tasks, 1 dependencies/);
    assert.match(html, /<svg /);
    assert.match(html, /k\[1\]/);
    assert.match(html, /xlink:href="wsp-site:10:22:prog.wsp"/);
    // A click on t0 in the webview: the call site opens, bytes 10..22 as UTF-16 offsets 6..18.
    panel.message?.({ type: 'open', site: 'wsp-site:10:22:prog.wsp' });
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(fakes.record.shown, [{ file: doc, start: 6, end: 18 }]);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('Show task graph reports a failing wsp run', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wsp-ext-'));
  const bin = path.join(dir, 'wsp');
  fs.writeFileSync(bin, '#!/bin/sh\necho "error[E0105]: unknown kernel" >&2\nexit 1\n', { mode: 0o755 });
  try {
    const doc = path.join(dir, 'prog.wsp');
    fs.writeFileSync(doc, 'workload w {}\n');
    const fakes = makeFakes({ 'server.path': bin }, doc);
    const ext = loadExtension(fakes);
    await ext.activate(context());
    await fakes.record.commands.get('wsp.showTaskGraph')?.();
    assert.equal(fakes.record.panels.length, 0);
    assert.equal(fakes.record.errors.length, 1);
    assert.match(fakes.record.errors[0], /error\[E0105\]: unknown kernel/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

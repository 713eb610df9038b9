// The wsp VS Code extension: starts `wsp lsp` over stdio, shows the check state in the status
// bar, and provides "wsp: Run file" and "wsp: Show task graph".

import * as cp from 'child_process';
import * as crypto from 'crypto';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as vscode from 'vscode';
import { LanguageClient, LanguageClientOptions, ServerOptions, State, TransportKind } from 'vscode-languageclient/node';
import { graphHtml, parseSite, utf16Offset, viewOf } from './graph';
import { checkSettings, findExecutable, graphArgs, missingServerMessage, runCommandLine, serverCommand, ServerState, statusText } from './logic';

let client: LanguageClient | undefined;
let status: vscode.StatusBarItem;
let serverState: ServerState = 'stopped';

function config() {
  return vscode.workspace.getConfiguration('wsp');
}

function isExecutable(p: string): boolean {
  try {
    fs.accessSync(p, fs.constants.X_OK);
    return fs.statSync(p).isFile();
  } catch {
    return false;
  }
}

/** The resolved wsp binary, or undefined after telling the user how to install it. */
function resolveWsp(): string | undefined {
  const { command } = serverCommand(config().get<string>('server.path'));
  const found = findExecutable(command, process.env, process.platform, isExecutable);
  if (found === undefined) {
    serverState = 'missing';
    updateStatus();
    void vscode.window.showErrorMessage(missingServerMessage(command), 'Open settings').then((choice) => {
      if (choice === 'Open settings') void vscode.commands.executeCommand('workbench.action.openSettings', 'wsp.server.path');
    });
  }
  return found;
}

function updateStatus() {
  let errors = 0;
  let warnings = 0;
  for (const [uri, diags] of vscode.languages.getDiagnostics()) {
    if (!uri.path.endsWith('.wsp')) continue;
    for (const d of diags) {
      if (d.severity === vscode.DiagnosticSeverity.Error) errors++;
      else if (d.severity === vscode.DiagnosticSeverity.Warning) warnings++;
    }
  }
  const { text, tooltip } = statusText(serverState, { errors, warnings });
  status.text = text;
  status.tooltip = tooltip;
  status.show();
}

async function startClient(context: vscode.ExtensionContext) {
  const wsp = resolveWsp();
  if (wsp === undefined) return;
  const { args } = serverCommand(wsp, config().get<string[]>('server.extraArgs') ?? []);
  const serverOptions: ServerOptions = {
    run: { command: wsp, args, transport: TransportKind.stdio },
    debug: { command: wsp, args, transport: TransportKind.stdio },
  };
  const c = config();
  const clientOptions: LanguageClientOptions = {
    documentSelector: [{ scheme: 'file', language: 'wsp' }, { scheme: 'untitled', language: 'wsp' }],
    initializationOptions: checkSettings(c.get('check.target'), c.get('check.arch'), c.get('check.strict'), c.get('check.lints')),
    synchronize: {
      fileEvents: vscode.workspace.createFileSystemWatcher('**/*.{wsp,npy}'),
      // Changes of `wsp.*` reach the server as workspace/didChangeConfiguration.
      configurationSection: 'wsp',
    },
  };
  client = new LanguageClient('wsp', 'wsp language server', serverOptions, clientOptions);
  context.subscriptions.push(
    client.onDidChangeState((e) => {
      serverState = e.newState === State.Running ? 'running' : e.newState === State.Starting ? 'starting' : 'stopped';
      updateStatus();
    }),
  );
  serverState = 'starting';
  updateStatus();
  try {
    await client.start();
  } catch (e) {
    serverState = 'stopped';
    updateStatus();
    void vscode.window.showErrorMessage(`wsp: the language server \`${wsp} lsp\` failed to start: ${e instanceof Error ? e.message : String(e)}`);
  }
}

function activeWspFile(): string | undefined {
  const doc = vscode.window.activeTextEditor?.document;
  if (!doc || doc.languageId !== 'wsp' || doc.isUntitled) {
    void vscode.window.showWarningMessage('wsp: open a saved .wsp file first.');
    return undefined;
  }
  return doc.uri.fsPath;
}

async function runFile() {
  const file = activeWspFile();
  if (file === undefined) return;
  await vscode.window.activeTextEditor?.document.save();
  const wsp = resolveWsp();
  if (wsp === undefined) return;
  const terminal = vscode.window.createTerminal({ name: 'wsp run', cwd: path.dirname(file) });
  terminal.show();
  terminal.sendText(runCommandLine(wsp, file, config().get<string[]>('run.extraArgs') ?? [], process.platform));
}

async function showTaskGraph() {
  const file = activeWspFile();
  if (file === undefined) return;
  await vscode.window.activeTextEditor?.document.save();
  const wsp = resolveWsp();
  if (wsp === undefined) return;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wsp-graph-'));
  const dotPath = path.join(dir, 'graph.dot');
  const args = graphArgs(file, dotPath, config().get<string[]>('run.extraArgs') ?? []);
  await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `wsp: task graph of ${path.basename(file)}` },
    () =>
      new Promise<void>((resolve) => {
        const cwd = path.dirname(file);
        cp.execFile(wsp, args, { cwd, maxBuffer: 16 * 1024 * 1024 }, (err, _stdout, stderr) => {
          void (async () => {
            try {
              if (err) {
                void vscode.window.showErrorMessage(`wsp: \`wsp ${args.join(' ')}\` failed: ${stderr.trim() || err.message}`);
                return;
              }
              const dot = fs.readFileSync(dotPath, 'utf8');
              const title = `Task graph: ${path.basename(file)}`;
              const view = await viewOf(dot);
              const panel = vscode.window.createWebviewPanel('wspTaskGraph', title, vscode.ViewColumn.Beside, {
                enableScripts: view.kind === 'drawn',
                localResourceRoots: [],
              });
              panel.webview.onDidReceiveMessage((m: unknown) => {
                if (typeof m === 'object' && m !== null && (m as { type?: unknown }).type === 'open') {
                  void openSite(String((m as { site?: unknown }).site ?? ''), cwd);
                }
              });
              panel.webview.html = graphHtml(view, dot, title, crypto.randomBytes(16).toString('hex'));
            } catch (e) {
              void vscode.window.showErrorMessage(`wsp: could not show the task graph: ${e instanceof Error ? e.message : String(e)}`);
            } finally {
              fs.rmSync(dir, { recursive: true, force: true });
              resolve();
            }
          })();
        });
      }),
  );
}

/** Opens a task's call site (`wsp-site:START:END:FILE`, FILE relative to `cwd`) beside the graph. */
async function openSite(href: string, cwd: string) {
  const site = parseSite(href);
  if (site === undefined) return;
  const file = path.isAbsolute(site.file) ? site.file : path.join(cwd, site.file);
  try {
    const doc = await vscode.workspace.openTextDocument(file);
    const text = doc.getText();
    const range = new vscode.Range(doc.positionAt(utf16Offset(text, site.start)), doc.positionAt(utf16Offset(text, site.end)));
    await vscode.window.showTextDocument(doc, { viewColumn: vscode.ViewColumn.One, selection: range });
  } catch (e) {
    void vscode.window.showErrorMessage(`wsp: could not open ${file}: ${e instanceof Error ? e.message : String(e)}`);
  }
}

export async function activate(context: vscode.ExtensionContext) {
  status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 10);
  status.command = 'workbench.actions.view.problems';
  context.subscriptions.push(
    status,
    vscode.languages.onDidChangeDiagnostics(() => updateStatus()),
    vscode.commands.registerCommand('wsp.runFile', runFile),
    vscode.commands.registerCommand('wsp.showTaskGraph', showTaskGraph),
    vscode.commands.registerCommand('wsp.restartServer', async () => {
      if (client) await client.stop();
      client = undefined;
      await startClient(context);
    }),
    vscode.workspace.onDidChangeConfiguration(async (e) => {
      if (e.affectsConfiguration('wsp.server')) {
        if (client) await client.stop();
        client = undefined;
        await startClient(context);
      }
    }),
  );
  await startClient(context);
}

export async function deactivate() {
  if (client) await client.stop();
}

// Pure logic of the wsp VS Code client: no `vscode` import, so it is unit-tested with
// node's test runner outside a VS Code host.

import * as path from 'path';

/** The command that starts the language server. */
export interface ServerCommand {
  command: string;
  args: string[];
}

/** `wsp.server.path` (default `wsp`) plus `lsp` and any extra arguments. */
export function serverCommand(configuredPath: string | undefined, extraArgs: readonly string[] = []): ServerCommand {
  const trimmed = (configuredPath ?? '').trim();
  return { command: trimmed === '' ? 'wsp' : trimmed, args: ['lsp', ...extraArgs] };
}

/**
 * Finds an executable: a path with a separator is checked as is; a bare name is looked up in
 * `PATH` (with `PATHEXT` on Windows). `exists` is injected so this stays testable.
 */
export function findExecutable(
  command: string,
  env: { PATH?: string; PATHEXT?: string },
  platform: string,
  exists: (p: string) => boolean,
): string | undefined {
  const isWin = platform === 'win32';
  const exts = isWin ? (env.PATHEXT ?? '.EXE;.CMD;.BAT').split(';').filter((e) => e !== '') : [''];
  const candidates = (base: string) => (isWin && path.extname(base) === '' ? [base, ...exts.map((e) => base + e)] : [base]);
  if (command.includes('/') || (isWin && command.includes('\\'))) {
    return candidates(command).find(exists);
  }
  const sep = isWin ? ';' : ':';
  for (const dir of (env.PATH ?? '').split(sep)) {
    if (dir === '') continue;
    const hit = candidates(path.join(dir, command)).find(exists);
    if (hit !== undefined) return hit;
  }
  return undefined;
}

/** The message shown when the `wsp` binary cannot be found. */
export function missingServerMessage(command: string): string {
  return (
    `wsp: cannot find the wsp binary \`${command}\`. ` +
    'Install it with `cargo install --path compiler/cli` from the wsp repository (it puts `wsp` in ~/.cargo/bin), ' +
    'or set "wsp.server.path" to the full path of the binary.'
  );
}

/** Quotes one argument for a POSIX shell or PowerShell/cmd terminal. */
export function shellQuote(arg: string, platform: string): string {
  if (/^[A-Za-z0-9_\-./:=@%+,]+$/.test(arg)) return arg;
  if (platform === 'win32') return `"${arg.replace(/"/g, '""')}"`;
  return `'${arg.replace(/'/g, `'\\''`)}'`;
}

/** The terminal command line for "wsp: Run file". */
export function runCommandLine(wsp: string, file: string, extraArgs: readonly string[], platform: string): string {
  const parts = [wsp, 'run', ...extraArgs, file].map((a) => shellQuote(a, platform));
  // PowerShell needs `&` to run a quoted program path.
  return platform === 'win32' && parts[0].startsWith('"') ? `& ${parts.join(' ')}` : parts.join(' ');
}

/** The argument vector for "wsp: Show task graph" (run as a process, not through a shell). */
export function graphArgs(file: string, dotPath: string, extraArgs: readonly string[] = []): string[] {
  return ['run', '--timing-only', '--graph', dotPath, ...extraArgs, file];
}

/** Severity counts of the diagnostics of all files, as the status bar shows them. */
export interface CheckState {
  errors: number;
  warnings: number;
}

export type ServerState = 'starting' | 'running' | 'stopped' | 'missing';

/** Status bar text and tooltip for the server state and the current diagnostics. */
export function statusText(server: ServerState, check: CheckState): { text: string; tooltip: string } {
  switch (server) {
    case 'missing':
      return { text: '$(error) wsp: not installed', tooltip: 'The wsp binary was not found; see "wsp.server.path".' };
    case 'starting':
      return { text: '$(sync~spin) wsp', tooltip: 'Starting the wsp language server' };
    case 'stopped':
      return { text: '$(debug-stop) wsp: stopped', tooltip: 'The wsp language server is not running (wsp: Restart language server)' };
    case 'running':
      break;
  }
  if (check.errors === 0 && check.warnings === 0) {
    return { text: '$(check) wsp', tooltip: 'wsp check: no problems' };
  }
  const plural = (n: number, w: string) => `${n} ${w}${n === 1 ? '' : 's'}`;
  const parts: string[] = [];
  if (check.errors > 0) parts.push(plural(check.errors, 'error'));
  if (check.warnings > 0) parts.push(plural(check.warnings, 'warning'));
  const icon = check.errors > 0 ? '$(error)' : '$(warning)';
  return { text: `${icon} wsp: ${parts.join(', ')}`, tooltip: `wsp check: ${parts.join(', ')}` };
}

/** The server's check settings (initialization options and `wsp` configuration): the backend,
 * the architecture model, strictness and opt-in lints of `wsp check
 * --target/--arch/--strict/--warn`. */
export interface CheckSettings {
  target: string;
  arch: string;
  strict: boolean;
  lints: string[];
}

export function checkSettings(target: unknown, arch: unknown, strict: unknown, lints?: unknown): CheckSettings {
  const text = (v: unknown) => (typeof v === 'string' ? v.trim() : '');
  const names = Array.isArray(lints) ? lints.map(text).filter((l) => l !== '') : [];
  return { target: text(target), arch: text(arch), strict: strict === true, lints: names };
}

import { strict as assert } from 'assert';
import { test } from 'node:test';
import { checkSettings, findExecutable, graphArgs, missingServerMessage, runCommandLine, serverCommand, shellQuote, statusText } from '../../src/logic';

test('server command defaults to wsp on PATH and appends lsp', () => {
  assert.deepEqual(serverCommand(undefined), { command: 'wsp', args: ['lsp'] });
  assert.deepEqual(serverCommand('  '), { command: 'wsp', args: ['lsp'] });
  assert.deepEqual(serverCommand('/opt/wsp/bin/wsp', ['--log', 'debug']), { command: '/opt/wsp/bin/wsp', args: ['lsp', '--log', 'debug'] });
});

test('findExecutable searches PATH in order and skips empty entries', () => {
  const files = new Set(['/b/wsp', '/c/wsp']);
  assert.equal(findExecutable('wsp', { PATH: '::/a:/b:/c' }, 'linux', (p) => files.has(p)), '/b/wsp');
  assert.equal(findExecutable('wsp', { PATH: '/a' }, 'linux', (p) => files.has(p)), undefined);
  assert.equal(findExecutable('wsp', {}, 'linux', () => true), undefined);
});

test('findExecutable checks a path with a separator directly', () => {
  assert.equal(findExecutable('/c/wsp', { PATH: '/a' }, 'linux', (p) => p === '/c/wsp'), '/c/wsp');
  assert.equal(findExecutable('./wsp', { PATH: '/c' }, 'linux', () => false), undefined);
});

test('findExecutable adds PATHEXT on Windows', () => {
  const hit = findExecutable('wsp', { PATH: 'C:\\tools', PATHEXT: '.COM;.EXE' }, 'win32', (p) => p.endsWith('wsp.EXE'));
  assert.ok(hit?.endsWith('wsp.EXE'));
});

test('missing-binary message names the command and how to install', () => {
  const m = missingServerMessage('wsp');
  assert.match(m, /`wsp`/);
  assert.match(m, /cargo install/);
  assert.match(m, /wsp\.server\.path/);
});

test('shell quoting leaves plain words alone and quotes the rest', () => {
  assert.equal(shellQuote('/home/u/a.wsp', 'linux'), '/home/u/a.wsp');
  assert.equal(shellQuote("it's here.wsp", 'linux'), `'it'\\''s here.wsp'`);
  assert.equal(shellQuote('C:\\My Files\\a.wsp', 'win32'), '"C:\\My Files\\a.wsp"');
});

test('run command line', () => {
  assert.equal(runCommandLine('wsp', '/p/a b.wsp', ['--set', 'batch_size=8'], 'linux'), "wsp run --set batch_size=8 '/p/a b.wsp'");
  assert.equal(runCommandLine('C:\\Program Files\\wsp.exe', 'a.wsp', [], 'win32'), '& "C:\\Program Files\\wsp.exe" run a.wsp');
});

test('graph arguments ask for timing only and a DOT file', () => {
  assert.deepEqual(graphArgs('/p/a.wsp', '/tmp/g.dot'), ['run', '--timing-only', '--graph', '/tmp/g.dot', '/p/a.wsp']);
});

test('status text reflects server state and diagnostic counts', () => {
  assert.equal(statusText('running', { errors: 0, warnings: 0 }).text, '$(check) wsp');
  assert.equal(statusText('running', { errors: 1, warnings: 2 }).text, '$(error) wsp: 1 error, 2 warnings');
  assert.equal(statusText('running', { errors: 0, warnings: 1 }).text, '$(warning) wsp: 1 warning');
  assert.match(statusText('missing', { errors: 0, warnings: 0 }).text, /not installed/);
  assert.match(statusText('stopped', { errors: 3, warnings: 0 }).text, /stopped/);
});

test('check settings pass strings trimmed and strict only when true', () => {
  assert.deepEqual(checkSettings(' aie ', 'aie-ml', true), { target: 'aie', arch: 'aie-ml', strict: true, lints: [] });
  assert.deepEqual(checkSettings(undefined, 42, 'yes'), { target: '', arch: '', strict: false, lints: [] });
  assert.deepEqual(checkSettings('', '', false, [' narrowing ', 7, '']), { target: '', arch: '', strict: false, lints: ['narrowing'] });
});

import { strict as assert } from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { test } from 'node:test';
import { countTasks, drawGraph, escapeXml, graphHtml, MAX_DRAWN_TASKS, parseSite, utf16Offset, viewOf } from '../../src/graph';

// The task graphs of every example and of a 1,296-task wavefront, as `wsp run --graph` wrote
// them (test/fixtures/make-graphs.sh regenerates them).
const FIXTURES = path.join(__dirname, '..', '..', '..', 'test', 'fixtures', 'graphs');

function fixtures(): Array<[string, string]> {
  return fs
    .readdirSync(FIXTURES)
    .filter((f) => f.endsWith('.dot'))
    .sort()
    .map((f) => [f, fs.readFileSync(path.join(FIXTURES, f), 'utf8')]);
}

test('every example graph is laid out by Graphviz with all its tasks, dependencies and call links', async () => {
  const all = fixtures();
  assert.ok(all.length >= 17, `only ${all.length} fixture graphs`);
  for (const [name, dot] of all) {
    const d = await drawGraph(dot);
    const edges = (dot.match(/^\s*t\d+ -> t\d+;/gm) ?? []).length;
    assert.equal(d.tasks, countTasks(dot), name);
    assert.ok(d.tasks > 0, name);
    assert.equal(d.dependencies, edges, name);
    assert.match(d.svg, /^<svg /, name);
    // Every task is a link to its call site in the example's file.
    const links = d.svg.match(/xlink:href="wsp-site:\d+:\d+:[^"]+\.wsp"/g) ?? [];
    assert.equal(links.length, d.tasks, name);
  }
});

test('a graph of more than 1,000 tasks is drawn, with Graphviz layout coordinates', async () => {
  const dot = fs.readFileSync(path.join(FIXTURES, 'wavefront.dot'), 'utf8');
  assert.ok(countTasks(dot) > 1000);
  const view = await viewOf(dot);
  assert.equal(view.kind, 'drawn');
  if (view.kind !== 'drawn') return;
  assert.equal(view.drawn.tasks, 1296);
  // A wavefront's layout is deep: the first task is on top, the last far below it.
  const y = (task: string) => {
    const m = new RegExp(`<title>${task}</title>[\\s\\S]*?<text[^>]* y="(-?[\\d.]+)"`).exec(view.drawn.svg);
    assert.ok(m, task);
    return Number(m[1]);
  };
  assert.ok(y('t1295') - y('t0') > 30 * 36, `${y('t0')} .. ${y('t1295')}`);
  const html = graphHtml(view, dot, 'Task graph: wavefront.wsp', 'n0nce');
  assert.match(html, /1296 tasks, 2508 dependencies/);
  assert.match(html, /<script nonce="n0nce">/);
  assert.match(html, /script-src 'nonce-n0nce'/);
});

test('a graph Graphviz cannot read, or too large to lay out, is shown as its text with the reason', async () => {
  const bad = await viewOf('digraph { a -> }');
  assert.equal(bad.kind, 'text');
  if (bad.kind === 'text') assert.match(bad.why, /Graphviz could not draw it: .*syntax error/);
  const html = graphHtml(bad, 'digraph { a -> } <x>', 'T', 'n0nce');
  assert.match(html, /Not drawn: Graphviz could not draw it/);
  assert.match(html, /digraph \{ a -&gt; \} &lt;x&gt;/);
  assert.doesNotMatch(html, /<script/);

  const lines = ['digraph tasks {'];
  for (let i = 0; i <= MAX_DRAWN_TASKS; i++) lines.push(`  t${i} [label="k[${i}]"];`);
  lines.push('}');
  const big = await viewOf(lines.join('\n'));
  assert.equal(big.kind, 'text');
  if (big.kind === 'text') assert.match(big.why, new RegExp(`${MAX_DRAWN_TASKS + 1} tasks, more than the ${MAX_DRAWN_TASKS}`));
});

test('call sites parse, and byte offsets become editor offsets', () => {
  assert.deepEqual(parseSite('wsp-site:10:22:lib/a b.wsp'), { file: 'lib/a b.wsp', start: 10, end: 22 });
  assert.deepEqual(parseSite('wsp-site:1:2:C:\\p\\x.wsp'), { file: 'C:\\p\\x.wsp', start: 1, end: 2 });
  assert.equal(parseSite('wsp-site:5:2:a.wsp'), undefined);
  assert.equal(parseSite('https://example.com'), undefined);
  assert.equal(parseSite('wsp-site:1:2:'), undefined);
  const text = '// €😀\nx';
  // '€' is 3 bytes and 1 code unit, '😀' 4 bytes and 2 code units.
  assert.equal(utf16Offset(text, 3), 3);
  assert.equal(utf16Offset(text, 6), 4);
  assert.equal(utf16Offset(text, 10), 6);
  assert.equal(utf16Offset(text, 8), 4, 'inside a character: its start');
  assert.equal(utf16Offset(text, 1000), text.length);
  assert.equal(escapeXml(`"'<&>`), '&quot;&#39;&lt;&amp;&gt;');
});

import { strict as assert } from 'assert';
import { test } from 'node:test';
import { DotParseError, escapeXml, graphHtml, layout, parseDot, renderSvg } from '../../src/dot';

const SAMPLE = `digraph tasks {
  // comment
  rankdir=TB;
  node [shape=box];
  t0 [label="attention_tile[0,0,0]\\ncycles=4864"];
  t1 [label="attention_tile[0,0,1]"];
  "t 2" [label="a<b>&"];
  t0 -> t1 -> "t 2" [label="O"];
  t0 -> { t1 "t 2" }
}`;

test('parses nodes, labels, edge chains and subgraph targets', () => {
  const g = parseDot(SAMPLE);
  assert.equal(g.directed, true);
  assert.equal(g.name, 'tasks');
  assert.deepEqual(g.nodes.map((n) => n.id), ['t0', 't1', 't 2']);
  assert.equal(g.nodes[0].label, 'attention_tile[0,0,0]\ncycles=4864');
  assert.deepEqual(
    g.edges.map((e) => `${e.from}->${e.to}`),
    ['t0->t1', 't1->t 2', 't0->t1', 't0->t 2'],
  );
  assert.equal(g.edges[0].label, 'O');
});

test('rejects malformed DOT with a located message', () => {
  assert.throws(() => parseDot('digraph { a -> }'), DotParseError);
  assert.throws(() => parseDot('tree { }'), /expected 'digraph' or 'graph'/);
  assert.throws(() => parseDot('digraph { a'), /missing '}'/);
  assert.throws(() => parseDot('digraph { "a }'), /unterminated string/);
});

test('layout puts every edge target on a lower layer, also with cycles', () => {
  const g = parseDot('digraph { a -> b; b -> c; a -> c; c -> a; d }');
  const l = layout(g);
  const layer = (n: string) => l.positions.get(n)!.layer;
  assert.equal(layer('a'), 0);
  assert.equal(layer('b'), 1);
  assert.equal(layer('c'), 2);
  assert.equal(layer('d'), 0);
  assert.ok(l.width > 0 && l.height > 0);
});

test('nodes of one layer do not overlap', () => {
  const g = parseDot('digraph { r -> a; r -> b; r -> c; r -> d }');
  const xs = ['a', 'b', 'c', 'd'].map((n) => layout(g).positions.get(n)!.x).sort((p, q) => p - q);
  for (let i = 1; i < xs.length; i++) assert.ok(xs[i] - xs[i - 1] >= 150);
});

test('SVG escapes labels and draws one shape per node and edge', () => {
  const svg = renderSvg(parseDot(SAMPLE));
  assert.match(svg, /^<svg /);
  assert.match(svg, /a&lt;b&gt;&amp;/);
  assert.equal((svg.match(/<rect /g) ?? []).length, 3);
  assert.equal((svg.match(/class="edge/g) ?? []).length, 4);
  assert.equal(escapeXml(`"'`), '&quot;&#39;');
});

test('the webview falls back to the DOT text with a note when it cannot draw', () => {
  const html = graphHtml('not a graph <x>', 'Task graph', 'n0nce');
  assert.match(html, /Could not draw this graph/);
  assert.match(html, /not a graph &lt;x&gt;/);
  assert.match(html, /default-src 'none'/);
  const ok = graphHtml(SAMPLE, 'T', 'n0nce');
  assert.match(ok, /3 tasks, 4 dependencies/);
  assert.match(ok, /<svg /);
});

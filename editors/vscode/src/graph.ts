// The task-graph view: the DOT graph `wsp run --graph` writes, laid out by Graphviz (compiled
// to WebAssembly by @viz-js/viz, in process: no network and no external binary) and shown in a
// webview with zoom, pan and click-to-source.

import { instance, Viz } from '@viz-js/viz';

let viz: Promise<Viz> | undefined;

/** The Graphviz instance (compiled once per extension host). */
function graphviz(): Promise<Viz> {
  viz ??= instance();
  return viz;
}

/** A graph laid out as SVG, with what it draws. */
export interface Drawn {
  svg: string;
  tasks: number;
  dependencies: number;
}

export class GraphError extends Error {}

/** Graphs with more tasks than this are shown as DOT text: their layout takes too long. */
export const MAX_DRAWN_TASKS = 5000;

/** The number of nodes a DOT graph of `wsp run --graph` declares (`tN [label=...]` lines). */
export function countTasks(dot: string): number {
  return (dot.match(/^\s*t\d+ \[label=/gm) ?? []).length;
}

/** Lays `dot` out with Graphviz's `dot` engine, as `dot -Tsvg` would. */
export async function drawGraph(dot: string): Promise<Drawn> {
  const g = await graphviz();
  const r = g.render(dot, { format: 'svg', engine: 'dot' });
  if (r.status !== 'success' || r.output === undefined) {
    const why = r.errors.map((e) => e.message.trim()).filter((m) => m.length > 0);
    throw new GraphError(why.length > 0 ? why.join('; ') : 'Graphviz could not lay out the graph');
  }
  const svg = r.output.slice(Math.max(0, r.output.indexOf('<svg')));
  return {
    svg,
    tasks: (svg.match(/<g id="node\d+" class="node">/g) ?? []).length,
    dependencies: (svg.match(/<g id="edge\d+" class="edge">/g) ?? []).length,
  };
}

/** A task's call site: byte offsets into a source file, as the graph's `URL` attributes say. */
export interface Site {
  file: string;
  start: number;
  end: number;
}

/** Parses `wsp-site:START:END:FILE`. */
export function parseSite(href: string): Site | undefined {
  const m = /^wsp-site:(\d+):(\d+):(.+)$/s.exec(href);
  if (!m) return undefined;
  const start = Number(m[1]);
  const end = Number(m[2]);
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || end < start) return undefined;
  return { file: m[3], start, end };
}

/** The string offset (UTF-16 code units, as editors count) of byte offset `byte` of `text`'s
 * UTF-8 encoding; a byte inside a character counts from that character's start. */
export function utf16Offset(text: string, byte: number): number {
  const bytes = Buffer.from(text, 'utf8');
  let b = Math.min(Math.max(byte, 0), bytes.length);
  while (b > 0 && b < bytes.length && (bytes[b] & 0xc0) === 0x80) b--;
  return bytes.subarray(0, b).toString('utf8').length;
}

export function escapeXml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}

/** What the webview shows: a drawing, or the DOT text with the reason it is not drawn. */
export type GraphView = { kind: 'drawn'; drawn: Drawn } | { kind: 'text'; why: string };

/** Lays out `dot`, or says why it is shown as text. */
export async function viewOf(dot: string): Promise<GraphView> {
  const n = countTasks(dot);
  if (n > MAX_DRAWN_TASKS) {
    return {
      kind: 'text',
      why: `the graph has ${n} tasks, more than the ${MAX_DRAWN_TASKS} laid out here; render it with Graphviz: dot -Tsvg`,
    };
  }
  try {
    return { kind: 'drawn', drawn: await drawGraph(dot) };
  } catch (e) {
    return { kind: 'text', why: `Graphviz could not draw it: ${e instanceof Error ? e.message : String(e)}` };
  }
}

// Zoom (wheel, around the pointer), pan (drag), fit (double-click or `0`), and a click on a task
// asks the extension to open its call site.
const SCRIPT = `
const vscode = acquireVsCodeApi();
const view = document.getElementById('graph');
const svg = view.querySelector('svg');
let s = 1, x = 0, y = 0, drag;
function apply() { svg.style.transform = 'translate(' + x + 'px, ' + y + 'px) scale(' + s + ')'; }
function fit() {
  const w = svg.width.baseVal.value || svg.getBoundingClientRect().width;
  s = Math.min(1, (view.clientWidth - 8) / Math.max(w, 1)); x = 0; y = 0; apply();
}
view.addEventListener('wheel', (e) => {
  e.preventDefault();
  const r = view.getBoundingClientRect(), px = e.clientX - r.left, py = e.clientY - r.top;
  const ns = Math.min(8, Math.max(0.02, s * Math.exp(-e.deltaY * 0.0015)));
  x = px - (px - x) * ns / s; y = py - (py - y) * ns / s; s = ns; apply();
}, { passive: false });
view.addEventListener('mousedown', (e) => { drag = { x: e.clientX - x, y: e.clientY - y, moved: false }; });
window.addEventListener('mousemove', (e) => {
  if (!drag || (e.buttons & 1) === 0) return;
  x = e.clientX - drag.x; y = e.clientY - drag.y; drag.moved = true; apply();
});
view.addEventListener('click', (e) => {
  const moved = drag && drag.moved; drag = undefined;
  const a = e.target.closest('a');
  if (!a) return;
  e.preventDefault();
  if (moved) return;
  const href = a.getAttribute('xlink:href') || a.getAttribute('href') || '';
  if (href.startsWith('wsp-site:')) vscode.postMessage({ type: 'open', site: href });
});
view.addEventListener('dblclick', fit);
window.addEventListener('keydown', (e) => { if (e.key === '0') fit(); });
fit();
`;

/** The webview page for `view` of a graph whose DOT text is `dot`. */
export function graphHtml(view: GraphView, dot: string, title: string, nonce: string): string {
  let body: string;
  let script = '';
  if (view.kind === 'drawn') {
    const { drawn } = view;
    body =
      `<p class="note">${drawn.tasks} tasks, ${drawn.dependencies} dependencies · wheel to zoom, drag to pan, double-click to fit, click a task to open its call</p>` +
      `<div id="graph">${drawn.svg}</div>`;
    script = `<script nonce="${nonce}">${SCRIPT}</script>`;
  } else {
    body = `<p class="note">Not drawn: ${escapeXml(view.why)}. Its DOT text follows.</p><pre>${escapeXml(dot)}</pre>`;
  }
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'nonce-${nonce}'; script-src 'nonce-${nonce}'; img-src data:;">
<title>${escapeXml(title)}</title>
<style nonce="${nonce}">
body { color: var(--vscode-editor-foreground); font-family: var(--vscode-font-family); }
.note { opacity: 0.8; }
pre { white-space: pre-wrap; }
#graph { overflow: hidden; height: calc(100vh - 7em); cursor: grab; border-top: 1px solid var(--vscode-panel-border, transparent); }
#graph svg { transform-origin: 0 0; }
#graph svg > g > polygon { fill: transparent; stroke: none; }
#graph .node polygon, #graph .node ellipse, #graph .edge path { stroke: var(--vscode-editor-foreground); }
#graph .edge polygon { stroke: var(--vscode-editor-foreground); fill: var(--vscode-editor-foreground); }
#graph text { fill: var(--vscode-editor-foreground); font-family: var(--vscode-editor-font-family, monospace); }
#graph a { cursor: pointer; }
#graph a:hover polygon { stroke-width: 2; }
</style>
</head><body><h3>${escapeXml(title)}</h3>${body}${script}</body></html>`;
}

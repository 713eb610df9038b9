// A small, dependency-free renderer for the DOT task graphs `wsp run --graph` writes:
// parses the DOT subset graphs use (nodes, edge chains, attribute lists, subgraphs flattened)
// and draws a layered top-to-bottom layout as SVG. No network and no external binary.

export interface DotNode {
  id: string;
  label: string;
}

export interface DotEdge {
  from: string;
  to: string;
  label?: string;
}

export interface DotGraph {
  directed: boolean;
  name?: string;
  nodes: DotNode[];
  edges: DotEdge[];
}

export class DotParseError extends Error {}

type Tok = { kind: 'id' | 'punct'; text: string; pos: number };

function tokenize(src: string): Tok[] {
  const toks: Tok[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i];
    if (/\s/.test(c)) {
      i++;
    } else if (c === '/' && src[i + 1] === '/') {
      while (i < src.length && src[i] !== '\n') i++;
    } else if (c === '#' && (i === 0 || src[i - 1] === '\n')) {
      while (i < src.length && src[i] !== '\n') i++;
    } else if (c === '/' && src[i + 1] === '*') {
      const end = src.indexOf('*/', i + 2);
      if (end < 0) throw new DotParseError(`unterminated comment at offset ${i}`);
      i = end + 2;
    } else if (c === '"') {
      let j = i + 1;
      let text = '';
      while (j < src.length && src[j] !== '"') {
        if (src[j] === '\\' && j + 1 < src.length) {
          const n = src[j + 1];
          text += n === 'n' || n === 'l' || n === 'r' ? '\n' : n === '"' ? '"' : '\\' + n;
          j += 2;
        } else {
          text += src[j++];
        }
      }
      if (j >= src.length) throw new DotParseError(`unterminated string at offset ${i}`);
      toks.push({ kind: 'id', text, pos: i });
      i = j + 1;
    } else if (c === '-' && (src[i + 1] === '>' || src[i + 1] === '-')) {
      toks.push({ kind: 'punct', text: src.slice(i, i + 2), pos: i });
      i += 2;
    } else if ('{}[];,=:'.includes(c)) {
      toks.push({ kind: 'punct', text: c, pos: i });
      i++;
    } else {
      const m = /^(-?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)|[A-Za-z_\u0080-\uffff][A-Za-z0-9_\u0080-\uffff]*)/.exec(src.slice(i));
      if (!m) throw new DotParseError(`unexpected character '${c}' at offset ${i}`);
      toks.push({ kind: 'id', text: m[0], pos: i });
      i += m[0].length;
    }
  }
  return toks;
}

/** Parses a DOT graph. Throws DotParseError on input outside the supported subset. */
export function parseDot(src: string): DotGraph {
  const toks = tokenize(src);
  let p = 0;
  const peek = () => toks[p];
  const isPunct = (t: string) => peek()?.kind === 'punct' && peek()?.text === t;
  const expectPunct = (t: string) => {
    if (!isPunct(t)) {
      const found = peek();
      throw new DotParseError(`expected '${t}' ${found ? `at offset ${found.pos}, found '${found.text}'` : 'at end of input'}`);
    }
    p++;
  };
  const id = (): string => {
    const t = peek();
    if (t?.kind !== 'id') throw new DotParseError(`expected a name ${t ? `at offset ${t.pos}, found '${t.text}'` : 'at end of input'}`);
    p++;
    return t.text;
  };
  const attrs = (): Map<string, string> => {
    const out = new Map<string, string>();
    while (isPunct('[')) {
      p++;
      while (!isPunct(']')) {
        const k = id();
        let v = 'true';
        if (isPunct('=')) {
          p++;
          v = id();
        }
        out.set(k, v);
        if (isPunct(',') || isPunct(';')) p++;
      }
      expectPunct(']');
    }
    return out;
  };

  if (peek()?.kind === 'id' && peek()?.text.toLowerCase() === 'strict') p++;
  const kw = id().toLowerCase();
  if (kw !== 'digraph' && kw !== 'graph') throw new DotParseError(`expected 'digraph' or 'graph', found '${kw}'`);
  const graph: DotGraph = { directed: kw === 'digraph', nodes: [], edges: [] };
  if (peek()?.kind === 'id') graph.name = id();

  const nodes = new Map<string, DotNode>();
  const touch = (n: string) => {
    if (!nodes.has(n)) nodes.set(n, { id: n, label: n });
    return n;
  };

  const stmtList = (): string[] => {
    // Returns the node ids mentioned, so that `a -> { b c }` works.
    expectPunct('{');
    const mentioned: string[] = [];
    while (!isPunct('}')) {
      if (peek() === undefined) throw new DotParseError("missing '}'");
      if (isPunct(';') || isPunct(',')) {
        p++;
        continue;
      }
      const operand = (): string[] => {
        if (isPunct('{')) return stmtList();
        if (peek()?.kind === 'id' && peek()?.text.toLowerCase() === 'subgraph') {
          p++;
          if (peek()?.kind === 'id') p++;
          return stmtList();
        }
        const n = id();
        if (isPunct(':')) {
          // port: node:port[:compass]
          p++;
          id();
          if (isPunct(':')) {
            p++;
            id();
          }
        }
        return [n];
      };
      const first = peek();
      const lowered = first?.kind === 'id' ? first.text.toLowerCase() : '';
      if ((lowered === 'graph' || lowered === 'node' || lowered === 'edge') && toks[p + 1]?.text === '[') {
        p++;
        attrs();
        continue;
      }
      if (first?.kind === 'id' && toks[p + 1]?.kind === 'punct' && toks[p + 1]?.text === '=') {
        p += 2;
        id();
        continue;
      }
      let left = operand();
      const chain: string[][] = [left];
      while (isPunct('->') || isPunct('--')) {
        p++;
        left = operand();
        chain.push(left);
      }
      const a = attrs();
      if (chain.length === 1) {
        for (const n of chain[0]) {
          touch(n);
          const label = a.get('label');
          if (label !== undefined) nodes.get(n)!.label = label;
          mentioned.push(n);
        }
      } else {
        for (let k = 0; k + 1 < chain.length; k++) {
          for (const from of chain[k]) {
            for (const to of chain[k + 1]) {
              touch(from);
              touch(to);
              graph.edges.push({ from, to, label: a.get('label') });
            }
          }
        }
        for (const group of chain) mentioned.push(...group);
      }
    }
    expectPunct('}');
    return mentioned;
  };
  stmtList();
  if (p !== toks.length) throw new DotParseError(`unexpected '${toks[p].text}' after the graph at offset ${toks[p].pos}`);
  graph.nodes = [...nodes.values()];
  return graph;
}

export interface Layout {
  positions: Map<string, { x: number; y: number; layer: number }>;
  width: number;
  height: number;
}

const NODE_W = 150;
const NODE_H = 36;
const GAP_X = 30;
const GAP_Y = 50;

/** Layers nodes by longest path from the sources (back edges of cycles ignored), orders each
 *  layer by the barycentre of its predecessors, and assigns coordinates. Deterministic. */
export function layout(g: DotGraph): Layout {
  const index = new Map(g.nodes.map((n, i) => [n.id, i]));
  const succ: number[][] = g.nodes.map(() => []);
  const pred: number[][] = g.nodes.map(() => []);
  // Drop back edges (found by an iterative DFS in declaration order) so layering terminates.
  const state = new Array<number>(g.nodes.length).fill(0);
  const forward: Array<[number, number]> = [];
  const adj: number[][] = g.nodes.map(() => []);
  for (const e of g.edges) {
    const a = index.get(e.from);
    const b = index.get(e.to);
    if (a !== undefined && b !== undefined && a !== b) adj[a].push(b);
  }
  for (let s = 0; s < g.nodes.length; s++) {
    if (state[s] !== 0) continue;
    const stack: Array<[number, number]> = [[s, 0]];
    state[s] = 1;
    while (stack.length > 0) {
      const top = stack[stack.length - 1];
      const [v, k] = top;
      if (k < adj[v].length) {
        top[1]++;
        const w = adj[v][k];
        if (state[w] === 0) {
          state[w] = 1;
          forward.push([v, w]);
          stack.push([w, 0]);
        } else if (state[w] === 2) {
          forward.push([v, w]);
        }
      } else {
        state[v] = 2;
        stack.pop();
      }
    }
  }
  for (const [a, b] of forward) {
    succ[a].push(b);
    pred[b].push(a);
  }
  // Longest-path layering in topological order (Kahn).
  const indeg = pred.map((ps) => ps.length);
  const layerOf = new Array<number>(g.nodes.length).fill(0);
  const queue: number[] = [];
  indeg.forEach((d, i) => d === 0 && queue.push(i));
  for (let q = 0; q < queue.length; q++) {
    const v = queue[q];
    for (const w of succ[v]) {
      layerOf[w] = Math.max(layerOf[w], layerOf[v] + 1);
      if (--indeg[w] === 0) queue.push(w);
    }
  }
  const layers: number[][] = [];
  layerOf.forEach((l, i) => (layers[l] ??= []).push(i));
  const order = new Array<number>(g.nodes.length).fill(0);
  for (const layer of layers) layer.forEach((v, k) => (order[v] = k));
  for (let l = 1; l < layers.length; l++) {
    const bary = (v: number) => (pred[v].length === 0 ? order[v] : pred[v].reduce((s, u) => s + order[u], 0) / pred[v].length);
    const keyed = layers[l].map((v) => ({ v, key: bary(v) }));
    keyed.sort((a, b) => a.key - b.key || a.v - b.v);
    layers[l] = keyed.map((k) => k.v);
    layers[l].forEach((v, k) => (order[v] = k));
  }
  const widest = Math.max(1, ...layers.map((l) => l.length));
  const width = widest * (NODE_W + GAP_X) + GAP_X;
  const positions = new Map<string, { x: number; y: number; layer: number }>();
  layers.forEach((layer, l) => {
    const offset = (width - layer.length * (NODE_W + GAP_X) + GAP_X) / 2;
    layer.forEach((v, k) => {
      positions.set(g.nodes[v].id, { x: offset + k * (NODE_W + GAP_X), y: GAP_Y / 2 + l * (NODE_H + GAP_Y), layer: l });
    });
  });
  return { positions, width, height: Math.max(1, layers.length) * (NODE_H + GAP_Y) };
}

export function escapeXml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}

function clip(label: string): string {
  const line = label.split('\n')[0];
  return line.length > 22 ? line.slice(0, 21) + '…' : line;
}

/** Renders a parsed graph as a standalone SVG document. */
export function renderSvg(g: DotGraph): string {
  const { positions, width, height } = layout(g);
  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
  );
  out.push(
    '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="currentColor"/></marker></defs>',
  );
  for (const e of g.edges) {
    const a = positions.get(e.from);
    const b = positions.get(e.to);
    if (!a || !b) continue;
    const x1 = a.x + NODE_W / 2;
    const y1 = a.y + NODE_H;
    const x2 = b.x + NODE_W / 2;
    const y2 = b.y;
    const marker = g.directed ? ' marker-end="url(#arrow)"' : '';
    if (b.layer > a.layer) {
      out.push(`<line class="edge" x1="${x1}" y1="${y1}" x2="${x2}" y2="${y2}" stroke="currentColor"${marker}/>`);
    } else {
      // a back edge of a cycle: curve around the right side
      const cx = Math.max(a.x, b.x) + NODE_W + GAP_X / 2;
      out.push(
        `<path class="edge back" d="M ${a.x + NODE_W} ${a.y + NODE_H / 2} C ${cx} ${a.y}, ${cx} ${b.y + NODE_H}, ${b.x + NODE_W} ${b.y + NODE_H / 2}" fill="none" stroke="currentColor" stroke-dasharray="4 3"${marker}/>`,
      );
    }
    if (e.label) {
      out.push(`<text x="${(x1 + x2) / 2 + 4}" y="${(y1 + y2) / 2}" fill="currentColor">${escapeXml(clip(e.label))}</text>`);
    }
  }
  for (const n of g.nodes) {
    const pnt = positions.get(n.id);
    if (!pnt) continue;
    out.push(
      `<g class="node"><title>${escapeXml(n.label)}</title><rect x="${pnt.x}" y="${pnt.y}" width="${NODE_W}" height="${NODE_H}" rx="6" fill="none" stroke="currentColor"/>` +
        `<text x="${pnt.x + NODE_W / 2}" y="${pnt.y + NODE_H / 2 + 4}" text-anchor="middle" fill="currentColor">${escapeXml(clip(n.label))}</text></g>`,
    );
  }
  out.push('</svg>');
  return out.join('\n');
}

/** Largest graph drawn as SVG; larger ones are shown as DOT text (a browser can't lay out more usefully). */
export const MAX_RENDERED_NODES = 2000;

/** The webview body for a DOT file: an SVG drawing, or the DOT text with a note saying why. */
export function graphHtml(dot: string, title: string, nonce: string): string {
  let body: string;
  try {
    const g = parseDot(dot);
    if (g.nodes.length > MAX_RENDERED_NODES) {
      body = `<p class="note">The graph has ${g.nodes.length} tasks, more than the ${MAX_RENDERED_NODES} drawn here; its DOT text follows (render it with Graphviz: <code>dot -Tsvg</code>).</p><pre>${escapeXml(dot)}</pre>`;
    } else {
      body = `<p class="note">${g.nodes.length} tasks, ${g.edges.length} dependencies</p>${renderSvg(g)}`;
    }
  } catch (e) {
    const why = e instanceof DotParseError ? e.message : String(e);
    body = `<p class="note">Could not draw this graph (${escapeXml(why)}); its DOT text follows.</p><pre>${escapeXml(dot)}</pre>`;
  }
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'nonce-${nonce}'; img-src data:;">
<title>${escapeXml(title)}</title>
<style nonce="${nonce}">body { color: var(--vscode-editor-foreground); font-family: var(--vscode-font-family); } .note { opacity: 0.8; } svg { color: var(--vscode-editor-foreground); } pre { white-space: pre-wrap; }</style>
</head><body><h3>${escapeXml(title)}</h3>${body}</body></html>`;
}

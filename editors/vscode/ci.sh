#!/usr/bin/env bash
# CI for the VS Code extension: install pinned deps, build, grammar + unit tests, package.
# Needs node >= 18 and npm; reaches only the npm registry (npm ci).
set -euo pipefail
cd "$(dirname "$0")"
t0=$SECONDS
major="$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)"
if [[ "$major" -lt 20 ]]; then
  echo "editors/vscode/ci.sh: needs Node.js >= 20 (found $(node --version 2>/dev/null || echo none))" >&2
  exit 1
fi
echo "== npm ci"
npm ci --no-audit --no-fund --loglevel=error
echo "== build"
npm run --silent build
echo "== TextMate grammar tests"
npx --no-install vscode-tmgrammar-test -g syntaxes/wsp.tmLanguage.json 'test/grammar/*.test.wsp'
echo "== unit tests"
node --test out/test/unit/
echo "== package"
rm -f wsp.vsix
npx --no-install vsce package --allow-missing-repository -o wsp.vsix </dev/null
test -s wsp.vsix
echo "== the package is self-contained: its Graphviz lays out a graph with nothing else installed"
unpacked="$(mktemp -d)"
trap 'rm -rf "$unpacked"' EXIT
python3 -m zipfile -e wsp.vsix "$unpacked"
(cd "$unpacked/extension" &&
  node -e "require('./out/src/graph.js').drawGraph('digraph { a -> b }').then((d) => { if (d.tasks !== 2 || d.dependencies !== 1) process.exit(1); })")
echo "vscode: done in $((SECONDS - t0)) s"

#!/usr/bin/env bash
# Regenerates the README's pictures of the LLaMA-7B layer at 1K tokens (examples/llama7b):
# the task graph (`wsp graph`, through Graphviz) and the modelled timeline (`wsp run --trace`,
# drawn by scripts/trace_svg.py). Needs Graphviz's `dot` (Debian: apt-get install graphviz).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build -q --release -p wsp
wsp=target/release/wsp
prog=examples/llama7b/llama7b.wsp
$wsp graph "$prog" --set seq=1024 -o docs/img/llama7b-1k-graph.svg
trace="$(mktemp --suffix=.json)"
trap 'rm -f "$trace"' EXIT
$wsp run "$prog" --set seq=1024 --timing-only -q --trace "$trace"
python3 scripts/trace_svg.py "$trace" docs/img/llama7b-1k-trace.svg \
  "LLaMA-7B layer, 1,024 tokens (1,024 tasks) on ascend910b: modelled time per core"
echo "wrote docs/img/llama7b-1k-graph.svg and docs/img/llama7b-1k-trace.svg"

#!/usr/bin/env bash
# Installs the tree-sitter CLI that grammar/check-fixtures.sh uses, from crates.io (the npm
# package downloads a prebuilt binary at install time, which offline CI cannot do), into the
# project's own tool directory (`.tools/bin`, or $WSP_TOOLS_DIR/bin), not ~/.cargo. The crate
# embeds a JavaScript runtime, so `tree-sitter generate` needs no Node. Takes ~5 minutes on
# 2 cores the first time; a no-op when the pinned version is already installed.
set -euo pipefail
VERSION="${TREE_SITTER_VERSION:-0.27.1}"   # rust-version 1.90; works with rustc 1.95
tools="${WSP_TOOLS_DIR:-$(cd "$(dirname "$0")/.." && pwd)/.tools}"
bin="$tools/bin/tree-sitter"

have() { [[ -x "$1" ]] && [[ "$("$1" --version 2>/dev/null)" == "tree-sitter $VERSION"* ]]; }

if have "$bin"; then
  echo "install-tree-sitter: tree-sitter $VERSION already installed ($bin)"
  exit 0
fi
if command -v tree-sitter >/dev/null 2>&1 && have "$(command -v tree-sitter)"; then
  echo "install-tree-sitter: tree-sitter $VERSION already on PATH"
  exit 0
fi
if ! command -v cc >/dev/null 2>&1; then
  echo "install-tree-sitter: a C compiler (cc) is needed to build grammars: apt-get install -y gcc" >&2
  exit 1
fi
echo "install-tree-sitter: cargo install tree-sitter-cli $VERSION"
start=$SECONDS
cargo install tree-sitter-cli --version "$VERSION" --locked --root "$tools"
echo "install-tree-sitter: done in $((SECONDS - start)) s"

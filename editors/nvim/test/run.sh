#!/usr/bin/env bash
# Headless test of editors/nvim with `nvim` (Debian's neovim package is enough):
#  1. filetype, tree-sitter highlighting (parser compiled with cc) and the LSP client, against
#     a fake server (test/fake_lsp.py, test/check.lua), so it needs no `wsp` binary;
#  2. when $WSP_BIN names a `wsp` binary (scripts/test.sh passes its debug build), end to end
#     against the real `wsp lsp` (test/check_real.lua on test/e2e.wsp): diagnostics, hover,
#     definition, rename (and a refused clash), formatting, and a fix clearing the diagnostics.
# Skips (exit 0) without nvim.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
root="$(cd "$here/../.." && pwd)"
if ! command -v nvim >/dev/null 2>&1; then
  echo "editors/nvim: nvim not installed; skipping (apt-get install -y neovim)"
  exit 0
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
file="${1:-$root/tests/ui/lang_attention.wsp}"
cp "$file" "$tmp/program.wsp"
XDG_DATA_HOME="$tmp/data" XDG_STATE_HOME="$tmp/state" XDG_CONFIG_HOME="$tmp/config" \
WSP_TEST_FILE="$tmp/program.wsp" WSP_TEST_LOG="$tmp/lsp.log" \
  timeout 60 nvim --headless -u NONE -i NONE \
    --cmd "set rtp^=$here" \
    --cmd "filetype plugin on" \
    --cmd "lua require('wsp').setup({ cmd = { 'python3', '$here/test/fake_lsp.py', '$tmp/lsp.log' } })" \
    -c "luafile $here/test/check.lua" 2>&1

if [ -n "${WSP_BIN:-}" ]; then
  if [ ! -x "$WSP_BIN" ]; then
    echo "editors/nvim: WSP_BIN=$WSP_BIN is not an executable"
    exit 1
  fi
  mkdir -p "$tmp/real"
  cp "$here/test/e2e.wsp" "$tmp/real/model.wsp"
  (cd "$tmp/real" && XDG_DATA_HOME="$tmp/data" XDG_STATE_HOME="$tmp/state" XDG_CONFIG_HOME="$tmp/config" \
    WSP_TEST_FILE="$tmp/real/model.wsp" \
    timeout 120 nvim --headless -u NONE -i NONE \
      --cmd "set rtp^=$here" \
      --cmd "filetype plugin on" \
      --cmd "lua require('wsp').setup({ cmd = { '$WSP_BIN', 'lsp' }, treesitter = false })" \
      -c "luafile $here/test/check_real.lua" 2>&1)
else
  echo "editors/nvim: WSP_BIN not set; skipping the end-to-end test against the real server"
fi

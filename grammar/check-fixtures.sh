#!/usr/bin/env bash
# Checks the tree-sitter grammar (grammar/tree-sitter-wsp) against the language:
#   1. regenerates the parser from grammar.js and fails if the committed src/ is stale,
#   2. runs the corpus tests (test/corpus), the highlight tests (test/highlight) and checks
#      that every query compiles,
#   3. parses every tests/ui/*.wsp fixture that expects no syntax error (no `//~ ERROR E00xx`)
#      and every examples/**/*.wsp and std/**/*.wsp, failing on any ERROR or MISSING node.
# Without a `tree-sitter` CLI (grammar/install-tree-sitter.sh installs one) it says so and
# exits 0. Needs a C compiler (cc) to build the parser.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
ts_dir="$root/grammar/tree-sitter-wsp"

TS="${TREE_SITTER:-}"
if [[ -z "$TS" ]]; then
  tools="${WSP_TOOLS_DIR:-$root/.tools}"
  if [[ -x "$tools/bin/tree-sitter" ]]; then
    TS="$tools/bin/tree-sitter"
  elif command -v tree-sitter >/dev/null 2>&1; then
    TS="$(command -v tree-sitter)"
  elif [[ -x "$HOME/.cargo/bin/tree-sitter" ]]; then
    TS="$HOME/.cargo/bin/tree-sitter"
  fi
fi
if [[ -z "$TS" ]]; then
  echo "check-fixtures: tree-sitter CLI not installed; skipping the tree-sitter grammar checks"
  echo "  (install it with grammar/install-tree-sitter.sh)"
  exit 0
fi
echo "check-fixtures: using $("$TS" --version) ($TS)"

cd "$ts_dir"
# Work on a copy of src/ so a stale committed parser is detected, not silently overwritten.
before="$(mktemp -d)"
trap 'rm -rf "$before"' EXIT
cp -r src "$before/src"
# ABI 14: loadable by Neovim 0.9/0.10 and nvim-treesitter as well as by newer hosts.
"$TS" generate --abi 14
if ! diff -qr "$before/src" src >/dev/null; then
  diff -r "$before/src" src | head -20 || true
  echo "check-fixtures: src/ was stale: regenerated from grammar.js; commit grammar/tree-sitter-wsp/src"
  stale=1
else
  stale=0
fi

echo "== tree-sitter corpus tests"
"$TS" test

echo "== queries compile against the grammar"
for q in queries/*.scm; do
  if ! "$TS" query "$q" "$root/tests/ui/lang_attention.wsp" >/dev/null 2>"$before/query.err"; then
    grep -v '^ ' "$before/query.err" | tail -5
    echo "check-fixtures: $q does not compile"
    exit 1
  fi
done

# Fixtures and examples that must parse without ERROR or MISSING nodes.
files=()
while IFS= read -r -d '' f; do
  if ! grep -q '//~ *ERROR *E00' "$f"; then files+=("$f"); fi
done < <(find "$root/tests/ui" -maxdepth 1 -name '*.wsp' -print0 | sort -z)
while IFS= read -r -d '' f; do
  files+=("$f")
done < <(find "$root/examples" "$root/std" -name '*.wsp' -print0 2>/dev/null | sort -z)

echo "== parsing ${#files[@]} fixtures and examples"
failed=0
for f in "${files[@]}"; do
  out="$("$TS" parse --no-ranges "$f" 2>&1 || true)"
  if grep -qE '\((ERROR|MISSING)' <<<"$out"; then
    echo "FAIL ${f#"$root"/}"
    grep -nE '\((ERROR|MISSING)' <<<"$out" | head -5 | sed 's/^/    /'
    # Locations of the first problems, from the tree with ranges.
    "$TS" parse "$f" 2>&1 | grep -E '\((ERROR|MISSING)' | head -3 | sed 's/^ */    at /'
    failed=$((failed + 1))
  fi
done
passed=$((${#files[@]} - failed))
echo "fixtures: ${passed} passed, ${failed} failed"
if [[ $failed -ne 0 || $stale -ne 0 ]]; then
  exit 1
fi

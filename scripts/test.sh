#!/usr/bin/env bash
# The whole test suite: what CI runs (`.ci/run` calls exactly this). On a fresh machine it
# installs what it needs: tree-sitter CLI and cargo-fuzz (crates.io) and pytest-lsp (PyPI, in a
# virtual environment) into the project's own `.tools/` (or $WSP_TOOLS_DIR), Node packages
# (npm) into the extension's node_modules, Neovim, CMake, mlir-19-tools and Graphviz (Debian) when they
# are missing. Needs a Rust toolchain (rustc >= 1.95) with rustfmt and clippy, gcc,
# Python 3 and Node.js >= 20.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
# A one-shot run from a clean clone gains nothing from incremental caches, and they would take
# gigabytes of the target directory's disk.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
export WSP_TOOLS_DIR="${WSP_TOOLS_DIR:-$(pwd)/.tools}"
export PATH="$WSP_TOOLS_DIR/bin:$PATH"
step() { echo; echo "== $*"; }

step "format"
cargo fmt --all -- --check

step "clippy"
cargo clippy --workspace --all-targets -- -D warnings

step "tools of the backends' and \`wsp graph\`'s tests: cmake, mlir-opt-19 and Graphviz (Debian)"
if ! command -v cmake >/dev/null 2>&1 || ! command -v mlir-opt-19 >/dev/null 2>&1 \
  || ! command -v dot >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    (apt-get update -qq && apt-get install -y -qq cmake mlir-19-tools graphviz >/dev/null) \
      || { echo "could not install cmake, mlir-19-tools and graphviz"; exit 1; }
  else
    echo "cmake, mlir-opt-19 or dot is missing and this user cannot install them (apt-get install cmake mlir-19-tools graphviz)"; exit 1
  fi
fi

step "tests"
cargo test --workspace

step "diagnostics index is current"
cargo run -q -p wsp -- explain --list --markdown | diff -u docs/diagnostics.md - \
  || { echo "docs/diagnostics.md is stale: cargo run -p wsp -- explain --list --markdown > docs/diagnostics.md"; exit 1; }

step "tree-sitter grammar: corpus, highlights, and every valid fixture/example"
bash grammar/install-tree-sitter.sh
bash grammar/check-fixtures.sh

step "fuzz: parser, checker, and JIT against the interpreter, 60 s each"
bash fuzz/run.sh 60 parse check jit_kernel

step "VS Code extension: grammar tests, unit tests, package"
bash editors/vscode/ci.sh

step "language server from a real client: pytest-lsp over stdio"
venv="$WSP_TOOLS_DIR/venv"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv" \
  || { echo "could not make a Python virtual environment in $venv (Debian: apt-get install python3-venv)"; exit 1; }
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check 'pytest-lsp==1.0.1' \
  || { echo "could not install pytest-lsp from PyPI"; exit 1; }
cargo build -q -p wsp
tdir="${CARGO_TARGET_DIR:-target}"; case "$tdir" in /*) ;; *) tdir="$(pwd)/$tdir" ;; esac
WSP_BIN="$tdir/debug/wsp" "$venv/bin/python" -m pytest -q -p no:cacheprovider tests/lsp

step "Neovim: configuration (headless) and end to end against the real server"
if ! command -v nvim >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    (apt-get update -qq && apt-get install -y -qq neovim >/dev/null) || { echo "could not install neovim"; exit 1; }
  else
    echo "neovim is not installed and this user cannot install it (apt-get install neovim)"; exit 1
  fi
fi
WSP_BIN="$tdir/debug/wsp" bash editors/nvim/test/run.sh

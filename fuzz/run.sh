#!/usr/bin/env bash
# Runs the cargo-fuzz targets for SECONDS each (default 60); non-zero exit on a crash.
# Usage: fuzz/run.sh [SECONDS] [TARGET...]   (targets default to: parse check)
# cargo-fuzz needs nightly-only flags; RUSTC_BOOTSTRAP lets the stable toolchain accept them.
set -euo pipefail
cd "$(dirname "$0")"
secs="${1:-60}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(parse check)
# cargo-fuzz goes into the project's tool directory (.tools/bin, or $WSP_TOOLS_DIR/bin).
tools="${WSP_TOOLS_DIR:-$(cd .. && pwd)/.tools}"
export PATH="$tools/bin:$PATH"
command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz --locked --root "$tools"
mkdir -p corpus/parse corpus/check corpus/jit_kernel
# Seed both corpora with the fixtures and examples.
for f in ../tests/ui/*.wsp ../examples/*/*.wsp; do
    [ -f "$f" ] || continue
    cp "$f" corpus/parse/ 2>/dev/null || true
    cp "$f" corpus/check/ 2>/dev/null || true
done
# Honour CARGO_TARGET_DIR (cargo-fuzz needs it as a flag to find the built binary).
tdir=()
[ -n "${CARGO_TARGET_DIR:-}" ] && tdir=(--target-dir "$CARGO_TARGET_DIR")
for t in "${targets[@]}"; do
    echo "== fuzz $t for ${secs}s"
    RUSTC_BOOTSTRAP=1 cargo fuzz run "${tdir[@]}" "$t" "corpus/$t" -- -max_total_time="$secs" -max_len=4096
done

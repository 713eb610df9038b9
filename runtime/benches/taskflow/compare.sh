#!/usr/bin/env bash
# Per-task cost of wsp's runtime against Taskflow on the same empty-kernel graphs (10,000
# tasks: chain, wide, 100 x 100 wavefront; one worker), side by side: the two alternate
# ROUNDS times (default 7), each printing the median of 21 runs; prints both medians of the
# rounds and their ratio (wsp / Taskflow).
#
#   TASKFLOW=<a checkout of github.com/taskflow/taskflow> bash runtime/benches/taskflow/compare.sh
#
# Builds empty.cpp with g++ -O2 -std=c++20 against $TASKFLOW and the runtime's bench
# (`cargo bench -p wsp-runtime --bench runtime --no-run`), whose `--empty SHAPE 1 21` runs
# the same graphs through the runtime (construction, the event clock, kernel calls).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
: "${TASKFLOW:?set TASKFLOW to a checkout of github.com/taskflow/taskflow (its taskflow/ headers)}"
rounds="${ROUNDS:-7}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
g++ -O2 -std=c++20 -pthread -I"$TASKFLOW" -o "$out/taskflow_empty" "$here/empty.cpp"
bench="$(cd "$root" && cargo bench -q -p wsp-runtime --bench runtime --no-run --message-format=json 2>/dev/null \
  | sed -n 's/.*"executable":"\([^"]*runtime-[^"]*\)".*/\1/p' | tail -1)"
[ -x "$bench" ] || { echo "compare.sh: the runtime bench did not build" >&2; exit 1; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
printf '%-10s %10s %10s %7s\n' shape wsp_ns taskflow_ns ratio
for shape in chain wide wavefront; do
  : >"$out/w"; : >"$out/t"
  for _ in $(seq "$rounds"); do
    "$bench" --empty "$shape" 1 21 2>&1 | sed -n 's/.*median \([0-9.]*\) ns\/task.*/\1/p' >>"$out/w"
    "$out/taskflow_empty" "$shape" 21 >>"$out/t"
  done
  w="$(median <"$out/w")"; t="$(median <"$out/t")"
  awk -v s="$shape" -v w="$w" -v t="$t" 'BEGIN { printf "%-10s %10s %10s %7.2f\n", s, w, t, w / t }'
done

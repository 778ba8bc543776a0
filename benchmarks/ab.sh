#!/bin/bash
# Before/after benchmark run in one session, alternating sides (these machines are noisy: compare minima).
#
#   bash benchmarks/ab.sh BEFORE_COMMIT [OUT_DIR] [ROUNDS]
#
# Checks BEFORE_COMMIT out into a temporary worktree, then runs bench_engine.py, bench_qp.py,
# bench_methods.py and bench_basin.py (--no-cold --repeat 1) in the before tree and in this tree,
# alternating, ROUNDS times (default 2). Outputs: OUT_DIR/{engine,qp,methods,basin}_{before,after}_<round>.txt
# (default OUT_DIR: /tmp/pcd-ab), then the before/after table of the minima over the rounds
# (benchmarks/ab_table.py). With AB_FIRST_LOAD=1 it also serves both trees and measures every page's
# cold first load in a real browser (bench_first_load.py --before, alternating; needs Chromium).
set -euo pipefail
before_rev=${1:?usage: bash benchmarks/ab.sh BEFORE_COMMIT [OUT_DIR] [ROUNDS]}
out=${2:-/tmp/pcd-ab}
rounds=${3:-2}
here=$(git rev-parse --show-toplevel)
tree=$(mktemp -d /tmp/pcd-ab-before.XXXXXX)
git -C "$here" worktree add --detach "$tree" "$before_rev" >/dev/null
trap 'git -C "$here" worktree remove --force "$tree"' EXIT
mkdir -p "$out"
for round in $(seq 1 "$rounds"); do
  for side in before after; do
    d=$tree; [ "$side" = after ] && d=$here
    for b in engine qp methods; do
      (cd "$d" && PYTHONPATH="$d" python "benchmarks/bench_$b.py") > "$out/${b}_${side}_${round}.txt" 2>&1
    done
    (cd "$d" && PYTHONPATH="$d" python benchmarks/bench_basin.py --no-cold --repeat 1) \
      > "$out/basin_${side}_${round}.txt" 2>&1
  done
done
if [ "${AB_FIRST_LOAD:-0}" = 1 ]; then
  python "$here/benchmarks/bench_first_load.py" --before "$before_rev" --rounds "$rounds" \
    > "$out/first_load.txt" 2>&1 || echo "first load benchmark failed: see $out/first_load.txt"
fi
echo "results in $out"
python "$here/benchmarks/ab_table.py" "$out"

#!/usr/bin/env bash
# Alternate bench_check and bench_server between two checkouts, each with its own .venv:
#
#     bash benchmarks/side_by_side.sh OLD_CHECKOUT [ROUNDS] [OUT_DIR]
#
# e.g. an older main in a worktree: git worktree add ../old <commit> && (cd ../old &&
# bash scripts/bootstrap.sh). One machine is noisy from one minute to the next; alternating
# old, new, old, new... puts the two sides under the same conditions. Each run's markdown
# goes to OUT_DIR/{check,server}-{old,new}-N.md; compare absolute times run by run.
set -euo pipefail
old=$(cd "$1" && pwd)
new=$(cd "$(dirname "$0")/.." && pwd)
rounds=${2:-3}
out=${3:-side-by-side}
mkdir -p "$out"
out=$(cd "$out" && pwd)
for round in $(seq 1 "$rounds"); do
  for side in old new; do
    dir=$old; [ "$side" = new ] && dir=$new
    (cd "$dir" && .venv/bin/python benchmarks/bench_check.py --markdown \
      > "$out/check-$side-$round.md" 2>&1)
    (cd "$dir" && .venv/bin/python benchmarks/bench_server.py --markdown --saves 8 \
      > "$out/server-$side-$round.md" 2>&1)
  done
done
echo "written to $out"

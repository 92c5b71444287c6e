#!/usr/bin/env bash
# bench/same-code.sh [N] — issue 43 item 5: the same host sweep (examples/
# problems/rmsnorm-cpu, 2 local agents) run N times (4) in one home, every
# pair compared with `kfleet compare --threshold 20`: the same code should
# never exit 1. Prints each failing pair's regression lines, the count, and
# each run's medians (kernel/rows: µs). KF_BIN: kfleet's directory (build/);
# HOME_DIR: the kfleet home (/tmp/kf-same-code, removed first); RUN_ARGS:
# more `kfleet run` arguments (--agents 1). REPEAT=K: K homes of N runs each
# (HOME_DIR-1 ...), the issue's "submitted twice, ten times out of ten" being
# REPEAT=10 with N=2; the counts are summed.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
K=${KF_BIN:-$ROOT/build}/kfleet
N=${1:-4}
if [ -n "${REPEAT:-}" ]; then
  bad=0 tot=0
  for r in $(seq 1 "$REPEAT"); do
    line=$(REPEAT= HOME_DIR=${HOME_DIR:-/tmp/kf-same-code}-$r bash "$0" "$N" | tee /dev/stderr | grep '^exit 1:')
    set -- $line
    bad=$((bad + $3)) tot=$((tot + $5))
  done
  echo "all homes: exit 1: $bad of $tot"
  exit 0
fi
export KFLEET_HOME=${HOME_DIR:-/tmp/kf-same-code}
rm -rf "$KFLEET_HOME"
for i in $(seq 1 "$N"); do
  "$K" run "$ROOT/examples/problems/rmsnorm-cpu/sweep.yaml" ${RUN_ARGS:-} >/dev/null 2>&1 || echo "run $i exit $?"
done
bad=0 tot=0
for a in $(seq 1 "$N"); do
  for b in $(seq $((a + 1)) "$N"); do
    tot=$((tot + 1))
    if ! out=$("$K" compare "$a" "$b" --threshold 20 2>&1); then
      bad=$((bad + 1))
      echo "== $a -> $b exit 1"
      echo "$out" | grep -E "REGRESSION|broken" | head -4
    fi
  done
done
echo "exit 1: $bad of $tot"
for i in $(seq 1 "$N"); do
  "$K" report "$i" --format json | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(" ".join("%s/%s:%.1f" % (r["kernel"], r["params"].get("rows"), (r["profile"].get("median_s") or 0) * 1e6)
               for r in d["rows"]))'
done

#!/usr/bin/env bash
# bench/gpu/scaling.sh [ROUNDS] — issue 45: does a candidate cost more when
# the host's other GPUs work too? run.sh's problems part (PROBLEMS_N Triton
# candidates, the softmax example skipped) on one GPU of this host
# (CUDA_VISIBLE_DEVICES=0, one agent), then on all of them (one agent a
# GPU), ROUNDS times in turn, in one device call: the same machine, the
# same build. Each run's summary, then bench/gpu/cand_split.py's phase split
# a row (a node's own, on several GPUs) — the phase that grows with the
# fleet is the lever for 4 x H200. Everything in $OUT/scaling.tgz, the
# table in $OUT/scaling.txt.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
ROUNDS=${1:-1}
FINAL=${OUT:-/tmp/kf-scaling}
mkdir -p "$FINAL"
export PROBLEMS_N=${PROBLEMS_N:-100} PROBLEMS_EXAMPLE=0 PROBLEMS_LIMIT=${PROBLEMS_LIMIT:-200}
export SWEEP_LIMIT=${SWEEP_LIMIT:-200}
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
[ "$ngpu" -ge 2 ] || echo "scaling.sh: $ngpu GPU(s) here: the all-GPU run is the one-GPU run again" >&2
parts=/tmp/kf-scaling-parts
rm -rf "$parts" && mkdir -p "$parts"
tags=()
for r in $(seq 1 "$ROUNDS"); do
  for g in 1 all; do
    tag=g$g-r$r
    echo "=== $tag ($(date -u +%H:%M:%S))"
    if [ "$g" = 1 ]; then
      CUDA_VISIBLE_DEVICES=0 OUT=$parts KF_TAG=-$tag bash "$ROOT/bench/gpu/run.sh" problems \
        >"$parts/step-$tag.log" 2>&1
    else
      OUT=$parts KF_TAG=-$tag bash "$ROOT/bench/gpu/run.sh" problems >"$parts/step-$tag.log" 2>&1
    fi
    echo "=== $tag: exit $? ($(date -u +%H:%M:%S))"
    tags+=("$tag")
  done
done
{
  echo "# bench/gpu/scaling.sh: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sort | uniq -c | tr -s ' '), $(date -u '+%Y-%m-%d %H:%M UTC')"
  for tag in "${tags[@]}"; do
    w=/tmp/kf-bench-problems-$tag
    echo "== $tag"
    grep -h -E 'triton100' "$w"/summary-*.md 2>/dev/null | head -12
    [ -f "$w/triton100.json" ] && python3 "$ROOT/bench/gpu/cand_split.py" "$w/triton100.json" "$tag" 2>&1 | grep -v costly
  done
} >"$FINAL/scaling.txt" 2>&1
tar czf "$FINAL/scaling.tgz" -C "$parts" . 2>/dev/null
cat "$FINAL/scaling.txt"

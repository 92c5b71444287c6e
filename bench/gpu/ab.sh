#!/usr/bin/env bash
# bench/gpu/ab.sh BASE_BUNDLE TAG... — run.sh's problems part for a change
# and its base in one device call, in the order given: a TAG n* runs
# ./bundle (the change), b* runs BASE_BUNDLE (a directory under the
# repository, e.g. bundle-base). PROBLEMS_N Triton candidates (100), the
# softmax example skipped; CUDA_VISIBLE_DEVICES as the caller set it. Then,
# per run, the schedule, the cost and bench/gpu/cand_split.py's phase
# means; and the profiled medians of each (b, n) pair, n against b, with
# bench/gpu/vs_base.py. Logs and reports in $OUT/ab.tgz, the table in
# $OUT/ab.txt.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BASE=$1
shift
FINAL=${OUT:-/tmp/kf-ab}
mkdir -p "$FINAL"
export PROBLEMS_N=${PROBLEMS_N:-100} PROBLEMS_EXAMPLE=0 PROBLEMS_LIMIT=${PROBLEMS_LIMIT:-200}
export SWEEP_LIMIT=${SWEEP_LIMIT:-200}
parts=/tmp/kf-ab-parts
rm -rf "$parts" && mkdir -p "$parts"
for tag in "$@"; do
  bundle=
  case $tag in b*) bundle=$ROOT/$BASE ;; esac
  echo "=== $tag ($(date -u +%H:%M:%S))"
  OUT=$parts KF_TAG=-$tag KF_BUNDLE=$bundle bash "$ROOT/bench/gpu/run.sh" problems \
    >"$parts/step-$tag.log" 2>&1
  echo "=== $tag: exit $? ($(date -u +%H:%M:%S))"
done
{
  echo "# bench/gpu/ab.sh $BASE $*: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sort | uniq -c | tr -s ' '), GPUs ${CUDA_VISIBLE_DEVICES:-all}, $(date -u '+%Y-%m-%d %H:%M UTC')"
  for tag in "$@"; do
    w=/tmp/kf-bench-problems-$tag
    echo "== $tag"
    grep -h -E '^triton100 (schedule|cost|verdicts)' "$w/times.txt" 2>/dev/null | sort -u
    [ -f "$w/triton100.json" ] && python3 "$ROOT/bench/gpu/cand_split.py" "$w/triton100.json" "$tag" 2>&1 | grep -v costly
  done
  # (b, n) pairs in the order run: each n with the b before or after it.
  prev=
  for tag in "$@"; do
    if [ -n "$prev" ] && [ "${prev:0:1}" != "${tag:0:1}" ]; then
      b=$prev n=$tag
      [ "${tag:0:1}" = b ] && b=$tag n=$prev
      echo "== medians, $n against $b"
      python3 "$ROOT/bench/gpu/vs_base.py" "/tmp/kf-bench-problems-$b/triton100.json" \
        "/tmp/kf-bench-problems-$n/triton100.json" 2>&1 | tail -4
      prev=
    else
      prev=$tag
    fi
  done
} >"$FINAL/ab.txt" 2>&1
tar czf "$FINAL/ab.tgz" -C "$parts" . 2>/dev/null
cat "$FINAL/ab.txt"

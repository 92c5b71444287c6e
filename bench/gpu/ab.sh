#!/usr/bin/env bash
# bench/gpu/ab.sh BASE_BUNDLE TAG... — one run.sh part for a change and its
# base in one device call, in the order given: a TAG n* runs ./bundle (the
# change), b* runs BASE_BUNDLE (a directory under the repository, e.g.
# bundle-base), s* runs AB_OTHER (a third, e.g. a part of the change:
# bundle-spare). AB_PART: `problems` (the default: PROBLEMS_N generated
# Triton candidates, 100, the softmax example skipped) or `fleet1`
# (examples/gpu.yaml on GPU 0); CUDA_VISIBLE_DEVICES as the caller set it.
# Then, per run, the schedule and the cost, with bench/gpu/cand_split.py's
# phase means (problems) or the rows' verdicts (fleet1); and the profiled
# medians of each (b, n) pair, n against b, with bench/gpu/vs_base.py. Logs
# and reports in $OUT/ab.tgz, the table in $OUT/ab.txt.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BASE=$1
shift
PART=${AB_PART:-problems}
case $PART in
problems) REP=triton100 ;;
fleet1) REP=fleet1 ;;
*) echo "ab.sh: AB_PART is '$PART'; it takes problems or fleet1" >&2; exit 2 ;;
esac
FINAL=${OUT:-/tmp/kf-ab}
mkdir -p "$FINAL"
export PROBLEMS_N=${PROBLEMS_N:-100} PROBLEMS_EXAMPLE=0 PROBLEMS_LIMIT=${PROBLEMS_LIMIT:-200}
export SWEEP_LIMIT=${SWEEP_LIMIT:-200}
parts=/tmp/kf-ab-parts
rm -rf "$parts" && mkdir -p "$parts"
for tag in "$@"; do
  bundle=
  case $tag in
  b*) bundle=$ROOT/$BASE ;;
  s*) bundle=$ROOT/${AB_OTHER:?ab.sh: a tag s* needs AB_OTHER, a bundle directory} ;;
  esac
  echo "=== $tag ($(date -u +%H:%M:%S))"
  OUT=$parts KF_TAG=-$tag KF_BUNDLE=$bundle bash "$ROOT/bench/gpu/run.sh" "$PART" \
    >"$parts/step-$tag.log" 2>&1
  echo "=== $tag: exit $? ($(date -u +%H:%M:%S))"
done
{
  echo "# bench/gpu/ab.sh $BASE $* (AB_PART=$PART): $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sort | uniq -c | tr -s ' '), GPUs ${CUDA_VISIBLE_DEVICES:-all}, $(date -u '+%Y-%m-%d %H:%M UTC')"
  for tag in "$@"; do
    w=/tmp/kf-bench-$PART-$tag
    echo "== $tag"
    grep -h -E "^$REP (schedule|cost|verdicts)" "$w/times.txt" 2>/dev/null | sort -u
    [ -f "$w/$REP.json" ] || continue
    if [ "$PART" = problems ]; then
      python3 "$ROOT/bench/gpu/cand_split.py" "$w/$REP.json" "$tag" 2>&1 | grep -v costly
    else
      python3 - "$w/$REP.json" <<'PY'
import collections, json, sys
rows = json.load(open(sys.argv[1]))["rows"]
verdicts = collections.Counter(r.get("verdict") for r in rows)
imprecise = sum(1 for r in rows if "imprecise" in (r.get("flags") or []))
print("rows %d, verdicts %s, imprecise %d" % (len(rows), dict(verdicts), imprecise))
PY
    fi
  done
  # (b, n) pairs in the order run: each n with the b before or after it.
  prev=
  for tag in "$@"; do
    if [ -n "$prev" ] && [ "${prev:0:1}" != "${tag:0:1}" ]; then
      b=$prev n=$tag
      [ "${tag:0:1}" = b ] && b=$tag n=$prev
      echo "== medians, $n against $b"
      python3 "$ROOT/bench/gpu/vs_base.py" "/tmp/kf-bench-$PART-$b/$REP.json" \
        "/tmp/kf-bench-$PART-$n/$REP.json" 2>&1 | tail -4
      prev=
    else
      prev=$tag
    fi
  done
} >"$FINAL/ab.txt" 2>&1
tar czf "$FINAL/ab.tgz" -C "$parts" . 2>/dev/null
cat "$FINAL/ab.txt"

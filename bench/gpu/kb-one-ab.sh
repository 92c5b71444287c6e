#!/bin/bash
# bench/gpu/kb-one-ab.sh LEVEL_DIR NUM TAG... — one KernelBench problem (NUM, e.g. 38 for
# 38_L1Norm_) judged by kernelbench-level.sh once per TAG, in order: b* with the bundle in
# bundle-base/, n* with bundle/ (a change and its base in one device call). Prints each
# run's validation and profile time and compare phase, the profiled median and the verdict,
# and the level script's phase line; reports in $OUT/kb-TAG.json. Each run's home (its
# references: 24 GB for 38_L1Norm_'s three seeds) is removed after it.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
LEVEL=$1 NUM=$2
shift 2
OUT=${OUT:-/tmp/kb-one-ab}
mkdir -p "$OUT"
for tag in "$@"; do
  b=bundle
  case $tag in b*) b=bundle-base ;; esac
  KF_BIN=$ROOT/$b OUT=/tmp/kb-$tag timeout 300 bash "$ROOT/bench/gpu/kernelbench-level.sh" \
    "$LEVEL" "$NUM" "$NUM" >"$OUT/kb-$tag.txt" 2>&1
  rep=$(ls /tmp/kb-$tag/reports/*.json 2>/dev/null | head -1)
  [ -n "$rep" ] && cp "$rep" "$OUT/kb-$tag.json" && python3 - "$rep" "$tag" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["rows"][0]
v, p = r["validation"], r["profile"]
print(sys.argv[2], "validation %.2f s compare %.2f | profile %.2f s compare %.2f | median %.1f us %s"
      % (v["elapsed_s"], v["phases_s"].get("compare", 0), p["elapsed_s"],
         p["phases_s"].get("compare", 0), (p.get("median_s") or 0) * 1e6, r.get("verdict", "")))
PY
  grep -E "GPU task time|slot time phases|skipped" "$OUT/kb-$tag.txt" | sed "s/^/$tag /"
  rm -rf "/tmp/kb-$tag"
done

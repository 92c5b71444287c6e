#!/usr/bin/env bash
# bench/gpu/session.sh STEP... — several bench/gpu/run.sh parts in one
# device call, their reports packed into ONE archive (the device tool
# returns at most 8 files) and their summaries printed last, in order.
#
#   STEP is PART or PART@TAG@BUNDLE: run.sh PART with KF_TAG=TAG (its own
#   home and work dir) and KF_BUNDLE=BUNDLE (a directory under the
#   repository, e.g. bundle-base: the baseline's build in the same device
#   session). Example:
#     bench/gpu/session.sh fleet1@new fleet1@base@bundle-base targets3
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
FINAL=${OUT:-/tmp/kf-session}
export OUT=/tmp/kf-session-parts
mkdir -p "$OUT" "$FINAL"
for step in "$@"; do
  IFS=@ read -r part tag bundle <<<"$step"
  echo "=== session step $step ($(date -u +%H:%M:%S))"
  KF_TAG=${tag:+-$tag} KF_BUNDLE=${bundle:+$ROOT/$bundle} \
    bash "$ROOT/bench/gpu/run.sh" "$part" >"$OUT/step-$part${tag:+-$tag}.log" 2>&1
  echo "=== $step: exit $? ($(date -u +%H:%M:%S))"
  tail -5 "$OUT/step-$part${tag:+-$tag}.log"
done
tar czf "$FINAL/session.tgz" -C "$OUT" . 2>/dev/null
for f in "$OUT"/summary-*.md; do
  [ -e "$f" ] || continue
  echo "=== $(basename "$f")"
  cat "$f"
done | tee "$FINAL/session-summary.md"

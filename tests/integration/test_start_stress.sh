#!/usr/bin/env bash
# Back-to-back starts on fresh homes never hang (issue 11): 12 `kfleet run`
# and 12 serve+agent starts, two at a time, each bounded; bench/stress/
# starts.sh does a few hundred on a GPU machine (docs/reliability.md).
source "$(dirname "$0")/lib.sh"
"$KF_SRC/bench/stress/starts.sh" -b "$KF_BIN" -n 12 -s 12 -j 2 >"$T/starts.out" 2>&1 ||
  fail "a start failed or hung: $(cat "$T/starts.out")"
grep -E '^starts:' "$T/starts.out"
pass "24 starts on fresh homes, none hung"

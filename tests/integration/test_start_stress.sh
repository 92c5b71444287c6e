#!/usr/bin/env bash
# Back-to-back starts on fresh homes never hang (issue 11): 12 `kfleet run`
# and 12 serve+agent starts, two at a time, each bounded; bench/stress/
# starts.sh does a few hundred on a GPU machine (docs/reliability.md).
source "$(dirname "$0")/lib.sh"
"$KF_SRC/bench/stress/starts.sh" -b "$KF_BIN" -n 12 -s 12 -j 2 >"$T/starts.out" 2>&1 ||
  fail "a start failed or hung: $(cat "$T/starts.out")"
grep -E '^starts:' "$T/starts.out"
pass "24 starts on fresh homes, none hung"

# The first-run hang on the H100 had this cause: its home, /tmp/kfh-h100,
# made the coordinator's .pub path exactly 40 characters, which the agents
# took for the key itself. A home of that length starts like any other.
H13=$(mktemp -d /tmp/kfXXXXXX)
[ ${#H13} -eq 13 ] || fail "mktemp gave a home of ${#H13} characters, not 13"
if ! timeout 120 "$KFLEET" --home "$H13" run "$KF_SRC/tests/data/sweeps/tiny.yaml" \
  --stall-timeout 30s >"$T/h13.out" 2>"$T/h13.err"; then
  rm -rf "$H13"
  fail "kfleet run with a 13-character home: $(tail -3 "$T/h13.err")"
fi
rm -rf "$H13"
pass "a home whose coordinator.pub path is 40 characters: the run completes"

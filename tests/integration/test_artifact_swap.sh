#!/usr/bin/env bash
# What runs is what the record says (issue 31, item 2): a sweep builds and
# validates `triad`; then its cached .so is swapped for another kernel's
# (one that crashes), as a kernel with write access to the cache once did.
# Run again, the same sweep has no build task for triad (the coordinator
# recorded the agent's build), so only the load-time check stands between
# the planted bytes and the runner: the runner finds that the .so no
# longer hashes to the build's record, removes it and runs nothing; the
# coordinator has the agent build triad again, and the sweep validates with
# the rebuilt artifact. The planted bytes never ran (they crash), and the
# agent's log names the mismatch.
source "$(dirname "$0")/lib.sh"

mkdir -p "$T/k"
cp "$KF_SRC/kernels/host/triad.c" "$T/k/triad.c"
cp "$KF_SRC/tests/kernels/crash.c" "$T/k/planted.c"
printf 'name: swap\nkernels:\n  - path: %s\nparams: {n: [1K]}\ntasks: [validate]\nattempts: 3\n' \
  "$T/k/triad.c" >"$T/triad.yaml"
printf 'name: planted\nkernels:\n  - path: %s\ntasks: [build]\n' "$T/k/planted.c" >"$T/planted.yaml"
WD="$KFLEET_HOME/state/agents/run-0"

"$KFLEET" run "$T/triad.yaml" --agents 1 >"$T/run1.out" 2>"$T/run1.log" ||
  fail "the first sweep failed: $(tail -3 "$T/run1.log")"
TRIAD=$(ls "$WD"/cache/*.so)
[ "$(echo "$TRIAD" | wc -l)" -eq 1 ] || fail "expected one cached .so, got: $TRIAD"
honest=$(sha256sum <"$TRIAD")
"$KFLEET" run "$T/planted.yaml" --agents 1 >"$T/run2.out" 2>"$T/run2.log" ||
  fail "building the planted kernel failed: $(tail -3 "$T/run2.log")"
PLANTED=$(ls "$WD"/cache/*.so | grep -v -- "$TRIAD")
cp "$PLANTED" "$TRIAD"
[ "$(sha256sum <"$TRIAD")" != "$honest" ] || fail "the swap did not change the .so"
pass "triad's cached .so swapped for the crashing kernel's"

rc=0
"$KFLEET" run "$T/triad.yaml" --agents 1 --format json -o "$T/r.json" >"$T/run3.out" \
  2>"$T/run3.log" || rc=$?
[ $rc -eq 0 ] || fail "after the swap the sweep exited $rc (the planted bytes ran?): $(grep -o '"error": "[^"]*' "$T/r.json" | head -3)"
python3 - "$T/r.json" <<'PY' || fail "triad's validation after the swap is not right"
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
assert len(rows) == 1 and rows[0]["kernel"] == "triad", rows
v = rows[0]["validation"]
assert v["state"] == "succeeded", v
PY
grep -q 'runner.artifact_stale.*changed since it was built' "$KFLEET_HOME/run/agent-0.log" ||
  fail "the agent did not log the mismatch: $(grep -i artifact "$KFLEET_HOME/run/agent-0.log" | head -3)"
grep -q 'task.artifact_stale' "$KFLEET_HOME/run/coordinator.log" ||
  fail "the coordinator did not log the stale artifact"
[ "$(sha256sum <"$TRIAD")" != "$(sha256sum <"$PLANTED")" ] || fail "the planted bytes are still in triad's place"
pass "the swapped .so was found at load ($(grep -o 'runner.artifact_stale.*' "$KFLEET_HOME/run/agent-0.log" | head -1 | cut -c1-220)), removed, rebuilt and validated; the planted bytes never ran"

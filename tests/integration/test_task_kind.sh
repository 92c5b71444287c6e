#!/usr/bin/env bash
# A task kind is one row of the table plus its runner handler (issue 34):
# the test tree's `echo` kind (tests/kinds/), built into BUILD/testkind's
# own kfleet and kfleet-agent, runs through submit, the scheduler, a real
# agent and its runner, the store and the report, with no other file of
# kfleet knowing it. The shipped kfleet, without the row, refuses it.
source "$(dirname "$0")/lib.sh"

TK="$KF_BIN/testkind"
[ -x "$TK/kfleet" ] && [ -x "$TK/kfleet-agent" ] || fail "no $TK/kfleet or kfleet-agent: build the tests"
export KF_KERNELS_DIR="$KF_SRC/kernels"
cat >"$T/echo.yaml" <<'YAML'
name: echo
kernels:
  - name: triad
    params:
      n: [256K]
  - name: matmul
    params:
      n: [128]
      block: [16]
tasks: [echo]
attempts: 1
YAML

# The shipped kfleet has no such row: the sweep parser names the kinds it knows.
if "$KFLEET" run "$T/echo.yaml" >"$T/plain.out" 2>"$T/plain.log"; then
    fail "the shipped kfleet ran a sweep of tasks: [echo]"
fi
grep -q "unknown task 'echo'; valid tasks are build, validate, profile" "$T/plain.log" ||
    fail "the shipped kfleet's refusal does not name the known kinds: $(head -c 300 "$T/plain.log")"
pass "the shipped kfleet refuses tasks: [echo]"

# The test build's kfleet runs it: one echo task per kernel, each failed by
# the runner's echo handler with what it was handed (exit 1: a task failed).
rc=0
"$TK/kfleet" run "$T/echo.yaml" --agents 1 --format json -o "$T/report.json" \
    >"$T/run.out" 2>"$T/run.log" || rc=$?
[ "$rc" = 1 ] || fail "kfleet run of the echo sweep exited $rc, not 1 (its tasks fail by design)"
python3 - "$T/report.json" <<'PY' || fail "the report does not show the echo tasks as their handler ended them"
import json, sys
d = json.load(open(sys.argv[1]))
f = sorted(d["failures"], key=lambda x: x["kernel"])
assert [x["kind"] for x in f] == ["echo", "echo"], f
for x, k in zip(f, ["matmul", "triad"]):
    assert x["kernel"] == k, x
    assert "echo from the runner: kernel %s, " % k in x["error"], x
print("ok - report: %s" % "; ".join("%s %s: %s" % (x["kind"], x["kernel"], x["error"][:60]) for x in f))
PY
"$TK/kfleet" verify >"$T/verify.out" 2>&1 || fail "verify of the echo sweep's store: $(tail -3 "$T/verify.out")"
pass "the store holds the echo sweep, sealed"

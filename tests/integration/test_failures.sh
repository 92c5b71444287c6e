#!/usr/bin/env bash
# Kernels that do not compile, crash (SIGSEGV, abort), hang, or compute the
# wrong answer: each task fails saying which, the sweep goes on, the agent
# keeps working.
source "$(dirname "$0")/lib.sh"

start_serve
start_agent f1
wait_agents 1
set +e
"$KFLEET" submit "$KF_SRC/tests/data/sweeps/failures.yaml" --follow >"$T/submit.out" 2>"$T/follow.log"
rc=$?
set -e
[ $rc -eq 1 ] || fail "submit --follow of failing kernels should exit 1, got $rc"
id=$(grep -o 'submitted sweep [0-9]*' "$T/submit.out" | awk '{print $3}')
"$KFLEET" report "$id" --format json >"$T/r.json"
"$KFLEET" report "$id" >"$T/r.txt"
grep -q "compile failed" "$T/r.json" || fail "no compile error in report"
grep -q "signal 11" "$T/r.json" || fail "segfault not named"
grep -q "signal 6" "$T/r.json" || fail "abort not named"
grep -q "timed out" "$T/r.json" || fail "hang not timed out"
grep -qi "tolerance" "$T/r.json" || fail "wrong answer not explained"
pass "each failure named"
"$KFLEET" verify "$id" >/dev/null || fail "verify"
# The agent is still alive and its triad (listed last) succeeded.
kill -0 "$AGENT_PID" || fail "agent died"
"$KFLEET" verify "$id" --format json >"$T/v.json" || fail "verify json"
grep -q '"succeeded": [1-9]' "$T/v.json" || fail "nothing succeeded after the failures"
pass "agent survived and kept working"

#!/usr/bin/env bash
# `kfleet run` on the quickstart: embedded coordinator, local CPU agents,
# progress, report; and nothing left running afterwards.
source "$(dirname "$0")/lib.sh"

"$KFLEET" run "$KF_SRC/examples/quickstart.yaml" >"$T/run.out" 2>"$T/run.log" || fail "kfleet run exited $?"
grep -q "triad" "$T/run.out" || fail "report lacks triad"
grep -q "matmul" "$T/run.out" || fail "report lacks matmul"
grep -q "sweep 1:" "$T/run.log" || fail "no progress lines"
pass "quickstart ran: $(grep -c . "$T/run.out") report lines"
if pgrep -f "kfleet-agent --coordinator ipc://$KFLEET_HOME" >/dev/null; then fail "agents left running"; fi
[ -e "$KFLEET_HOME/run/control.sock" ] && fail "control socket left behind"
pass "nothing left running"
"$KFLEET" verify >/dev/null || fail "verify after run"
"$KFLEET" report --format json >"$T/report.json" || fail "report after run"
grep -q '"schema": "kfleet.report/2"' "$T/report.json" || fail "report after run lacks the schema"
pass "store readable after run"

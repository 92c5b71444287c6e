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

# Where the slot time went: the runners' phases, the time outside them and
# the idle time account for the makespan x slots (what is left is a runner's
# clock against the coordinator's), and the text report prints it.
python3 - "$T/report.json" <<'PY' || fail "the report's slot time does not add up"
import json, sys
st = json.load(open(sys.argv[1]))["schedule"]["slot_time"]
ph = st["phases_s"]
for name in ("load", "setup", "run", "reference", "compare", "sampling", "samples", "build"):
    assert ph.get(name, 0) > 0, (name, ph)
parts = sum(ph.values()) + st["outside_runners_s"] + st["idle_s"]
assert abs(parts - st["total_s"]) <= 0.05 * st["total_s"], (parts, st)
print("ok - slot time %.2f s: %s" % (st["total_s"], ", ".join("%s %.2f" % kv for kv in ph.items())))
PY
grep -q "slot time: .* sampling .* outside runners .* idle " "$T/run.out" || fail "no slot time line in the text report"
pass "slot time broken down: $(grep -o 'slot time: .*' "$T/run.out" | cut -c1-150)"

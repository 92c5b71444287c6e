#!/usr/bin/env bash
# Which failures are tried again (docs/sweep-format.md, `attempts:`):
# infrastructure — the agent lost, the runner killed from outside (a SIGKILL
# kfleet did not send, with no out-of-memory kill counted), a runner that
# cannot start — while attempts remain; never the kernel's own failure (a crash, a
# wrong result, its time limit), which ends the task at once. The report
# names why each attempt ended.
source "$(dirname "$0")/lib.sh"

export KF_TEST_KILL_ONCE="$T/killed-once.mark"
start_serve
start_agent r1
wait_agents 1
cat >"$T/retries.yaml" <<YAML
name: retries
kernels:
  - path: $KF_SRC/tests/kernels/killed_once.c
  - path: $KF_SRC/tests/kernels/crash.c
  - path: $KF_SRC/tests/kernels/wrong.c
  - path: $KF_SRC/tests/kernels/hang.c
tasks: [validate]
attempts: 3
time_limit: 2s
measure: {seeds: 1}
YAML
set +e
"$KFLEET" submit "$T/retries.yaml" --follow >"$T/submit.out" 2>"$T/follow.log"
set -e
id=$(grep -o 'submitted sweep [0-9]*' "$T/submit.out" | awk '{print $3}')
"$KFLEET" report "$id" --format json >"$T/report.json"
python3 - "$T/report.json" <<'PY' || fail "retries: see above"
import json, sys
rep = json.load(open(sys.argv[1]))
rows = {r["kernel"]: r for r in rep["rows"]}
def attempts(name):
    r = rows[name]
    return r.get("attempts") or []
bad = []
k = rows["killed_once"]
if k["validation"]["passed"] is not True:
    bad.append(f"killed_once: {k['validation']}")
ka = attempts("killed_once")
if len(ka) != 2 or ka[0]["state"] != "failed" or "from outside kfleet" not in ka[0]["note"] or ka[1]["state"] != "succeeded":
    bad.append(f"killed_once attempts: {ka}")
for name in ("crash", "wrong", "hang"):
    n = rows[name]["attempt_count"]
    if n != 1:
        bad.append(f"{name}: {n} attempts, want 1 (a kernel's own failure is final): {attempts(name)}")
if bad:
    print("\n".join(bad), file=sys.stderr)
    sys.exit(1)
print("killed_once:", " then ".join(f"{a['state']} ({a['note'][:60]})" for a in ka))
PY
pass "SIGKILL from outside: tried again and passed; crash, wrong result and time limit: one attempt each"
grep -q 'from outside kfleet' "$T/report.txt" 2>/dev/null || "$KFLEET" report "$id" >"$T/report.txt"
grep -q 'attempt 1 .*from outside kfleet' "$T/report.txt" || fail "the text report does not say why attempt 1 ended: $(grep -A3 killed_once "$T/report.txt" | head -5)"
pass "the report names why each attempt ended"

# attempts: 1 — the same kill is not tried again, and the reason says so.
# The mark lives in the kernel's cache, which is its runner's own until the
# runner ends (agent/kcache.h: then kept): the idle runner leaves first.
for _ in $(seq 1 100); do
  pgrep -f -- "--runner --workdir $T/agents/r1 " >/dev/null || break
  sleep 0.2
done
rm -f "$KF_TEST_KILL_ONCE" "$T"/agents/r1/kcache/*/killed-once.mark
sed -i 's/attempts: 3/attempts: 1/' "$T/retries.yaml"
set +e
"$KFLEET" submit "$T/retries.yaml" --follow >"$T/submit2.out" 2>&1
set -e
id2=$(grep -o 'submitted sweep [0-9]*' "$T/submit2.out" | awk '{print $3}')
"$KFLEET" report "$id2" >"$T/report2.txt"
grep -q 'gave up after 1 attempts' "$T/report2.txt" || fail "attempts: 1 was tried again: $(grep killed_once "$T/report2.txt")"
pass "attempts: 1 — given up after the first kill, saying why"

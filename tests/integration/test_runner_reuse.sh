#!/usr/bin/env bash
# Serving runners: a kernel's validate and profile tasks run one after
# another in one runner process (the kernel loaded once), a failure ends
# that runner and the next task gets a fresh one, and no runner ever serves
# two kernels. The agent's debug log names the runner (pid) each task ran
# in; the report's provenance says which task of its runner each was.
source "$(dirname "$0")/lib.sh"

start_serve
# --keep-tmp: the runners' logs, shown if the check fails.
# --price: this node's price per GPU-hour (issue 32), in the report's cost.
start_agent s1 --cpu-slots 1 --keep-tmp --price 1.75
wait_agents 1
set +e
"$KFLEET" submit "$KF_SRC/tests/data/sweeps/runner_reuse.yaml" --follow >"$T/submit.out" 2>"$T/follow.log"
rc=$?
set -e
[ $rc -eq 1 ] || fail "the sweep has failing configurations: submit --follow should exit 1, got $rc"
id=$(grep -o 'submitted sweep [0-9]*' "$T/submit.out" | awk '{print $3}')
"$KFLEET" report "$id" --format json >"$T/r.json"
"$KFLEET" verify "$id" >/dev/null || fail "verify"

python3 - "$T/r.json" "$T/agent-s1.log" <<'PY' || { cat "$T"/agents/s1/tmp/*/runner.log | grep -v "^$" | head -60; fail "serving runners misbehaved (above)"; }
import json, re, sys
rep = json.load(open(sys.argv[1]))
rows = rep["sweeps"][0]["rows"] if "sweeps" in rep else rep["rows"]
bad = []
# The tasks in the order the agent handed them to runners: (task, pid).
order, kernel_of, reuses = [], {}, 0
for line in open(sys.argv[2]):
    m = re.search(r"runner\.start task=(0x[0-9a-f]+) .*kernel=(\w+) pid=(\d+) serve=1 runner_task=(\d+)", line)
    if not m:
        continue  # builds run in runners of their own (serve=0)
    task, kernel, pid, nth = m.group(1), m.group(2), int(m.group(3)), int(m.group(4))
    order.append((task, pid))
    reuses += nth > 1
    if kernel_of.setdefault(pid, kernel) != kernel:
        bad.append(f"runner {pid} served {kernel_of[pid]} and then {kernel}")
state = {}
for r in rows:
    for part in ("validation", "profile"):
        t = r.get(part)
        if isinstance(t, dict) and t.get("task_id"):
            state[t["task_id"]] = t["state"]
# A runner whose task failed takes no later task, and the task of that
# kernel after it starts a fresh runner.
followed = 0
for i, (task, pid) in enumerate(order):
    if state.get(task, "succeeded") != "succeeded":
        later = [t for t, p in order[i + 1:] if p == pid]
        if later:
            bad.append(f"runner {pid} took {later} after its task {task} {state[task]}")
        followed += any(kernel_of[p] == kernel_of[pid] for _, p in order[i + 1:])
if followed == 0:
    bad.append("no failed task was followed by another of its kernel: the check above proves nothing")
# The three triad configurations, validate and profile, all in one runner:
# the report says tasks 1 to 6 of it.
triad = [r for r in rows if r["kernel"] == "triad"]
seen = sorted(r["provenance"][k] for r in triad for k in ("validate_runner_task", "profile_runner_task"))
if seen != [1, 2, 3, 4, 5, 6]:
    bad.append(f"triad's six tasks ran as runner tasks {seen}, not 1-6 of one runner")
if len({p for t, p in order if kernel_of[p] == "triad"}) != 1:
    bad.append("triad's tasks did not share one runner")
for r in rows:
    v = r["validation"]
    fail = r["params"].get("fail")
    want = "succeeded" if r["kernel"] == "triad" or fail == 0 else "failed"
    if v["state"] != want:
        bad.append(f"{r['kernel']} {r['params']}: validation {v['state']}, want {want}")
    if want == "succeeded" and not (r.get("profile") or {}).get("median_s"):
        bad.append(f"{r['kernel']} {r['params']}: no profile median")
    if fail == 1 and "signal 11" not in (v.get("error") or ""):
        bad.append(f"fails_on fail=1: crash not named: {v.get('error')}")
    if fail == 2 and "tolerance" not in (v.get("error") or ""):
        bad.append(f"fails_on fail=2: wrong answer not named: {v.get('error')}")
for b in bad:
    print("FAIL:", b)
print(f"{len(order)} tasks in {len(kernel_of)} runners")
sys.exit(1 if bad else 0)
PY
pass "a kernel's tasks share a runner; a failure ends it; no runner serves two kernels"

# The agent's --price reached the report: its node is priced at 1.75 per
# slot-hour and the total is that price times the slot-hours.
python3 - "$T/r.json" <<'PY' || fail "the agent's --price is not in the report's cost"
import json, sys
c = json.load(open(sys.argv[1]))["cost"]
n = c["nodes"][0]
assert n["node"] == "s1" and n["price_per_slot_hour"] == 1.75, c
assert abs(c["cost"] - 1.75 * c["slot_hours"]) < 1e-12, c
print("ok - s1 at 1.75 per slot-hour: %d evaluations, cost %.3g" % (c["evaluations"], c["cost"]))
PY
pass "agent --price priced its node"

#!/usr/bin/env bash
# `kfleet run` on the quickstart: embedded coordinator, local CPU agents,
# progress, report; and nothing left running afterwards.
source "$(dirname "$0")/lib.sh"

"$KFLEET" run "$KF_SRC/examples/quickstart.yaml" --price 2.5 >"$T/run.out" 2>"$T/run.log" || fail "kfleet run exited $?"
grep -q "triad" "$T/run.out" || fail "report lacks triad"
grep -q "matmul" "$T/run.out" || fail "report lacks matmul"
grep -q "sweep 1:" "$T/run.log" || fail "no progress lines"
pass "quickstart ran: $(grep -c . "$T/run.out") report lines"
if pgrep -f "kfleet-agent --coordinator ipc://$KFLEET_HOME" >/dev/null; then fail "agents left running"; fi
[ -e "$KFLEET_HOME/run/control.sock" ] && fail "control socket left behind"
pass "nothing left running"
# The quickstart has no Python problem: its agents start no warm runner
# with themselves (on a GPU node with torch they would, to import it while
# the agent probes torch; here the import would only slow that probe).
grep -q 'warm.later ' "$KFLEET_HOME/run/agent-0.log" ||
  fail "kfleet run of a sweep without a Python problem did not say KF_WARM=later: $(grep 'warm\.' "$KFLEET_HOME/run/agent-0.log")"
pass "no warm runner at the agents' start for a sweep without a Python problem"
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
for name in ("load", "setup", "run", "reference", "compare", "sampling", "samples", "build", "start"):
    assert ph.get(name, 0) > 0, (name, ph)
parts = sum(ph.values()) + st["outside_runners_s"] + st["idle_s"]
assert abs(parts - st["total_s"]) <= 0.05 * st["total_s"], (parts, st)
print("ok - slot time %.2f s: %s" % (st["total_s"], ", ".join("%s %.2f" % kv for kv in ph.items())))
# A runner's start (the agent starting it, to its task's first step) is
# its first task's phase, before that task's own elapsed time; a serving
# runner's later tasks of its kernel have none. Each kernel's tasks had a
# runner started for them.
started = {}
for r in json.load(open(sys.argv[1]))["rows"]:
    for t in (r["validation"], r["profile"]):
        s = t["phases_s"].get("start", 0)
        assert 0 <= s < 60, ("start", s)
        assert sum(t["phases_s"].values()) - s <= t["elapsed_s"] * 1.001 + 1e-6, t
        started[r["kernel"]] = started.get(r["kernel"], 0) + (s > 0)
assert started and all(started.values()), started
PY
grep -q "slot time: .* sampling .* outside runners .* idle " "$T/run.out" || fail "no slot time line in the text report"
pass "slot time broken down: $(grep -o 'slot time: .*' "$T/run.out" | cut -c1-150)"

# Issue 45: the slot time a row, what one kernel-configuration cost: each
# row's validate and profile runner time, their mean by phase, and the
# costliest row, against the rows' own tasks in the same report.
python3 - "$T/report.json" <<'PY' || fail "the report's slot time a row is wrong"
import json, sys
d = json.load(open(sys.argv[1]))
br = d["schedule"]["slot_time"]["by_row"]
per = {}
for r in d["rows"]:
    ts = [t for t in (r.get("validation"), r.get("profile")) if t and (t.get("elapsed_s") or 0) > 0]
    if ts:
        # a task's runner time: its own, and its runner's start before it
        per[(r["kernel_index"], r["config_index"])] = sum(t["elapsed_s"] + t["phases_s"].get("start", 0) for t in ts)
assert br["rows"] == len(per) == 9, (br["rows"], len(per))
assert abs(br["mean_s"] * br["rows"] - sum(per.values())) < 1e-6 * max(1, sum(per.values())), br
assert abs(sum(br["mean_phases_s"].values()) - br["mean_s"]) < 1e-6, br
assert any(k.startswith("profile samples") for k in br["mean_phases_s"]), br["mean_phases_s"]
assert any(k.startswith("validate run") for k in br["mean_phases_s"]), br["mean_phases_s"]
c = br["costliest"]
assert abs(c["seconds"] - max(per.values())) < 1e-9, (c, per)
assert abs(per[(c["kernel_index"], c["config_index"])] - c["seconds"]) < 1e-9, c
s = sorted(per.values())
assert abs(br["median_s"] - s[len(s) // 2]) < 1e-9, (br, s)
print("ok - a row: median %.3f s, mean %.3f s, costliest %s %.3f s" % (br["median_s"], br["mean_s"], c["kernel"], c["seconds"]))
PY
grep -q "slot time a row (9 rows that ran): median .* profile .*; costliest .* s: " "$T/run.out" ||
  fail "no slot time a row line in the text report"
pass "slot time a row: $(grep -o 'slot time a row.*' "$T/run.out" | cut -c1-160)"

# Issue 32: what the sweep cost, from `--price` (per slot-hour on CPU
# agents): every row an evaluation, the total the nodes' sum, per evaluation
# the total over the rows; every profile stopped on the median's precision
# under the named thermal protocol ("host": no GPU), and says the
# precision it reached.
python3 - "$T/report.json" <<'PY' || fail "the report's cost or precision is wrong"
import json, sys
d = json.load(open(sys.argv[1]))
c = d["cost"]
assert c["slots"] == "cpu" and c["evaluations"] == len(d["rows"]) == 9, c
# the total's price is cost over slot-hours: 2.5 to rounding
assert abs(c["price_per_slot_hour"] - 2.5) < 1e-9 and c["cost"] > 0, c
assert abs(c["cost"] - sum(n["cost"] for n in c["nodes"])) < 1e-12, c
assert abs(c["cost_per_evaluation"] * c["evaluations"] - c["cost"]) < 1e-12, c
assert abs(c["evaluations_per_slot_hour"] - c["evaluations"] / c["slot_hours"]) < 1e-6, c
assert d["thermal_protocol"] == "host", d["thermal_protocol"]
for r in d["rows"]:
    p = r["profile"]
    assert p["precision_target_pct"] == 0.5 and p["thermal"]["protocol"] == "host", p
    # The host's clock shows no tick (common/stats.h kf_stats_timer_tick): a
    # host profile converges on the precision alone.
    assert p["timer_tick_s"] is None, p
    assert p["converged"] == (p["precision_pct"] is not None and p["precision_pct"] <= 0.5), p
    assert p["imprecise"] == (not p["converged"]), p
print("ok - %d evaluations, %.0f per slot-hour, cost %.4g (%.3g each); samples per profile: %s"
      % (c["evaluations"], c["evaluations_per_slot_hour"], c["cost"], c["cost_per_evaluation"],
         [r["profile"]["samples"] for r in d["rows"]]))
PY
# Issue 32: each sample carries the input set its run used, and the median
# is over sets (the mean of the sets' medians), recomputed here from the
# samples the JSON carries.
python3 - "$T/report.json" <<'PY' || fail "the median over input sets is wrong"
import json, statistics, sys
d = json.load(open(sys.argv[1]))
for r in d["rows"]:
    p = r["profile"]
    k = p["median_over_sets"]
    assert k == p["input_sets"] and k >= 2, p
    t, s = p["sample_seconds"], p["sample_sets"]
    assert len(t) == len(s) == p["samples"] and sorted(set(s)) == list(range(k)), (len(t), len(s))
    want = sum(statistics.median([x for x, i in zip(t, s) if i == j]) for j in range(k)) / k
    assert abs(p["median_s"] - want) <= 1e-12 * want, (p["median_s"], want)
    lo, hi = p["median_ci95_s"]
    assert lo <= p["median_s"] <= hi, p
    # each task says where its checks ran (host kernels: on the host) and
    # where its runner's time went
    for t in (r["validation"], p):
        assert t["checks_on"].startswith("host: "), t["checks_on"]
        assert t["phases_s"].get("run", 0) + t["phases_s"].get("samples", 0) > 0, t["phases_s"]
print("ok - medians over %s input sets" % sorted({r["profile"]["median_over_sets"] for r in d["rows"]}))
PY
pass "median over input sets"
# min_span: a profile's samples span at least that much wall time before it
# may stop (on a GPU 300 ms by default; on a host none unless asked), and
# the report says the span.
for s in span nospan; do
  [ $s = span ] && ms=400ms || ms=0
  printf 'name: %s\nkernels:\n  - name: triad\n    params: {n: [64K]}\ntasks: [build, validate, profile]\nmeasure: {min_samples: 10, min_time: 1ms, precision: 50, min_span: %s}\n' \
    "$s" "$ms" >"$T/$s.yaml"
  KFLEET_HOME="$T/h-$s" "$KFLEET" run "$T/$s.yaml" --agents 1 >"$T/$s.out" 2>"$T/$s.log" ||
    fail "kfleet run $s.yaml exited $? ($(tail -3 "$T/$s.log"))"
  KFLEET_HOME="$T/h-$s" "$KFLEET" report --format json >"$T/$s.json" || fail "report of $s.yaml"
done
python3 - "$T/span.json" "$T/nospan.json" <<'PY' || fail "min_span not honoured"
import json, sys
(a,), (b,) = (json.load(open(f))["rows"] for f in sys.argv[1:])
sa, sb = a["profile"]["thermal"]["span_s"], b["profile"]["thermal"]["span_s"]
assert a["profile"]["converged"] and sa >= 0.4, sa
assert b["profile"]["converged"] and sb < 0.4, sb
print("ok - span %.3f s with min_span 400ms (%d samples), %.3f s with 0 (%d samples)"
      % (sa, a["profile"]["samples"], sb, b["profile"]["samples"]))
PY
grep -q "^  cost: 9 evaluations in .* CPU-slot-hours = .* per CPU-slot-hour; .* at 2.5 per CPU-slot-hour" "$T/run.out" || fail "no cost line in the text report"
grep -qF "thermal protocol: host (host: CPU kernels, back to back, the CPU clock not observed)" "$T/run.out" || fail "no thermal protocol in the text report"
pass "cost and protocol in the text report: $(grep -o 'cost: .*' "$T/run.out" | head -1)"

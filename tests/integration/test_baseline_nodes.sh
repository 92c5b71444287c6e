#!/usr/bin/env bash
# Speedups on every node (issue 41): with `kfleet run`'s two local agents a
# `nodes: any` sweep's candidates run on both, and the baseline is measured
# on each agent that runs a candidate of its configuration
# (coordinator/daemon/sched_baseline.c), so every passing candidate row has
# a speedup against the baseline on its own node, and the leaderboard ranks
# by those speedups. Before, a row whose candidate ran on the other agent
# had none: 2 of 6 rows of examples/problems/rmsnorm-cpu, 4 of 9 of the
# triad sweep below.
#   1. a problem sweep (rmsnorm-cpu's problem, 6 candidates, numpy_naive the
#      baseline) on two agents;
#   2. a sweep of plain kernels (triad as the baseline of three builds of
#      it) on two agents; then on one, and `kfleet compare` of the two:
#      the baseline's row on the second agent is no configuration missing.
source "$(dirname "$0")/lib.sh"

# Debian's interpreter, which has python3-numpy (as test_problems.sh).
export KF_PYTHON=/usr/bin/python3
need_numpy

# check REPORT BASELINE CANDIDATES: every row passed; every row has a
# speedup, against the baseline's row of its configuration on its own node
# (its baseline_median_s is that row's median); no node has the baseline
# twice; each configuration's leaderboard (rank) orders its rows by speedup.
check() {
  python3 - "$@" <<'PY'
import json, sys
path, base, want = sys.argv[1], sys.argv[2], int(sys.argv[3])
d = json.load(open(path))
rows = d["rows"]
key = lambda r: json.dumps(r["params"], sort_keys=True)
baselines = {}
for r in rows:
    assert r["verdict"] == "passed", (r["kernel"], r["node"], r["verdict"])
    if r["kernel"] == base:
        k = (key(r), r["node"])
        assert k not in baselines, ("the baseline twice on a node", k)
        baselines[k] = r["profile"]["median_s"]
cands = [r for r in rows if r["kernel"] != base]
assert len(cands) == want, (len(cands), want)
for r in rows:
    assert r["speedup"] is not None, ("no speedup", r["kernel"], r["params"], r["node"], r.get("no_speedup"))
    assert r["no_speedup"] is None, r["no_speedup"]
    assert r["baseline_median_s"] == baselines[(key(r), r["node"])], (r["kernel"], r["node"])
    assert r["rank"] is not None, (r["kernel"], r["node"])
groups = {}
for r in rows:
    groups.setdefault((key(r), r["device"]), []).append(r)
for g in groups.values():
    g.sort(key=lambda r: r["rank"])
    assert [r["rank"] for r in g] == list(range(1, len(g) + 1)), [r["rank"] for r in g]
    s = [r["speedup"] for r in g]
    assert s == sorted(s, reverse=True), ("rank and speedup disagree", [(r["kernel"], r["node"], r["rank"], r["speedup"]) for r in g])
nodes = sorted({r["node"] for r in rows})
print("rows %d, candidate rows %d, every one with a speedup; baseline rows %d on %s"
      % (len(rows), len(cands), len(baselines), ", ".join(nodes)))
PY
}

# 1. A problem sweep of 6 candidates on two agents.
P="$T/p"
mkdir -p "$P"
cp "$KF_SRC"/examples/problems/rmsnorm-cpu/{problem.py,numpy_naive.py,numpy_fused.py,cand_rmsnorm.c} "$P/"
for i in 1 2 3; do
  sed "s/^\"\"\"A candidate/\"\"\"Copy $i of a candidate/" "$P/numpy_fused.py" >"$P/copy$i.py"
done
cat >"$P/sweep.yaml" <<'YAML'
name: rmsnorm-nodes
problem:
  path: problem.py
  params: {rows: [64, 256], cols: [1024]}
  seeds: 2
candidates: [numpy_naive.py, numpy_fused.py, cand_rmsnorm.c, copy1.py, copy2.py, copy3.py]
baseline: numpy_naive
tasks: [build, validate, profile]
measure: {min_samples: 5, min_time: 20ms, max_noise: 50, timeout: 1s}
YAML
"$KFLEET" run "$P/sweep.yaml" --agents 2 --format json -o "$T/problem.json" >"$T/problem.out" \
  2>"$T/problem.log" || fail "the problem sweep exited $?: $(tail -5 "$T/problem.log")"
check "$T/problem.json" numpy_naive 10 >"$T/problem.check" 2>&1 ||
  fail "the problem sweep's rows: $(cat "$T/problem.check")"
pass "a problem sweep on two agents: $(cat "$T/problem.check")"

# 2. Plain kernels: triad the baseline of three builds of its own source.
cat >"$T/triads.yaml" <<YAML
name: triads
kernels:
  - triad
  - {name: triad_O1, path: $KF_SRC/kernels/host/triad.c, flags: [-O1]}
  - {name: triad_O2, path: $KF_SRC/kernels/host/triad.c, flags: [-O2]}
  - {name: triad_O3, path: $KF_SRC/kernels/host/triad.c, flags: [-O3]}
params: {n: [64K, 256K, 1M]}
baseline: triad
tasks: [build, validate, profile]
measure: {min_samples: 5, min_time: 20ms, max_noise: 50, timeout: 1s}
YAML
"$KFLEET" run "$T/triads.yaml" --agents 2 --format json -o "$T/two.json" >"$T/two.out" \
  2>"$T/two.log" || fail "the triad sweep on two agents exited $?: $(tail -5 "$T/two.log")"
check "$T/two.json" triad 9 >"$T/two.check" 2>&1 || fail "the triad sweep's rows: $(cat "$T/two.check")"
"$KFLEET" run "$T/triads.yaml" --agents 1 --format json -o "$T/one.json" >"$T/one.out" \
  2>"$T/one.log" || fail "the triad sweep on one agent exited $?: $(tail -5 "$T/one.log")"
check "$T/one.json" triad 9 >"$T/one.check" 2>&1 || fail "the triad sweep on one agent: $(cat "$T/one.check")"
ids=$(python3 -c 'import json,sys; print(*(json.load(open(f))["sweep"]["sweep_id"] for f in sys.argv[1:]))' \
  "$T/two.json" "$T/one.json")
set +e
# shellcheck disable=SC2086
"$KFLEET" compare $ids --format json >"$T/cmp.json" 2>"$T/cmp.err"
rc=$?
set -e
[ $rc -le 1 ] || fail "kfleet compare $ids exited $rc: $(cat "$T/cmp.err")"
python3 - "$T/cmp.json" <<'PY' || fail "kfleet compare: $(cat "$T/cmp.json")"
import json, sys
c = json.load(open(sys.argv[1]))
s = c["summary"]
# Timings may differ between the two runs; what must not appear is the
# baseline's second-agent row called missing (broken) or new.
assert s["broken"] == 0 and s["only_b"] == 0 and s["not_ended"] == 0, s
assert s["configurations"] == 12, s  # 4 kernels x 3 configurations, each once
PY
pass "plain kernels on two agents: $(cat "$T/two.check"); compare with a one-agent run: no configuration missing"

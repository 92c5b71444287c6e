#!/usr/bin/env bash
# A whole level in one sweep, and refusals that do not stop the rest
# (issue 42), on CPU numpy problems (tests/data/level):
#  1. a problem sweep with three bad candidates names all three (file:line:
#     column and reason, one error each), exits 2 and submits nothing;
#  2. the level (problems: a directory of three problems, candidates
#     matched by name) without --keep-going: the same three, across two
#     problems, nothing submitted;
#  3. with --keep-going: a sweep per problem that has candidates, the
#     three refused candidates failed rows saying why, every other
#     candidate judged and passing, the problem without candidates a line
#     per missed pattern, exit 1.
source "$(dirname "$0")/lib.sh"

export KF_PYTHON=/usr/bin/python3
need_numpy
L="$KF_SRC/tests/data/level"

# 1. One problem, three bad candidates among good ones.
cat >"$T/three.yaml" <<YAML
problem: {path: $L/problems/scale/problem.py, params: {n: [64]}}
candidates:
  - $L/cands/scale/add.py
  - $L/cands/scale/bad_tol.py
  - $L/cands/relu/bad_ref.py
  - $L/base/scale.py
  - $L/cands/scale/bad_norun.py
YAML
set +e
"$KFLEET" run "$T/three.yaml" >"$T/three.out" 2>"$T/three.log"
rc=$?
set -e
[ $rc -eq 2 ] || fail "three refused candidates should exit 2, got $rc"
grep -q "three.yaml:4:5: $L/cands/scale/bad_tol.py:4:1: candidate 'bad_tol' declares a tolerance (atol), refused" "$T/three.log" ||
  fail "bad_tol is not named with its place: $(cat "$T/three.log")"
grep -q "three.yaml:5:5: $L/cands/relu/bad_ref.py:9:5: candidate 'bad_ref' declares a reference (reference), refused" "$T/three.log" ||
  fail "bad_ref is not named with its place"
grep -q "three.yaml:7:5: $L/cands/scale/bad_norun.py: candidate 'bad_norun' defines no run, refused" "$T/three.log" ||
  fail "bad_norun is not named"
[ "$(grep -c 'refused' "$T/three.log")" -eq 4 ] ||
  fail "want one line per refused candidate and the count: $(cat "$T/three.log")"
grep -q "three.yaml: 3 candidates refused (each named above); nothing was submitted" "$T/three.log" ||
  fail "the count is not said"
[ ! -e "$KFLEET_HOME/run/coordinator.log" ] || fail "something ran"
pass "three refused candidates: all three named with file:line:column, exit 2, nothing run"

# 2. The level, refusals stopping it.
set +e
"$KFLEET" run "$L/level.yaml" >"$T/stop.out" 2>"$T/stop.log"
rc=$?
set -e
[ $rc -eq 2 ] || fail "the level with refused candidates should exit 2, got $rc"
for c in "'bad_ref' of problem 'relu'" "'bad_tol' of problem 'scale'" "'bad_norun' of problem 'scale'"; do
  grep -q "candidate $c" "$T/stop.log" || fail "candidate $c is not named: $(cat "$T/stop.log")"
done
grep -q "3 candidates refused" "$T/stop.log" || fail "the level's count is not said"
pass "the level: the three refusals of two problems named, nothing run"

# 3. --keep-going: the others judged, the refused ones failed rows.
set +e
"$KFLEET" run "$L/level.yaml" --keep-going >"$T/keep.out" 2>"$T/keep.log"
rc=$?
set -e
[ $rc -eq 1 ] || fail "the level with failed rows should exit 1, got $rc: $(tail -5 "$T/keep.log")"
grep -q "problems, 7 candidates" "$T/keep.log" || fail "the run's line does not count problems"
grep -q "level.yaml:10:5: problem 'tanh': no candidate at 'base/tanh.py' (no such file)" "$T/keep.log" ||
  fail "tanh's missing baseline is not said"
grep -q "problem 'tanh': no candidate at 'cands/tanh/\*.py'" "$T/keep.log" ||
  fail "tanh's missing candidates are not said"
grep -q "kfleet run: 3 refused candidates will be failed rows" "$T/keep.log" || fail "no keep-going note"
"$KFLEET" report 1 --format json >"$T/r1.json" || fail "report 1"
"$KFLEET" report 2 --format json >"$T/r2.json" || fail "report 2"
python3 - "$T/r1.json" "$T/r2.json" <<'PY' || fail "the level's rows are wrong"
import json, sys
want = {"lvl.relu": ({"base", "np_where"}, {"bad_ref"}),
        "lvl.scale": ({"base", "add"}, {"bad_tol", "bad_norun"})}
seen = set()
for f in sys.argv[1:]:
    r = json.load(open(f))
    name = r["sweep"]["name"]
    good, bad = want[name]
    seen.add(name)
    assert r["problem"]["name"] == name.split(".")[1], r["problem"]
    rows = {}
    for w in r["rows"]:
        rows.setdefault(w["kernel"], []).append(w)
    assert set(rows) == good | bad, (name, set(rows))
    for k in good:
        for w in rows[k]:
            assert w["validation"]["state"] == "succeeded", (k, w["validation"])
    for k in bad:
        for w in rows[k]:
            v = w["validation"]
            assert v["state"] == "failed", (k, v)
            assert v["error"].startswith("refused at submit: ") and "level.yaml:11:5: " in v["error"], v["error"]
            assert w["profile"]["state"] == "failed", (k, w["profile"])
assert seen == set(want), seen
print("ok - rows:", {n: sorted(g | b) for n, (g, b) in want.items()})
PY
pass "--keep-going: a sweep per problem, refused candidates failed rows, the others judged, tanh said"

# The problems of a level share the agent's warm runner: it holds no
# problem's code, so one per slot forks the runners of every problem's
# candidates (it was one per problem: a level paid the interpreter's and
# torch's start once a problem).
rm -rf "$KFLEET_HOME"
set +e
KF_WARM_IMPORTS=numpy "$KFLEET" run "$L/level.yaml" --keep-going --agents 1 >"$T/one.out" 2>"$T/one.log"
set -e
AL=$KFLEET_HOME/run/agent-0.log
for id in 1 2; do
  "$KFLEET" report $id --format json | python3 -c 'import json,sys; sys.exit(0 if any((w.get("validation") or {}).get("state") == "succeeded" for w in json.load(sys.stdin)["rows"]) else 1)' ||
    fail "sweep $id of the level has no candidate validated: $(tail -5 "$T/one.log")"
done
[ "$(grep -c 'warm.start ' "$AL")" -eq 1 ] || fail "want one warm runner for the level's two problems: $(grep 'warm\.' "$AL")"
# Python problems: `kfleet run` leaves the agents' start policy as it is.
if grep -q 'warm.later ' "$AL"; then fail "kfleet run of Python problems set KF_WARM=later"; fi
# Its problems' reference tasks fork from it too (each paid a fresh
# interpreter's start before): it forked more runners than the level had
# candidate tasks that needed one (the first task may come while it still
# imports; a task its candidate's runner served after an earlier one needs
# none: provenance's *_runner_task above 1).
ran=0
for id in 1 2; do
  n=$("$KFLEET" report $id --format json | python3 -c 'import json,sys; print(sum(1 for w in json.load(sys.stdin)["rows"] for t, k in (("validation", "validate"), ("profile", "profile")) if (w.get(t) or {}).get("state") in ("succeeded", "failed") and not (w[t].get("error") or "").startswith("refused") and ((w.get("provenance") or {}).get(k + "_runner_task") or 1) == 1))')
  ran=$((ran + n))
done
forked=$(grep -o 'warm.retire .* tasks=[0-9]*' "$AL" | sed 's/.*tasks=//')
[ "$ran" -gt 0 ] && [ "${forked:-0}" -gt "$ran" ] ||
  fail "the warm runner forked ${forked:-0} runners for $ran candidate tasks and 2 references: $(grep 'warm\.' "$AL")"
pass "one warm runner on an agent for a level's two problems, their references forked from it too"

# A warm runner can start with the agent (on a GPU node with torch it
# does; KF_WARM=start makes the CPU's too): it imports while the agent
# probes torch and measures, and the level's tasks take that one rather
# than start another.
rm -rf "$KFLEET_HOME"
set +e
KF_WARM=start KF_WARM_IMPORTS=numpy "$KFLEET" run "$L/level.yaml" --keep-going --agents 1 >"$T/early.out" 2>"$T/early.log"
set -e
started=$(grep -n 'warm.start ' "$AL" | head -1 | cut -d: -f1)
registered=$(grep -n 'agent.registered ' "$AL" | head -1 | cut -d: -f1)
[ -n "$started" ] && [ -n "$registered" ] && [ "$started" -lt "$registered" ] ||
  fail "the warm runner did not start before the agent registered: $(grep -E 'warm\.|agent.registered' "$AL")"
[ "$(grep -c 'warm.start ' "$AL")" -eq 1 ] || fail "want the one warm runner started with the agent: $(grep 'warm\.' "$AL")"
forked=$(grep -o 'warm.retire .* tasks=[0-9]*' "$AL" | sed 's/.*tasks=//')
[ "${forked:-0}" -gt 0 ] || fail "the warm runner started with the agent forked no runner: $(grep 'warm\.' "$AL")"
# A candidate's runner's first task has the runner's start (the agent's
# request to the warm runner, to the task's first step) as its own phase; a
# task its candidate's runner served after an earlier one has none.
"$KFLEET" report 1 --format json >"$T/early.json"
python3 - "$T/early.json" <<'PY' || fail "a runner's first task lacks its start phase, or a served task has one"
import json, sys
n = 0
for r in json.load(open(sys.argv[1]))["rows"]:
    for t, k in ((r.get("validation"), "validate"), (r.get("profile"), "profile")):
        if t and t.get("state") in ("succeeded", "failed") and t.get("phases_s"):
            s = t["phases_s"].get("start", 0)
            served = ((r.get("provenance") or {}).get(k + "_runner_task") or 1) > 1
            assert (s == 0) if served else (0 < s < 60), (r["kernel"], k, served, t["phases_s"])
            n += 1
assert n > 0
PY
pass "KF_WARM=start: the warm runner starts before the agent registers, and the level's tasks fork from it"

# Adversarial: a candidate of each problem poisons, at import, the numpy
# functions the other problem's candidates call (relu's: np.add and
# np.multiply, which scale's use; scale's: np.maximum, which relu's use),
# betting that whichever problem comes second, its candidates, forked from
# the same warm runner, inherit it. Each runner is a copy of the warm
# runner's memory that no candidate touched: every row passes. (In one
# process the poison works: checked first, so the test can fail.)
mkdir -p "$T/lvl2/problems" "$T/lvl2/base" "$T/lvl2/cands/relu" "$T/lvl2/cands/scale"
cp "$L/problems/relu.py" "$T/lvl2/problems/"
cp -r "$L/problems/scale" "$T/lvl2/problems/"
cp "$L/base/relu.py" "$L/base/scale.py" "$T/lvl2/base/"
cp "$L/cands/scale/add.py" "$T/lvl2/cands/scale/"
cat >"$T/lvl2/cands/relu/poison.py" <<'PY'
"""relu, right, after poisoning what a later problem's candidates use."""
import sys

import numpy as np


def _zeros(a, *args, out=None, **kw):
    if out is not None:
        out[...] = 0
        return out
    return np.zeros_like(a)


np.add = _zeros
np.multiply = _zeros
sys.modules["numpy"].add = _zeros


def run(s):
    np.maximum(s["x"], 0, out=s["out"])
PY
cat >"$T/lvl2/cands/scale/poison.py" <<'PY'
"""scale, right (by operators), after poisoning np.maximum for relu's."""
import numpy as np


def _zeros(a, *args, out=None, **kw):
    if out is not None:
        out[...] = 0
        return out
    return np.zeros_like(a)


np.maximum = _zeros


def run(s):
    s["out"][:] = s["x"] + s["x"]
PY
(cd "$T/lvl2" && /usr/bin/python3 -c '
import importlib.util, sys, numpy as np
for f, fn in (("cands/relu/poison.py", "multiply"), ("cands/scale/poison.py", "maximum")):
    spec = importlib.util.spec_from_file_location("p", f)
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
    x = np.ones(4, np.float32)
    o = np.empty_like(x)
    getattr(np, fn)(x, 2, out=o)
    assert (o == 0).all(), (f, fn, o)
print("the poisons work in their own process")') || fail "the poisons do not poison"
cat >"$T/lvl2/level.yaml" <<YAML
name: lvl2
problems: {path: [problems/relu.py, problems/scale], params: {n: [256]}, seeds: 2}
candidates:
  - {name: base, path: "base/{name}.py"}
  - "cands/{name}/*.py"
baseline: base
tasks: [build, validate, profile]
measure: {min_samples: 5, min_time: 10ms, max_noise: 50, precision: 50, timeout: 1s}
YAML
rm -rf "$KFLEET_HOME"
KF_WARM_IMPORTS=numpy "$KFLEET" run "$T/lvl2/level.yaml" --agents 1 >"$T/poison.out" 2>"$T/poison.log" ||
  fail "a level with a candidate poisoning numpy failed: $(tail -8 "$T/poison.out" "$T/poison.log")"
[ "$(grep -c 'warm.start ' "$KFLEET_HOME/run/agent-0.log")" -eq 1 ] ||
  fail "want one warm runner for both problems: $(grep 'warm\.' "$KFLEET_HOME/run/agent-0.log")"
for id in 1 2; do
  "$KFLEET" report $id --format json | python3 -c '
import json, sys
d = json.load(sys.stdin)
for w in d["rows"]:
    assert w["validation"]["state"] == "succeeded" and w["profile"]["state"] == "succeeded", (d["sweep"]["name"], w["kernel"], w["validation"].get("error"))
assert "poison" in {w["kernel"] for w in d["rows"]}, d["rows"]
print("ok - %s: %s passed" % (d["sweep"]["name"], ", ".join(sorted({w["kernel"] for w in d["rows"]}))))' ||
    fail "sweep $id: a candidate was judged on a poisoned numpy"
done
pass "candidates poisoning numpy for the other problem leave it right: each runner a fresh copy of the shared warm runner"

# 4. A problem sweep's runner messages speak of the candidate and the
#    problem: a candidate that replaces the output buffer is told so.
cat >"$T/replace.py" <<'PY'
"""Replaces the output buffer instead of writing into it."""


def run(s):
    s["out"] = s["x"] * 2
PY
cat >"$T/replace.yaml" <<YAML
problem: {path: $L/problems/scale/problem.py, params: {n: [64]}}
candidates: [replace.py]
tasks: [build, validate]
measure: {seeds: 1}
YAML
rm -rf "$KFLEET_HOME"
set +e
"$KFLEET" run "$T/replace.yaml" --agents 1 --format json >"$T/replace.json" 2>"$T/replace.log"
rc=$?
set -e
[ $rc -eq 1 ] || fail "the replacing candidate should fail (exit 1), got $rc"
python3 - "$T/replace.json" <<'PY' || fail "the replacing candidate's error speaks of kernels"
import json, sys
e = json.load(open(sys.argv[1]))["rows"][0]["validation"]["error"]
assert e.startswith("candidate replace: output() of problem problem after run() describes "
                    "another buffer"), e
assert "a candidate's run(s) writes into the output buffer of the state the problem's setup " \
       "made, and may not replace it" in e, e
assert "kernel" not in e, e
print("ok -", e[:100])
PY
pass "a candidate replacing the output is told in the words of problems and candidates"

#!/usr/bin/env bash
# Timed samples on fresh inputs (issue 43 item 3, agent/runner/fresh.h). A
# numpy problem (a 256 x 256 float64 product) and three candidates:
#  - np_matmul multiplies every run: it passes; its samples ran on fresh
#    inputs and some were audits;
#  - ahead computes the product in prepare() and copies it in run(): an
#    audit (a pool seed's inputs put where fresh ones were) fails it, named;
#  - memo keeps products by the inputs' addresses and first values: it
#    never hits in a counted sample, so its fastest sample is a product's
#    time, not a copy's (without fresh inputs its samples were 0.25 ms
#    copies beside 9 ms products on this machine kind);
#  - late is honest for 60 runs, then copies the answer it kept: with audits
#    one sample in sixteen after the first 32, an audit still finds it;
#  - summemo keeps them by the inputs' sums: fresh inputs made from kept
#    states of the problem's (pyglue.py refresh) are mixed, not only moved
#    about, so it never hits either;
#  - and where the tolerances cannot tell inputs apart (allclose's softmax at
#    16 x 16384 under atol = 1e-2: every value is below it), an answer kept
#    from other inputs fails an audit on the distance between the pool's
#    answers (agent/runner/checker.c), while the honest one passes.
# A candidate right only on the inputs it met first (the validation's), whose
# profile runs in its validation's runner, fails an audit on the pool's seeds
# held out from the validation. And a problem whose teardown() fails on a
# fresh state fails the profile.
source "$(dirname "$0")/lib.sh"

export KF_PYTHON=/usr/bin/python3
need_numpy

set +e
"$KFLEET" run "$KF_SRC/tests/data/problems/ahead/sweep.yaml" >"$T/run.out" 2>"$T/run.log"
rc=$?
set -e
[ $rc -eq 1 ] || fail "kfleet run of the ahead problem should exit 1 (ahead fails), got $rc: $(tail -5 "$T/run.log")"
"$KFLEET" report --format json >"$T/r.json" || fail "report"
python3 - "$T/r.json" <<'PY' || fail "fresh inputs do not stop the kept answers"
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
by = {}
for w in rows:
    by.setdefault(w["kernel"], []).append(w)
for w in by["np_matmul"] + by["memo"] + by["summemo"]:
    p = w["profile"]
    assert w["validation"]["state"] == "succeeded" and p["state"] == "succeeded", (w["kernel"], p)
    assert p["fresh_samples"] > 0 and p["audit_samples"] > 0, (w["kernel"], p["fresh_samples"], p["audit_samples"])
    assert p["samples_reported"] == p["samples"] + p["audit_samples"] + p["discarded_samples"], p
(late,) = by["late"]
lerr = late["profile"]["error"] or ""
assert late["profile"]["state"] == "failed" and "(pool seed " in lerr, late["profile"]
print("ok - late (honest for 60 runs, then a kept answer) failed: " + lerr[:100])
(r,) = by["reach"]
said = (r["validation"].get("output") or {}).get("kept", "")
assert "reach: reached no process" in said and "answered passed=0" in said, said
# Its serving runner's task socket was there, and one way.
assert "reach: wrote on 0 of 1 stream sockets" in said, said
assert r["validation"]["state"] == "failed" and "spot check" in r["validation"]["error"], r["validation"]
print("ok - reach reached no process; its own spot check of the checker failed it")
(a,) = by["ahead"]
err = a["profile"]["error"] or ""
assert a["profile"]["state"] == "failed", a["profile"]
# Caught at an audit sample's spot check, or at a re-check (which runs on a
# pool seed's inputs put back too), whichever comes first: both judge the
# kept answer against the inputs it was not computed from.
assert "(pool seed " in err and ("the spot check after timed sample" in err or
                                 "outside atol + rtol |ref|" in err), err
honest_min = min(w["profile"]["min_s"] for w in by["np_matmul"])
memo_min = min(w["profile"]["min_s"] for w in by["memo"])
assert memo_min >= honest_min / 3, (memo_min, honest_min)
sum_min = min(w["profile"]["min_s"] for w in by["summemo"])
assert sum_min >= honest_min / 3, (sum_min, honest_min)
m = by["memo"][0]["profile"]
print(f"ok - ahead failed an audit: {err[:110]}; memo's fastest sample {memo_min*1e3:.2f} ms, "
      f"summemo's {sum_min*1e3:.2f} ms, np_matmul's {honest_min*1e3:.2f} ms; memo {m['fresh_samples']} fresh, {m['audit_samples']} audits")
PY
pass "kept answers: ahead fails an audit, memo and summemo never hit a timed sample"

# kfleet run of sweep $2 [args...], which must exit 1 (a row fails); its
# output, log and JSON report in $T/$1.*; $3... are kfleet run's arguments.
run_failing() {
  local name=$1 yaml=$2 rc=0
  shift 2
  "$KFLEET" run "$yaml" "$@" >"$T/$name.out" 2>"$T/$name.log" || rc=$?
  [ $rc -eq 1 ] || fail "kfleet run of $yaml should exit 1 (a row fails), got $rc: $(tail -5 "$T/$name.log")"
  "$KFLEET" report --format json >"$T/$name.json" || fail "report"
}

run_failing seen "$KF_SRC/tests/data/problems/ahead/sweep_seen.yaml" --agents 1
python3 - "$T/seen.json" <<'PY' || fail "a candidate right only on the validation's inputs passed its served profile"
import json, sys
(so,) = json.load(open(sys.argv[1]))["rows"]
serr = so["profile"]["error"] or ""
assert so["validation"]["state"] == "succeeded", so["validation"]
# Its profile ran in its validation's runner, where its memo kept what the
# validation showed it; the audits' seeds were held out from the validation.
assert so["provenance"].get("profile_runner_task") == 2, so["provenance"]
assert so["profile"]["state"] == "failed" and "(pool seed " in serr, so["profile"]
PY
pass "seenonly (right only on the validation's inputs) passed validation and failed its served profile's audit"

set +e
"$KFLEET" run "$KF_SRC/tests/data/problems/allclose/sweep_ahead.yaml" >"$T/loose.out" 2>"$T/loose.log"
rc=$?
set -e
[ $rc -eq 1 ] || fail "the loose-tolerance sweep should exit 1 (np_ahead fails), got $rc: $(tail -5 "$T/loose.log")"
"$KFLEET" report --format json >"$T/loose.json" || fail "report"
python3 - "$T/loose.json" <<'PY' || fail "an answer kept under loose tolerances passed"
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
for r in rows:
    p = r["profile"]
    if r["kernel"] == "np_softmax":
        assert p["state"] == "succeeded" and p["audit_samples"] > 0, p
    else:
        err = p["error"] or ""
        assert r["kernel"] == "np_ahead" and p["state"] == "failed", (r["kernel"], p)
        assert "as large as between the answers of the pool's different inputs" in err, err
        print("ok - np_ahead:", err[err.index("the relative error"):][:120])
PY
pass "under tolerances too loose to tell inputs apart, an answer kept from other inputs fails an audit"

# A problem's teardown() that fails on the fresh inputs' state (the state
# setup() made for a timed sample, which no output() or reference() ever
# saw) fails the profile, named: the fresh state's teardown is the
# problem's own, not swallowed.
cp -r "$KF_SRC/tests/data/problems/ahead" "$T/td"
cat >>"$T/td/problem.py" <<'PYEOF'


_output, _reference = output, reference


def output(s):
    s["seen"] = True
    return _output(s)


def reference(s):
    s["seen"] = True
    return _reference(s)


def teardown(s):
    if not s.get("seen"):
        raise RuntimeError("TEARDOWN_FRESH: a state nothing read")
PYEOF
cat >"$T/td/sweep_td.yaml" <<'YEOF'
name: teardown-fresh
problem:
  path: problem.py
  params: {n: [64]}
  seeds: 2
candidates:
  - np_matmul.py
tasks: [build, validate, profile]
measure: {min_samples: 5, min_time: 5ms, max_noise: 50, timeout: 2s}
YEOF
run_failing td "$T/td/sweep_td.yaml"
python3 - "$T/td.json" <<'PY' || fail "a failing teardown() of the fresh inputs was swallowed"
import json, sys
(r,) = json.load(open(sys.argv[1]))["rows"]
assert r["validation"]["state"] == "succeeded", r["validation"]
p = r["profile"]
err = p["error"] or ""
assert p["state"] == "failed", p
assert "teardown() (of the fresh inputs before a timed sample)" in err and "TEARDOWN_FRESH" in err, err
print("ok - profile failed:", err[:120])
PY
pass "a fresh state's failing teardown() fails the profile, named"

#!/usr/bin/env bash
# Tolerances people already use (issue 41 item 3): numpy.isclose's
# atol + rtol |ref| element by element, with the element that breaks it
# reported, and tolerances as a function of the configuration.
#  1. KernelBench's softmax (level 1, 23) at 16 x 16384 as a problem judged
#     with atol = rtol = 1e-2: the float32 and a TF32-like candidate pass,
#     one off by 2e-2 at element 7 fails naming it, and zeros (within atol
#     at every element there) fail on the relative-L2 bound that stays.
#  2. A C kernel whose kf_tolerances gives atol 1e-4 at n = 1024 and 1e-2
#     beyond, its output 1e-3 off: n = 1024 fails, n = 4096 passes.
source "$(dirname "$0")/lib.sh"

export KF_PYTHON=/usr/bin/python3
need_numpy

set +e
"$KFLEET" run "$KF_SRC/tests/data/problems/allclose/sweep.yaml" >"$T/run.out" 2>"$T/run.log"
rc=$?
set -e
[ $rc -eq 1 ] || fail "kfleet run of the allclose problem should exit 1 (two candidates fail), got $rc"
"$KFLEET" report --format json >"$T/r.json" || fail "report"
python3 - "$T/r.json" <<'PY' || fail "the allclose verdicts are wrong"
import json, sys
rows = {w["kernel"]: w for w in json.load(open(sys.argv[1]))["rows"]}
for k in ("np_softmax", "tf32"):
    v = rows[k]["validation"]
    assert v["state"] == "succeeded", (k, v["error"])
    assert v["atol"] == 0.01 and v["rtol"] == 0.01, (k, v["atol"], v["rtol"])
    for t in v["trials"]:
        assert t["worst_close"]["not_close"] == 0 and t["worst_close"]["ratio"] <= 1, t
tf = rows["tf32"]["validation"]["trials"][0]
assert 0 < tf["worst_close"]["ratio"] < 0.2 and tf["max_abs_err"] > 0, tf  # off, well within
off = rows["off"]["validation"]
assert off["state"] == "failed", off
assert "1 of 262144 elements are outside atol + rtol |ref| (atol 0.01, rtol 0.01); the " \
       "worst, element 7:" in off["error"], off["error"]
assert off["trials"][0]["worst_close"]["index"] == 7, off["trials"][0]
z = rows["zeros"]["validation"]
assert z["state"] == "failed", z
assert z["trials"][0]["worst_close"]["not_close"] == 0, z["trials"][0]  # within atol everywhere
assert "relative L2 error 1 (tolerance 0.5)" in z["error"], z["error"]
print("ok - tf32 worst ratio %.3g; off: %s; zeros: %s" % (
    tf["worst_close"]["ratio"], off["error"][:120], z["error"][:90]))
PY
pass "atol = rtol = 1e-2: float32 and TF32-like pass, 2e-2 off at one element fails, zeros fail"

cat >"$T/tolfn.yaml" <<YAML
name: tolfn
kernels:
  - path: $KF_SRC/tests/kernels/tolfn.c
    params: {n: [1024, 4096]}
tasks: [build, validate]
measure: {seeds: 1}
YAML
set +e
"$KFLEET" run "$T/tolfn.yaml" >"$T/tolfn.out" 2>"$T/tolfn.log"
rc=$?
set -e
[ $rc -eq 1 ] || fail "the tolfn sweep should exit 1 (n=1024 fails), got $rc"
"$KFLEET" report --format json >"$T/t.json" || fail "report"
python3 - "$T/t.json" <<'PY' || fail "tolerances by configuration are not applied"
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
by_n = {r["params"]["n"]: r["validation"] for r in rows}
assert by_n[1024]["state"] == "failed" and by_n[1024]["atol"] == 1e-4, by_n[1024]
assert "outside atol + rtol |ref| (atol 0.0001, rtol 0)" in by_n[1024]["error"], by_n[1024]["error"]
assert by_n[4096]["state"] == "succeeded" and by_n[4096]["atol"] == 1e-2, by_n[4096]
print("ok")
PY
pass "kf_tolerances: atol 1e-4 at n=1024 fails a 1e-3 error, 1e-2 at n=4096 passes it"

#!/usr/bin/env bash
# Impossible speeds by the right ceiling (issue 43 item 3). A numpy
# candidate that computes a 1024 x 1024 float64 product in prepare() and
# copies it in run(), timed on the pool's inputs (its problem says
# fresh_inputs = False, so it passes its checks: test_fresh_inputs.sh shows
# it failing where inputs are fresh), claims 2 n^3 FLOPs in a copy's time:
# past the host's measured FLOP ceiling (the doctor's, at registration) by
# more than the report's factor, so its row is flagged impossible, has no
# speedup and no rank; the honest twin that multiplies every run is neither.
source "$(dirname "$0")/lib.sh"

export KF_PYTHON=/usr/bin/python3
need_numpy

# The pool's inputs: the ahead folder with fresh_inputs = False appended to
# its problem (one problem file, not a copy kept beside it).
cp -r "$KF_SRC/tests/data/problems/ahead" "$T/pool"
printf '\nfresh_inputs = False\n' >>"$T/pool/problem.py"
set +e
"$KFLEET" run "$T/pool/sweep_pool.yaml" >"$T/run.out" 2>"$T/run.log"
rc=$?
set -e
[ $rc -eq 0 ] || fail "kfleet run of the ahead problem exited $rc: $(tail -5 "$T/run.log")"
"$KFLEET" report --format json >"$T/r.json" || fail "report"
"$KFLEET" report >"$T/r.txt" || fail "report (table)"
python3 - "$T/r.json" "$T/r.txt" <<'PY' || fail "the answer computed ahead is not judged by the host's FLOP ceiling"
import json, sys
rep = json.load(open(sys.argv[1]))
rows = {w["kernel"]: w for w in rep["rows"]}
ceiling = [a["ceiling_host_gflops"] for a in rep["agents"]]
assert ceiling and all(c and c > 1 for c in ceiling), f"no host FLOP ceiling measured: {ceiling}"
honest, cheat = rows["np_matmul"], rows["ahead"]
for w in (honest, cheat):
    assert w["validation"]["state"] == "succeeded" and w["profile"]["state"] == "succeeded", w["kernel"]
claimed = cheat["profile"]["gflops"]
if claimed <= 2.5 * max(ceiling):
    # A host whose cores' peak is above what a copy of the answer claims
    # (dozens of AVX-512 cores): the rule cannot tell, and says so.
    print(f"SKIP - ahead claims {claimed:.0f} GFLOP/s, within 2.5x this host's {max(ceiling):.0f}")
    sys.exit(0)
assert "impossible" in cheat["flags"], (claimed, ceiling, cheat["flags"])
im = cheat["impossible"]
assert im["of"] == "host FLOP rate" and im["times_ceiling"] > 2.5, im
assert cheat["speedup"] is None and not cheat.get("rank"), (cheat["speedup"], cheat.get("rank"))
assert "impossible" not in honest["flags"], (honest["profile"]["gflops"], honest["flags"])
hg = honest["profile"]["gflops"]
assert hg < 2.5 * max(ceiling), hg
table = open(sys.argv[2]).read()
assert "IMPOSSIBLE: " in table and "the node's host FLOP rate, no speedup" in table, table[-2000:]
print(f"ok - ahead: {claimed:.0f} GFLOP/s claimed, {im['times_ceiling']:.1f}x the host's "
      f"{max(ceiling):.0f} GFLOP/s: impossible; np_matmul {hg:.1f} GFLOP/s, ranked")
PY
pass "an answer computed in prepare() and copied in run() is flagged impossible by the host FLOP ceiling"

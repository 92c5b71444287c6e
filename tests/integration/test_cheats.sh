#!/usr/bin/env bash
# Kernels that cheat the measurement are caught (issue 20, CPU part): one
# that memoizes its output after the calls a validation makes, one that
# detects the benchmark loop and writes zeros, one that writes zeros inside
# a loose absolute tolerance, one that leaves its work on a thread of its
# own after run() returns (the host's side stream). The first two pass
# validation; the profile's re-checks (output poisoned, run on the
# profile's own unpredictable inputs, compared with the reference, at a
# random sample and after the last) fail them. The third fails validation
# on its relative error. The fourth's samples are timed through output(),
# which waits for its thread, and flagged outside-stream. An honest kernel
# beside them is profiled as usual.
source "$(dirname "$0")/lib.sh"

rc=0
"$KFLEET" run "$KF_SRC/tests/data/sweeps/cheats.yaml" --agents 1 --format json -o "$T/r.json" \
  >"$T/run.out" 2>"$T/run.log" || rc=$?
[ $rc -eq 1 ] || fail "a sweep of cheating kernels exited $rc, expected 1: $(tail -3 "$T/run.log")"
python3 - "$T/r.json" <<'PY' || fail "a cheat went uncaught"
import json, sys
rows = {r["kernel"]: r for r in json.load(open(sys.argv[1]))["rows"]}
def state(r, k):
    return (r.get(k) or {}).get("state")
for name in ("cheat_memoize", "cheat_detect"):
    r = rows[name]
    assert state(r, "validation") == "succeeded", f"{name}: validation {state(r, 'validation')}"
    assert state(r, "profile") == "failed", f"{name}: profile {state(r, 'profile')}, not failed"
    err = r["profile"]["error"] or ""
    assert "profile re-check failed" in err, f"{name}: {err[:200]}"
    assert "failed" in r["flags"], f"{name}: not flagged failed"
    print(f"ok - {name}: validation passed, profile failed: {err[:110]}")
r = rows["cheat_zeros"]
assert state(r, "validation") == "failed", f"cheat_zeros: validation {state(r, 'validation')}"
assert "relative error 1 " in (r["validation"]["error"] or ""), r["validation"]["error"]
assert state(r, "profile") == "skipped", f"cheat_zeros: profile {state(r, 'profile')}"
print("ok - cheat_zeros: validation failed on its relative error, profile skipped")
r = rows["cheat_side_thread"]
assert state(r, "validation") == "succeeded", f"cheat_side_thread: validation {state(r, 'validation')}"
assert state(r, "profile") == "succeeded", f"cheat_side_thread: profile {state(r, 'profile')}"
assert "outside-stream" in r["flags"], f"cheat_side_thread: not flagged outside-stream: {r['flags']}"
out = r["profile"]["outside_stream_s"]
assert out and out > 0, f"cheat_side_thread: outside_stream_s {out}"
# The samples include the thread's work: its thread sleeps 2 ms after run()
# returns (tests/kernels/cheat_side_thread.c), so each sample is at least
# that, not the microseconds a clock around run() alone would see.
assert r["profile"]["median_s"] >= 0.002, f"median {r['profile']['median_s']} s < the thread's 2 ms"
assert out >= 0.002, f"outside_stream_s {out} s < the thread's 2 ms"
print(f"ok - cheat_side_thread: flagged outside-stream (+{out * 1e6:.0f} us), "
      f"median {r['profile']['median_s'] * 1e6:.0f} us")
r = rows["triad"]
assert state(r, "validation") == "succeeded" and state(r, "profile") == "succeeded", "triad did not pass"
assert r["profile"]["median_s"] > 0
assert "outside-stream" not in r["flags"], f"triad flagged outside-stream: {r['flags']}"
print("ok - the honest kernel: validated and profiled, not flagged")
PY
pass "every cheat caught, the honest kernel measured"

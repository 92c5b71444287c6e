#!/usr/bin/env bash
# Kernels that cheat the measurement are caught (issue 20, CPU part): one
# that memoizes its output after the calls a validation makes, one that
# detects the benchmark loop and writes zeros, one that writes zeros inside
# a loose absolute tolerance, one that leaves its work on a thread of its
# own after run() returns (the host's side stream). The first two pass
# validation; the profile's checks fail them. The third fails validation
# on its relative error. The fourth's samples are timed through output(),
# which waits for its thread, and flagged outside-stream. An honest kernel
# beside them is profiled as usual.
#
# Issue 29, in C and numpy: work skipped on the samples nobody checks is
# never timed. A kernel memoizing on an output sentinel and one memoizing
# on its inputs' identity (one entry) are timed doing the work in every
# kept sample (their fastest sample is above the sleep floor their work
# carries, as their honest twin's is); one computing every Nth call fails
# at its first skipped sample (the guard around every sample), whatever N.
# Checks that cannot fail are refused: zeros with a reference of zeros
# fails validation as vacuous, tolerances inf / tol_rel >= 1 are refused
# before any run (C, and a Python expression), and a Python kernel's
# literal ones at submit.
source "$(dirname "$0")/lib.sh"
export KF_PYTHON=/usr/bin/python3

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
    assert "profile re-check failed" in err or "profile spot check failed" in err, f"{name}: {err[:200]}"
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
# issue 29: one row per kernel and parameter set
allrows = json.load(open(sys.argv[1]))["rows"]
def find(kernel, **params):
    for r in allrows:
        if r["kernel"] == kernel and all(r["params"].get(k) == v for k, v in params.items()):
            return r
    raise AssertionError(f"no row {kernel} {params}")
FLOOR = 200e-6  # the sleep every run that does the work carries
for lang, n in (("", {}), ("py_", {"n": 65536})):
    for name in ("cheat_honest", "cheat_sentinel", "cheat_input_id"):
        r = find(lang + name, **n)
        assert state(r, "validation") == "succeeded", f"{lang}{name}: validation {state(r, 'validation')}"
        assert state(r, "profile") == "succeeded", f"{lang}{name}: profile {state(r, 'profile')}: {r['profile']['error']}"
        p = r["profile"]
        assert p["input_sets"] >= 2, f"{lang}{name}: {p['input_sets']} input sets"
        # Every kept sample did the work: none is faster than the floor.
        assert p["min_s"] >= FLOOR, f"{lang}{name}: fastest sample {p['min_s']} s < the {FLOOR} s floor of its work"
        print(f"ok - {lang}{name}: every sample timed the work (fastest {p['min_s'] * 1e6:.0f} us, "
              f"{p['input_sets']} input sets)")
    for every in (3, 50):
        r = find(lang + "cheat_every_nth", every=every, **n)
        assert state(r, "validation") == "succeeded", f"{lang}every_nth {every}: validation {state(r, 'validation')}"
        assert state(r, "profile") == "failed", f"{lang}every_nth {every}: profile {state(r, 'profile')}"
        err = r["profile"]["error"] or ""
        # The guard after every sample, or the random re-check when it
        # comes before the first skipped sample: never a pass.
        assert ("profile spot check failed after timed sample" in err and "still the poison" in err
                or "profile re-check failed" in err), err[:200]
        print(f"ok - {lang}cheat_every_nth every={every}: profile failed: {err[:80]}")
    r = find(lang + "cheat_zeros_ref", **n)
    assert state(r, "validation") == "failed" and state(r, "profile") == "skipped", r["validation"]
    assert "validation is vacuous" in (r["validation"]["error"] or ""), r["validation"]["error"]
    print(f"ok - {lang}cheat_zeros_ref: validation failed as vacuous")
for name, why in (("cheat_tol_inf", "non-finite tolerance"), ("cheat_tol_huge", "tol_rel = 1:"),
                  ("py_cheat_tol_expr", "tol_rel = 2:")):
    r = rows[name]
    err = r["validation"]["error"] or ""
    assert state(r, "validation") == "failed" and state(r, "profile") == "skipped", r["validation"]
    assert "tolerances that cannot fail, refused before any run" in err and why in err, err
    assert not r["validation"].get("trials"), f"{name} ran: {r['validation']}"
    print(f"ok - {name}: refused: {err[err.index('refused'):][:90]}")
r = rows["triad"]
assert state(r, "validation") == "succeeded" and state(r, "profile") == "succeeded", "triad did not pass"
assert r["profile"]["median_s"] > 0
assert "outside-stream" not in r["flags"], f"triad flagged outside-stream: {r['flags']}"
print("ok - the honest kernel: validated and profiled, not flagged")
PY
# A Python kernel's literal tolerances that cannot fail: the sweep is refused
# at submit, with the kernel's file and line and the reason.
rc=0
"$KFLEET" run "$KF_SRC/tests/data/sweeps/cheats_tol.yaml" --agents 1 >"$T/tol.out" 2>"$T/tol.err" || rc=$?
[ $rc -eq 2 ] || fail "a sweep with tol_abs = float(\"inf\") exited $rc, expected 2: $(tail -3 "$T/tol.err")"
grep -q -- "py_cheat_tol_inf.py:8: the kernel's check cannot fail, refused: tol_abs = inf" "$T/tol.err" ||
  fail "the refusal does not say where and why: $(cat "$T/tol.err")"
echo "ok - py_cheat_tol_inf: refused at submit: $(head -c 160 "$T/tol.err")"

pass "every cheat caught, the honest kernels measured"

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
# carries, as their honest twin's is); one computing every Nth call, and
# one skipping every Nth call (which the old two random re-checks missed
# (1 - 1/N)^2 of the time), fail at their first skipped sample (the guard
# around every sample), whatever N.
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
assert "relative L2 error 1 " in (r["validation"]["error"] or ""), r["validation"]["error"]
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
    for kernel, every, inv in (("cheat_every_nth", 3, {}), ("cheat_every_nth", 50, {}),
                               ("cheat_skip_nth", 3, {"inverse": 1}),
                               ("cheat_skip_nth", 7, {"inverse": 1})):
        name = lang + kernel
        r = find(name, every=every, **inv, **n)
        assert state(r, "validation") == "succeeded", f"{name} {every}: validation {state(r, 'validation')}"
        assert state(r, "profile") == "failed", f"{name} {every}: profile {state(r, 'profile')}"
        err = r["profile"]["error"] or ""
        # The guard after every sample, or the random re-check when it
        # comes before the first skipped sample: never a pass.
        assert ("profile spot check failed after timed sample" in err and "still the poison" in err
                or "profile re-check failed" in err), err[:200]
        print(f"ok - {name} every={every}: profile failed: {err[:80]}")
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
# Honest work, a petabyte declared per run: impossible against the host's
# measured copy ceiling (the doctor's, at registration), no speedup.
r = rows["cheat_bytes"]
assert state(r, "profile") == "succeeded", r["profile"]
assert "impossible" in r["flags"], r["flags"]
im = r["impossible"]
assert im["of"] == "host copy bandwidth" and im["times_ceiling"] > 20, im
assert r["speedup"] is None, r["speedup"]
print(f"ok - cheat_bytes: flagged impossible, {im['times_ceiling']:.3g}x the node's {im['of']}")
r = rows["triad"]
assert state(r, "validation") == "succeeded" and state(r, "profile") == "succeeded", "triad did not pass"
assert r["profile"]["median_s"] > 0
assert "outside-stream" not in r["flags"], f"triad flagged outside-stream: {r['flags']}"
assert "impossible" not in r["flags"], f"triad flagged impossible: {r['flags']}"
print("ok - the honest kernel: validated and profiled, not flagged")
PY
# Every report format says the same of each caught cheat: its row failed,
# with no time (the table and Markdown say why; CSV flags it failed; the
# HTML page carries the reason).
SID=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["sweep"]["sweep_id"])' "$T/r.json")
for fmt in table md csv html; do
  "$KFLEET" report "$SID" --format $fmt >"$T/r.$fmt" 2>"$T/r.$fmt.err" ||
    fail "report --format $fmt: $(cat "$T/r.$fmt.err")"
done
python3 - "$T" <<'PY' || fail "a report format does not show a cheat caught"
import csv, io, sys
T = sys.argv[1]
caught = ["cheat_every_nth", "py_cheat_every_nth", "cheat_skip_nth", "py_cheat_skip_nth", "cheat_zeros_ref", "py_cheat_zeros_ref",
          "cheat_tol_inf", "cheat_tol_huge", "py_cheat_tol_expr"]
for fmt in ("table", "md"):
    lines = open(f"{T}/r.{fmt}").read().splitlines()
    for k in caught:
        # the result rows (the builds table lists the kernels too); Markdown
        # escapes a kernel name's '_' (common/text.h: names come from kernels)
        name = k.replace("_", "\\_") if fmt == "md" else k
        mine = [l for l in lines if l.strip(" |").split()[0:1] == [name] and ("pass" in l or "FAIL" in l)]
        assert mine, f"{fmt}: no row {k}"
        for l in mine:
            assert "failed:" in l, f"{fmt}: {k} not shown failed: {l}"
rows = list(csv.DictReader(io.StringIO(open(f"{T}/r.csv", newline="").read())))
for k in caught:
    mine = [r for r in rows if r["kernel"] == k]
    assert mine and all("failed" in r["flags"].split(";") or "failed" in r["flags"] for r in mine), (k, mine)
    assert all(r["median_s"] == "" and r["speedup"] == "" for r in mine), (k, mine)
html = open(f"{T}/r.html").read()
for why in ("profile spot check failed", "validation is vacuous", "tolerances that cannot fail"):
    assert why in html, f"html: no '{why}'"
for fmt in ("table", "md"):
    assert "IMPOSSIBLE: " in open(f"{T}/r.{fmt}").read() and "host copy bandwidth, no speedup" in open(f"{T}/r.{fmt}").read(), fmt
assert any(r["kernel"] == "cheat_bytes" and "impossible" in r["flags"] for r in rows), "csv: cheat_bytes not impossible"
assert "impossible" in html
print("ok - table, md, csv and html: each caught cheat failed, no time, the reason shown; cheat_bytes impossible")
PY

# compare, honest twin (A) against each cheat (B) under one kernel name:
# never "faster" or "same"; exit 1 with why: the source changed (the cheats
# that are now timed doing the work), or broken (caught ones).
twin() { # NAME PATH [PARAMS] -> a sweep of one kernel named "twin", its id
  cat >"$T/$1.yaml" <<YAML
name: $1
kernels:
  - path: $2
    name: twin
    params: {${3:-}}
tasks: [validate, profile]
attempts: 1
measure: {min_samples: 20, min_time: 20ms, max_noise: 100, precision: 50, timeout: 2s, seeds: 1}
YAML
  "$KFLEET" run "$T/$1.yaml" --agents 1 --format json -o "$T/$1.json" >/dev/null 2>"$T/$1.err" || true
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["sweep"]["sweep_id"])' "$T/$1.json"
}
K="$KF_SRC/tests/kernels"
HONEST=$(twin honest "$K/cheat_honest.c")
PY_HONEST=$(twin py_honest "$K/python/py_cheat_honest.py" "n: [64K]")
for cheat in "cheat_sentinel|$HONEST|$K/cheat_sentinel.c||changed: kernel source changed" \
  "cheat_input_id|$HONEST|$K/cheat_input_id.c||changed: kernel source changed" \
  "cheat_zeros_ref|$HONEST|$K/cheat_zeros_ref.c||broken: validation is vacuous" \
  "cheat_tol_huge|$HONEST|$K/cheat_tol_huge.c||broken: validation failed: kernel twin declares tolerances that cannot fail" \
  "py_cheat_sentinel|$PY_HONEST|$K/python/py_cheat_sentinel.py|n: [64K]|changed: kernel source changed" \
  "py_cheat_zeros_ref|$PY_HONEST|$K/python/py_cheat_zeros_ref.py|n: [64K]|broken: validation is vacuous"; do
  IFS='|' read -r name a path params why <<<"$cheat"
  b=$(twin "$name" "$path" "$params")
  rc=0
  "$KFLEET" compare "$a" "$b" >"$T/cmp.out" 2>"$T/cmp.err" || rc=$?
  [ $rc -eq 1 ] || fail "compare honest -> $name exited $rc, expected 1: $(cat "$T/cmp.out" "$T/cmp.err")"
  grep -q "REGRESSION $why" "$T/cmp.out" || fail "compare honest -> $name does not say '$why': $(cat "$T/cmp.out")"
  grep -qE ' (faster|same)$' "$T/cmp.out" && fail "compare honest -> $name called it faster or same: $(cat "$T/cmp.out")"
  echo "ok - compare honest -> $name: exit 1, $why"
done

# A Python kernel's literal tolerances that cannot fail: the sweep is refused
# at submit, with the kernel's file and line and the reason.
rc=0
"$KFLEET" run "$KF_SRC/tests/data/sweeps/cheats_tol.yaml" --agents 1 >"$T/tol.out" 2>"$T/tol.err" || rc=$?
[ $rc -eq 2 ] || fail "a sweep with tol_abs = float(\"inf\") exited $rc, expected 2: $(tail -3 "$T/tol.err")"
grep -q -- "py_cheat_tol_inf.py:8: the kernel's check cannot fail, refused: tol_abs = inf" "$T/tol.err" ||
  fail "the refusal does not say where and why: $(cat "$T/tol.err")"
echo "ok - py_cheat_tol_inf: refused at submit: $(head -c 160 "$T/tol.err")"

pass "every cheat caught, the honest kernels measured"

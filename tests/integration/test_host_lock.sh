#!/usr/bin/env bash
# One host profile at a time on a machine (issue 43 item 5, agent's
# KF_HOST_LOCK, runner/hostlock.h): a profile waits while another process
# holds the machine's host-profile lock and is measured once it is free;
# one that cannot have it within its wait (4 x its timeout + 10 s) is
# measured anyway and says it shared the machine. GPU profiles take none.
source "$(dirname "$0")/lib.sh"

export KF_HOST_LOCK="$T/host.lock"
# hold SECONDS: another process holding the lock (killing it releases it).
hold() {
  python3 -c 'import fcntl, sys, time
f = open(sys.argv[1], "w")
fcntl.flock(f, fcntl.LOCK_EX)
time.sleep(float(sys.argv[2]))' "$KF_HOST_LOCK" "$1" &
  holder=$!
  PIDS+=("$holder")
  sleep 0.5
}
cat >"$T/one.yaml" <<YAML
name: host-lock
kernels:
  - name: triad
    params: {n: [64K]}
tasks: [build, validate, profile]
measure: {min_samples: 10, min_time: 10ms, max_noise: 50, timeout: 1s}
YAML

# Held by another process until the profile is running, and 1 s more: the
# profile waits, then has the machine alone.
hold 120
"$KFLEET" run "$T/one.yaml" --agents 1 >"$T/run1.out" 2>"$T/run1.log" &
run=$!
PIDS+=("$run")
for _ in $(seq 1 600); do # build and validate done, the profile running
  st=$("$KFLEET" status --format json 2>/dev/null | python3 -c '
import json, sys
s = (json.load(sys.stdin).get("sweeps") or [{}])[0]
print("yes" if s.get("succeeded", 0) >= 2 and s.get("running", 0) == 1 else "no")' 2>/dev/null || true)
  [ "$st" = yes ] && break
  kill -0 "$run" 2>/dev/null || fail "kfleet run ended before its profile ran"
  sleep 0.1
done
[ "$st" = yes ] || fail "the profile never ran"
sleep 1
kill "$holder"
wait "$run" || fail "kfleet run exited $?"
"$KFLEET" report --format json >"$T/r1.json" || fail "report"
python3 - "$T/r1.json" <<'PY' || fail "the profile did not wait for the machine"
import json, sys
p = json.load(open(sys.argv[1]))["rows"][0]["profile"]
assert p["state"] == "succeeded", p["error"]
assert p["host_shared"] is False, p
assert p["host_wait_s"] and p["host_wait_s"] > 0.9, p["host_wait_s"]
assert p["phases_s"].get("host wait", 0) > 0.9, p["phases_s"]
print("ok - waited %.2f s for the machine, then measured alone" % p["host_wait_s"])
PY
pass "a host profile waits while the machine's host-profile lock is held"

# Held past the profile's whole wait: measured beside it, and says so.
rm -rf "$KFLEET_HOME"
hold 30
"$KFLEET" run "$T/one.yaml" --agents 1 >"$T/run2.out" 2>"$T/run2.log" || fail "kfleet run exited $?"
kill "$holder" 2>/dev/null || true
"$KFLEET" report --format json >"$T/r2.json" || fail "report"
python3 - "$T/r2.json" <<'PY' || fail "the profile did not say it shared the machine"
import json, sys
p = json.load(open(sys.argv[1]))["rows"][0]["profile"]
assert p["state"] == "succeeded", p["error"]
assert p["host_shared"] is True and p["host_wait_s"] >= 13.5, (p["host_shared"], p["host_wait_s"])
print("ok - measured beside another after %.1f s" % p["host_wait_s"])
PY
grep -q "measured beside another host profile" "$T/run2.out" || fail "the text report lacks the flag"
pass "a host profile that cannot have the machine is measured anyway, flagged"

# A host runner's heap: glibc's mmap and trim thresholds fixed (the agent's
# childenv), so a kernel's temporaries come from a heap that keeps them
# and not from pages mapped per call by the heap's history in that process
# (the same numpy code measured 0.7 and 1.1 ms in two runs). A candidate
# that fails unless its process has them.
cat >"$T/heap.py" <<'PY'
"""Scales by 2 if its runner's heap keeps freed blocks (GLIBC_TUNABLES)."""
import os


def run(s):
    t = os.environ.get("GLIBC_TUNABLES", "")
    if "glibc.malloc.mmap_threshold=33554432" not in t or "glibc.malloc.trim_threshold=" not in t:
        raise RuntimeError("GLIBC_TUNABLES is %r" % t)
    s["out"][:] = s["x"] * 2
PY
cat >"$T/heap.yaml" <<YAML
problem: {path: $KF_SRC/tests/data/level/problems/scale/problem.py, params: {n: [4096]}}
candidates: [heap.py]
tasks: [build, validate, profile]
measure: {seeds: 1, min_samples: 10, min_time: 10ms, max_noise: 50, timeout: 1s}
YAML
rm -rf "$KFLEET_HOME"
KF_PYTHON=/usr/bin/python3 KF_WARM_IMPORTS=numpy "$KFLEET" run "$T/heap.yaml" --agents 1 >"$T/heap.out" 2>"$T/heap.log" ||
  fail "a host runner lacks the fixed heap thresholds: $(tail -5 "$T/heap.out" "$T/heap.log")"
pass "host runners keep their heap (glibc's mmap and trim thresholds fixed)"

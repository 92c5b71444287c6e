#!/usr/bin/env bash
# A runner is contained (issue 44): on one agent of two CPU slots (so that
# the hostile kernels run beside each other's tasks), a setsid fork bomb, a
# kernel that leaves orphan spinners, a memory bomb, 16 MiB of zero bytes
# and 100 MiB of text on stdout, and fills of /dev/shm, TMPDIR and the
# kernel's cache each cost only their own task a clear verdict at its first
# attempt (timed out with its process limit named; failed naming the
# orphans; "used more than 1.00 GiB", not tried again; passed with every
# byte counted; "No space left on device" at the runner's bound), the agent
# never declared lost; no process of theirs and no file they wrote is left
# behind; a compile that needs 2 GiB fails its build under a 256 MiB limit,
# its compiler named as killed for memory; and an honest sweep on the same
# agent then passes with the medians it had before them. A mechanism this node
# cannot give (read from the agent's own start line) is skipped with its
# reason, never faked.
source "$(dirname "$0")/lib.sh"

TAG=$RANDOM$RANDOM
K="$KF_SRC/tests/kernels/contain"
cat >"$T/contain.yaml" <<EOF
name: contain
kernels:
  - path: $K/fork_bomb.c
  - path: $K/orphans.c
  - path: $K/mem_bomb.c
  - path: $K/flood100m.c
  - path: $KF_SRC/tests/kernels/output/flood.c
  - path: $K/fill.c
    params: {target: [0, 1, 2], tag: [$TAG], n: [4K]}
params: {n: [4K]}
tasks: [build, validate]
attempts: 3
time_limit: 10s
memory_limit: 1G
measure: {seeds: 1}
EOF

start_serve
# Small bounds, so that the bombs and fills meet them in a second.
KF_RUNNER_PIDS=256 KF_RUNNER_TMPFS=64M KF_RUNNER_CACHE=32M start_agent c --cpu-slots 2
AGENT=$AGENT_PID
wait_agents 1
line=$(grep -m1 'info agent.contain' "$T/agent-c.log") || fail "the agent logged no agent.contain line"
missing=$(grep -m1 'warn agent.contain' "$T/agent-c.log" || true)
echo "# $line"
[ -z "$missing" ] || echo "# $missing"
have() { case "$missing" in *"$1"*) return 1 ;; *) return 0 ;; esac; }
GROUPS_OK=1 MEM_OK=1 PIDS_OK=1 MOUNTS_OK=1
have "no control group" && have "containment is off" || GROUPS_OK=0
have "no memory limit" && [ $GROUPS_OK = 1 ] || MEM_OK=0
have "no process limit" && [ $GROUPS_OK = 1 ] || PIDS_OK=0
have "no private /dev/shm" && have "containment is off" || MOUNTS_OK=0

# The honest sweep's medians on this agent before the hostile kernels.
honest() { # NAME: tiny.yaml on the agent, its profile medians in $T/NAME.json
  "$KFLEET" submit "$KF_SRC/tests/data/sweeps/tiny.yaml" --follow >"$T/$1.out" 2>"$T/$1.log" ||
    fail "the honest sweep ($1) failed: $(tail -5 "$T/$1.out")"
  local sid
  sid=$(grep -o 'submitted sweep [0-9]*' "$T/$1.out" | awk '{print $3}')
  "$KFLEET" report "$sid" --format json >"$T/$1.json" || fail "report $1"
}
honest before

set +e
"$KFLEET" submit "$T/contain.yaml" --follow >"$T/submit.out" 2>"$T/follow.log"
rc=$?
set -e
[ $rc -eq 1 ] || fail "the hostile sweep should exit 1 (its kernels fail), got $rc"
id=$(grep -o 'submitted sweep [0-9]*' "$T/submit.out" | awk '{print $3}')
"$KFLEET" report "$id" --format json >"$T/r.json"
kill -0 "$AGENT" || fail "the agent died"

python3 - "$T/r.json" $GROUPS_OK $MEM_OK $PIDS_OK $MOUNTS_OK <<'PY' || fail "a hostile kernel's verdict is wrong (above)"
import json, re, sys
rows = json.load(open(sys.argv[1]))["rows"]
groups, mem, pids, mounts = (sys.argv[i] == "1" for i in range(2, 6))
def val(kernel, **params):
    for r in rows:
        if r["kernel"] == kernel and all(str(r["params"].get(k)) == str(v) for k, v in params.items()):
            return r["validation"]
    raise SystemExit(f"no row for {kernel} {params}")
def show(name, v):
    print(f"ok - {name}: {v['state']} at attempt {v['attempt']}: {(v['error'] or '')[:400]}")

v = val("fork_bomb")
assert v["state"] == "timed_out" and v["attempt"] == 1, v
if pids:
    assert re.search(r"reached the runner's limit of 256 processes and threads \(forks refused \d+ times\)", v["error"]), v["error"]
else:
    print("# skip - fork_bomb's process limit: this node gives no pids controller to the agent")
show("fork bomb", v)

v = val("orphans")
if groups:
    assert v["state"] == "failed" and v["attempt"] == 1, v
    assert re.search(r"the kernel left \d+ processes running after its task", v["error"]), v["error"]
    show("orphans", v)
else:
    print("# skip - orphans: no control group on this node, a setsid'd process cannot be found")

v = val("mem_bomb")
if mem:
    assert "MEM_BOMB" not in (v["error"] or ""), "the memory bomb was never stopped: " + v["error"]
    assert v["state"] == "failed" and v["attempt"] == 1, (v["state"], v["attempt"], v["error"])
    assert "the kernel used more than 1.00 GiB, its runner's memory limit" in v["error"], v["error"]
    assert "tried again" not in v["error"].replace("not tried again", ""), v["error"]
    show("memory bomb", v)
else:
    print("# skip - mem_bomb: no memory controller for the agent's runners on this node")

v = val("flood100m")
assert v["state"] == "succeeded" and v["attempt"] == 1, v
assert v["output"]["bytes"] == 100 << 20, v["output"]["bytes"]
assert "bytes not kept]" in v["output"]["kept"] and len(v["output"]["kept"]) < 16384
show("100 MiB of stdout", v)

v = val("flood")
assert v["state"] == "succeeded" and v["attempt"] == 1, v
assert v["output"]["bytes"] > 0 and v["output"]["bytes"] % (16 << 20) == 0, v["output"]["bytes"]
assert "bytes not kept]" in v["output"]["kept"] and v["output"]["kept"].startswith("\\x00"), v["output"]["kept"][:80]
print(f"ok - 16 MiB of zero bytes a setup: succeeded at attempt 1, {v['output']['bytes']} bytes counted")

for target, where, bound in ((0, "/dev/shm", 64), (1, "TMPDIR", 64), (2, "its kernel cache", 32)):
    v = val("fill", target=target)
    if not mounts:
        print(f"# skip - fill {where}: no private mounts for this agent's runners (its missing= line above)")
        continue
    assert "never stopped" not in (v["error"] or ""), v["error"]
    m = re.search(r"FILL: (.*) full after (\d+) MiB: No space left on device", v["error"] or "")
    assert v["state"] == "failed" and m and m.group(1) == where, v
    assert int(m.group(2)) <= bound, f"{where}: {m.group(2)} MiB written, the bound is {bound} MiB"
    assert v["attempt"] == 1, v
    show(f"fill {where}", v)
PY
pass "each hostile kernel got its own clear verdict"
# The fork bomb's 10 s beside other tasks (the second slot): each of those
# got its own verdict above, none a "Resource temporarily unavailable".
beside=$(started_beside "$T/agent-c.log" fork_bomb) || fail "no fork bomb validate in the agent's log"
[ -n "$beside" ] || fail "the fork bomb ran alone"
pass "beside the fork bomb's validate: $(echo "$beside" | wc -l) tasks started ($(echo $beside))"
! grep -q 'agent.lost' "$T/serve.log" || fail "the agent was declared lost: $(grep -m1 'agent.lost' "$T/serve.log")"
pass "the agent was never declared lost (its heartbeats went on through the floods and bombs)"

# Nothing of theirs is left: no process of the agent's runners (idle ones
# leave after 5 s), no process in its groups, no file in the node's
# /dev/shm, no scratch dir, no cache over its quota.
if [ $GROUPS_OK = 1 ]; then
  left=""
  for _ in $(seq 1 100); do
    left=$(pgrep -f -- "--workdir $T/agents/c" | grep -vx "$AGENT" || true)
    [ -z "$left" ] && break
    sleep 0.3
  done
  [ -z "$left" ] || fail "processes of the agent's runners are still there: $(ps -o pid,ppid,sid,stat,args -p "$(echo $left | tr ' ' ,)" 2>&1 | head -12)"
  pass "no process of the hostile kernels is left (the fork bomb's setsid'd tree, the orphans)"
  n=$(find /sys/fs/cgroup -path "*/kfleet-$AGENT/*" -name cgroup.procs -exec cat {} + 2>/dev/null | wc -l)
  [ "$n" -eq 0 ] || fail "$n processes are still in the agent's runner groups"
  pass "the agent's runner groups are empty"
else
  echo "# skip - no control group here: a setsid'd process outlives its runner (each stops within a minute)"
fi
ls /dev/shm | grep -q "kf-fill-$TAG" && fail "/dev/shm/kf-fill-$TAG outlived its runner"
# (Uncontained, the orphans hold their runner's pipes, so its end and its
# scratch dir's removal wait for them.)
[ $GROUPS_OK = 0 ] || [ -z "$(ls "$T/agents/c/tmp" | grep '^0x' || true)" ] ||
  fail "scratch dirs left: $(ls "$T/agents/c/tmp")"
if find "$T/agents/c/kcache" -name "kf-fill-$TAG" 2>/dev/null | grep -q .; then
  fail "the cache fill was kept: $(du -sh "$T/agents/c/kcache")"
fi
[ $MOUNTS_OK = 0 ] || grep -q "kcache.full" "$T/agent-c.log" ||
  fail "the agent did not say the kernel filled its cache quota"
pass "no file of the fills is left (/dev/shm, TMPDIR, the kernel's cache)"
logs=$(find "$KFLEET_HOME" "$T" -name '*.log' -printf '%s\n' | awk '{s += $1} END {print s + 0}')
[ "$logs" -lt $((4 << 20)) ] || fail "the logs grew to $logs bytes"
pass "the logs hold $logs bytes after 100 MiB of stdout"

# A compile that needs 2 GiB under a 256 MiB limit: the compiler is the
# one killed, inside the build runner's group, and the build says so.
if [ $MEM_OK = 1 ]; then
  printf 'name: cc-bomb\nkernels:\n  - path: %s/cc_bomb.c\ntasks: [build]\nattempts: 3\ntime_limit: 120s\nmemory_limit: 256M\n' \
    "$K" >"$T/cc.yaml"
  "$KFLEET" submit "$T/cc.yaml" --follow >"$T/cc.out" 2>&1 && fail "the compile bomb built"
  cid=$(grep -o 'submitted sweep [0-9]*' "$T/cc.out" | awk '{print $3}')
  "$KFLEET" report "$cid" --format json >"$T/cc.json"
  python3 - "$T/cc.json" <<'PY' || fail "the compile bomb's verdict is wrong (above)"
import json, sys
b = json.load(open(sys.argv[1]))["builds"][0]
print(f"ok - compile bomb: build {b['state']}: {(b.get('error') or '')[:300]}")
assert b["state"] == "failed", b
assert "compile failed: the compiler used more than 0.25 GiB, the build runner's memory limit" in b["error"], b
PY
else
  echo "# skip - compile bomb: no memory controller for the agent's runners on this node"
fi

# An honest sweep on the same agent passes, with its medians of before
# (each printed): a limit or a tmpfs left on the agent's runners, or
# processes left spinning, would slow it. The bound is one-sided and wide
# (at most 3x slower), as this machine is shared by other builds (0.50x to
# 1.22x seen here); the leftover processes themselves are checked above.
honest after
hid=$(grep -o 'submitted sweep [0-9]*' "$T/after.out" | awk '{print $3}')
"$KFLEET" verify "$hid" --format json >"$T/hv.json" || fail "verify"
[ "$(json_field "$T/hv.json" failed)" -eq 0 ] || fail "the honest sweep had failures"
python3 - "$T/before.json" "$T/after.json" <<'PY' || fail "the honest sweep's medians moved after the hostile kernels (above)"
import json, sys
def medians(path):
    out = {}
    for r in json.load(open(path))["rows"]:
        p = r.get("profile") or {}
        assert p.get("state") == "succeeded" and p.get("median_s"), (path, r["kernel"], p.get("state"))
        out[(r["kernel"], json.dumps(r["params"], sort_keys=True))] = p["median_s"]
    return out
before, after = medians(sys.argv[1]), medians(sys.argv[2])
assert before and set(before) == set(after), (sorted(before), sorted(after))
for k in sorted(before):
    ratio = after[k] / before[k]
    print(f"ok - honest {k[0]} {k[1]}: median {before[k] * 1e6:.2f} us before, {after[k] * 1e6:.2f} us after ({ratio:.2f}x)")
    assert ratio < 3, f"{k}: {ratio:.2f}x slower"
PY
pass "an honest sweep on the same agent then passes ($(json_field "$T/hv.json" succeeded) tasks), its medians as before"

# A host-profile lock in /dev/shm would be a file per runner (each has a
# /dev/shm of its own): the agent says so at start; the default's
# (/tmp) draws no such line.
if [ $MOUNTS_OK = 1 ]; then
  grep -q 'agent.host_lock' "$T/agent-c.log" && fail "agent c warned about its /tmp host lock"
  KF_HOST_LOCK=/dev/shm/kf-lock-$TAG start_agent d --cpu-slots 1
  for _ in $(seq 1 100); do
    grep -q 'agent.contain' "$T/agent-d.log" 2>/dev/null && break
    sleep 0.1
  done
  grep -q "warn agent.host_lock path=/dev/shm/kf-lock-$TAG .*private /dev/shm" "$T/agent-d.log" ||
    fail "an agent whose host lock is in /dev/shm did not say the lock would lock nothing: $(grep -m3 'agent\.' "$T/agent-d.log")"
  rm -f "/dev/shm/kf-lock-$TAG"
  pass "a host-profile lock in /dev/shm is named as locking nothing at the agent's start"
else
  echo "# skip - host lock in /dev/shm: no private /dev/shm for this agent's runners"
fi

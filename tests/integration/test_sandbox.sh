#!/usr/bin/env bash
# Runners are sandboxed (issue 31, item 1): a C kernel and a Python (numpy)
# kernel, run by `kfleet run` (agents sharing the coordinator's home), try
# in setup() to read the agent's Curve secret key and coordinator.key, to
# append to agents.allow, to write the LMDB store, to overwrite another
# kernel's cached .so and plant files in the cache, to write outside their
# scratch dir, to connect to a TCP listener on 127.0.0.1 and to the
# coordinator's control socket, to signal the agent, to read KFLEET_HOME and,
# as root, /etc/shadow; each access that works fails the kernel
# ("GOT: ..."). Sandboxed, every one is refused, both kernels validate and
# profile, the other kernel's artifact and the allow list are unchanged and
# nothing was planted. The same sweep with `kfleet run --no-sandbox`
# (KF_SANDBOX=0 for its agents) shows the test has teeth: there the kernels
# get the accesses and fail naming them. Last, under a real `kfleet serve`
# the same kernels submitted to a sandboxed agent cannot connect to that
# coordinator's control socket, and `kfleet status` shows what an agent's
# sandbox cannot enforce, as the agent logged it at start, and that an
# agent's sandbox is off.
source "$(dirname "$0")/lib.sh"

export KF_PYTHON=/usr/bin/python3
need_numpy
STATE="$KFLEET_HOME/state"
WD="$STATE/agents/run-0"

# A listener on 127.0.0.1 for the kernels to reach.
"$KF_PYTHON" - "$T/port" <<'PY' &
import socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(64)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
while True:
    c, _ = s.accept()
    c.close()
PY
PIDS+=($!)
for _ in $(seq 1 100); do [ -s "$T/port" ] && break; sleep 0.05; done
PORT=$(cat "$T/port")
[ -n "$PORT" ] || fail "the listener did not start"

# First sweep: the victim, whose cached .so the hostile kernels go for.
mkdir -p "$T/k"
cp "$KF_SRC/kernels/host/triad.c" "$T/k/victim.c"
printf 'name: victim\nkernels:\n  - path: %s\nparams: {n: [1K]}\ntasks: [validate]\n' \
  "$T/k/victim.c" >"$T/victim.yaml"
"$KFLEET" run "$T/victim.yaml" --agents 1 >"$T/victim.out" 2>"$T/victim.log" ||
  fail "the victim sweep failed: $(tail -3 "$T/victim.log")"
VICTIM=$(ls "$WD"/cache/*.so)
[ -f "$VICTIM" ] || fail "no cached victim .so in $WD/cache"
[ -f "$WD/agent.key" ] && [ -f "$STATE/keys/coordinator.key" ] && [ -f "$STATE/keys/agents.allow" ] &&
  [ -f "$STATE/store/data.mdb" ] || fail "the home does not have the layout the test attacks"
ESCAPE="$T/escaped"

cat >"$T/k/targets.h" <<EOF2
#define AGENT_KEY "$WD/agent.key"
#define COORD_KEY "$STATE/keys/coordinator.key"
#define ALLOW "$STATE/keys/agents.allow"
#define STORE "$STATE/store/data.mdb"
#define VICTIM "$VICTIM"
#define CACHE "$WD/cache"
#define ESCAPE "$ESCAPE"
#define CUBINS "$WD/harness-cubins"
#define PORT $PORT
#define CONTROL "$KFLEET_HOME/run/control.sock"
EOF2
cp "$KF_SRC/tests/kernels/hostile/hostile.c" "$T/k/hostile.c"
# hostile_py DIR CONTROL: the Python kernel in DIR, aimed at CONTROL.
hostile_py() {
  sed -e "s|@AGENT_KEY@|$WD/agent.key|" -e "s|@COORD_KEY@|$STATE/keys/coordinator.key|" \
    -e "s|@ALLOW@|$STATE/keys/agents.allow|" -e "s|@STORE@|$STATE/store/data.mdb|" \
    -e "s|@VICTIM@|$VICTIM|" -e "s|@CACHE@|$WD/cache|" -e "s|@ESCAPE@|$ESCAPE|" -e "s|@PORT@|$PORT|" \
    -e "s|@CUBINS@|$WD/harness-cubins|" \
    -e "s|@CONTROL@|$2|" "$KF_SRC/tests/kernels/hostile/hostile_py.py" >"$1/hostile_py.py"
}
hostile_py "$T/k" "$KFLEET_HOME/run/control.sock"
cat >"$T/hostile.yaml" <<EOF2
name: hostile
kernels:
  - path: $T/k/hostile.c
  - path: $T/k/hostile_py.py
  - path: $T/k/victim.c
    params: {n: [1K]}
tasks: [validate, profile]
attempts: 1
measure: {min_samples: 5, min_time: 0.01}
EOF2

victim_sum=$(sha256sum <"$VICTIM")
allow_sum=$(sha256sum <"$STATE/keys/agents.allow")

# Sandboxed: every access refused, the results right.
rc=0
"$KFLEET" run "$T/hostile.yaml" --agents 1 --format json -o "$T/r.json" >"$T/run.out" \
  2>"$T/run.log" || rc=$?
[ $rc -eq 0 ] || fail "sandboxed, the hostile sweep exited $rc: $(grep -o 'GOT: [^"]*' "$T/r.json" | sort -u | head -3) $(tail -3 "$T/run.log")"
"$KF_PYTHON" - "$T/r.json" <<'PY' || fail "a sandboxed kernel's result is not right"
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
seen = set()
for r in rows:
    for k in ("validation", "profile"):
        st = (r.get(k) or {}).get("state")
        assert st == "succeeded", (r["kernel"], k, st, (r.get(k) or {}).get("error"))
    seen.add(r["kernel"])
assert seen == {"hostile", "hostile_py", "victim"}, seen
print("ok - sandboxed: hostile (C), hostile_py (numpy) and victim validated and profiled")
PY
[ "$(sha256sum <"$VICTIM")" = "$victim_sum" ] || fail "the victim's cached .so changed"
[ "$(sha256sum <"$STATE/keys/agents.allow")" = "$allow_sum" ] || fail "agents.allow changed"
ls "$WD"/cache/planted-* "$ESCAPE"-* 2>/dev/null && fail "a sandboxed kernel planted a file"
# The doctor writes the compiled modules only on a GPU node; an empty file is the kernel's.
[ -f "$WD/harness-cubins" ] && [ ! -s "$WD/harness-cubins" ] && fail "a sandboxed kernel planted harness-cubins"
pass "sandboxed: agent.key, coordinator.key, agents.allow, the store, the cache, the harness's compiled modules, files outside the scratch dir, 127.0.0.1:$PORT, the control socket, the agent's signals and KFLEET_HOME all refused"
grep -q 'agent.sandbox.*enforced=' "$KFLEET_HOME/run/agent-0.log" ||
  fail "the agent did not say what its sandbox enforces: $(grep agent.sandbox "$KFLEET_HOME/run/agent-0.log")"
pass "the agent says at start what it enforces: $(grep -o 'agent.sandbox.*' "$KFLEET_HOME/run/agent-0.log" | head -1)"
ls "$WD"/tmp/ 2>/dev/null | grep -q . && fail "scratch dirs left behind: $(ls "$WD/tmp")"
pass "no scratch dir left after the tasks"

# The same kernels with ncu metrics and compute-sanitizer (stand-ins,
# tests/integration/tools/nvtool, that run the nested runner as the tools
# do): the runner that loads the kernel and the nested runner the tool
# starts are both under Landlock, every access refused, and the nested one
# can still write its own /proc entry, as cuInit must.
mkdir -p "$T/tools"
cp "$KF_SRC/tests/integration/tools/nvtool" "$T/tools/ncu"
cp "$KF_SRC/tests/integration/tools/nvtool" "$T/tools/compute-sanitizer"
sed 's/^measure: {\(.*\)}$/measure: {\1, ncu: [gpu__time_duration.sum], sanitize: true}/' \
  "$T/hostile.yaml" | sed 's/^name: hostile$/name: hostile-tools/' >"$T/tools.yaml"
grep -q 'sanitize: true' "$T/tools.yaml" || fail "the tools sweep was not made: $(cat "$T/tools.yaml")"
rc=0
PATH="$T/tools:$PATH" NVTOOL_CALLS="$T/tool-calls" "$KFLEET" run "$T/tools.yaml" --agents 1 \
  --format json -o "$T/rt.json" >"$T/runt.out" 2>"$T/runt.log" || rc=$?
[ $rc -eq 0 ] || fail "sandboxed with tools, the hostile sweep exited $rc: $(grep -oE '(GOT|NEED): [^"\]*' "$T/rt.json" | sort -u | head -4) $(tail -3 "$T/runt.log")"
"$KF_PYTHON" - "$T/rt.json" <<'PY' || fail "a sandboxed kernel's result under the tools is not right"
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
for r in rows:
    for k in ("validation", "profile"):
        st = (r.get(k) or {}).get("state")
        assert st == "succeeded", (r["kernel"], k, st, (r.get(k) or {}).get("error"))
    assert "memcheck: clean" in json.dumps(r), (r["kernel"], "no sanitizer verdict")
    assert "gpu__time_duration.sum" in json.dumps(r), (r["kernel"], "no ncu metric")
PY
for t in ncu compute-sanitizer; do
  grep -q "^$t rc=0" "$T/tool-calls" || fail "$t was not run, or its nested run failed: $(cat "$T/tool-calls")"
done
grep -q 'sandbox.tool_run' "$T/runt.log" "$KFLEET_HOME"/run/agent-*.log 2>/dev/null &&
  fail "a runner still turns Landlock off for the tools"
ls "$WD"/tmp/ 2>/dev/null | grep -q . && fail "scratch or tool dirs left behind: $(ls "$WD/tmp")"
pass "with ncu and compute-sanitizer ($(wc -l <"$T/tool-calls") tool runs) the runner and the nested runners are confined, the nested ones write their own /proc entry, results right"

# The same sweep unsandboxed: the kernels get in, and say so.
rc=0
"$KFLEET" run "$T/hostile.yaml" --agents 1 --no-sandbox --format json -o "$T/r0.json" \
  >"$T/run0.out" 2>"$T/run0.log" || rc=$?
[ $rc -eq 1 ] || fail "unsandboxed, the hostile sweep exited $rc, expected 1"
for k in hostile hostile_py; do
  # A root runner keeps uid 0: /etc/shadow is root's by ownership.
  shadow=
  [ "$(id -u)" = 0 ] && [ -f /etc/shadow ] && shadow="read /etc/shadow"
  for what in "read agent.key" "read coordinator.key" "append agents.allow" "write the store" \
    "overwrite another kernel's .so" "connect to 127.0.0.1" "connect to the control socket" \
    "plant the harness's compiled modules" \
    "see KFLEET_HOME" "signal the agent" ${shadow:+"$shadow"}; do
    "$KF_PYTHON" - "$T/r0.json" "$k" "$what" <<'PY' || fail "unsandboxed, $k did not get '$what': the test would not see it"
import json, sys
rows = [r for r in json.load(open(sys.argv[1]))["rows"] if r["kernel"] == sys.argv[2]]
err = " ".join((r.get("validation") or {}).get("error") or "" for r in rows)
assert "GOT:" in err and sys.argv[3] in err, err[:400]
PY
  done
done
grep -q 'sandbox is off (KF_SANDBOX=0)' "$KFLEET_HOME/run/agent-0.log" ||
  fail "the agent did not say the sandbox is off"
pass "unsandboxed (--no-sandbox) both kernels get every access and fail naming them; the agent says the sandbox is off"

# A real `kfleet serve`: the kernels, aimed at its control socket and
# submitted to a sandboxed agent, cannot reach it.
export KFLEET_HOME="$T/home2"
start_serve
start_agent boxed
wait_agents 1
CONTROL="$KFLEET_HOME/run/control.sock"
[ -S "$CONTROL" ] || fail "kfleet serve has no control socket at $CONTROL"
mkdir -p "$T/k2"
sed "s|^#define CONTROL .*|#define CONTROL \"$CONTROL\"|" "$T/k/targets.h" >"$T/k2/targets.h"
cp "$T/k/hostile.c" "$T/k2/hostile.c"
hostile_py "$T/k2" "$CONTROL"
printf 'name: hostile-serve\nkernels:\n  - path: %s\n  - path: %s\ntasks: [validate]\nattempts: 1\n' \
  "$T/k2/hostile.c" "$T/k2/hostile_py.py" >"$T/serve.yaml"
"$KFLEET" submit "$T/serve.yaml" --follow >"$T/serve-sweep.out" 2>&1 ||
  fail "under kfleet serve a kernel reached the control socket or failed: $(grep -o 'GOT: [^"]*' "$T/serve-sweep.out" | head -2) $(tail -3 "$T/serve-sweep.out")"
"$KFLEET" status >/dev/null || fail "kfleet status failed after the sweep"
pass "under a real kfleet serve, C and Python kernels could not connect to its control socket $CONTROL"

# kfleet status: what each agent's sandbox cannot enforce, as it said.
KF_SANDBOX=0 start_agent open
wait_agents 2
"$KFLEET" status --format json >"$T/status.json"
"$KFLEET" status >"$T/status.txt"
logged=$(grep -o 'agent.sandbox missing="[^"]*"' "$T/agent-boxed.log" | sed 's/^agent.sandbox missing="//; s/"$//' || true)
# What containment cannot do on this node (agent.contain, issue 44: no
# writable cgroup in a chroot, say) follows, as "not contained: ...".
uncontained=$(grep -o 'agent.contain missing="[^"]*"' "$T/agent-boxed.log" | sed 's/^agent.contain missing="//; s/"$//' || true)
"$KF_PYTHON" - "$T/status.json" "$logged" "$uncontained" <<'PY' || fail "kfleet status does not show the agents' sandbox as they logged it"
import json, sys
agents = {a["agent_id"]: a for a in json.load(open(sys.argv[1]))["agents"]}
want = sys.argv[2]
if sys.argv[3]:
    want += ("; " if want else "") + "not contained: " + sys.argv[3]
assert agents["boxed"]["sandbox_missing"] == want, (agents["boxed"]["sandbox_missing"], want)
assert "the sandbox is off (KF_SANDBOX=0)" in agents["open"]["sandbox_missing"], agents["open"]
PY
grep -q 'sandbox: the sandbox is off (KF_SANDBOX=0)' "$T/status.txt" || fail "status text: $(cat "$T/status.txt")"
pass "kfleet status shows each agent's sandbox: boxed '${logged:-everything enforced}', open 'the sandbox is off'"

#!/usr/bin/env bash
# Agents say goodbye (issue 33 item 3): an agent stopped by SIGTERM (what
# `kfleet teardown`, scancel and a service stop send) tells the coordinator
# on its way out, and `kfleet status` shows it `stopped` at once, not `ok`
# until the heartbeat timeout and then `LOST`; the task it held is requeued
# at once and the sweep completes on the other agent. Status tells stopped,
# lost and revoked apart. The heartbeat timeout here is 120 s, so nothing
# in this test can be marked gone by silence. An agent past its
# --stop-after stops the same way.
source "$(dirname "$0")/lib.sh"

start_serve --heartbeat-timeout 120s
start_agent a1
A1=$AGENT_PID
start_agent a2
A2=$AGENT_PID
wait_agents 2

"$KFLEET" submit "$KF_SRC/tests/data/sweeps/slow60.yaml" >"$T/submit.out" || fail "submit"
id=$(grep -o 'submitted sweep [0-9]*' "$T/submit.out" | awk '{print $3}')
for _ in $(seq 1 400); do
  grep -q 'runner.start' "$T/agent-a1.log" 2>/dev/null && break
  sleep 0.05
done
grep -q 'runner.start' "$T/agent-a1.log" || fail "a1 never ran a task"

kill -TERM "$A1"
wait "$A1" 2>/dev/null || true
grep -q 'agent.stop' "$T/agent-a1.log" || fail "a1 did not stop cleanly: $(tail -3 "$T/agent-a1.log")"
# state_after NAME: the agent's state in `kfleet status` once it is no
# longer ok (polled for up to 5 s), else ok.
state_after() {
  local st=ok
  for _ in $(seq 1 100); do
    st=$("$KFLEET" status --format json | python3 -c '
import json, sys
print(next(a["state"] for a in json.load(sys.stdin)["agents"] if a["agent_id"] == sys.argv[1]))' "$1")
    [ "$st" != ok ] && break
    sleep 0.05
  done
  echo "$st"
}
state=$(state_after a1)
[ "$state" = stopped ] || fail "a1 stopped by SIGTERM shows as '$state', not stopped"
"$KFLEET" status >"$T/status.txt"
grep -Eq '^a1 +[^ ]+ +stopped ' "$T/status.txt" || fail "the status table does not show a1 stopped: $(cat "$T/status.txt")"
grep -q 'agent.stopped.*agent=a1' "$T/serve.log" || fail "no agent.stopped line in the coordinator's log"
grep -q 'agent.lost.*agent=a1' "$T/serve.log" && fail "a1 was logged lost although it said goodbye"
pass "an agent stopped by SIGTERM shows as stopped at once: $(grep -m1 'agent.stopped' "$T/serve.log" | cut -d' ' -f4-)"

# What a1 held went back to the queue at once (no 120 s wait): the sweep
# completes on a2.
for _ in $(seq 1 1200); do
  "$KFLEET" status --format json | python3 -c "
import json, sys
s = [s for s in json.load(sys.stdin)['sweeps'] if s['sweep_id'] == $id][0]
sys.exit(0 if s['pending'] + s['running'] == 0 else 1)" && break
  sleep 0.1
done
"$KFLEET" report "$id" --format json -o "$T/r.json" || fail "no report"
held=$(grep -m1 -o 'agent.stopped agent=a1 silent_s=[0-9.]* running=[0-9]*' "$T/serve.log" | sed 's/.*running=//')
python3 - "$T/r.json" "$held" <<'PY' || fail "the sweep did not complete after a1 stopped"
import json, sys
d = json.load(open(sys.argv[1]))
states = [(r.get(k) or {}).get("state") for r in d["rows"] for k in ("validation", "profile")]
assert states and all(s == "succeeded" for s in states), states
held = int(sys.argv[2])
ended = sum("agent a1 stopped" in (a.get("note") or "") for r in d["rows"] for a in r.get("attempts") or [])
ended += sum("agent a1 stopped" in (b.get("error") or "") for b in d["builds"])
# A task a1 held when it said goodbye ended (its attempt, or a1's own build) by it.
assert ended >= min(held, 1), (held, ended)
print("ok - sweep complete on a2; a1 held %d task(s), %d attempt(s) ended by its goodbye" % (held, ended))
PY

# Revoked is its own state.
"$KFLEET" agent-key revoke a2 >/dev/null || fail "revoke"
state=$(state_after a2)
[ "$state" = revoked ] || fail "a2 whose key was revoked shows as '$state', not revoked"
pass "status tells stopped (a1) and revoked (a2) apart"
kill -TERM "$A2" 2>/dev/null || true

# A batch job's own deadline (--stop-after, what a Slurm job's agent gets
# should the scheduler's signal be lost): the agent stops by itself as on
# SIGTERM, goodbye said.
start_agent a3 --stop-after 10
A3=$AGENT_PID
wait_agents 1
for _ in $(seq 1 400); do
  kill -0 "$A3" 2>/dev/null || break
  sleep 0.1
done
kill -0 "$A3" 2>/dev/null && fail "a3 still runs 40 s after its --stop-after 10"
wait "$A3"
rc=$?
[ $rc -eq 0 ] || fail "a3 stopped by its deadline exited $rc"
grep -q 'agent.deadline agent=a3' "$T/agent-a3.log" || fail "a3 did not say its deadline: $(tail -3 "$T/agent-a3.log")"
state=$(state_after a3)
[ "$state" = stopped ] || fail "a3 past its --stop-after shows as '$state', not stopped"
pass "an agent past its --stop-after stops and says goodbye"

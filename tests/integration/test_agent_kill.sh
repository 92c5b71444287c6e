#!/usr/bin/env bash
# An agent SIGKILLed mid-sweep: the coordinator declares it lost after the
# heartbeat timeout, requeues its attempts, and the sweep completes on the
# other agents with nothing lost and nothing recorded twice.
source "$(dirname "$0")/lib.sh"

start_serve --heartbeat-timeout 2s --heartbeat-interval 250ms
start_agent k1; start_agent k2; start_agent victim; VICTIM=$AGENT_PID
wait_agents 3

"$KFLEET" submit "$KF_SRC/tests/data/sweeps/slow60.yaml" >"$T/submit.out" || fail "submit"
id=$(grep -o 'submitted sweep [0-9]*' "$T/submit.out" | awk '{print $3}')

# Kill the victim once it runs a profile (a build would be cancelled, not
# requeued: builds are per agent).
for _ in $(seq 1 400); do
  grep -q 'runner.start.*kind=profile' "$T/agent-victim.log" 2>/dev/null && break
  sleep 0.05
done
grep -q 'runner.start.*kind=profile' "$T/agent-victim.log" || fail "victim never started a profile"
kill -9 "$VICTIM"
pass "victim agent killed mid-task"

"$KFLEET" submit "$KF_SRC/tests/data/sweeps/slow60.yaml" --follow >/dev/null 2>"$T/follow2.log" &
FOLLOW=$!
PIDS+=("$FOLLOW")
# The first sweep must finish too; wait for it through verify's view.
for _ in $(seq 1 600); do
  "$KFLEET" status --format json >"$T/status.json" 2>/dev/null || true
  if grep -A12 "\"sweep_id\": $id," "$T/status.json" | grep -q '"finished": true'; then break; fi
  sleep 0.1
done
wait "$FOLLOW" || fail "second sweep failed"

grep -q '"state": "lost"' "$T/status.json" || fail "victim not shown as lost"
pass "victim shown as lost"

"$KFLEET" verify "$id" --format json >"$T/verify.json" || { cat "$T/verify.json" "$T/serve.log" | tail -50; fail "verify violations"; }
tasks=$(json_field "$T/verify.json" tasks)
records=$(json_field "$T/verify.json" terminal_records)
succeeded=$(json_field "$T/verify.json" succeeded)
requeued=$(json_field "$T/verify.json" requeued)
cancelled=$(json_field "$T/verify.json" cancelled)
[ "$records" -eq "$tasks" ] || fail "$records terminal records for $tasks tasks"
# Builds pinned to the lost agent end cancelled; every other task succeeds.
[ $((succeeded + cancelled)) -eq "$tasks" ] || fail "$succeeded succeeded + $cancelled cancelled of $tasks"
[ "$requeued" -ge 1 ] || fail "no attempt was requeued"
grep -q 'agent.lost.*agent=victim' "$T/serve.log" || fail "coordinator did not log the loss"
pass "sweep $id complete: $tasks tasks, $records records, $requeued requeued, 0 violations"

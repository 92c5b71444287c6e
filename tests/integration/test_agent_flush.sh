#!/usr/bin/env bash
# An agent stopped (SIGTERM, as `kfleet teardown` does) while it holds a
# result the coordinator has not acked sends its outbox once more and waits
# for the ack before exiting: the task ends with that result, not requeued.
source "$(dirname "$0")/lib.sh"

start_serve --heartbeat-timeout 20s --heartbeat-interval 250ms
start_agent a1
A1=$AGENT_PID
wait_agents 1
"$KFLEET" submit "$KF_SRC/tests/data/sweeps/slow60.yaml" >"$T/submit.out" || fail "submit"
id=$(grep -o 'submitted sweep [0-9]*' "$T/submit.out" | awk '{print $3}')
for _ in $(seq 1 400); do
  grep -q 'runner.start.*kind=profile' "$T/agent-a1.log" 2>/dev/null && break
  sleep 0.05
done
grep -q 'runner.start.*kind=profile' "$T/agent-a1.log" || fail "a1 never started a profile"
# The coordinator freezes: what a1 finishes now stays unacked in its outbox.
# Wait for the profile seen starting to end, not for any runner.end: a task
# that ended before the freeze (its result already acked) would leave
# nothing to flush.
ptask=$(grep 'runner.start.*kind=profile' "$T/agent-a1.log" | head -1 | grep -o 'task=0x[0-9a-f]*')
kill -STOP "$SERVE_PID"
grep -q "task.result $ptask " "$T/serve.log" && fail "the profile $ptask ended before the coordinator froze (min_time too short?)"
for _ in $(seq 1 100); do
  grep -q "runner.end $ptask " "$T/agent-a1.log" && break
  sleep 0.05
done
grep -q "runner.end $ptask " "$T/agent-a1.log" || fail "the profile $ptask did not end while the coordinator was frozen"
kill -TERM "$A1"
sleep 1
kill -CONT "$SERVE_PID"
for _ in $(seq 1 100); do
  kill -0 "$A1" 2>/dev/null || break
  sleep 0.1
done
kill -0 "$A1" 2>/dev/null && fail "a1 did not exit within 10 s of SIGTERM"
grep -F ' agent.flush ' "$T/agent-a1.log" | grep -q 'left=0' ||
  fail "a1 did not flush its outbox: $(grep -E 'agent.(flush|stop)' "$T/agent-a1.log")"
line=$(grep -F ' agent.flush ' "$T/agent-a1.log" | sed 's/.* agent.flush //')
acked=$(echo "$line" | grep -o 'acked=[0-9]*' | cut -d= -f2)
[ "$acked" -ge 1 ] || fail "nothing was acked during the flush: $line"
grep -F ' agent.stop ' "$T/agent-a1.log" | grep -q 'outbox=0' || fail "a1 stopped with entries in its outbox"
pass "SIGTERM with an unacked result: flushed ($line), then exited"

# The sweep finishes on a second agent; the flushed result was kept, so no
# task of a1's was requeued for want of it.
start_agent a2
"$KFLEET" submit "$KF_SRC/tests/data/sweeps/tiny.yaml" --follow >"$T/follow.out" 2>&1 || fail "the second sweep failed: $(tail -3 "$T/follow.out")"
for _ in $(seq 1 600); do
  "$KFLEET" status --format json >"$T/status.json" 2>/dev/null || true
  if grep -A12 "\"sweep_id\": $id," "$T/status.json" | grep -q '"finished": true'; then break; fi
  sleep 0.1
done
"$KFLEET" verify "$id" --format json >"$T/verify.json" || fail "verify violations"
pass "sweep $id complete and verified after the agent's clean stop"

#!/usr/bin/env bash
# The coordinator SIGKILLed mid-sweep, several times, at random moments
# while agents stream hundreds of samples a second (so kills land inside
# and between group commits), and restarted on the same home each time:
# it resumes from LMDB, the agents reconnect and resend their outboxes, the
# sweep completes, and the store holds exactly one terminal record per task
# and every sample exactly once.
# KF_SEED=N replays a run's kill times (the seed is printed).
source "$(dirname "$0")/lib.sh"

SEED=${KF_SEED:-$(( $(date +%s) % 32768 ))}
RANDOM=$SEED
echo "# seed $SEED (rerun with KF_SEED=$SEED)"
KILLS=${KF_KILLS:-6}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
PORT=$(free_port)
BIND="tcp://127.0.0.1:$PORT"
SERVE_ARGS=(--bind "$BIND" --heartbeat-timeout 3s --heartbeat-interval 250ms)

# restart_serve: a new coordinator on the same home and port; the endpoint
# file a killed one left behind is removed first so that we wait for the
# new one's.
restart_serve() {
  rm -f "$KFLEET_HOME/run/agent-endpoint"
  "$KFLEET" --log-level debug serve "${SERVE_ARGS[@]}" >>"$T/serve.out" 2>>"$T/serve.log" &
  SERVE_PID=$!
  PIDS+=("$SERVE_PID")
  for _ in $(seq 1 200); do
    [ -s "$KFLEET_HOME/run/agent-endpoint" ] && return 0
    kill -0 "$SERVE_PID" 2>/dev/null || fail "kfleet serve exited at restart"
    sleep 0.05
  done
  fail "restarted coordinator never wrote its endpoint"
}

start_serve "${SERVE_ARGS[@]}"
for a in c1 c2 c3; do start_agent "$a" --coordinator "$BIND"; done
wait_agents 3
"$KFLEET" submit "$KF_SRC/tests/chaos/sweeps/coordkill-long.yaml" >"$T/submit.out" || fail "submit"
id=$(grep -o 'submitted sweep [0-9]*' "$T/submit.out" | awk '{print $3}')
[ -n "$id" ] || fail "no sweep id"

# Wait until samples flow, then kill at random points 0.3-1.8 s apart.
for _ in $(seq 1 200); do
  grep -q 'runner.start.*kind=profile' "$T"/agent-c*.log 2>/dev/null && break
  sleep 0.05
done
killed=0
for k in $(seq 1 "$KILLS"); do
  sleep "$(printf '0.%03d' $((RANDOM % 1000)))"
  sleep "$(( RANDOM % 2 )).$(( RANDOM % 10 ))"
  if "$KFLEET" verify "$id" --format json >"$T/v.json" 2>"$T/v.err"; then
    break # finished before all kills were spent
  fi
  grep -q '"terminal"' "$T/v.json" || fail "verify printed no summary mid-sweep: $(head -c 600 "$T/v.err")"
  kill -9 "$SERVE_PID"
  wait "$SERVE_PID" 2>/dev/null || true
  killed=$((killed + 1))
  done_now=$(json_field "$T/v.json" terminal)
  echo "# kill $k: coordinator SIGKILLed with $done_now tasks ended"
  echo "=== coordinator SIGKILLed ($k) ===" >>"$T/serve.log"
  sleep "0.$((RANDOM % 5))"
  restart_serve
done
[ "$killed" -ge 3 ] || fail "the sweep ended after only $killed kills; make the load larger"
pass "coordinator SIGKILLed $killed times mid-sweep and restarted"

# The sweep completes: every task ends, seen from the store itself.
ok=0
for _ in $(seq 1 900); do
  if "$KFLEET" verify "$id" --format json >"$T/verify.json" 2>"$T/verify.err"; then
    ok=1
    break
  fi
  sleep 0.1
done
[ $ok -eq 1 ] || { cat "$T/verify.json" "$T/verify.err" >&2; fail "sweep did not complete with 0 violations"; }
tasks=$(json_field "$T/verify.json" tasks)
records=$(json_field "$T/verify.json" terminal_records)
succeeded=$(json_field "$T/verify.json" succeeded)
profiles=$(json_field "$T/verify.json" profiles)
samples=$(json_field "$T/verify.json" samples)
[ "$tasks" -ge 600 ] || fail "only $tasks tasks"
[ "$records" -eq "$tasks" ] || fail "$records terminal records for $tasks tasks"
[ "$succeeded" -eq "$tasks" ] || fail "$succeeded of $tasks succeeded"
[ "$profiles" -eq 300 ] || fail "$profiles successful profiles, expected 300"
# A terminal result that an agent resent after a restart (the coordinator
# committed it but died before the ack) stored a second time is a verify
# violation (its own terminal record stored again as late), which the loop
# above would not have passed. A late record may only be the result of an
# attempt the restarted coordinator superseded: one whose agent did not
# confirm it within the assignment grace (a loaded machine's agents can
# take longer to re-register), requeued and run again.
late=$(json_field "$T/verify.json" late_results)
requeued=$(json_field "$T/verify.json" requeued)
[ "$late" -le "$requeued" ] || fail "$late late records but $requeued requeued attempts: results stored twice"
pass "verify: $tasks tasks, $records terminal records, $samples samples, $late late of $requeued requeued, 0 violations"

# The agents did resend after restarts, and the coordinator resumed.
grep -q 'coordinator.resume' "$T/serve.log" || fail "no coordinator.resume in the log"
grep -q 'agent.reregister' "$T"/agent-c*.log || fail "no agent re-registered"
# Nothing was stored twice: the store's own record counts agree with verify
# (samples are keyed (task, attempt, seq) so a duplicate would be an extra
# key, which verify's per-attempt count would show as "extra").
dump_count() { mdb_dump -s "$1" "$KFLEET_HOME/state/store" 2>/dev/null | grep -c '^ ' || true; }
stored_results=$(dump_count results)
[ $((stored_results / 2)) -eq "$tasks" ] || fail "results table holds $((stored_results / 2)) records for $tasks tasks"
pass "results table: one record per task ($tasks)"
"$KFLEET" stop >/dev/null 2>&1 || true

#!/usr/bin/env bash
# The coordinator dies in the one window a random kill rarely hits: right
# after a commit, before anything of that turn is sent (no acks, no
# assignments). KF_TEST_CRASH_AFTER_COMMITS=N makes it SIGKILL itself after
# its Nth commit; it is restarted on the same home and port, five times at
# different N. The agents resend what the store already holds: every resend
# must be acked without being stored again (0 late records, one result per
# task, every sample once), and the sweep completes.
source "$(dirname "$0")/lib.sh"

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
BIND="tcp://127.0.0.1:$PORT"
SERVE_ARGS=(--bind "$BIND" --heartbeat-timeout 5s --heartbeat-interval 250ms)
ENDPOINT=$BIND

serve_crashing() { # N: a coordinator that dies after its Nth commit (0: never)
  rm -f "$KFLEET_HOME/run/agent-endpoint"
  KF_TEST_CRASH_AFTER_COMMITS=$1 "$KFLEET" --log-level debug serve "${SERVE_ARGS[@]}" \
    >>"$T/serve.out" 2>>"$T/serve.log" &
  SERVE_PID=$!
  PIDS+=("$SERVE_PID")
  for _ in $(seq 1 200); do
    [ -s "$KFLEET_HOME/run/agent-endpoint" ] && return 0
    kill -0 "$SERVE_PID" 2>/dev/null || return 0 # crashed already
    sleep 0.05
  done
  fail "coordinator never wrote its endpoint"
}

serve_crashing 0
for a in c1 c2 c3; do start_agent "$a" --coordinator "$BIND"; done
wait_agents 3
"$KFLEET" submit "$KF_SRC/tests/chaos/sweeps/coordkill.yaml" >"$T/submit.out" || fail "submit"
id=$(grep -o 'submitted sweep [0-9]*' "$T/submit.out" | awk '{print $3}')
for _ in $(seq 1 200); do
  grep -q 'runner.start.*kind=profile' "$T"/agent-c*.log 2>/dev/null && break
  sleep 0.05
done
crashes=0
for n in 25 40 15 60 30; do
  kill -9 "$SERVE_PID" 2>/dev/null || true
  wait "$SERVE_PID" 2>/dev/null || true
  serve_crashing "$n"
  for _ in $(seq 1 300); do
    kill -0 "$SERVE_PID" 2>/dev/null || break
    sleep 0.05
  done
  kill -0 "$SERVE_PID" 2>/dev/null && break # the sweep ended before commit $n
  crashes=$((crashes + 1))
done
grep -c 'coordinator.test_crash' "$T/serve.log" | grep -qx "$crashes" ||
  fail "$crashes crashes expected in the log, found $(grep -c 'coordinator.test_crash' "$T/serve.log")"
[ "$crashes" -ge 3 ] || fail "only $crashes crashes after a commit before the sweep ended"
kill -9 "$SERVE_PID" 2>/dev/null || true
wait "$SERVE_PID" 2>/dev/null || true
serve_crashing 0
pass "coordinator died right after a commit, before sending, $crashes times"

ok=0
for _ in $(seq 1 900); do
  if "$KFLEET" verify "$id" --format json >"$T/verify.json" 2>/dev/null; then ok=1; break; fi
  sleep 0.1
done
[ $ok -eq 1 ] || { cat "$T/verify.json" >&2; fail "sweep did not complete with 0 violations"; }
tasks=$(json_field "$T/verify.json" tasks)
records=$(json_field "$T/verify.json" terminal_records)
late=$(json_field "$T/verify.json" late_results)
samples=$(json_field "$T/verify.json" samples)
[ "$records" -eq "$tasks" ] || fail "$records terminal records for $tasks tasks"
[ "$late" -eq 0 ] || fail "$late late records: results the store held were stored again"
# The agents did resend what was committed but unacked.
grep -q 'agent.reregister' "$T"/agent-c*.log || fail "no agent re-registered"
pass "verify: $tasks tasks, $records terminal records, $samples samples, 0 late, 0 violations"
"$KFLEET" stop >/dev/null 2>&1 || true

#!/usr/bin/env bash
# An agent never goes quiet about its coordinator (issue 11): started with
# none there it says so within seconds, and again each minute; when the
# coordinator comes it says it is back; `kfleet stop` is logged as the
# coordinator lost, at once; and a coordinator back on the same port is
# found again, the agent re-registers.
source "$(dirname "$0")/lib.sh"

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
EP="tcp://127.0.0.1:$PORT"
"$KFLEET" init >/dev/null # the home's coordinator key, so the agent enrolls itself
"$KFAGENT" --coordinator "$EP" --workdir "$T/agents/a1" --name a1 --log-level debug \
  2>>"$T/agent-a1.log" &
PIDS+=("$!")
for _ in $(seq 1 300); do
  grep -q 'agent.no_coordinator' "$T/agent-a1.log" && break
  sleep 0.1
done
grep -q "agent.no_coordinator coordinator=$EP" "$T/agent-a1.log" ||
  fail "no word about the missing coordinator after 30 s"
pass "no coordinator: $(grep -o 'agent.no_coordinator.*' "$T/agent-a1.log" | head -1 | cut -c1-100)"

start_serve --bind "$EP"
wait_agents 1
for _ in $(seq 1 100); do
  grep -q 'agent.coordinator_back' "$T/agent-a1.log" && break
  sleep 0.1
done
grep -q 'agent.coordinator_back' "$T/agent-a1.log" || fail "the agent did not say the coordinator came"
pass "the coordinator came: said, and the agent registered"

"$KFLEET" stop >/dev/null
wait "$SERVE_PID" 2>/dev/null || true
for _ in $(seq 1 100); do
  grep -q 'agent.coordinator_lost' "$T/agent-a1.log" && break
  sleep 0.1
done
grep -q "agent.coordinator_lost coordinator=$EP" "$T/agent-a1.log" ||
  fail "kfleet stop went unnoticed by the agent: $(tail -3 "$T/agent-a1.log")"
pass "kfleet stop: the agent says it lost the coordinator"

start_serve --bind "$EP"
wait_agents 1
pass "a coordinator back on the same port: the agent registers again"

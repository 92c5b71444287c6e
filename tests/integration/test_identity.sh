#!/usr/bin/env bash
# One agent cannot lock another out (issues 11 and 19): a second
# kfleet-agent on the same host and home, with its own work dir (so its own
# key) but the name of a running agent, is refused with a message naming the
# conflict and exits 1; it neither replaces the running agent's key in
# agents.allow nor takes its connection, and the running agent keeps
# working: no agent.lost/agent.back flapping, a sweep completes on it.
source "$(dirname "$0")/lib.sh"

start_serve --heartbeat-interval 250ms
start_agent vm-0
FIRST=$AGENT_PID
wait_agents 1
allow="$KFLEET_HOME/state/keys/agents.allow"
before=$(cat "$allow")
key0=$(grep -o "agent.enrolled agent=vm-0 key=[^ ]*" "$T/agent-vm-0.log" | sed "s/.*key=//")
[ -n "$key0" ] || fail "vm-0 did not enroll"

# The newcomer: same home, same name, another work dir (another key).
set +e
timeout 30 "$KFAGENT" --coordinator "$ENDPOINT" --workdir "$T/agents/other" --name vm-0 \
  --log-level debug >"$T/second.out" 2>"$T/second.log"
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "the second vm-0 exited $rc, not 2 (bad input: its --name; timeout: 124)"
grep -q 'already enrolled' "$T/second.log" || fail "the refusal does not name the conflict: $(tail -3 "$T/second.log")"
grep -q 'vm-0' "$T/second.log" || fail "the refusal does not name the agent"
[ "$(cat "$allow")" = "$before" ] || fail "agents.allow changed: $(cat "$allow")"
grep -qF -- "$key0" "$allow" || fail "the running agent's key left agents.allow"
pass "a second vm-0 (own work dir) is refused at enrolment, exit 2 (its --name is the bad input); agents.allow unchanged"

# Enrolled by hand under its own name, it still may not register as vm-0:
# the coordinator refuses the id (bound to vm-0's key) and the agent exits.
key1=$("$KFAGENT" --show-key --workdir "$T/agents/other")
"$KFLEET" agent-key add "$key1" other-box >/dev/null
set +e
timeout 30 "$KFAGENT" --coordinator "$ENDPOINT" --workdir "$T/agents/other" --name vm-0 \
  --server-key "$KFLEET_HOME/state/keys/coordinator.pub" --log-level debug \
  >"$T/third.out" 2>"$T/third.log"
rc=$?
set -e
[ "$rc" -eq 1 ] || fail "the impostor vm-0 exited $rc, not 1"
grep -q 'bound to another key' "$T/third.log" || fail "no identity refusal: $(tail -3 "$T/third.log")"
grep -q 'agent.impostor agent=vm-0' "$T/serve.log" || fail "the coordinator did not log the impostor"
pass "a second key asking for vm-0 is refused by the coordinator (agent.impostor), exit 1"

kill -0 "$FIRST" || fail "the running vm-0 died"
if grep -qE 'agent.lost agent=vm-0|agent.back agent=vm-0' "$T/serve.log"; then
  fail "vm-0 flapped: $(grep -cE 'agent.(lost|back) agent=vm-0' "$T/serve.log") lost/back lines"
fi
"$KFLEET" submit "$KF_SRC/tests/data/sweeps/tiny.yaml" --follow >"$T/follow.out" 2>&1 ||
  fail "the sweep on the running vm-0 did not complete: $(tail -3 "$T/follow.out")"
pass "the running vm-0 never lost its link and completed a sweep"

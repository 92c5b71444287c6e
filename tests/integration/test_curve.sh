#!/usr/bin/env bash
# The agent link is CurveZMQ: an agent whose key the coordinator does not
# accept is refused at the handshake and logged with its key and address,
# and nothing of it reaches the store; `kfleet agent-key add` lets it in;
# `kfleet agent-key revoke` cuts it off at once (lost, its tasks requeued)
# while the sweep completes on the others. Secrets never reach a log.
source "$(dirname "$0")/lib.sh"

# `kfleet init` before any coordinator: makes the key pair and prints it.
"$KFLEET" init >"$T/init.out" || fail "kfleet init"
pub=$(awk '/^coordinator key:/ {print $3}' "$T/init.out")
[ ${#pub} -eq 40 ] || fail "init printed no 40-character key: $(cat "$T/init.out")"
keys="$KFLEET_HOME/state/keys"
[ "$(stat -c %a "$keys/coordinator.key")" = 600 ] || fail "coordinator.key is not 0600"
[ "$(stat -c %a "$keys")" = 700 ] || fail "keys dir is not 0700"
[ "$(cat "$keys/coordinator.pub")" = "$pub" ] || fail "coordinator.pub differs from init's key"
"$KFLEET" init >"$T/init2.out"
grep -qxF "coordinator key: $pub" "$T/init2.out" || fail "a second init changed the key"
pass "init: key pair 0600 in a 0700 dir, public key $pub, stable"

start_serve --heartbeat-timeout 3s --heartbeat-interval 250ms
grep -qF -- "$pub" "$T/serve.out" || fail "serve does not print its public key"
# Only the owner reaches the control socket and reads the store.
[ "$(stat -c %a "$KFLEET_HOME/run")" = 700 ] || fail "run dir (control socket) is not 0700"
[ -S "$KFLEET_HOME/run/control.sock" ] || fail "no control socket"
for f in "$KFLEET_HOME"/state/store/*.mdb; do
  [ "$(stat -c %a "$f")" = 600 ] || fail "$f is not 0600"
done
pass "control socket in a 0700 dir, store files 0600"

# An agent of this home enrolls itself.
start_agent home1
wait_agents 1
grep -q 'agent.enrolled.*agent=home1' "$T/agent-home1.log" || fail "home1 did not enroll"
pass "an agent sharing the home enrolled and registered"

# A stranger: its own home (so it cannot enroll), the right server key.
mkdir -p "$T/stranger-home"
KFLEET_HOME="$T/stranger-home" "$KFAGENT" --show-key --workdir "$T/agents/stranger" >"$T/stranger.pub" ||
  fail "--show-key"
spub=$(cat "$T/stranger.pub")
[ ${#spub} -eq 40 ] || fail "--show-key printed '$spub'"
[ "$(stat -c %a "$T/agents/stranger/agent.key")" = 600 ] || fail "agent.key is not 0600"
KFLEET_HOME="$T/stranger-home" start_agent stranger --server-key "$keys/coordinator.pub"
STRANGER=$AGENT_PID
for _ in $(seq 1 100); do
  grep auth.refused "$T/serve.log" | grep -qF "key=$spub" && break
  sleep 0.1
done
grep auth.refused "$T/serve.log" | grep -F "key=$spub" | grep -q "address=127.0.0.1" ||
  fail "the coordinator did not log the refused key with its address"
for _ in $(seq 1 50); do
  grep -q 'agent.auth_refused' "$T/agent-stranger.log" && break
  sleep 0.1
done
grep agent.auth_refused "$T/agent-stranger.log" | grep -qF "key=$spub" ||
  fail "the refused agent does not say why"
sleep 0.5
"$KFLEET" status --format json >"$T/status.json"
grep -q '"stranger"' "$T/status.json" && fail "a refused agent reached the coordinator"
pass "unknown key refused at the handshake, logged with key and address; not registered"

# A wrong server key: the handshake cannot complete either.
"$KFAGENT" --show-key --workdir "$T/bogus" >"$T/bogus.pub"
KFLEET_HOME="$T/stranger-home" start_agent impostor --server-key "$(cat "$T/bogus.pub")"
# However long its start-up takes here, it has tried once it logs the failure.
for _ in $(seq 1 600); do grep -q 'agent.handshake_failed' "$T/agent-impostor.log" && break; sleep 0.1; done
grep -q 'agent.handshake_failed' "$T/agent-impostor.log" ||
  fail "the agent with a wrong server key did not report a failed handshake within 60 s"
"$KFLEET" status --format json | grep -q '"impostor"' && fail "an agent with a wrong server key registered"
pass "an agent with the wrong server key does not get in"

# Accepted: the stranger registers without a restart.
"$KFLEET" agent-key add "$T/agents/stranger/agent.key" stranger >"$T/add.out" || fail "agent-key add"
"$KFLEET" agent-key list --format json | grep -qF -- "$spub" || fail "list does not show the added key"
wait_agents 2
pass "after agent-key add the stranger registered"

# Bad usage is refused with exit 2, and nothing changes.
set +e
"$KFLEET" agent-key add not-a-key someone 2>"$T/bad.err"
rc=$?
set -e
[ $rc -eq 2 ] || fail "agent-key add with a bad key exited $rc, not 2"
grep -q 'neither a Z85 key' "$T/bad.err" || fail "bad key message: $(cat "$T/bad.err")"

# Revoked mid-sweep: lost at once, its tasks requeued, the sweep completes.
# Profiles of at least 1 s, so that the revoke (a CLI start, under a loaded
# suite sometimes longer than slow60's 0.25 s profile) lands while the
# profile the test saw start still runs.
cat >"$T/slow1s.yaml" <<'EOF'
name: slow1s
kernels:
  - name: triad
    params:
      n: {from: 16K, to: 160K, step: 16K}
tasks: [validate, profile]
measure: {min_samples: 5, min_time: 1s, precision: 50, timeout: 3s, seeds: 1}
EOF
"$KFLEET" submit "$T/slow1s.yaml" >"$T/submit.out" || fail "submit"
id=$(grep -o 'submitted sweep [0-9]*' "$T/submit.out" | awk '{print $3}')
for _ in $(seq 1 400); do
  grep -q 'runner.start.*kind=profile' "$T/agent-stranger.log" 2>/dev/null && break
  sleep 0.05
done
grep -q 'runner.start.*kind=profile' "$T/agent-stranger.log" || fail "stranger never ran a profile"
t0=$(date +%s%N)
"$KFLEET" agent-key revoke stranger >/dev/null || fail "revoke"
for _ in $(seq 1 40); do
  grep -q 'agent.lost.*agent=stranger' "$T/serve.log" && break
  sleep 0.05
done
grep -q 'agent.lost.*agent=stranger' "$T/serve.log" || fail "revoked agent not lost within 2 s"
ms=$((($(date +%s%N) - t0) / 1000000))
grep -q 'agent.revoked.*agent=stranger' "$T/serve.log" || fail "no agent.revoked log line"
pass "revoked agent lost after ${ms} ms (heartbeat timeout is 3 s)"

for _ in $(seq 1 600); do
  "$KFLEET" status --format json >"$T/status.json" 2>/dev/null || true
  if grep -A12 "\"sweep_id\": $id," "$T/status.json" | grep -q '"finished": true'; then break; fi
  sleep 0.1
done
"$KFLEET" verify "$id" --format json >"$T/verify.json" || fail "verify violations"
requeued=$(json_field "$T/verify.json" requeued)
[ "$requeued" -ge 1 ] || fail "the revoked agent's attempt was not requeued"
grep frame_refused "$T/serve.log" | grep -qF "key=$spub" || fail "the revoked agent's later frames were not refused"
pass "sweep $id completed without the revoked agent ($requeued requeued), verify clean"

# No secret key in any log or output.
sec=$(sed -n 2p "$keys/coordinator.key")
ssec=$(sed -n 2p "$T/agents/stranger/agent.key")
for f in "$T"/*.log "$T"/*.out; do
  grep -qF -- "$sec" "$f" && fail "the coordinator's secret key is in $f"
  grep -qF -- "$ssec" "$f" && fail "an agent's secret key is in $f"
done
pass "no secret key in any log"
kill "$STRANGER" 2>/dev/null || true

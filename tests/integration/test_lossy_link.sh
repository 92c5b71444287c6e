#!/usr/bin/env bash
# A whole sweep over a lossy link: the only agent lives in its own network
# namespace whose link drops 10% of packets each way (nftables) and delays
# each direction by 200 ms (a relay, tests/chaos/delayproxy.py: this kernel
# has no sch_netem). The sweep completes, every task succeeds once, every
# sample is stored exactly once.
source "$(dirname "$0")/lib.sh"
source "$KF_SRC/tests/chaos/netns.sh"

netns_up
PORT=$(free_port)
start_serve --bind "tcp://$NS_HOST_IP:$PORT" --heartbeat-timeout 6s --heartbeat-interval 500ms
# The relay runs inside the namespace, so its upstream leg crosses the lossy veth.
ip netns exec "$NS" python3 "$KF_SRC/tests/chaos/delayproxy.py" 127.0.0.1 "$PORT" "$NS_HOST_IP" "$PORT" 200 \
  >"$T/proxy.log" 2>&1 &
PIDS+=("$!")
for _ in $(seq 1 50); do grep -q delayproxy "$T/proxy.log" && break; sleep 0.1; done
netns_lossy 10
ip netns exec "$NS" "$KFAGENT" --coordinator "tcp://127.0.0.1:$PORT" --workdir "$T/agents/lossy" \
  --name lossy --log-level debug 2>>"$T/agent-lossy.log" &
PIDS+=("$!")
wait_agents 1
pass "agent registered over a link with 10% loss and 200 ms delay each way"

start=$(date +%s)
timeout 240 "$KFLEET" submit "$KF_SRC/tests/chaos/sweeps/lossy.yaml" --follow >"$T/submit.out" 2>"$T/follow.log" \
  || fail "sweep over the lossy link failed: $(tail -3 "$T/follow.log")"
id=$(grep -o 'submitted sweep [0-9]*' "$T/submit.out" | awk '{print $3}')
secs=$(( $(date +%s) - start ))
"$KFLEET" verify "$id" --format json >"$T/verify.json" || fail "verify: $(cat "$T/verify.json")"
tasks=$(json_field "$T/verify.json" tasks)
[ "$(json_field "$T/verify.json" terminal_records)" -eq "$tasks" ] || fail "terminal records != tasks"
[ "$(json_field "$T/verify.json" succeeded)" -eq "$tasks" ] || fail "not every task succeeded"
samples=$(json_field "$T/verify.json" samples)
# The link really was lossy: nft counted drops.
drops=$(ns_exec nft list ruleset | grep -o 'packets [0-9]*' | awk '{s+=$2} END {print s+0}')
[ "$drops" -ge 1 ] || fail "the link dropped no packet"
pass "sweep $id over the lossy link in ${secs} s ($drops packets dropped): $tasks tasks, $samples samples, 0 violations"

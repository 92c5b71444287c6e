#!/usr/bin/env bash
# The relay keeps agents coming in under a flood (issue 31): `kfleet relay`,
# run as a Slurm launch runs it but under `ulimit -n 256`, takes 500 idle
# TCP connections from ten source addresses, each reopened as soon as the
# relay closes it, while a real agent registers with a real coordinator
# through it, within 5 s of its start. The relay stays up, says what it
# shed, and never listens on a wildcard address it was not given.
# Loopback only; every loop is bounded.
source "$(dirname "$0")/lib.sh"

start_serve
port=${ENDPOINT##*:}

# Not on every address unless asked.
"$KFLEET" relay --listen "0.0.0.0:0" --to "127.0.0.1:$port" 2>"$T/any.err" &&
  fail "the relay listened on 0.0.0.0 without --any-address"
grep -q -- "--any-address" "$T/any.err" || fail "no word on --any-address: $(cat "$T/any.err")"

(ulimit -n 256 && exec "$KFLEET" relay --listen 127.0.0.1:0 --to "127.0.0.1:$port" \
  --port-file "$T/relay.port") 2>"$T/relay.log" &
RELAY=$!
PIDS+=("$RELAY")
for _ in $(seq 1 100); do [ -s "$T/relay.port" ] && break; sleep 0.05; done
rport=$(cat "$T/relay.port")
[ -n "$rport" ] || fail "the relay wrote no port"

: >"$T/flood.out"
python3 "$(dirname "$0")/flood.py" "$rport" "$T/stop" 500 10 >"$T/flood.out" 2>&1 &
FLOOD=$!
PIDS+=("$FLOOD")
for _ in $(seq 1 100); do grep -q "idle connections" "$T/flood.out" && break; sleep 0.1; done
grep -q "idle connections open: 500" "$T/flood.out" || fail "no flood: $(cat "$T/flood.out")"
sleep 1 # the relay is full of them now

"$KFAGENT" --coordinator "tcp://127.0.0.1:$rport" --workdir "$T/agents/a" --name a \
  --log-level debug 2>>"$T/agent-a.log" &
PIDS+=($!)
wait_agents 1
touch "$T/stop"
wait "$FLOOD" || true
sed 's/^/# /' "$T/flood.out"
# From the agent's start to its welcome, by the agent's own clock.
ms() { date -d "$(sed 's/ .*//' <<<"$1")" +%s%3N; }
t0=$(grep -m1 "agent.start" "$T/agent-a.log") || fail "no agent.start"
t1=$(grep -m1 "agent.registered" "$T/agent-a.log") || fail "no agent.registered"
took=$(($(ms "$t1") - $(ms "$t0")))
echo "# the agent registered through the flooded relay in $took ms"
[ "$took" -le 5000 ] || fail "the agent took $took ms to register through the relay (want <= 5000)"
kill -0 "$RELAY" 2>/dev/null || fail "the relay died under the flood"
grep "relay.shed" "$T/relay.log" | tail -n 1 | sed 's/^/# /'
grep -Eq "relay.shed .*(silent|per_source|evicted)=[1-9]" "$T/relay.log" || fail "the relay shed nothing"
grep -q "relay.listen .*max_conns=120 " "$T/relay.log" || fail "max_conns not fitted to ulimit -n 256"
grep -q "closed by the server: [1-9]" "$T/flood.out" || fail "no flood connection was closed"
pass "relay under ulimit -n 256 and 500 reopened idle connections: agent registered in $took ms"

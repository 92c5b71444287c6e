#!/usr/bin/env bash
# The coordinator survives running out of descriptors (issue 31): `kfleet
# serve` under `ulimit -n 128` takes 400 idle TCP connections on its agent
# port from ten source addresses, each reopened as soon as it is closed. It
# does not abort (libzmq 4.3.4 asserts when its ipc listener meets EMFILE),
# says what it refused, answers `kfleet status` meanwhile with the agent
# that registered before the flood still there (its key not dropped), and
# lets a new agent register once the flood is over. Loopback only; bounded.
source "$(dirname "$0")/lib.sh"

SERVE_NOFILE=128 start_serve
port=${ENDPOINT##*:}
grep -q "coordinator.start .*fd_limit=128" "$T/serve.log" || fail "not under ulimit -n 128"
start_agent early
wait_agents 1

: >"$T/flood.out"
python3 "$(dirname "$0")/flood.py" "$port" "$T/stop" 400 10 >"$T/flood.out" 2>&1 &
FLOOD=$!
PIDS+=("$FLOOD")
for _ in $(seq 1 100); do grep -q "idle connections" "$T/flood.out" && break; sleep 0.1; done
grep -q "idle connections open: 400" "$T/flood.out" || fail "no flood: $(cat "$T/flood.out")"

# Under the flood: up, answering, the early agent still known and allowed.
# The listen backlog holds about 100 connections and the kernel retries the
# SYNs it dropped after 1, 3, 7 and 15 s, while the coordinator drops a
# connection that has not finished its handshake in 10 s. Under `ulimit -n
# 256` (224 usable: the guard keeps 32) whether enough were ever held at
# once depended on those retries: fresh-clone CI runs saw no refusal in 30 s,
# once in 70 s, and alone it never failed (the cause not proven). Under 128
# (96 usable, some of them the coordinator's own) the first backlog's worth
# is enough. It is waited for (at most 30 s), with `kfleet status` asked each
# second meanwhile.
i=0
while :; do
  i=$((i + 1))
  sleep 1
  kill -0 "$SERVE_PID" 2>/dev/null || fail "kfleet serve died under the flood"
  timeout 20 "$KFLEET" status --format json >"$T/status$i.json" 2>"$T/status$i.err" ||
    fail "kfleet status did not answer under the flood: $(cat "$T/status$i.err")"
  if [ "$i" -ge 3 ] && grep -q "coordinator.fd_shed refused=[1-9]" "$T/serve.log"; then break; fi
  [ "$i" -lt 30 ] || fail "no line says what was refused after 30 s of the flood"
done
grep -q '"early"' "$T/status$i.json" || fail "the early agent is gone from status"
grep -q "agent.revoked" "$T/serve.log" && fail "an allowed agent was dropped under the flood"
grep -m1 "coordinator.fd_shed" "$T/serve.log" | sed 's/^/# /'

touch "$T/stop"
wait "$FLOOD" || true
sed 's/^/# /' "$T/flood.out"
grep -q "closed by the server: [1-9]" "$T/flood.out" || fail "the coordinator closed none of them"
start_agent late
wait_agents 2
kill -0 "$SERVE_PID" 2>/dev/null || fail "kfleet serve died"
pass "serve under ulimit -n 128 and 400 reopened idle connections: up, status answered, early agent kept, late agent registered"

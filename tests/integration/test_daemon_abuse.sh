#!/usr/bin/env bash
# The daemon keeps serving under abuse (issue 20): while a real agent runs a
# real sweep, the agent port takes 500 idle TCP connections, a client that
# sends a ZMTP greeting one byte a second, bursts of random bytes, half
# greetings left hanging, a plaintext (NULL mechanism) ZMTP client and an
# agent whose key is not allowed. The sweep completes, `kfleet verify` finds
# nothing wrong, and the coordinator still answers `kfleet status` while the
# connections are held. Loopback only; every loop is bounded.
source "$(dirname "$0")/lib.sh"

start_serve --heartbeat-interval 0.5s --heartbeat-timeout 5s
port=${ENDPOINT##*:}
start_agent good
wait_agents 1
keys="$KFLEET_HOME/state/keys"

# The abuser: runs until $T/stop exists (at most 120 s), prints what it did.
python3 - "$port" "$T/stop" >"$T/abuse.out" 2>&1 <<'PY' &
import os, random, socket, sys, time
port, stop = int(sys.argv[1]), sys.argv[2]
addr = ("127.0.0.1", port)
t_end = time.time() + 120
# ZMTP 3.0 greeting: signature, version 3.0, mechanism, as-server, filler.
def greeting(mech):
    return (b"\xff" + b"\0" * 8 + b"\x7f" + b"\x03\x00" + mech.ljust(20, b"\0")
            + b"\0" + b"\0" * 31)
idle = []
for _ in range(500):
    s = socket.create_connection(addr, timeout=5)
    idle.append(s)
print(f"idle connections open: {len(idle)}", flush=True)
half = []
for _ in range(20):
    s = socket.create_connection(addr, timeout=5)
    s.sendall(greeting(b"CURVE")[:10])
    half.append(s)
print(f"half greetings left hanging: {len(half)}", flush=True)
slow = socket.create_connection(addr, timeout=5)
slow_bytes = greeting(b"CURVE")
plain_refused = bursts = slow_sent = 0
rnd = random.Random(20)
while time.time() < t_end and not os.path.exists(stop):
    # random bytes, then gone
    s = socket.create_connection(addr, timeout=5)
    try:
        s.sendall(bytes(rnd.getrandbits(8) for _ in range(4096)))
    except OSError:
        pass
    s.close()
    bursts += 1
    # a plaintext client: the server speaks CURVE only, so it hangs up
    s = socket.create_connection(addr, timeout=5)
    try:
        s.sendall(greeting(b"NULL"))
        s.settimeout(5)
        got = b""
        while True:
            b = s.recv(4096)
            if not b:
                plain_refused += 1
                break
            got += b
    except OSError:
        plain_refused += 1
    s.close()
    # a byte a second
    if slow_sent < len(slow_bytes):
        try:
            slow.send(slow_bytes[slow_sent:slow_sent + 1])
            slow_sent += 1
        except OSError:
            pass
    time.sleep(1)
print(f"random-byte bursts: {bursts}; plaintext clients hung up on: {plain_refused}; "
      f"slow greeting bytes sent: {slow_sent}", flush=True)
PY
ABUSER=$!
PIDS+=("$ABUSER")
for _ in $(seq 1 100); do grep -q "half greetings" "$T/abuse.out" && break; sleep 0.1; done
grep -q "idle connections open: 500" "$T/abuse.out" || fail "could not open 500 connections: $(cat "$T/abuse.out")"

# An agent whose key is not allowed (its own home: it cannot enrol).
mkdir -p "$T/stranger-home"
KFLEET_HOME="$T/stranger-home" start_agent stranger --server-key "$keys/coordinator.pub"

# The real work, while all of that goes on.
"$KFLEET" status >/dev/null || fail "kfleet status did not answer under abuse"
"$KFLEET" submit "$KF_SRC/tests/data/sweeps/tiny.yaml" --follow >"$T/submit.out" 2>"$T/follow.log" ||
  fail "the sweep did not complete under abuse: $(tail -3 "$T/follow.log")"
id=$(grep -o 'submitted sweep [0-9]*' "$T/submit.out" | awk '{print $3}')
"$KFLEET" verify "$id" --format json >"$T/v.json" || fail "verify: $(cat "$T/v.json")"
[ "$(json_field "$T/v.json" violations)" -eq 0 ] || fail "violations after abuse"
[ "$(json_field "$T/v.json" succeeded)" -eq "$(json_field "$T/v.json" tasks)" ] || fail "not every task succeeded"
"$KFLEET" status --format json >"$T/status.json" || fail "kfleet status after the sweep"
grep -q '"stranger"' "$T/status.json" && fail "the stranger agent got in"
# The stranger tries once its start-up (doctor, Python probe) is done, which
# may be after the sweep on a loaded machine: wait for its try, not the clock.
for _ in $(seq 1 600); do grep -q "auth.refused" "$T/serve.log" && break; sleep 0.1; done
grep -q "auth.refused" "$T/serve.log" || fail "the stranger's key was not refused within 60 s"
"$KFLEET" status --format json >"$T/status2.json" || fail "kfleet status after the refusal"
grep -q '"stranger"' "$T/status2.json" && fail "the stranger agent got in"
touch "$T/stop"
wait "$ABUSER" || true
cat "$T/abuse.out" | sed 's/^/# /'
grep -q "plaintext clients hung up on: [1-9]" "$T/abuse.out" || fail "no plaintext client was hung up on"
kill -0 "$SERVE_PID" || fail "the coordinator died"
pass "under 500 idle connections, half and slow greetings, random bytes, plaintext and unknown-key clients: sweep $id of $(json_field "$T/v.json" tasks) tasks completed, verify clean, status answered"

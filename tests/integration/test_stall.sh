#!/usr/bin/env bash
# No silent hangs (issue 11): when tasks are pending, none runs and no agent
# can take them, `kfleet run` and `kfleet submit --follow` say why within
# --stall-timeout and exit 1, instead of printing "0/14 done" forever:
#   - kfleet run whose agents cannot start (a broken install): the agents'
#     last words and where the coordinator's log is;
#   - no agent at all; an agent whose key the coordinator refuses (its key
#     named); a CPU agent for a CUDA sweep; every agent lost.
source "$(dirname "$0")/lib.sh"

# run_bounded SECONDS OUT ERR CMD...: the command must end by itself in time.
run_bounded() {
  local limit=$1 out=$2 err=$3
  shift 3
  set +e
  timeout "$limit" "$@" >"$out" 2>"$err"
  RC=$?
  set -e
  [ "$RC" -ne 124 ] || fail "$* still waiting after ${limit}s: $(tail -2 "$err")"
}

# ---- kfleet run, its agents never come up ----
# kfleet beside no kfleet-agent: each agent's exec fails, nothing registers.
mkdir -p "$T/broken"
cp "$KFLEET" "$T/broken/kfleet"
ln -s "$KF_BIN/kernels" "$T/broken/kernels"
run_bounded 60 "$T/run.out" "$T/run.err" "$T/broken/kfleet" --home "$T/h1" run \
  "$KF_SRC/tests/data/sweeps/tiny.yaml" --stall-timeout 3s
[ "$RC" -eq 1 ] || fail "kfleet run with no agents exited $RC, not 1"
grep -q 'nothing can run the .* pending tasks' "$T/run.err" || fail "no stall message: $(cat "$T/run.err")"
grep -q 'no agent has registered' "$T/run.err" || fail "the why is missing: $(cat "$T/run.err")"
grep -q 'cannot exec' "$T/run.err" || fail "the agents' last words are missing: $(cat "$T/run.err")"
grep -q "coordinator's log: .*coordinator.log" "$T/run.err" || fail "no coordinator log named"
[ -s "$T/h1/run/coordinator.log" ] || fail "the coordinator's log is empty or missing"
grep -q 'coordinator.start' "$T/h1/run/coordinator.log" || fail "the coordinator log lacks its start"
pass "kfleet run, agents that never start: exit 1 in bounded time, with the agents' errors and the coordinator's log"

# ---- kfleet run, its agents stuck in their start ----
# An interpreter that never answers the agent's Python probe: the agents
# log nothing and never register. kfleet run shows what each one is
# running (the probe, named by its command line) instead of an empty log.
mkdir -p "$T/stuck"
cat >"$T/stuck/python3" <<'SH'
#!/bin/sh
# Stuck until the agent that started it is gone.
while kill -0 "$PPID" 2>/dev/null; do sleep 0.2; done
SH
chmod +x "$T/stuck/python3"
KF_PYTHON="$T/stuck/python3" run_bounded 60 "$T/stuck.out" "$T/stuck.err" "$KFLEET" \
  --home "$T/h-stuck" run "$KF_SRC/tests/data/sweeps/tiny.yaml" --stall-timeout 3s
[ "$RC" -eq 1 ] || fail "kfleet run with stuck agents exited $RC, not 1"
grep -q 'agent-0 never registered and is still running' "$T/stuck.err" ||
  fail "the stuck agent is not described: $(cat "$T/stuck.err")"
grep -q "pid [0-9]*, state ., started [0-9]* s ago.*: kfleet-agent --coordinator" "$T/stuck.err" ||
  fail "the agent's own process is not shown: $(cat "$T/stuck.err")"
grep -q "^      pid [0-9]*, state .*: /bin/sh $T/stuck/python3 -c " "$T/stuck.err" ||
  fail "the probe it waits for is not shown: $(cat "$T/stuck.err")"
pass "kfleet run, agents stuck in their start: each one's processes shown, the probe named"

# ---- submit --follow against a daemon ----
start_serve --heartbeat-interval 250ms --heartbeat-timeout 1s
run_bounded 60 "$T/f1.out" "$T/f1.err" "$KFLEET" submit "$KF_SRC/tests/data/sweeps/tiny.yaml" \
  --follow --stall-timeout 2s
[ "$RC" -eq 1 ] || fail "submit --follow with no agent exited $RC"
grep -q 'no agent has registered with this coordinator (none has connected' "$T/f1.err" ||
  fail "no-agent why: $(cat "$T/f1.err")"
pass "no agent: $(grep -o 'nothing can run.*' "$T/f1.err" | head -c 150)"

# An agent whose key is not accepted (given the server key, it does not
# enroll itself): the refusal and the key are the why.
"$KFAGENT" --coordinator "$ENDPOINT" --workdir "$T/agents/stranger" --name stranger \
  --server-key "$KFLEET_HOME/state/keys/coordinator.pub" 2>"$T/agent-stranger.log" &
STRANGER=$!
PIDS+=("$STRANGER")
skey=""
for _ in $(seq 1 100); do
  skey=$(grep -o 'agent.start .* key=[^ ]*' "$T/agent-stranger.log" 2>/dev/null | sed 's/.*key=//' || true)
  [ -n "$skey" ] && break
  sleep 0.1
done
[ -n "$skey" ] || fail "the stranger agent did not start"
run_bounded 60 "$T/f2.out" "$T/f2.err" "$KFLEET" submit "$KF_SRC/tests/data/sweeps/tiny.yaml" \
  --follow --stall-timeout 2s
[ "$RC" -eq 1 ] || fail "submit --follow with a refused agent exited $RC"
grep -qF "refused" "$T/f2.err" && grep -qF -- "$skey" "$T/f2.err" ||
  fail "the refused key is not named: $(cat "$T/f2.err")"
kill "$STRANGER" 2>/dev/null || true
pass "a refused agent: the refusal and its key named"

# A CPU agent and a CUDA sweep.
start_agent cpu1
wait_agents 1
cat >"$T/cuda.yaml" <<YAML
name: needs-a-gpu
kernels:
  - path: $KF_SRC/kernels/cuda/copy.cu
    params: {bytes: [1M]}
tasks: [validate]
YAML
run_bounded 60 "$T/f3.out" "$T/f3.err" "$KFLEET" submit "$T/cuda.yaml" --follow --stall-timeout 2s
[ "$RC" -eq 1 ] || fail "a CUDA sweep on CPU agents exited $RC"
grep -q 'has a GPU slot' "$T/f3.err" || fail "no GPU why: $(cat "$T/f3.err")"
pass "CUDA kernels and CPU agents only: said"

# Every agent lost.
kill -9 "$AGENT_PID"
run_bounded 60 "$T/f4.out" "$T/f4.err" "$KFLEET" submit "$KF_SRC/tests/data/sweeps/tiny.yaml" \
  --follow --stall-timeout 2s
[ "$RC" -eq 1 ] || fail "all agents lost exited $RC"
grep -q 'agents are gone (1 lost' "$T/f4.err" || fail "lost why: $(cat "$T/f4.err")"
pass "every agent lost: said, with the last one heard from"

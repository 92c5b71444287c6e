#!/usr/bin/env bash
# bench/gpu/facts.sh W — issue 13's node facts and CUDA forward
# compatibility on a real GPU (bench/gpu/run.sh facts): a `kfleet serve`
# with three agents on this machine's GPU:
#   gpu      as the machine is (its Python: torch, and whether torch sees
#            the GPU);
#   compat   KF_DRIVER_CUDA=12.8 (a driver older than the CUDA 13 toolkit,
#            simulated) with the toolkit's forward-compat libraries, when
#            the machine has them (/usr/local/cuda-13.0/compat): used when
#            they come from a newer driver branch than the node's, refused
#            up front when not (the driver would refuse them);
#   bare     the same simulated driver, no libraries (KF_CUDA_COMPAT points
#            nowhere): refused CUDA work, saying what to install.
# Prints kfleet status, runs bench/gpu/facts.yaml (nodes: any), then shows
# the submit-time refusal of a CUDA kernel on every agent once bare is up.
set -uo pipefail
W=$1
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
B=$ROOT/bundle
K="$B/kfleet"
{
  echo "== forward-compat directories here"
  ls -ld /usr/local/cuda*/compat 2>&1
  ls -l /usr/local/cuda*/compat/ 2>&1 | head -20
} | tee "$W/compat-dirs.txt"

"$K" --log-level debug serve >"$W/serve.out" 2>"$W/serve.log" &
SERVE=$!
for _ in $(seq 1 200); do [ -s "$KFLEET_HOME/run/agent-endpoint" ] && break; sleep 0.05; done
EP=$(cat "$KFLEET_HOME/run/agent-endpoint")
agent() { # NAME [ENV...]
  local name=$1
  shift
  env "$@" "$B/kfleet-agent" --coordinator "$EP" --workdir "$W/agents/$name" --name "$name" \
    --log-level debug 2>"$W/agent-$name.log" &
}
wait_up() { # N
  for _ in $(seq 1 600); do
    [ "$("$K" status --format json 2>/dev/null | grep -c '"state": "ok"')" -ge "$1" ] && return 0
    sleep 0.2
  done
  echo "facts: $1 agents did not register" >&2
}
agent gpu
n=1
if ls /usr/local/cuda*/compat/libcuda.so.1 >/dev/null 2>&1; then
  agent compat KF_DRIVER_CUDA=12.8
  n=2
else
  echo "facts: no forward-compat libraries on this machine: no compat agent"
fi
wait_up $n
"$K" status | tee "$W/status-1.txt"
"$K" status --format json >"$W/status-1.json"
echo "== facts.yaml"
timeout 280 "$K" submit "$ROOT/bench/gpu/facts.yaml" --follow --stall-timeout 120 \
  >"$W/facts.out" 2>"$W/facts.progress"
echo "facts.yaml: exit $?"
"$K" report --format json >"$W/facts.json"
"$K" report >"$W/facts.txt"
tail -30 "$W/facts.txt"
python3 - "$W/facts.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["rows"]:
    v = r.get("validation") or {}
    p = r.get("provenance") or {}
    print(f"facts: {r['kernel']} on {r['node']}: validation {v.get('state')}, "
          f"nvcc/driver CUDA {p.get('nvcc_cuda')}/{p.get('driver_cuda')}, "
          f"forward_compat {p.get('forward_compat')}, error {(v.get('error') or '')[:160]}")
PY
echo "== bare joins"
agent bare KF_DRIVER_CUDA=12.8 KF_CUDA_COMPAT=/nonexistent/compat
wait_up $((n + 1))
"$K" status | tee "$W/status-2.txt"
"$K" submit "$ROOT/bench/gpu/facts-cuda.yaml" >"$W/refused.out" 2>"$W/refused.err"
echo "facts-cuda.yaml with bare up: exit $? $(cat "$W/refused.err")"
"$K" stop >/dev/null 2>&1
wait "$SERVE" 2>/dev/null
kill $(jobs -p) 2>/dev/null
wait 2>/dev/null

#!/usr/bin/env bash
# CUDA forward compatibility (issue 13), with a simulated driver: a fake
# CUDA 13.0 toolkit (an nvcc that only says its version) and KF_DRIVER_CUDA
# pretending the driver runs CUDA 12.4 at most. An agent without the
# toolkit's forward-compat libraries says so in `kfleet status`, naming
# the package and both versions, and a CUDA sweep no agent can run is
# refused at submit; an agent with them (compat/libcuda.so.1 beside the
# toolkit's bin/) shows them, and its runners get them first on
# LD_LIBRARY_PATH: a Python kernel that sets up only there passes on it and
# fails on the other.
source "$(dirname "$0")/lib.sh"

TK="$T/cuda-13.0"
mkdir -p "$TK/bin"
cat >"$TK/bin/nvcc" <<'SH'
#!/bin/sh
echo "nvcc: NVIDIA (R) Cuda compiler driver"
echo "Cuda compilation tools, release 13.0, V13.0.88"
SH
chmod +x "$TK/bin/nvcc"
export KF_NVCC="$TK/bin/nvcc" KF_DRIVER_CUDA=12.4
# The probe kernel is numpy: Debian's python3 has it (make test-build).
export KF_PYTHON=/usr/bin/python3

start_serve
KF_CUDA_COMPAT="$T/no-compat" start_agent bare
wait_agents 1
"$KFLEET" status >"$T/status1.txt" || fail "status failed"
grep -q "CUDA: nvcc builds for CUDA 13.0 but this node's driver runs CUDA 12.4 at most" \
  "$T/status1.txt" && grep -q "cuda-compat-13-0" "$T/status1.txt" ||
  fail "status does not show the toolkit/driver gap: $(cat "$T/status1.txt")"
pass "an agent with a toolkit newer than its driver and no compat libraries says so in status"

rc=0
"$KFLEET" submit "$KF_SRC/tests/data/sweeps/compat_cuda.yaml" >"$T/cuda.out" 2>"$T/cuda.err" || rc=$?
[ $rc -eq 1 ] || fail "a CUDA sweep no agent's driver can run was accepted (exit $rc): $(cat "$T/cuda.out")"
grep -q "kernel 'fault' is a CUDA kernel that no agent can run" "$T/cuda.err" &&
  grep -q "cuda-compat-13-0" "$T/cuda.err" ||
  fail "the refusal does not say why: $(cat "$T/cuda.err")"
pass "a CUDA sweep no agent's driver can run is refused at submit: $(head -c 150 "$T/cuda.err")"

mkdir -p "$TK/compat"
: >"$TK/compat/libcuda.so.1"
start_agent compat
wait_agents 2
"$KFLEET" status >"$T/status2.txt" || fail "status failed"
grep -q "forward compat: $TK/compat" "$T/status2.txt" ||
  fail "status does not show the forward-compat libraries: $(cat "$T/status2.txt")"
"$KFLEET" status --format json >"$T/status2.json" || fail "status --format json failed"
python3 - "$T/status2.json" "$TK/compat" <<'PY' || fail "status JSON lacks cuda_compat"
import json, sys
d = json.load(open(sys.argv[1]))
a = {x["agent_id"]: x for x in d["agents"]}
assert a["compat"]["cuda_compat"] == sys.argv[2], a["compat"]
assert a["bare"]["cuda_compat"] == "" and "cuda-compat-13-0" in a["bare"]["cuda_compat_error"], a["bare"]
PY
pass "status shows the forward-compat libraries the agent found"

"$KFLEET" submit "$KF_SRC/tests/data/sweeps/compat.yaml" --follow --stall-timeout 60 \
  >"$T/sub.out" 2>"$T/sub.err" || true
id=$(grep -o 'submitted sweep [0-9]*' "$T/sub.out" | awk '{print $3}' || true)
[ -n "$id" ] || fail "compat.yaml was not submitted: $(cat "$T/sub.err")"
"$KFLEET" report "$id" --format json -o "$T/compat.json" || fail "no report of sweep $id"
python3 - "$T/compat.json" <<'PY' || fail "the runners did not get the forward-compat libraries as expected"
import json, sys
d = json.load(open(sys.argv[1]))
by = {r["node"]: r for r in d["rows"]}
assert set(by) == {"compat", "bare"}, set(by)
assert by["compat"]["validation"]["state"] == "succeeded", by["compat"]["validation"]
bare = by["bare"]["validation"]
assert bare["state"] == "failed" and "no KF_CUDA_COMPAT_DIR" in json.dumps(bare), bare
print("ok - the compat agent's runner had the libraries first on LD_LIBRARY_PATH; the other's had none")
PY
pass "runners load the forward-compat libraries only where the agent found them"

#!/usr/bin/env bash
# bench/gpu/kernelbench-asis/run.sh KB_ROOT [GM_ROOT] — issue 42's GPU
# checks of items 1-2 with kfleet's bundle (or KF_BIN):
#   1. KernelBench's level1/19_ReLU.py, unedited, at its own size (4096 x
#      393216; RELU_PARAMS='{dim: [16384]}' overrides its sizes, as a
#      sweep's params do): its Model ("torch", the baseline), a load_inline
#      CUDA ModelNew, a Triton ModelNew and zeros (must fail);
#   2. with GM_ROOT (a gpu-mode/reference-kernels checkout):
#      problems/pmpp_v2/vectoradd_py as it is, its submission.py and
#      solutions/correct/submission_triton.py (when there).
# Reports in $OUT (/tmp/kf-kb-asis).
set -uo pipefail
KB=$(cd "${1:?usage: run.sh KERNELBENCH_ROOT [REFERENCE_KERNELS_ROOT]}" && pwd)
GM=${2:-}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
B=${KF_BIN:-$([ -x "$ROOT/bundle/kfleet" ] && echo "$ROOT/bundle" || echo "$ROOT/build")}
OUT=${OUT:-/tmp/kf-kb-asis}
mkdir -p "$OUT"
export KFLEET_HOME=$OUT/home PATH=$PATH:/usr/local/cuda/bin
L1=$KB/KernelBench/level1
[ -d "$L1" ] || L1=$KB/level1
[ -d "$L1" ] || L1=$KB
cat >"$OUT/relu.yaml" <<YAML
name: kb-relu-asis
problem: {path: $L1/19_ReLU.py, format: kernelbench, device: cuda, seeds: 2${RELU_PARAMS:+, params: $RELU_PARAMS}}
candidates:
  - {path: $L1/19_ReLU.py, name: torch}
  - $HERE/relu_inline.py
  - $HERE/relu_triton.py
  - $HERE/relu_zeros.py
baseline: torch
tasks: [build, validate, profile]
time_limit: 10m
YAML
"$B/kfleet" run "$OUT/relu.yaml" 2>"$OUT/relu.log" | tee "$OUT/relu.txt" | tail -30
"$B/kfleet" report --format json >"$OUT/relu.json"
if [ -n "$GM" ]; then
  V=$(cd "$GM" && pwd)/problems/pmpp_v2/vectoradd_py
  T=$V/solutions/correct/submission_triton.py
  cat >"$OUT/vectoradd.yaml" <<YAML
name: gm-vectoradd-asis
problem: {path: $V/reference.py, format: gpumode, device: cuda, seeds: 2}
candidates:
  - $V/submission.py
$([ -f "$T" ] && echo "  - {path: $T, name: triton}")
baseline: submission
tasks: [build, validate, profile]
YAML
  "$B/kfleet" run "$OUT/vectoradd.yaml" 2>"$OUT/vectoradd.log" | tee "$OUT/vectoradd.txt" | tail -30
  "$B/kfleet" report --format json >"$OUT/vectoradd.json"
fi

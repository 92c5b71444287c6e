#!/usr/bin/env bash
# bench/run.sh BUILD_DIR — `make bench`. Benchmarks print figures; they are
# never part of `make test`.
#
# The coordinator's CPU-side benchmarks (bench/coord/run.sh: dispatch
# throughput and latency, sample ingest, 1,000 agents, Gearman and beanstalkd
# side by side, the ZeroMQ and LMDB ceilings; results in docs/performance.md)
# run on any machine: this fetches the peers (install-deps.sh --bench), builds
# the kfbench target into BUILD_DIR and prints their table last. The GPU
# benchmarks run on a GPU machine with the relocatable bundle
# (bench/gpu/run.sh; results in docs/benchmarks.md). The Slurm side by side
# (bench/slurm/run.sh: 1,000 short tasks as sbatch jobs and through kfleet,
# on a private local Slurm; docs/performance.md) needs root.
set -euo pipefail
BUILD=${1:-build}
cat <<TXT
kfleet benchmarks
  GPU (needs NVIDIA GPUs; run there):  make bundle && bash bench/gpu/run.sh targets|checks|fleet
  last GPU results:                    docs/benchmarks.md
  Slurm side by side (root):           bench/slurm/run.sh (below; docs/performance.md)
  coordinator CPU benchmarks:          bench/coord/run.sh (below; docs/performance.md)
TXT
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  [ -d bundle ] || bash deploy/bundle.sh "$BUILD" bundle
  bash bench/gpu/run.sh targets
fi
# The coordinator's benchmarks print their table last.
bash deploy/install-deps.sh --bench
cmake -S . -B "$BUILD" >/dev/null
cmake --build "$BUILD" -j "$(nproc 2>/dev/null || echo 2)" --target kfleet kfleet-agent kfbench
if [ "$(id -u)" -eq 0 ]; then
  bash bench/slurm/run.sh --build "$BUILD"
else
  echo "bench/slurm/run.sh skipped: it needs root (network namespaces, a private Slurm)"
fi
# Issue 30: 1,000 numpy candidates of one problem in one request
# (docs/benchmarks.md).
bash bench/problems.sh --build "$BUILD"
bash bench/coord/run.sh --build "$BUILD"


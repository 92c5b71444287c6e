#!/usr/bin/env bash
# bench/run.sh BUILD_DIR — `make bench`. Benchmarks print figures; they are
# never part of `make test`.
#
# What exists today: the GPU benchmarks, run on a GPU machine with the
# relocatable bundle (bench/gpu/run.sh; results in docs/benchmarks.md). The
# coordinator's CPU-side benchmarks (dispatch throughput and latency, sample
# ingest, 1,000 agents, Gearman/beanstalkd side by side) are not written yet.
set -euo pipefail
BUILD=${1:-build}
cat <<TXT
kfleet benchmarks
  GPU (needs NVIDIA GPUs; run there):  make bundle && bash bench/gpu/run.sh targets|checks|fleet
  last GPU results:                    docs/benchmarks.md
  coordinator CPU benchmarks:          not written yet (no figures to print)
TXT
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  [ -d bundle ] || bash deploy/bundle.sh "$BUILD" bundle
  exec bash bench/gpu/run.sh targets
fi

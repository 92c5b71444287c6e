#!/usr/bin/env bash
# bench/coord/run.sh — the coordinator benchmarks of issue 7 (docs/performance.md).
#
#   bash bench/coord/run.sh [--build DIR] [BENCH ...]
#
# BENCH: dispatch latency ingest scale peers blocks (default: all of them, then
# the table), or profile (perf record of the coordinator during the dispatch run
# of KFB_PROFILE_AGENTS agents, 64 unless set; prints the hottest symbols).
# Each kfleet benchmark gets a fresh `kfleet serve --home TMP` (durability
# and CURVE on, as always) and `kfbench` speaks the real agent protocol to
# it. The peers (beanstalkd, gearmand) are started here on free loopback
# ports, each setting fresh, and stopped after. Needs `bash
# deploy/install-deps.sh --bench` and `cmake --build DIR --target kfbench`
# (bench/run.sh does both).
#
# Knobs (environment): KFB_RUNS (5), KFB_TASKS (10000), KFB_PEER_DURABLE_JOBS
# (3000), KFB_SCALE_AGENTS (1000), KFB_IDLE_S (10).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$ROOT/build
while [ $# -gt 0 ]; do
  case "$1" in
  --build)
    BUILD=$(cd "$2" && pwd)
    shift 2
    ;;
  -h | --help)
    sed -n '2,17p' "$0"
    exit 0
    ;;
  *) break ;;
  esac
done
BENCHES=("$@")
[ ${#BENCHES[@]} -gt 0 ] || BENCHES=(blocks dispatch latency ingest scale peers)
KFLEET=$BUILD/kfleet
KFBENCH=$BUILD/kfbench
for b in "$KFLEET" "$KFBENCH"; do
  if [ ! -x "$b" ]; then
    echo "bench/coord/run.sh: $b is missing; build it: cmake --build $BUILD --target kfleet kfbench" >&2
    exit 1
  fi
done
RUNS=${KFB_RUNS:-5}
TASKS=${KFB_TASKS:-10000}
DJOBS=${KFB_PEER_DURABLE_JOBS:-3000}
SCALE_AGENTS=${KFB_SCALE_AGENTS:-1000}
IDLE_S=${KFB_IDLE_S:-10}
# A thousand agents are a thousand connections on each side.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

WORK=$(mktemp -d /tmp/kfbench.XXXXXX)
RESULTS=$WORK/results.txt
: >"$RESULTS"
PIDS=()
cleanup() {
  for p in "${PIDS[@]:-}"; do
    [ -n "$p" ] && kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
  done
  rm -rf "$WORK"
}
trap cleanup EXIT

say() { printf '== %s\n' "$*" >&2; }

# Starts a coordinator on a fresh home; sets HOME_DIR and COORD_PID.
start_coord() {
  HOME_DIR=$(mktemp -d "$WORK/home.XXXX")
  "$KFLEET" --home "$HOME_DIR" serve >"$HOME_DIR/serve.out" 2>"$HOME_DIR/serve.log" &
  COORD_PID=$!
  PIDS+=("$COORD_PID")
  for _ in $(seq 100); do
    [ -s "$HOME_DIR/run/agent-endpoint" ] && return 0
    sleep 0.05
  done
  echo "bench/coord/run.sh: kfleet serve did not start; its log:" >&2
  cat "$HOME_DIR/serve.log" >&2
  exit 1
}

stop_coord() {
  kill "$COORD_PID" 2>/dev/null || true
  wait "$COORD_PID" 2>/dev/null || true
  if grep -q " error " "$HOME_DIR/serve.log"; then
    echo "bench/coord/run.sh: the coordinator logged errors:" >&2
    grep " error " "$HOME_DIR/serve.log" | head -5 >&2
    exit 1
  fi
}

# Runs kfbench, keeping its RESULT line.
kfb() {
  "$KFBENCH" "$@" | tee -a "$RESULTS"
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

bench_blocks() {
  say "building blocks: ZeroMQ CURVE round trips, LMDB durable puts"
  kfb zmq --seconds 2
  mkdir -p "$WORK/lmdb"
  kfb lmdb --dir "$WORK/lmdb" --batch 1000 --seconds 2
  rm -rf "$WORK/lmdb"
}

bench_dispatch() {
  for n in 8 64; do
    say "dispatch: $n agents, $RUNS sweeps of $TASKS no-op tasks"
    start_coord
    kfb dispatch --home "$HOME_DIR" --agents "$n" --tasks "$TASKS" --runs "$RUNS"
    stop_coord
  done
}

bench_latency() {
  say "latency: one agent, one task at a time"
  start_coord
  kfb latency --home "$HOME_DIR" --iterations 1000
  stop_coord
}

bench_ingest() {
  say "ingest: 4 agents streaming 2,000,000 samples in batches of 1,000"
  start_coord
  kfb ingest --home "$HOME_DIR" --agents 4 --samples 2000000 --batch 1000 --window 8
  stop_coord
  say "open: the 2,000,000-sample store opened as kfleet serve opens it (its pages checked)"
  kfb open --home "$HOME_DIR" --runs 5
}

bench_scale() {
  say "scale: $SCALE_AGENTS agents heartbeating at 1 Hz, then a sweep of $TASKS tasks of 250 ms"
  start_coord
  kfb scale --home "$HOME_DIR" --agents "$SCALE_AGENTS" --tasks "$TASKS" --task-ms 250 --idle "$IDLE_S"
  stop_coord
}

# One peer server setting: $1 label, $2 jobs, then the command (PORT in it).
peer() {
  local kind=$1 label=$2 jobs=$3
  shift 3
  local port
  port=$(free_port)
  local cmd=("${@//PORT/$port}")
  "${cmd[@]}" >"$WORK/$label.log" 2>&1 &
  local pid=$!
  PIDS+=("$pid")
  for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.05
  done
  for w in 8 64; do
    kfb "$kind" --port "$port" --tasks "$jobs" --workers "$w" --runs 3 --label "$label"
  done
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

bench_peers() {
  for b in beanstalkd gearmand; do
    if ! command -v "$b" >/dev/null; then
      echo "bench/coord/run.sh: $b is not installed: bash deploy/install-deps.sh --bench" >&2
      exit 1
    fi
  done
  say "peers: beanstalkd and gearmand, memory and durable, 8 and 64 workers"
  mkdir -p "$WORK/binlog" "$WORK/gearman"
  peer beanstalk beanstalkd-memory "$TASKS" beanstalkd -l 127.0.0.1 -p PORT
  # -f0: the binlog is fsync'd on every write (a put, a delete).
  peer beanstalk beanstalkd-binlog "$DJOBS" beanstalkd -l 127.0.0.1 -p PORT -b "$WORK/binlog" -f0
  peer gearman gearmand-memory "$TASKS" gearmand -L 127.0.0.1 -p PORT --log-file=none
  peer gearman gearmand-sqlite "$((DJOBS / 3))" gearmand -L 127.0.0.1 -p PORT --log-file=none \
    --queue-type=libsqlite3 --libsqlite3-db="$WORK/gearman/queue.sqlite"
}

bench_profile() {
  command -v perf >/dev/null || {
    echo "bench/coord/run.sh: perf is missing: bash deploy/install-deps.sh --bench" >&2
    exit 1
  }
  say "profile: perf record -g on kfleet serve during the ${KFB_PROFILE_AGENTS:-64}-agent dispatch run"
  start_coord
  perf record -g -o "$WORK/perf.data" -p "$COORD_PID" 2>"$WORK/perf.err" &
  local perf_pid=$!
  sleep 0.5
  kfb dispatch --home "$HOME_DIR" --agents ${KFB_PROFILE_AGENTS:-64} --tasks "$TASKS" --runs 3
  kill -INT "$perf_pid"
  wait "$perf_pid" || true
  stop_coord
  perf report -i "$WORK/perf.data" --no-children --sort symbol --stdio 2>/dev/null |
    grep -E '^ +[0-9]' | head -30
  perf report -i "$WORK/perf.data" --children --sort symbol --stdio 2>/dev/null |
    grep -E '^ +[0-9]' | head -30
}

for b in "${BENCHES[@]}"; do
  case "$b" in
  blocks | dispatch | latency | ingest | scale | peers | profile) "bench_$b" ;;
  *)
    echo "bench/coord/run.sh: unknown benchmark '$b' (dispatch latency ingest scale peers blocks profile)" >&2
    exit 2
    ;;
  esac
done
python3 "$ROOT/bench/coord/table.py" "$RESULTS"

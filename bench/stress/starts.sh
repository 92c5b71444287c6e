#!/usr/bin/env bash
# bench/stress/starts.sh — many back-to-back starts on fresh homes, the
# pattern that once hung a first `kfleet run` on the H100 for 7 minutes
# (an agent's key in agents.allow, its handshakes refused; issue 11).
#
#   bench/stress/starts.sh [-b BIN_DIR] [-n RUNS] [-s SERVES] [-j PARALLEL] [-o OUT_DIR]
#
# Each `kfleet run` gets a fresh home and a one-task sweep, bounded by
# --stall-timeout (a hang fails the run: exit 1, with why); each serve+agent
# start gets a fresh home and waits for the agent to register. Runs go
# PARALLEL at a time (distinct homes: they share nothing). Prints one line
# per failure and a summary last: count, failures, and the time from the
# coordinator's start to the first agent's registration (p50/p99/max, from
# the coordinator's own log). Exit 1 on any failure.
set -uo pipefail
BIN=$(cd "$(dirname "$0")/../.." && pwd)/build
RUNS=20 SERVES=20 PAR=2 OUT=""
while getopts "b:n:s:j:o:" o; do
  case $o in
  b) BIN=$OPTARG ;; n) RUNS=$OPTARG ;; s) SERVES=$OPTARG ;; j) PAR=$OPTARG ;; o) OUT=$OPTARG ;;
  *) sed -n '2,14p' "$0" >&2; exit 2 ;;
  esac
done
KFLEET=$BIN/kfleet KFAGENT=$BIN/kfleet-agent
[ -x "$KFLEET" ] && [ -x "$KFAGENT" ] || { echo "starts.sh: no kfleet in $BIN (-b BIN_DIR)" >&2; exit 2; }
W=$(mktemp -d /tmp/kf-starts.XXXXXX)
trap 'pkill -P $$ 2>/dev/null; rm -rf "$W"' EXIT
cat >"$W/one.yaml" <<'YAML'
name: start-stress
kernels:
  - name: triad
    params: {n: [1K]}
tasks: [validate]
measure: {seeds: 1}
YAML

# The time from coordinator.start to the first agent.register in a log, ms.
reg_ms() {
  python3 - "$1" <<'PY'
import sys, datetime
t0 = t1 = None
for line in open(sys.argv[1], errors="replace"):
    f = line.split(" ", 3)
    if len(f) < 4: continue
    ts = datetime.datetime.strptime(f[0], "%Y-%m-%dT%H:%M:%S.%fZ")
    if f[3].startswith("coordinator.start") and t0 is None: t0 = ts
    if f[3].startswith("agent.register") and t1 is None: t1 = ts
print(round((t1 - t0).total_seconds() * 1000) if t0 and t1 else -1)
PY
}

one_run() { # I
  local h="$W/run-$1"
  if timeout 120 "$KFLEET" --home "$h" run "$W/one.yaml" --stall-timeout 30s >"$h.out" 2>"$h.err"; then
    echo "run $1 ok $(reg_ms "$h/run/coordinator.log")"
  else
    echo "run $1 FAIL exit $? $(grep -m1 -E 'nothing can run|kfleet run:' "$h.err" | tail -c 300)"
  fi
}

one_serve() { # I
  local h="$W/serve-$1"
  mkdir -p "$h"
  "$KFLEET" --home "$h" --log-level info serve >"$h.out" 2>"$h/serve.log" &
  local sp=$! ep="" i
  for i in $(seq 1 200); do
    [ -s "$h/run/agent-endpoint" ] && { ep=$(cat "$h/run/agent-endpoint"); break; }
    sleep 0.05
  done
  [ -n "$ep" ] || { echo "serve $1 FAIL no endpoint"; kill "$sp"; return; }
  "$KFAGENT" --home "$h" --coordinator "$ep" --workdir "$h/agent" --name a 2>"$h/agent.log" &
  local ap=$! ok=0
  for i in $(seq 1 600); do
    grep -q 'agent.register' "$h/serve.log" && { ok=1; break; }
    sleep 0.05
  done
  kill "$ap" 2>/dev/null
  "$KFLEET" --home "$h" stop >/dev/null 2>&1 || kill "$sp" 2>/dev/null
  wait "$ap" "$sp" 2>/dev/null
  if [ $ok = 1 ]; then
    echo "serve $1 ok $(reg_ms "$h/serve.log")"
  else
    echo "serve $1 FAIL no registration in 30 s: $(grep -m1 -E 'refused|error' "$h/agent.log" | tail -c 200)"
  fi
}

t0=$(date +%s)
{
  for i in $(seq 1 "$RUNS"); do
    one_run "$i" &
    [ $((i % PAR)) -eq 0 ] && wait
  done
  wait
  for i in $(seq 1 "$SERVES"); do
    one_serve "$i" &
    [ $((i % PAR)) -eq 0 ] && wait
  done
  wait
} >"$W/results.txt"
grep FAIL "$W/results.txt"
[ -n "$OUT" ] && cp "$W/results.txt" "$OUT/starts-results.txt"
python3 - "$W/results.txt" "$(($(date +%s) - t0))" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1])]
for kind in ("run", "serve"):
    r = [x for x in rows if x[0] == kind]
    ms = sorted(int(x[3]) for x in r if x[2] == "ok" and int(x[3]) >= 0)
    fails = sum(1 for x in r if x[2] != "ok")
    q = lambda p: ms[min(len(ms) - 1, int(p * len(ms)))] if ms else float("nan")
    print(f"starts: {kind:5s} count {len(r):4d}  failures {fails}  "
          f"first registration ms p50 {q(0.5)} p99 {q(0.99)} max {ms[-1] if ms else 'nan'}")
print(f"starts: wall {sys.argv[2]} s")
PY
! grep -q FAIL "$W/results.txt"

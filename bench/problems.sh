#!/usr/bin/env bash
# bench/problems.sh [--build DIR] [--candidates N] [--agents N] — issue 30's
# CPU benchmark, part of `make bench` (bench/run.sh): what a
# kernel-generation loop does. N generated numpy candidates of one small
# problem (bench/problems_gen.py numpy: 8 correct formulations, 1 wrong in
# every 50) submitted in one request to a real coordinator (`kfleet serve`)
# with local agents, the verdicts followed as they finish (`kfleet submit
# --follow --format jsonl`, one line per candidate-configuration). Prints
# the candidate-evaluations per minute (rows over the follow's wall time),
# the verdict counts, the coordinator's peak RSS (VmHWM) and its RSS at
# the end, and how many warm runners the agents started (the candidates'
# runners are forked from them, runner/warm.h; KF_WARM=0 in the environment
# gives every candidate a fresh runner, as before, for a comparison).
# Results: docs/benchmarks.md.
set -euo pipefail
BUILD=build N=1000 AGENTS=2
while [ $# -gt 0 ]; do
  case $1 in
  --build) BUILD=$2; shift 2 ;;
  --candidates) N=$2; shift 2 ;;
  --agents) AGENTS=$2; shift 2 ;;
  *) echo "usage: bench/problems.sh [--build DIR] [--candidates N] [--agents N]" >&2; exit 2 ;;
  esac
done
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KF=$BUILD/kfleet KA=$BUILD/kfleet-agent
[ -x "$KF" ] && [ -x "$KA" ] || { echo "problems.sh: no kfleet in $BUILD (build it first)" >&2; exit 2; }
# An interpreter with numpy for the agents (Debian's has python3-numpy).
if [ -z "${KF_PYTHON:-}" ]; then
  for p in python3 /usr/bin/python3; do
    if command -v "$p" >/dev/null && "$p" -c 'import numpy' 2>/dev/null; then
      export KF_PYTHON=$(command -v "$p")
      break
    fi
  done
fi
[ -n "${KF_PYTHON:-}" ] || { echo "problems.sh: no python3 with numpy (install python3-numpy)" >&2; exit 2; }
W=$(mktemp -d /tmp/kf-problems-bench.XXXXXX)
export KFLEET_HOME=$W/home
PIDS=()
cleanup() {
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [ -n "${KEEP:-}" ] || rm -rf "$W"
}
trap cleanup EXIT

wrong=$(python3 "$ROOT/bench/problems_gen.py" numpy "$W/sweep" "$N")
"$KF" serve >"$W/serve.out" 2>"$W/serve.log" &
SERVE=$!
PIDS+=("$SERVE")
for _ in $(seq 1 200); do
  [ -s "$KFLEET_HOME/run/agent-endpoint" ] && break
  sleep 0.05
done
EP=$(cat "$KFLEET_HOME/run/agent-endpoint")
for i in $(seq 1 "$AGENTS"); do
  "$KA" --coordinator "$EP" --workdir "$W/agents/a$i" --name "a$i" 2>"$W/agent-$i.log" &
  PIDS+=("$!")
done
for _ in $(seq 1 300); do
  [ "$("$KF" status --format json 2>/dev/null | grep -c '"state": "ok"' || true)" -ge "$AGENTS" ] && break
  sleep 0.1
done
t0=$(date +%s.%N)
rc=0
"$KF" submit "$W/sweep/sweep.yaml" --follow --format jsonl >"$W/rows.jsonl" 2>"$W/follow.log" || rc=$?
t1=$(date +%s.%N)
hwm=$(awk '/VmHWM/ {print $2}' "/proc/$SERVE/status")
rss=$(awk '/VmRSS/ {print $2}' "/proc/$SERVE/status")
python3 - "$W/rows.jsonl" "$t0" "$t1" "$N" "$wrong" "$AGENTS" "$hwm" "$rss" "$rc" <<'PY'
import json, sys
path, t0, t1, n, wrong, agents, hwm, rss, rc = sys.argv[1:]
lines = [json.loads(l) for l in open(path) if l.strip()]
receipt, rows = lines[0], lines[1:]
secs = float(t1) - float(t0)
# A row is a (candidate, configuration, node): the baseline's configuration
# is also measured on each other agent that runs a candidate of it (issue
# 41), so a candidate-configuration is counted once, at its first row.
seen, evals, baseline_rows = set(), [], 0
for r in rows:
    key = (r.get("kernel"), json.dumps(r.get("params"), sort_keys=True))
    if key in seen:
        baseline_rows += 1
        continue
    seen.add(key)
    evals.append(r)
verdicts = {}
for r in evals:
    verdicts[r.get("verdict")] = verdicts.get(r.get("verdict"), 0) + 1
print("problems bench (numpy, this machine: %s agents on %s cores)" % (agents, __import__("os").cpu_count()))
print("  candidates %s (%s wrong on purpose), one request; submit exit %s" % (n, wrong, rc))
print("  candidate-evaluations %d in %.1f s = %.0f per minute" % (len(evals), secs, len(evals) / secs * 60))
print("  verdicts " + ", ".join("%s %d" % (k, v) for k, v in sorted(verdicts.items(), key=str)))
print("  the baseline's rows on further agents %d" % baseline_rows)
print("  coordinator peak RSS %.1f MiB, at the end %.1f MiB" % (int(hwm) / 1024, int(rss) / 1024))
# Host profiles hold the machine's lock one at a time (runner/hostlock.h):
# a profile's time less its wait for the lock bounds how many a minute
# this machine can judge, whatever the agents and cores.
held = [p["elapsed_s"] - (p.get("host_wait_s") or 0) for p in
        (r.get("profile") or {} for r in evals)
        if p.get("elapsed_s") and p.get("host_shared") is False]
if held:
    conv = sum(1 for r in evals if (r.get("profile") or {}).get("converged"))
    mean = sum(held) / len(held)
    print("  host profiles (one at a time on a machine) %d, %.0f ms each on average, %d stopped "
          "on precision before their timeout: at most %.0f candidate-evaluations a minute"
          % (len(held), mean * 1e3, conv, 60 / mean))
PY
echo "  warm runners started $(cat "$W"/agent-*.log | grep -c 'warm.start ' || true) (KF_WARM=${KF_WARM:-1})"

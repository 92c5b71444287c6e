#!/usr/bin/env bash
# bench/gpu/kernelbench-level.sh LEVEL_DIR [FIRST LAST] — a KernelBench level
# judged as it is (issue 42 item 1): every LEVEL_DIR/N_NAME.py, unedited and
# at its own sizes, a kfleet problem (format: kernelbench, device: cuda), its
# own Model the one candidate ("torch") and the baseline: reference task,
# validate and profile on this host's GPUs.
#
#   bash bench/gpu/kernelbench-level.sh ~/KernelBench/KernelBench/level1
#   bash bench/gpu/kernelbench-level.sh ~/KernelBench/KernelBench/level1 1 50
#
# One coordinator (`kfleet serve`) and one agent (a slot per GPU) take the
# level as one sweep file (problems:, a sweep per problem); the script
# waits until every sweep has finished, then writes one JSON report per
# problem and prints each row's verdict and median and the makespan (first
# submit to last task).
#
# KF_BIN: the directory of kfleet and kfleet-agent (default: bundle/, else
# build/); KF_PYTHON: an interpreter with torch built for CUDA (default the
# agent's own choice); SEEDS: the secret pool's size (default 1, KernelBench
# runs one set of inputs per trial); OUT: where reports go
# (/tmp/kf-kb-level); WAIT_LIMIT: seconds to wait for the sweeps (7200);
# DEVICE=cpu: the problems on the CPU (a dry run of the script itself).
set -uo pipefail
LEVEL=${1:?usage: kernelbench-level.sh LEVEL_DIR [FIRST LAST]}
FIRST=${2:-1}
LAST=${3:-100000}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
B=${KF_BIN:-$([ -x "$ROOT/bundle/kfleet" ] && echo "$ROOT/bundle" || echo "$ROOT/build")}
OUT=${OUT:-/tmp/kf-kb-level}
SEEDS=${SEEDS:-1}
LEVEL=$(cd "$LEVEL" && pwd) || exit 2
[ -x "$B/kfleet" ] && [ -x "$B/kfleet-agent" ] || { echo "no kfleet in $B (make bundle, or KF_BIN=DIR)" >&2; exit 2; }
export KFLEET_HOME=$OUT/home
export PATH=$PATH:/usr/local/cuda/bin
rm -rf "$KFLEET_HOME" "$OUT/agent" "$OUT/sweeps"
mkdir -p "$OUT/sweeps" "$OUT/reports" "$KFLEET_HOME"

AGENT=
"$B/kfleet" serve >"$OUT/serve.out" 2>"$OUT/serve.log" &
trap '"$B/kfleet" stop >/dev/null 2>&1; [ -n "$AGENT" ] && kill "$AGENT" 2>/dev/null; wait' EXIT
for _ in $(seq 1 200); do [ -s "$KFLEET_HOME/run/agent-endpoint" ] && break; sleep 0.05; done
EP=$(cat "$KFLEET_HOME/run/agent-endpoint") || { echo "kfleet serve did not start" >&2; exit 1; }
"$B/kfleet-agent" --coordinator "$EP" --workdir "$OUT/agent" --name h200 2>"$OUT/agent.log" &
AGENT=$!
for _ in $(seq 1 600); do
  "$B/kfleet" status --format json 2>/dev/null | grep -q '"state": "ok"' && break
  sleep 0.1
done

# The level in one sweep file (docs/sweep-format.md "A whole level"): the
# problems FIRST..LAST copied into $OUT/level, each its own candidate
# "torch"; `kfleet submit` makes a sweep of each (kb.NAME). DEVICE=cpu or
# PER_PROBLEM=1: a sweep file per problem instead (problems: has no
# device: key; KernelBench's files run on cuda by default).
t0=$(date +%s.%N)
n=0
rm -rf "$OUT/level" && mkdir -p "$OUT/level"
for base in $(cd "$LEVEL" && ls *.py | sort -t_ -k1,1n); do
  num=${base%%_*}
  [ "$num" -ge "$FIRST" ] 2>/dev/null && [ "$num" -le "$LAST" ] || continue
  cp "$LEVEL/$base" "$OUT/level/"
done
if [ "${DEVICE:-cuda}" = cuda ] && [ "${PER_PROBLEM:-0}" != 1 ]; then
  cat >"$OUT/sweeps/level.yaml" <<YAML
name: kb
problems: {path: $OUT/level, seeds: $SEEDS}
candidates:
  - {name: torch, path: "$OUT/level/{name}.py"}
baseline: torch
tasks: [build, validate, profile]
YAML
  "$B/kfleet" submit "$OUT/sweeps/level.yaml" >>"$OUT/submit.out" 2>>"$OUT/submit.err" ||
    echo "level: refused at submit: $(tail -3 "$OUT/submit.err")" | tee -a "$OUT/refused.txt"
  n=$(ls "$OUT/level" | wc -l)
fi
for base in $( [ -s "$OUT/submit.out" ] || ls "$OUT/level" | sort -t_ -k1,1n); do
  f=$OUT/level/$base
  base=${base%.py}
  cat >"$OUT/sweeps/$base.yaml" <<YAML
name: kb-$base
problem: {path: $f, format: kernelbench, device: ${DEVICE:-cuda}, seeds: $SEEDS}
candidates:
  - {path: $f, name: torch}
baseline: torch
tasks: [build, validate, profile]
YAML
  "$B/kfleet" submit "$OUT/sweeps/$base.yaml" >>"$OUT/submit.out" 2>>"$OUT/submit.err" ||
    echo "$base: refused at submit: $(tail -1 "$OUT/submit.err")" | tee -a "$OUT/refused.txt"
  n=$((n + 1))
done
echo "submitted $n problems of $LEVEL"

# `kfleet status` lists the last ten sweeps only: every submitted id is
# waited for by its own report (sweep.finished_ns), in id order, the first
# unfinished one ending each look.
grep -o 'submitted sweep [0-9]* ([^)]*)' "$OUT/submit.out" | sed 's/submitted sweep \([0-9]*\) (\(.*\))/\1 \2/' >"$OUT/ids.txt"
limit=${WAIT_LIMIT:-7200}
done_ids=" "
while :; do
  left=0
  while read -r id name; do
    case $done_ids in *" $id "*) continue ;; esac
    if "$B/kfleet" report "$id" --format json >"$OUT/reports/$name.json" 2>>"$OUT/report.err" &&
      python3 -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))["sweep"].get("finished_ns") else 1)' "$OUT/reports/$name.json"; then
      done_ids="$done_ids$id "
    else
      left=$((left + 1))
      break
    fi
  done <"$OUT/ids.txt"
  [ "$left" = 0 ] && break
  if [ $(($(date +%s) - ${t0%.*})) -gt "$limit" ]; then
    echo "gave up waiting: $(($(wc -l <"$OUT/ids.txt") - $(echo $done_ids | wc -w))) sweeps unfinished" >&2
    while read -r id name; do
      "$B/kfleet" report "$id" --format json >"$OUT/reports/$name.json" 2>>"$OUT/report.err"
    done <"$OUT/ids.txt"
    break
  fi
  sleep 2
done
t1=$(date +%s.%N)

python3 - "$OUT/reports" "$t0" "$t1" <<'PY' | tee "$OUT/summary.txt"
import glob, json, os, sys
verdicts = {}
# Each report read once (a level's reports hold every sample: megabytes).
reps = [(os.path.basename(p)[3:-5], json.load(open(p)))
        for p in sorted(glob.glob(os.path.join(sys.argv[1], "*.json")),
                        key=lambda p: int(os.path.basename(p)[3:].split("_")[0]))]
for name, d in reps:
    for r in d["rows"]:
        v, pr = r.get("validation") or {}, r.get("profile") or {}
        state = v.get("state") or "none"
        verdicts[state] = verdicts.get(state, 0) + 1
        med = pr.get("median_s")
        print("%-60s validate %-9s profile %-9s %10s  %s" % (
            name, state, pr.get("state") or "-",
            "%.1f us" % (med * 1e6) if med else "-", (v.get("error") or pr.get("error") or "")[:100]))
    for f in d.get("failures") or []:
        print("    failure: %s" % json.dumps(f)[:300])
# Where the GPU slot's time went (issue 45): per problem its GPU task
# time (the sweep's gpu_busy_s) and tasks' elapsed, then the slot time's
# phases summed over the level.
ph, busy, outside, idle, per = {}, 0.0, 0.0, 0.0, []
for name, d in reps:
    s = d.get("schedule") or {}
    st = s.get("slot_time") or {}
    for k, v in (st.get("phases_s") or {}).items():
        ph[k] = ph.get(k, 0) + v
    busy += s.get("gpu_busy_s") or 0
    outside += st.get("outside_runners_s") or 0
    idle += st.get("idle_s") or 0
    per.append((s.get("gpu_busy_s") or 0, name))
done = [b for b, _ in per if b > 0]
print("GPU task time: %.1f s over %d problems (%.1f s a problem; median %.1f s)" % (
    busy, len(done), busy / max(len(done), 1), sorted(done)[len(done) // 2] if done else 0))
print("slowest: " + ", ".join("%s %.1f s" % (n, b) for b, n in sorted(per, reverse=True)[:8]))
print("slot time phases: " + ", ".join("%s %.1f" % kv for kv in sorted(ph.items(), key=lambda kv: -kv[1])) +
      "; outside runners %.1f, idle %.1f" % (outside, idle))
print("verdicts: %s; makespan %.1f s (first submit to last sweep finished)" % (
    ", ".join("%s %d" % kv for kv in sorted(verdicts.items())), float(sys.argv[3]) - float(sys.argv[2])))
PY

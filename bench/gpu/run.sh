#!/usr/bin/env bash
# bench/gpu/run.sh PART — the GPU half of kfleet's proof, in one device call
# per machine kind, on the relocatable bundle built here (`make bundle`,
# carried as bundle/). Everything goes through `kfleet run`: the embedded
# coordinator, one agent per GPU, the real ZeroMQ/LMDB/runner path.
#
#   PART=targets  bench/gpu/targets.yaml twice (the second run must
#                 recompile nothing and reproduce the medians), with ncu
#   PART=checks   bench/gpu/isolation.yaml (faults on purpose) and
#                 bench/gpu/sanitize.yaml (compute-sanitizer on every kernel)
#   PART=throttle targets twice, then once with throttle: keep
#   PART=h100     targets then checks, in one call
#   PART=short    short kernels: how soon their profiles stop
#   PART=python   Python kernels (issue 13): examples/torch.yaml (Triton,
#                 CuPy, C and torch softmax; attention against SDPA),
#                 bench/gpu/python-ncu.yaml (C and Python medians against
#                 ncu) and bench/gpu/side-stream.yaml (work on another
#                 stream is timed)
#   PART=torchext a torch extension as a build task (bench/gpu/torch-ext.yaml):
#                 built, then a cache hit; loaded under a torch whose files
#                 say another version than its metadata (refused, naming
#                 both); and under an "upgraded" torch (a new build)
#   PART=cheats   tests/data/sweeps/cheats.yaml (every host cheat, C and
#                 numpy), bench/gpu/cheats.yaml (issue 29: the Triton softmax
#                 honest and cheating, each row against its honest twin, in
#                 cheats-gpu.md), bench/gpu/side-stream.yaml and targets once
#   PART=facts    what agents report (Python, torch sees the GPU) and CUDA
#                 forward compatibility with a simulated older driver
#                 (bench/gpu/facts.sh), then examples/torch.yaml
#   PART=share    bench/gpu/share.yaml on 3 agents sharing the GPU: each CUDA
#                 kernel compiled once, installed twice; then again with
#                 --no-shared-builds (each agent compiles), in a fresh home
#   PART=fleet    examples/gpu.yaml (62 configurations) on every GPU, with
#                 the schedule (makespan against start-up + GPU time / GPUs,
#                 measured fraction) and bench/gpu/isolation.yaml (faults on
#                 purpose) after it (SKIP_ISOLATION=1: not; FLEET_REPEAT=1: the
#                 sweep again in the same home, with the first's durations
#                 known to the scheduler), then with
#                 WITH_KILL=1 the kill part
#   PART=fleet1   examples/gpu.yaml on GPU 0 alone (the speed-up's 1 GPU)
#   PART=issue32  issue 32's single-GPU figures in one call: targets twice
#                 and reversed (bench/gpu/targets-reversed.yaml), with ncu,
#                 then examples/gpu.yaml on GPU 0 (<= 75 s); summarize.py
#                 checks them (KF_BUNDLE + KF_TAG: the baseline's bundle in
#                 the same session)
#   PART=targets3 the targets of issue32, on GPU TARGETS_GPU (default 0) alone
#   PART=sustained targets.yaml under measure: {thermal: sustained} (issue 32)
#   PART=kill     bench/gpu/targets.yaml on every GPU with agent local-1
#                 killed KILL_AFTER (25) s in: verify must be clean
#   PART=targets1 bench/gpu/targets.yaml once, cold
#   PART=torch    examples/torch.yaml alone (KF_BUNDLE=DIR: another bundle)
#   PART=freshcost examples/problems/softmax with fresh inputs and on the
#                 pool's (fresh_inputs = False), alternated: their cost
#   PART=judge    issue 43 in Triton: examples/problems/softmax's Triton
#                 candidate beside three of bench/gpu/judge (going for the
#                 checker, forging sample frames, spying the seeds); each
#                 expectation printed PASS or FAIL
#   PART=cachecheats issue 43's output caches and answers computed ahead on
#                 the GPU (bench/gpu/cachecheats): fresh inputs and the pool's
#   PART=build    kfleet built here by this machine's gcc and CMake, every
#                 build type (the dependencies carried: bench/gpu/sysroot.sh)
#   PART=serve    serving runners: targets cold, bench/gpu/isolation.yaml
#                 (faults on purpose) and examples/torch.yaml, with each
#                 row's runner tasks
#   PART=sandbox  the runner sandbox (issue 31): each of SB_SWEEPS (default
#                 "torch targets": examples/torch.yaml, bench/gpu/targets.yaml
#                 (with ncu); also "sanitize": bench/gpu/sanitize.yaml)
#                 unsandboxed (KF_SANDBOX=0) then sandboxed, in one home; what
#                 the agent enforced, each row's median both ways and the
#                 largest difference (target: every row within 1 %), and
#                 whether ncu's and compute-sanitizer's nested runs were
#                 under Landlock (tools_sandbox)
#   PART=memlimit issue 44: bench/gpu/targets.yaml with no containment
#                 (KF_CONTAIN=0), with each runner in its control group under
#                 the default memory limit, and in its group without one
#                 (KF_RUNNER_MEMORY=0); each row's median both ways against
#                 the limited run (target: every row within 1 %)
#   PART=problems issue 30: examples/problems/softmax (problem + Triton,
#                 CUDA C, torch-extension and torch candidates, torch the
#                 baseline), then 100 generated Triton softmax candidates
#                 (bench/problems_gen.py triton: BLOCK, num_warps and
#                 formulation varied, 5 wrong on purpose); evaluations per
#                 GPU-hour and the verdict counts
#   PART=kbsizes  issue 41: KernelBench's level1/1, 1/40 and 2/12 at their
#                 own sizes (bench/gpu/kernelbench), torch's Model as the
#                 candidate and the baseline; KB_BIG=1: level1/23's softmax at
#                 4096 x 393216 alone (6.4 GB of reference a seed: 32 GB for
#                 its pool, 3 seeds and the profile's 2); KB_EXAMPLE=1:
#                 examples/problems/softmax first (Triton, CUDA C, a torch
#                 extension, torch: the host time per call beside the GPU's)
#   PART=devcompare issue 32 item 4: bench/gpu/devcompare.yaml with every
#                 check on the host (KF_COMPARE=host), then, in a fresh store
#                 (the same task ids, so the same seeds), on the GPU where the
#                 kernel defines kf_reference_device; per row each trial's
#                 max_abs_err and rel_err both ways (must be equal, rel within
#                 the summation-order bound), validate and profile elapsed both ways, the
#                 cheats' verdicts, and the slot time's reference, compare and
#                 determinism phases both ways
# Each sweep is bounded by SWEEP_LIMIT seconds (default 280), so a call
# always ends inside the device tool's 10 minutes with its files packed.
#
# Reports (JSON and Markdown) and logs are written under a work dir and
# packed into $OUT/bench-PART.tgz (the device tool returns at most 8 files);
# bench/gpu/summarize.py prints the targets table last, also kept as
# $OUT/summary-PART.md. Never touches the
# GPU's clocks, power limits or modes; ncu runs with --clock-control none.
set -uo pipefail
PART=${1:-targets}
SWEEP_LIMIT=${SWEEP_LIMIT:-280}
OUT=${OUT:-/tmp/kf-bench}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
B=${KF_BUNDLE:-$ROOT/bundle} # KF_BUNDLE: another build's bundle, for a before/after
W=/tmp/kf-bench-$PART${KF_TAG:-} # KF_TAG: a second run of a part, in its own home
mkdir -p "$OUT" "$W"
export KFLEET_HOME=/tmp/kfh-$PART${KF_TAG:-}
export PATH=$PATH:/usr/local/cuda/bin
[ -x "$B/kfleet" ] || { echo "run.sh: no bundle at $B (make bundle, and carry bundle/)" >&2; exit 2; }

{
  date -u +"date: %Y-%m-%dT%H:%M:%SZ"
  nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm,clocks.max.mem,power.limit --format=csv
  nvcc --version | tail -2
  uname -r
} 2>&1 | tee "$W/machine-$PART.txt"

# One sweep: table on the terminal (and in the log), JSON and Markdown kept.
sweep() { # NAME FILE [kfleet run args...]
  local name=$1 file=$2
  shift 2
  echo "== $name: $file"
  local t0=$SECONDS
  # KF_RUN_LOG=debug: the coordinator's and agents' logs at debug (each
  # assignment and result, timestamped: the sweep's timeline), kept per sweep.
  timeout -s INT "$SWEEP_LIMIT" "$B/kfleet" ${KF_RUN_LOG:+--log-level "$KF_RUN_LOG"} run "$file" "$@" \
    2>"$W/$name.progress" | tee "$W/$name.txt" | tail -40
  local rc=${PIPESTATUS[0]}
  mkdir -p "$W/logs-$name" && cp "$KFLEET_HOME"/run/*.log "$W/logs-$name/" 2>/dev/null || true
  echo "$name: exit $rc, $((SECONDS - t0)) s" | tee -a "$W/times.txt"
  "$B/kfleet" report --format json >"$W/$name.json"
  "$B/kfleet" report --format md >"$W/$name.md"
}

# A cgroup v2 group delegated for an agent (PART=memlimit), as systemd's
# Delegate=yes makes one: every process of this script's group moved into
# its leaf kf-rest, the memory and pids controllers given to its children,
# and kf-agent made for the agents to run in, each alone (the agent then moves
# itself into a leaf and gives its runners' groups the controllers).
# undelegate_group puts the processes back. 0 when the group is ready.
delegate_group() {
  CG=/sys/fs/cgroup$(sed -n 's/^0:://p' /proc/self/cgroup)
  [ -w "$CG/cgroup.procs" ] && grep -qw memory "$CG/cgroup.controllers" 2>/dev/null ||
    { echo "delegate_group: $CG cannot be delegated (not v2, not writable, or no memory controller)" | tee -a "$W/times.txt"; return 1; }
  mkdir -p "$CG/kf-rest" "$CG/kf-agent" || return 1
  local p
  for p in $(cat "$CG/cgroup.procs"); do echo "$p" >"$CG/kf-rest/cgroup.procs" 2>/dev/null; done
  # One controller a write: a write naming one the group lacks (pids, on the
  # device host) fails whole.
  if ! echo "+memory" >"$CG/cgroup.subtree_control"; then
    echo "delegate_group: $CG cannot give its children memory; left in it: $(cat "$CG/cgroup.procs" | tr '\n' ' ')" | tee -a "$W/times.txt"
    return 1
  fi
  grep -qw pids "$CG/cgroup.controllers" && echo "+pids" >"$CG/cgroup.subtree_control"
  echo "delegate_group: $CG: processes moved to kf-rest, children get: $(cat "$CG/cgroup.subtree_control")" | tee -a "$W/times.txt"
}
undelegate_group() {
  [ -n "${CG:-}" ] && [ -d "$CG/kf-rest" ] || return 0
  find "$CG/kf-agent" -mindepth 1 -depth -type d -exec rmdir {} \; 2>/dev/null
  rmdir "$CG/kf-agent" 2>/dev/null
  echo "-pids" >"$CG/cgroup.subtree_control" 2>/dev/null
  echo "-memory" >"$CG/cgroup.subtree_control" 2>/dev/null
  local p
  for p in $(cat "$CG/kf-rest/cgroup.procs"); do echo "$p" >"$CG/cgroup.procs" 2>/dev/null; done
  rmdir "$CG/kf-rest" 2>/dev/null
}

# One sweep as `sweep` runs it, but under `kfleet serve` with one agent
# (local-0, every GPU) started alone in a group of the delegated one,
# $CG/kf-agent/NAME.
sweep_served() { # NAME FILE
  local name=$1 file=$2 t0=$SECONDS ep agent rc=0
  echo "== $name: $file (served; the agent in $CG/kf-agent)"
  "$B/kfleet" stop >/dev/null 2>&1
  rm -f "$KFLEET_HOME/run/agent-endpoint"
  "$B/kfleet" serve >"$W/$name.serve.out" 2>"$W/$name.serve.log" &
  local serve=$!
  for _ in $(seq 1 200); do [ -s "$KFLEET_HOME/run/agent-endpoint" ] && break; sleep 0.05; done
  ep=$(cat "$KFLEET_HOME/run/agent-endpoint") || { echo "$name: kfleet serve did not start" | tee -a "$W/times.txt"; return 1; }
  # A group of its own each time: the last agent gave its group's children
  # the controllers, and a group that does cannot take a process.
  mkdir -p "$CG/kf-agent/$name"
  sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$CG/kf-agent/$name" \
    "$B/kfleet-agent" --coordinator "$ep" --workdir "$W/agent" --name local-0 2>"$W/$name.agent.log" &
  agent=$!
  "$B/kfleet" submit "$file" >"$W/$name.submit" 2>&1 || rc=$?
  local id
  id=$(grep -o 'sweep [0-9]*' "$W/$name.submit" | head -1 | cut -d' ' -f2)
  while [ "$rc" = 0 ] && [ $((SECONDS - t0)) -lt "$SWEEP_LIMIT" ]; do
    kill -0 "$agent" 2>/dev/null || { echo "$name: the agent ended: $(tail -2 "$W/$name.agent.log")" | tee -a "$W/times.txt"; break; }
    "$B/kfleet" status --format json 2>/dev/null | python3 -c 'import json,sys; sys.exit(0 if all(s["finished"] for s in json.load(sys.stdin)["sweeps"]) else 1)' && break
    sleep 1
  done
  mkdir -p "$W/logs-$name" && cp "$W/$name.agent.log" "$W/logs-$name/agent-local-0.log" 2>/dev/null
  echo "$name: served, submit exit $rc, sweep ${id:-?}, $((SECONDS - t0)) s" | tee -a "$W/times.txt"
  "$B/kfleet" report ${id:+"$id"} --format json >"$W/$name.json"
  "$B/kfleet" report ${id:+"$id"} --format md >"$W/$name.md"
  "$B/kfleet" stop >/dev/null 2>&1
  kill "$agent" 2>/dev/null
  wait "$agent" "$serve" 2>/dev/null
}

# The schedule line of a sweep's report: makespan against the ideal, the
# measured fraction (timed samples over makespan), overall and per agent.
schedule() { # NAME
  python3 - "$W/$1.json" "$1" <<'PY' | tee -a "$W/times.txt"
import json, sys
d = json.load(open(sys.argv[1]))
s = d["schedule"]
g = sum(max(a.get("gpu_slots") or 0, len(a.get("gpus") or [])) for a in d["agents"])
per = s.get("measured_pct_by_agent") or {}
f = lambda k, fmt=".1f": "-" if s.get(k) is None else format(s[k], fmt)  # None: unfinished
print(f"{sys.argv[2]} schedule: makespan {f('makespan_s')} s, start-up {f('startup_s')} s, "
      f"GPU task time {f('gpu_busy_s')} s in {s['gpu_attempts']} attempts on {g} GPUs, "
      f"ideal {f('ideal_s')} s, makespan over ideal {f('over_ideal_pct', '+.2f')} % (target <= 5 %); "
      f"measured {f('measured_pct')} % of the makespan ("
      + ", ".join(f"{k} {v:.1f} %" for k, v in sorted(per.items()) if v is not None) + ")")
c = d.get("cost") or {}
if c:
    print(f"{sys.argv[2]} cost: {c.get('evaluations')} evaluations, "
          f"{f('makespan_s')} s x {g} GPUs = {c.get('evaluations_per_gpu_hour') or 0:.0f} per GPU-hour"
          + (f", cost {c['cost']:.4g} ({c['cost_per_evaluation']:.3g} per evaluation)" if c.get("cost") else "")
          + f"; thermal protocol {d.get('thermal_protocol')}")
PY
}

# Each row's runner tasks (1: a fresh runner process), the row's outcome
# and median, and the slot time's load and context: what serving runners
# take off (issue 14 item 2).
runners() { # NAME
  python3 - "$W/$1.json" "$1" <<'PY' | tee -a "$W/times.txt"
import json, sys
d, name = json.load(open(sys.argv[1])), sys.argv[2]
fresh = reused = 0
for r in d["rows"]:
    pv, v, p = r["provenance"], r.get("validation") or {}, r.get("profile") or {}
    for k in ("validate_runner_task", "profile_runner_task"):
        if pv.get(k):
            fresh += pv[k] == 1
            reused += pv[k] > 1
    med = p.get("median_s")
    print(f"{name}: {r['kernel']} {r['params']}: validate {v.get('state')} (runner task "
          f"{pv.get('validate_runner_task')}), profile {p.get('state')} (runner task "
          f"{pv.get('profile_runner_task')}), median {med * 1e6 if med else float('nan'):.1f} us"
          + (f", {p['pct_copy_ceiling']:.1f} % of copy ceiling" if p.get("pct_copy_ceiling") else "")
          + (f"; {(v.get('error') or '')[:90]!r}" if v.get("state") not in (None, "succeeded") else ""))
st = d["schedule"].get("slot_time") or {}
ph = st.get("phases_s") or {}
print(f"{name} runners: {fresh} tasks in a fresh runner, {reused} in a serving one; "
      f"slot time {st.get('total_s') or 0:.1f} s: load {ph.get('load', 0):.2f} s, context "
      f"{ph.get('context', 0):.2f} s, setup {ph.get('setup', 0):.2f} s, outside runners "
      f"{st.get('outside_runners_s') or 0:.2f} s, idle {st.get('idle_s') or 0:.2f} s")
PY
}

# bench/gpu/targets.yaml on every GPU, one agent per GPU; agent local-1 is
# killed (SIGKILL, runner and all) KILL_AFTER seconds in: its tasks must
# finish on the others and `kfleet verify` must be clean.
kill_one() {
  echo "== kill: targets on every GPU, local-1 killed after ${KILL_AFTER:-25} s"
  local t0=$SECONDS
  timeout -s INT "$SWEEP_LIMIT" "$B/kfleet" run "$ROOT/bench/gpu/targets.yaml" \
    2>"$W/kill.progress" >"$W/kill.txt" &
  local run=$!
  sleep "${KILL_AFTER:-25}"
  local victim
  victim=$(pgrep -f -- "--name local-1 " | head -1)
  if [ -n "$victim" ]; then
    kill -9 "$victim"
    echo "kill: SIGKILL to local-1 (pid $victim) at $((SECONDS - t0)) s" | tee -a "$W/times.txt"
  else
    echo "kill: no local-1 agent to kill at $((SECONDS - t0)) s" | tee -a "$W/times.txt"
  fi
  wait "$run"
  echo "kill: kfleet run exit $?, $((SECONDS - t0)) s" | tee -a "$W/times.txt"
  tail -40 "$W/kill.txt"
  "$B/kfleet" report --format json >"$W/kill.json"
  local id
  id=$("$B/kfleet" report --format json | python3 -c 'import json,sys; print(json.load(sys.stdin)["sweep"]["sweep_id"])')
  "$B/kfleet" verify "$id" >"$W/kill-verify.txt" 2>&1
  echo "kill: kfleet verify $id exit $?: $(tail -1 "$W/kill-verify.txt")" | tee -a "$W/times.txt"
  python3 - "$W/kill.json" <<'PY' | tee -a "$W/times.txt"
import json, sys
d = json.load(open(sys.argv[1]))
by = {}
for r in d["rows"]:
    for t in ("validation", "profile"):
        x = r.get(t) or {}
        by.setdefault(r.get("node"), []).append(x.get("state"))
print("kill: rows by node: " + "; ".join(f"{n}: {len(v)} tasks, {v.count('succeeded')} succeeded"
                                          for n, v in sorted(by.items(), key=lambda kv: str(kv[0]))))
t = d.get("totals") or {}
print(f"kill: tasks {json.dumps(t)[:300]}")
PY
}

# Each row's median sandboxed against unsandboxed (PART=sandbox), or any
# two runs of a sweep under the labels given (PART=memlimit).
sandbox_compare() { # OFF_NAME ON_NAME [OFF_LABEL ON_LABEL]
  python3 - "$W/$1.json" "$W/$2.json" "$2" "${3:-unsandboxed}" "${4:-sandboxed}" <<'PY' | tee -a "$W/times.txt"
import json, sys
def rows(path):
    d = json.load(open(path))
    out = {}
    for r in d["rows"]:
        p = r.get("profile") or {}
        if p.get("state") == "succeeded" and p.get("median_s"):
            out[(r["kernel"], json.dumps(r["params"], sort_keys=True), r.get("node"))] = p["median_s"]
    return out
off, on, name = rows(sys.argv[1]), rows(sys.argv[2]), sys.argv[3]
lo, lon = sys.argv[4], sys.argv[5]
worst = 0.0
for k in sorted(set(off) & set(on)):
    d = (on[k] / off[k] - 1) * 100
    worst = max(worst, abs(d))
    print(f"{name}: {k[0]} {k[1]} {k[2]}: {lo} {off[k] * 1e6:.2f} us, {lon} "
          f"{on[k] * 1e6:.2f} us, {d:+.2f} %")
print(f"{name}: {len(set(off) & set(on))} rows profiled both ways ({len(off)} {lo}, "
      f"{len(on)} {lon}); largest |difference| {worst:.2f} % (target <= 1 %)")
PY
}

# Whether the nested runs under ncu and compute-sanitizer were confined
# (issue 31): runs the tool host refused, and any runner that still turned
# Landlock off for the tools (sandbox.tool_run, the code before the host).
tools_sandbox() { # NAME
  local off refused
  off=$(cat "$KFLEET_HOME"/run/agent-*.log 2>/dev/null | grep -c 'sandbox.tool_run')
  refused=$(cat "$KFLEET_HOME"/run/agent-*.log "$W/$1.progress" 2>/dev/null | grep -c 'toolhost.refused')
  echo "$1 tools: runners with Landlock off for ncu/compute-sanitizer: $off; tool host refusals: $refused" |
    tee -a "$W/times.txt"
}

case $PART in
sandbox)
  for s in ${SB_SWEEPS:-torch targets}; do
    f=$ROOT/examples/torch.yaml
    [ "$s" = targets ] && f=$ROOT/bench/gpu/targets.yaml
    [ "$s" = sanitize ] && f=$ROOT/bench/gpu/sanitize.yaml
    KF_SANDBOX=0 sweep "$s-off" "$f"
    sweep "$s-on" "$f"
    grep -h 'agent.sandbox' "$KFLEET_HOME"/run/agent-*.log | tail -1 | tee -a "$W/times.txt"
    sandbox_compare "$s-off" "$s-on"
    tools_sandbox "$s-on"
  done
  ;;
memlimit) # issue 44: bench/gpu/targets.yaml with each runner in its control group
  # under the agent's default memory limit, against no containment (KF_CONTAIN=0)
  # and against the groups without a memory limit (KF_RUNNER_MEMORY=0): the
  # limit's own cost on each median (target: within 1 %). MEMLIMIT_RUNS sets
  # the order (default "off on nolimit"; repeat names for a second pass),
  # MEMLIMIT_SWEEP another sweep (a CPU one, to try the part without a GPU).
  # A group that holds other processes cannot give its children the memory
  # controller (cgroup v2), and the device host starts this script in such a
  # group: MEMLIMIT_DELEGATE=1 (default) delegates one as systemd's
  # Delegate=yes would (delegate_group), and the agent runs there alone, under
  # `kfleet serve` (sweep_served), not spawned by `kfleet run` beside it.
  f=${MEMLIMIT_SWEEP:-$ROOT/bench/gpu/targets.yaml}
  run_one=sweep
  if [ "${MEMLIMIT_DELEGATE:-1}" = 1 ] && delegate_group; then run_one=sweep_served; fi
  n=0
  for m in ${MEMLIMIT_RUNS:-off on nolimit}; do
    n=$((n + 1))
    case $m in
    off) KF_CONTAIN=0 $run_one "memlimit-$n-off" "$f" ;;
    nolimit) KF_RUNNER_MEMORY=0 $run_one "memlimit-$n-nolimit" "$f" ;;
    *) $run_one "memlimit-$n-on" "$f" ;;
    esac
    grep -h 'agent.contain' "$KFLEET_HOME"/run/agent-*.log "$W/logs-memlimit-$n-$m"/agent*.log 2>/dev/null |
      tail -2 | tee -a "$W/times.txt"
  done
  undelegate_group
  on=$(ls "$W"/memlimit-*-on.json 2>/dev/null | head -1 | xargs -r basename | sed 's/.json$//')
  for base in off nolimit; do
    b=$(ls "$W"/memlimit-*-$base.json 2>/dev/null | head -1 | xargs -r basename | sed 's/.json$//')
    [ -n "$on" ] && [ -n "$b" ] && sandbox_compare "$b" "$on" "$base" "limited"
  done
  ;;
sandboxdiag) # which sandbox mechanism a node's GPU stack cannot live with: a small CUDA
  # sweep with each KF_SANDBOX_SKIP setting, and the driver's own cuInit under each
  ci="import ctypes; print(ctypes.CDLL('libcuda.so.1').cuInit(0))"
  for w in "" "unshare -n" "setpriv --no-new-privs" "setpriv --bounding-set=-all --inh-caps=-all"; do
    echo "sandboxdiag cuInit under '${w:-nothing}': $($w python3 -c "$ci" 2>&1 | tail -1)" | tee -a "$W/times.txt"
  done
  ls -la /dev/nvidia* /dev/dri 2>&1 | head -20 | tee -a "$W/times.txt"
  grep -v cgroup /proc/mounts | head -40 | tee -a "$W/times.txt"
  ldconfig -p | grep -E 'libcuda|libnvidia' | head | tee -a "$W/times.txt"
  i=0
  for v in ${SB_DIAG:-"KF_SANDBOX_SKIP=landlock" "KF_SANDBOX_SKIP=landlock-scope" "KF_SANDBOX_SKIP=landlock-tcp" \
    "KF_SANDBOX_SKIP=unix" \
    "KF_SANDBOX_SKIP=landlock-tcp,landlock-scope" "KF_SANDBOX_WRITE=/proc:/sys" \
    "KF_SANDBOX_WRITE=/proc:/sys:/dev:/run:/var:/tmp:/home:/root:/mnt:/srv:/media:/usr:/etc:/opt"}; do
    i=$((i + 1))
    export "$v"
    sweep diag-$i "$ROOT/bench/gpu/sandbox-diag.yaml" --agents 1 >/dev/null
    unset "${v%%=*}"
    python3 - "$W/diag-$i.json" "$v" <<'PY' | tee -a "$W/times.txt"
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
for r in rows:
    v, p = r.get("validation") or {}, r.get("profile") or {}
    print(f"sandboxdiag {sys.argv[2]}: validation {v.get('state')}, profile {p.get('state')}: "
          f"{(v.get('error') or p.get('error') or '')[:160]}")
PY
  done
  ;;
targets)
  "$B/kfleet-agent" --doctor --gpu | tee "$W/doctor.txt"
  sweep targets1 "$ROOT/bench/gpu/targets.yaml"
  sweep targets2 "$ROOT/bench/gpu/targets.yaml"
  ;;
throttle) # targets twice, then once keeping every sample (throttle: keep), to compare
  "$B/kfleet-agent" --doctor --gpu | tee "$W/doctor.txt"
  sweep targets1 "$ROOT/bench/gpu/targets.yaml"
  sweep targets2 "$ROOT/bench/gpu/targets.yaml"
  sweep targetskeep "$ROOT/bench/gpu/targets-keep.yaml"
  ;;
h100) # both of the above in one call
  "$B/kfleet-agent" --doctor --gpu | tee "$W/doctor.txt"
  sweep targets1 "$ROOT/bench/gpu/targets.yaml"
  sweep targets2 "$ROOT/bench/gpu/targets.yaml"
  sweep isolation "$ROOT/bench/gpu/isolation.yaml" --agents 1
  sweep sanitize "$ROOT/bench/gpu/sanitize.yaml"
  ;;
short)
  sweep short "$ROOT/bench/gpu/short.yaml"
  python3 - "$W/short.json" <<'PY' | tee -a "$W/times.txt"
import json, sys
for r in json.load(open(sys.argv[1]))["rows"]:
    p = r["profile"] or {}
    print(f"short: {r['kernel']} {r['params']}: {p.get('samples')} samples, "
          f"median {p.get('median_s', 0) * 1e6:.2f} us, noise {p.get('noise_pct') or 0:.2f} %, "
          f"profile task {p.get('elapsed_s') or 0:.1f} s, converged {p.get('converged')}")
PY
  ;;
python) # PY_SWEEPS picks among torch, sidestream and pyncu (default: all)
  python3 "$ROOT/agent/runner/pyprobe.py" | tee "$W/python.txt"
  for s in ${PY_SWEEPS:-torch sidestream pyncu}; do
    case $s in
    torch) sweep torch "$ROOT/examples/torch.yaml" ;;
    sidestream)
      sweep sidestream "$ROOT/bench/gpu/side-stream.yaml"
      mv "$W/sidestream.json" "$W/side-stream.json"
      ;;
    pyncu)
      sweep pyncu "$ROOT/bench/gpu/python-ncu.yaml"
      mv "$W/pyncu.json" "$W/python-ncu.json"
      ;;
    esac
  done
  ;;
share)
  sweep share "$ROOT/bench/gpu/share.yaml" --agents 3
  rm -rf "$KFLEET_HOME"
  sweep noshare "$ROOT/bench/gpu/share.yaml" --agents 3 --no-shared-builds
  python3 - "$W" <<'PY' | tee -a "$W/times.txt"
import collections, json, sys
w = sys.argv[1]
for name in ("share", "noshare"):
    doc = json.load(open(f"{w}/{name}.json"))
    by = collections.defaultdict(list)
    for b in doc["builds"]:
        by[b["kernel"]].append(b)
    compiles = sum(1 for b in doc["builds"] if not b["built_by"] and not b["cached"])
    secs = sum(b["compile_s"] or 0 for b in doc["builds"] if not b["built_by"])
    ok = sum(1 for r in doc["rows"] if (r.get("validation") or {}).get("state") == "succeeded")
    print(f"{name}: {len(doc['builds'])} builds, {compiles} compiles, {secs:.1f} s of nvcc; "
          f"{ok}/{len(doc['rows'])} validations passed; makespan "
          f"{doc['schedule']['makespan_s']:.1f} s")
    for k, bs in sorted(by.items()):
        print(f"  {k}: " + ", ".join(
            f"{b['node']} {'from ' + b['built_by'] if b['built_by'] else 'nvcc %.1f s' % (b['compile_s'] or 0)}"
            f" {b['artifact_hash'][:12]}" for b in sorted(bs, key=lambda b: b["node"])))
PY
  ;;
torchext)
  # A torch that says another version: the real one's files, linked, but
  # for torch/version.py (and, for the upgrade, its package metadata).
  # PYTHONPATH puts it first for the agent's probe and the runners.
  TP=$(python3 -c 'import torch, os; print(os.path.dirname(torch.__file__))')
  TV=$(python3 -c 'import torch; print(torch.__version__)')
  shadow() { # DIR WITH_METADATA
    mkdir -p "$1/torch"
    for f in "$TP"/* "$TP"/.[!.]*; do
      [ -e "$f" ] && [ "$(basename "$f")" != version.py ] && ln -s "$f" "$1/torch/"
    done
    sed "s/^__version__ = .*/__version__ = '2.10.0+fake'/" "$TP/version.py" >"$1/torch/version.py"
    if [ "$2" = 1 ]; then
      local d
      d=$(ls -d "$(dirname "$TP")"/torch-*.dist-info | head -1)
      mkdir -p "$1/torch-2.10.0+fake.dist-info"
      sed 's/^Version: .*/Version: 2.10.0+fake/' "$d/METADATA" >"$1/torch-2.10.0+fake.dist-info/METADATA"
    fi
  }
  sweep ext1 "$ROOT/bench/gpu/torch-ext.yaml"
  sweep ext2 "$ROOT/bench/gpu/torch-ext.yaml"
  shadow /tmp/kf-torch-mismatch 0
  PYTHONPATH=/tmp/kf-torch-mismatch sweep ext3 "$ROOT/bench/gpu/torch-ext.yaml"
  shadow /tmp/kf-torch-upgrade 1
  PYTHONPATH=/tmp/kf-torch-upgrade sweep ext4 "$ROOT/bench/gpu/torch-ext.yaml"
  python3 - "$W" "$TV" <<'PY' | tee -a "$W/times.txt"
import json, sys
w = sys.argv[1]
for name, what in (("ext1", "first build"), ("ext2", "same torch"),
                   ("ext3", "torch files say 2.10.0, metadata " + sys.argv[2]),
                   ("ext4", "torch 2.10.0 files and metadata")):
    d = json.load(open(f"{w}/{name}.json"))
    for b in d.get("builds") or []:
        print(f"torchext {name} ({what}): build {b['kernel']}: {b.get('state')}, cached "
              f"{b.get('cached')}, {b.get('compile_s') or 0:.1f} s {(b.get('error') or '')[:300]}")
    for r in d["rows"]:
        v, p = r.get("validation") or {}, r.get("profile") or {}
        prov = r.get("provenance") or {}
        med = f"{p['median_s'] * 1e6:.1f} us" if p.get("median_s") else "-"
        print(f"torchext {name}: {r['kernel']}: validation {v.get('state')}; profile "
              f"{p.get('state')} {med}; {prov.get('torch_extension') or ''} "
              f"{(v.get('error') or '')[:400]}")
PY
  ;;
cheats) # every shipped cheat (tests/data/sweeps/cheats.yaml, host kernels) and
  # the GPU side-stream ones, then targets once: C and CUDA kernels still pass
  sweep cheats "$ROOT/tests/data/sweeps/cheats.yaml" --agents 1
  python3 - "$W/cheats.json" <<'PY' | tee -a "$W/times.txt"
import json, sys
for r in json.load(open(sys.argv[1]))["rows"]:
    v, p = r.get("validation") or {}, r.get("profile") or {}
    err = (p.get("error") or v.get("error") or "")[:90]
    med = f"{p['median_s'] * 1e6:.0f} us" if p.get("median_s") else "-"
    out = f"+{p['outside_stream_s'] * 1e6:.0f} us" if p.get("outside_stream_s") else "-"
    print(f"cheat: {r['kernel']}: validation {v.get('state')}, profile {p.get('state')}, "
          f"median {med}, outside {out}, flags {','.join(r.get('flags') or [])} {err}")
PY
  # Issue 29 on the GPU: each Triton cheat against its honest twin (mode 0).
  sweep cheatsgpu "$ROOT/bench/gpu/cheats.yaml"
  python3 "$ROOT/bench/gpu/cheats_summary.py" "$W/cheatsgpu.json" | tee "$W/cheats-gpu.md"
  sweep sidestream "$ROOT/bench/gpu/side-stream.yaml"
  mv "$W/sidestream.json" "$W/side-stream.json"
  sweep targets1 "$ROOT/bench/gpu/targets.yaml"
  ;;
facts)
  bash "$ROOT/bench/gpu/facts.sh" "$W" 2>&1 | tee "$W/facts.log" | grep -v '^20..-..-..T' | tail -80
  echo "facts: see facts.log" >>"$W/times.txt"
  [ -n "${SKIP_TORCH:-}" ] || sweep torch "$ROOT/examples/torch.yaml"
  ;;
checks)
  sweep isolation "$ROOT/bench/gpu/isolation.yaml" --agents 1
  sweep sanitize "$ROOT/bench/gpu/sanitize.yaml"
  tools_sandbox sanitize
  ;;
fleet)
  sweep fleet "$ROOT/examples/gpu.yaml"
  schedule fleet
  # FLEET_REPEAT=1: the same sweep again in the same home, where the
  # scheduler knows each task's duration from the first (longest first
  # with history; the coordinator log's sched.order line says with_prior)
  if [ -n "${FLEET_REPEAT:-}" ]; then
    sweep fleet2 "$ROOT/examples/gpu.yaml"
    schedule fleet2
    grep -h 'sched.order' "$KFLEET_HOME/run/coordinator.log" | tail -2 | tee -a "$W/times.txt"
  fi
  [ -n "${SKIP_ISOLATION:-}" ] || sweep isolation "$ROOT/bench/gpu/isolation.yaml" --agents 1
  [ -z "${WITH_KILL:-}" ] || kill_one
  ;;
issue32) # stop on precision, thermal protocol, cost: targets twice and reversed, gpu.yaml on 1 GPU
  "$B/kfleet-agent" --doctor --gpu | tee "$W/doctor.txt"
  sweep targets1 "$ROOT/bench/gpu/targets.yaml"
  sweep targets2 "$ROOT/bench/gpu/targets.yaml"
  sweep targetsrev "$ROOT/bench/gpu/targets-reversed.yaml"
  CUDA_VISIBLE_DEVICES=0 sweep fleet1 "$ROOT/examples/gpu.yaml" --agents 1 ${PRICE:+--price "$PRICE"}
  schedule fleet1
  ;;
targets3) # issue 32's targets on one GPU (TARGETS_GPU, default 0): twice, then reversed
  export CUDA_VISIBLE_DEVICES=${TARGETS_GPU:-0}
  "$B/kfleet-agent" --doctor --gpu | tee "$W/doctor.txt"
  sweep targets1 "$ROOT/bench/gpu/targets.yaml"
  sweep targets2 "$ROOT/bench/gpu/targets.yaml"
  sweep targetsrev "$ROOT/bench/gpu/targets-reversed.yaml"
  unset CUDA_VISIBLE_DEVICES
  ;;
sustained) # targets.yaml under measure: {thermal: sustained}, beside the default burst
  export CUDA_VISIBLE_DEVICES=${TARGETS_GPU:-0}
  sed 's/^measure:$/measure:\n  thermal: sustained/' "$ROOT/bench/gpu/targets.yaml" >"$W/targets-sustained.yaml"
  sweep sustained "$W/targets-sustained.yaml"
  python3 - "$W/sustained.json" <<'PY' | tee -a "$W/times.txt"
import json, sys
d = json.load(open(sys.argv[1]))
print(f"sustained: thermal_protocol {d.get('thermal_protocol')}")
for r in d["rows"]:
    p = r.get("profile") or {}
    t = p.get("thermal") or {}
    print(f"sustained: {r['kernel']} {r['params']}: {p.get('median_s', 0) * 1e6:.1f} us, "
          f"{p.get('samples')} samples, SM {p.get('sm_clock_median_mhz')} MHz, "
          f"protocol {t.get('protocol')}, rests {t.get('rest_s')}")
PY
  unset CUDA_VISIBLE_DEVICES
  ;;
fleet1) # examples/gpu.yaml on GPU 0 alone: the 1-GPU point of the speed-up
  CUDA_VISIBLE_DEVICES=0 sweep fleet1 "$ROOT/examples/gpu.yaml" --agents 1
  schedule fleet1
  ;;
kill)
  kill_one
  ;;
targets1) # bench/gpu/targets.yaml once, cold, with its schedule and runner tasks
  sweep targets1 "$ROOT/bench/gpu/targets.yaml"
  schedule targets1
  runners targets1
  ;;
problems) # issue 30: the softmax problem, then 100 generated Triton candidates
  # PROBLEMS_N: how many Triton candidates (100); PROBLEMS_EXAMPLE=0: not the softmax example first.
  if [ "${PROBLEMS_EXAMPLE:-1}" != 0 ]; then
    SWEEP_LIMIT=${PROBLEMS_EXAMPLE_LIMIT:-150} sweep softmax "$ROOT/examples/problems/softmax/sweep.yaml"
    schedule softmax
  fi
  python3 "$ROOT/bench/problems_gen.py" triton "$W/triton100" "${PROBLEMS_N:-100}" >"$W/triton100-wrong.txt"
  # The coordinator's memory: kfleet run embeds it, so the run process's
  # peak RSS (VmHWM, read until it exits; the agents are other processes).
  ( pid= tries=0
    while [ -z "$pid" ] && [ $tries -lt 300 ]; do
      pid=$(pgrep -f "^$B/kfleet run $W/triton100/sweep.yaml" | head -1)
      tries=$((tries + 1))
      sleep 0.2
    done
    hwm=0
    while [ -r "/proc/$pid/status" ]; do
      v=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status" 2>/dev/null)
      [ -n "$v" ] && hwm=$v
      sleep 0.5
    done
    echo "triton100: kfleet run (embedded coordinator) peak RSS $((hwm / 1024)) MiB" >>"$W/times.txt" ) &
  SWEEP_LIMIT=${PROBLEMS_LIMIT:-400} sweep triton100 "$W/triton100/sweep.yaml"
  wait
  schedule triton100
  for name in softmax triton100; do
    [ -f "$W/$name.json" ] || continue
    python3 - "$W/$name.json" "$name" <<'PY' | tee -a "$W/times.txt"
import json, sys
d, name = json.load(open(sys.argv[1])), sys.argv[2]
count = {}
for r in d["rows"]:
    v = (r.get("validation") or {}).get("state") or "none"
    count[v] = count.get(v, 0) + 1
print("%s verdicts (validation, per candidate-configuration): %s" % (
    name, ", ".join("%s %d" % kv for kv in sorted(count.items()))))
PY
  done
  echo "triton100: $(cat "$W/triton100-wrong.txt") candidates wrong on purpose" | tee -a "$W/times.txt"
  ;;
kbsizes) # issue 41: KernelBench problems at their own sizes
  export KF_REFS_MAX_GB=${KF_REFS_MAX_GB:-40}
  [ -n "${KB_EXAMPLE:-}" ] && SWEEP_LIMIT=150 sweep softmax "$ROOT/examples/problems/softmax/sweep.yaml"
  names=${KB_NAMES:-"l1_1_matmul l1_40_layernorm l2_12_gemm"}
  [ -n "${KB_BIG:-}" ] && names="l1_23_softmax"
  for name in $names; do
    rm -rf "$KFLEET_HOME" # each problem's references in a home of its own
    SWEEP_LIMIT=${KB_LIMIT:-400} sweep "$name" "$ROOT/bench/gpu/kernelbench/$name/sweep.yaml"
    du -sh "$KFLEET_HOME"/state/agents/*/refs 2>/dev/null | sed "s/^/$name references: /" |
      tee -a "$W/times.txt"
    schedule "$name"
  done
  for name in ${KB_EXAMPLE:+softmax} $names; do
    python3 - "$W/$name.json" "$name" <<'PY' | tee -a "$W/times.txt"
import json, sys
d, name = json.load(open(sys.argv[1])), sys.argv[2]
st = (d["schedule"].get("slot_time") or {}).get("phases_s") or {}
for r in d["rows"]:
    v, p = r.get("validation") or {}, r.get("profile") or {}
    med, hc = p.get("median_s"), p.get("host_call_s")
    print("%s %s %s: validate %s (%s), profile %s, median %s us, host call %s us, speedup %s, "
          "speedup by host call %s; atol %s rtol %s; worst ratio %s"
          % (name, r["kernel"], r["params"], v.get("state"), (v.get("error") or "")[:120],
             p.get("state"), "%.1f" % (med * 1e6) if med else "-",
             "%.1f" % (hc * 1e6) if hc else "-", r.get("speedup"), r.get("speedup_host"),
             v.get("atol"), v.get("rtol"),
             max((t.get("worst_close") or {}).get("ratio") or 0 for t in v.get("trials") or [{}])))
print("%s slot time: %s" % (name, ", ".join("%s %.1f s" % kv for kv in sorted(st.items(), key=lambda kv: -kv[1])[:8])))
PY
  done
  ;;
freshcost) # issue 43 item 3: what fresh inputs cost a problem sweep, against the pool's, same call
  for v in ${FRESHCOST_ORDER:-pool fresh pool fresh}; do
    d="$W/softmax-$v"
    rm -rf "$d" && cp -r "$ROOT/examples/problems/softmax" "$d"
    [ "$v" = pool ] && printf '\nfresh_inputs = False\n' >>"$d/problem.py"
    rm -rf "$KFLEET_HOME"
    n=$(ls "$W"/fc-*-"$v".json 2>/dev/null | wc -l)
    SWEEP_LIMIT=${FRESHCOST_LIMIT:-150} sweep "fc-$((n + 1))-$v" "$d/sweep.yaml"
  done
  python3 - "$W" <<'PY' | tee -a "$W/times.txt"
import glob, json, os, sys
for f in sorted(glob.glob(os.path.join(sys.argv[1], "fc-*.json"))):
    d = json.load(open(f))
    s = d["schedule"]
    rows = d["rows"]
    ok = sum(1 for r in rows if (r.get("validation") or {}).get("state") == "succeeded")
    prof = [r["profile"] for r in rows if (r.get("profile") or {}).get("state") == "succeeded"]
    fresh = sum(p.get("fresh_samples") or 0 for p in prof)
    aud = sum(p.get("audit_samples") or 0 for p in prof)
    st = (s.get("slot_time") or {}).get("phases_s") or {}
    meds = {r["kernel"]: r["profile"]["median_s"] for r in rows if (r.get("profile") or {}).get("median_s")}
    print("%s: makespan %.1f s, GPU task time %.1f s, %d/%d validated, fresh %d audits %d; "
          "slot time %s; medians %s" % (
          os.path.basename(f)[:-5], s.get("makespan_s") or 0, s.get("gpu_busy_s") or 0, ok, len(rows),
          fresh, aud, ", ".join("%s %.1f" % kv for kv in sorted(st.items(), key=lambda kv: -kv[1])[:6]),
          ", ".join("%s %.2f us" % (k, v * 1e6) for k, v in sorted(meds.items()))))
PY
  ;;
cachecheats) # issue 43 item 3: output caches and answers computed ahead, fresh inputs and the pool's
  # Each problem's pool twin (NAME_pool: the same problem with fresh_inputs = False, what every
  # profile did before) is made here, in a copy of the folder, not kept as a second file.
  CC="$W/cachecheats"
  rm -rf "$CC" && cp -r "$ROOT/bench/gpu/cachecheats" "$CC"
  for base in softmax matmul; do
    { cat "$CC/$base.py"; printf '\nfresh_inputs = False  # the pool twin (run.sh)\n'; } >"$CC/${base}_pool.py"
    sed -e "s/^name: cache-$base\$/name: cache-${base}_pool/" -e "s/^  path: $base.py\$/  path: ${base}_pool.py/" \
      -e "s/, fresh inputs\.\$/, the pool inputs, fresh_inputs = False./" "$CC/sweep_$base.yaml" >"$CC/sweep_${base}_pool.yaml"
  done
  for name in ${CC_NAMES:-softmax_pool softmax matmul_pool matmul}; do
    rm -rf "$KFLEET_HOME"
    SWEEP_LIMIT=${CC_LIMIT:-100} sweep "cc-$name" "$CC/sweep_$name.yaml"
  done
  for name in ${CC_NAMES:-softmax_pool softmax matmul_pool matmul}; do
    python3 - "$W/cc-$name.json" "$name" <<'PY' | tee -a "$W/times.txt"
import json, sys
d, name = json.load(open(sys.argv[1])), sys.argv[2]
for a in d["agents"][:1]:
    print("%s ceilings: copy %s GB/s, bf16 %s, fp32 %s, tf32 %s, fp64 %s TFLOP/s" % (
        name, a.get("ceiling_copy_gbps"), a.get("ceiling_bf16_tflops"), a.get("ceiling_f32_tflops"),
        a.get("ceiling_tf32_tflops"), a.get("ceiling_f64_tflops")))
for r in d["rows"]:
    v, p = r.get("validation") or {}, r.get("profile") or {}
    med = p.get("median_s")
    im = r.get("impossible") or {}
    la = p.get("launches") or []
    print("%s %s: validate %s, profile %s%s, median %s us, min %s us, samples %s (fresh %s, audits %s), "
          "speedup %s, GFLOP/s %s, impossible %s, launches %s" % (
          name, r["kernel"], v.get("state"), p.get("state"),
          (" (" + (p.get("error") or "")[:150] + ")") if p.get("state") == "failed" else "",
          "%.2f" % (med * 1e6) if med else "-",
          "%.2f" % (p["min_s"] * 1e6) if p.get("min_s") else "-", p.get("samples"),
          p.get("fresh_samples"), p.get("audit_samples"), r.get("speedup"),
          "%.0f" % p["gflops"] if p.get("gflops") else "-",
          "%.1fx %s" % (im.get("times_ceiling"), im.get("of")) if im else "-",
          "; ".join("%s %.0f%% %s/run" % (l["name"][:40], 100 * (l.get("share") or 0), l.get("per_run")) for l in la[:3])))
PY
  done
  ;;
judge) # issue 43 items 1-2 in Triton: candidates going for the judge, forging samples, spying seeds
  J="$W/judge"
  rm -rf "$J" && mkdir -p "$J"
  cp "$ROOT/examples/problems/softmax/problem.py" "$ROOT/examples/problems/softmax/triton_softmax.py" \
    "$ROOT"/bench/gpu/judge/*.py "$J/"
  cat >"$J/sweep.yaml" <<YAML
name: judge
problem: {path: problem.py, params: {rows: [256], cols: [512]}, seeds: 2}
candidates: [triton_softmax.py, tr_reach.py, tr_forger.py, tr_spy.py]
baseline: triton_softmax
tasks: [build, validate, profile]
YAML
  rm -rf "$KFLEET_HOME"
  SWEEP_LIMIT=${JUDGE_LIMIT:-150} sweep judge "$J/sweep.yaml"
  python3 - "$W/judge.json" "$W/judge.txt" <<'PY' | tee -a "$W/times.txt"
import json, re, sys
d = json.load(open(sys.argv[1]))
rows = {r["kernel"]: r for r in d["rows"]}
def task(r):  # the row's first task that did not succeed, else its validation
    for k in ("validation", "profile"):
        if (r.get(k) or {}).get("state") not in (None, "succeeded"):
            return r[k]
    return r.get("validation") or {}
def said(r):
    return " ".join(((r.get(k) or {}).get("output") or {}).get("kept", "") for k in ("validation", "profile"))
checks = []
t = rows["triton_softmax"]
checks.append(("honest twin passes and is profiled", (t.get("profile") or {}).get("state") == "succeeded"))
r = rows["tr_reach"]
checks.append(("tr_reach reached no process", "reached no process" in said(r)))
checks.append(("tr_reach failed by its own spot check", task(r).get("state") == "failed" and "spot check" in (task(r).get("error") or "")))
f = rows["tr_forger"]
checks.append(("tr_forger killed, no forged time", task(f).get("state") == "failed" and "kfleet killed the runner" in (task(f).get("error") or "") and not (f.get("profile") or {}).get("median_s")))
text = json.dumps(d) + open(sys.argv[2]).read()
checks.append(("no seed in the report or the table", re.search(r"seed[^0-9a-f]{0,12}[0-9a-fA-F]{8,}", text) is None and "spy saw seed <secret seed>" in said(rows["tr_spy"])))
for name, ok in checks:
    print("judge: %s: %s" % ("PASS" if ok else "FAIL", name))
for k, r in sorted(rows.items()):
    x = task(r)
    print("judge: %s: %s %s | %s" % (k, x.get("state"), (x.get("error") or "")[:160], said(r)[:160].replace("\n", " / ")))
PY
  ;;
torch) # examples/torch.yaml alone, with its schedule and runner tasks
  sweep torch "$ROOT/examples/torch.yaml"
  schedule torch
  runners torch
  ;;
serve) # serving runners (issue 14 item 2): targets cold, the faults, the Python sweep
  sweep targets1 "$ROOT/bench/gpu/targets.yaml"
  schedule targets1
  sweep isolation "$ROOT/bench/gpu/isolation.yaml" --agents 1
  sweep torch "$ROOT/examples/torch.yaml"
  schedule torch
  runners targets1
  runners isolation
  runners torch
  ;;
build) # issue 33: kfleet built from source by this machine's own compiler and CMake
  # (Ubuntu 24.04), each build type, with the dependencies carried as
  # .sysroot/ (bench/gpu/sysroot.sh): warnings shown, never errors, as a user builds
  S=${KF_SYSROOT:-$ROOT/.sysroot}
  { gcc --version | head -1; cmake --version | head -1; } | tee -a "$W/times.txt"
  for t in Debug RelWithDebInfo Release MinSizeRel; do
    b=/tmp/kf-build-$t
    rm -rf "$b"
    t0=$SECONDS
    if PATH=$S/bin:$PATH PKG_CONFIG_LIBDIR=$S/pc PKG_CONFIG_SYSROOT_DIR=$S \
      cmake -S "$ROOT" -B "$b" -DCMAKE_BUILD_TYPE=$t -DBUILD_TESTING=OFF \
      -DCMAKE_EXE_LINKER_FLAGS="-Wl,-rpath-link,$S/usr/lib/x86_64-linux-gnu" >"$W/build-$t.log" 2>&1 &&
      PATH=$S/bin:$PATH cmake --build "$b" -j "$(nproc)" >>"$W/build-$t.log" 2>&1 &&
      v=$(LD_LIBRARY_PATH=$S/usr/lib/x86_64-linux-gnu "$b/kfleet" --version); then
      echo "build $t: ok ($v), $(grep -c 'warning:' "$W/build-$t.log") warnings, $((SECONDS - t0)) s" |
        tee -a "$W/times.txt"
    else
      echo "build $t: FAILED, see build-$t.log" | tee -a "$W/times.txt"
      grep -E 'error|warning' "$W/build-$t.log" | head -5
    fi
  done
  ;;
devcompare) # issue 32 item 4: the checks on the host, then on the GPU, same seeds
  # Each task's runner.compare line (where its checks ran, and why), read
  # from the runners' logs while they live (the agent removes a runner's
  # directory when it retires).
  compare_lines() { # FILE
    while :; do
      cat "$KFLEET_HOME"/state/agents/*/tmp/*/runner.log 2>/dev/null | grep 'runner.compare'
      sleep 0.1
    done >>"$1"
  }
  for way in host device; do
    # Each sweep starts from an empty store: the sweep id restarts, and with
    # it the task ids the validation seeds derive from; the agents' build
    # caches stay (the second sweep compiles nothing).
    rm -rf "$KFLEET_HOME/state/store"
    compare_lines "$W/devcmp-$way.compare" &
    poll=$!
    if [ $way = host ]; then
      KF_COMPARE=host sweep devcmp-host "$ROOT/bench/gpu/devcompare.yaml" --agents 1
    else
      sweep devcmp-device "$ROOT/bench/gpu/devcompare.yaml" --agents 1
    fi
    kill "$poll"
    wait "$poll" 2>/dev/null
    echo "devcompare $way run, where each task's checks ran (tasks, kernel, compare):" | tee -a "$W/times.txt"
    sort -u "$W/devcmp-$way.compare" | sed -n 's/.* kernel=\([^ ]*\) compare=\(.*\)/\1 \2/p' |
      sort | uniq -c | tee -a "$W/times.txt"
  done
  python3 - "$W/devcmp-host.json" "$W/devcmp-device.json" <<'PY' | tee -a "$W/times.txt"
import json, sys
def load(path):
    d = json.load(open(path))
    rows = {(r["kernel"], json.dumps(r["params"], sort_keys=True)): r for r in d["rows"]}
    return rows, ((d["schedule"].get("slot_time") or {}).get("phases_s") or {})
(host, hph), (dev, dph) = load(sys.argv[1]), load(sys.argv[2])
def bound(kernel, p):
    """docs/sweep-format.md: the relative errors of the two ways differ only
    by summation order, by at most (n/8 + n/524288 + 2304) * 2^-53 relative
    for n output elements; n from the params of the kernels it knows."""
    n = {"copy": lambda: p["bytes"] // 4, "gemm_bf16": lambda: p["m"] * p["n"],
         "gemm_cublas": lambda: p["m"] * p["n"], "bsr_spmm": lambda: p["m"] * p["n"],
         "traj_resample": lambda: p["batch"] * p["tgt_len"] * p["dim"]}.get(kernel, lambda: p.get("n"))()
    return (n / 8 + n / 524288 + 2304) * 2.0 ** -53 if n else 1e-12
bad = 0
print("| kernel | params | validation host / device | max_abs_err host | device | rel_err host | device | "
      "validate s host | device | profile s host | device |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for k in sorted(set(host) & set(dev)):
    vh, vd = host[k].get("validation") or {}, dev[k].get("validation") or {}
    ph, pd = host[k].get("profile") or {}, dev[k].get("profile") or {}
    th, td = vh.get("trials") or [], vd.get("trials") or []
    same = "" if [t["seed"] for t in th] == [t["seed"] for t in td] else " SEEDS DIFFER"
    worst_rel, ok = 0.0, True
    for a, b in zip(th, td):
        ok &= a["max_abs_err"] == b["max_abs_err"] or a["max_abs_err"] != a["max_abs_err"] and b["max_abs_err"] != b["max_abs_err"]
        ra, rb = a["rel_err"], b["rel_err"]
        if ra == ra and rb == rb:
            d = abs(ra - rb) / ra if ra else abs(rb)
            worst_rel = max(worst_rel, d)
            ok &= d <= bound(k[0], json.loads(k[1]))
    if not same and th and not ok:
        bad += 1
    f = lambda t, key: ("%.6g" % max(x[key] for x in t)) if t else "-"
    e = lambda x: "%.2f" % x["elapsed_s"] if x.get("elapsed_s") is not None else "-"
    print(f"| {k[0]} | {k[1]} | {vh.get('state')} / {vd.get('state')} | {f(th, 'max_abs_err')} | "
          f"{f(td, 'max_abs_err')} | {f(th, 'rel_err')} | {f(td, 'rel_err')} | {e(vh)} | {e(vd)} | "
          f"{e(ph)} | {e(pd)} |{' worst rel diff %.2g' % worst_rel}{'' if ok else ' MISMATCH'}{same}")
    for name, v in (("host", vh), ("device", vd)):
        if v.get("state") not in (None, "succeeded"):
            print(f"devcompare: {k[0]} {k[1]} {name}: {(v.get('error') or '')[:160]}")
print("devcompare: slot time phases, host -> device: " + ", ".join(
    f"{p} {hph.get(p, 0):.2f} -> {dph.get(p, 0):.2f} s" for p in ("reference", "compare", "determinism", "run", "setup")))
print(f"devcompare: {len(set(host) & set(dev))} rows both ways, {bad} with different errors (target 0)")
PY
  ;;
*)
  echo "run.sh: PART is build, targets, throttle, checks, h100, short, python, cheats, facts, fleet, fleet1, kill, targets1, torch, serve, sandbox, memlimit, issue32 or devcompare" >&2
  exit 2
  ;;
esac
cat "$W/times.txt"
python3 "$ROOT/bench/gpu/summarize.py" "$W" >"$W/summary-$PART${KF_TAG:-}.md" 2>&1
cp "$W/summary-$PART${KF_TAG:-}.md" "$OUT/"
# Reports, progress, and the agents' and runners' logs, for the record.
tar czf "$OUT/bench-$PART${KF_TAG:-}.tgz" --exclude='*/store/*' --exclude='*/outbox/*' --exclude='*.so' \
  --exclude='*/refs/*' --exclude='*.ref' \
  -C /tmp "kf-bench-$PART${KF_TAG:-}" "kfh-$PART${KF_TAG:-}" 2>/dev/null
cat "$W/summary-$PART${KF_TAG:-}.md"

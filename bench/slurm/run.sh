#!/usr/bin/env bash
# bench/slurm/run.sh — issue 16's side-by-side (docs/performance.md): 1,000
# short tasks on one local Slurm, the way a user without kfleet runs them
# and through kfleet, submit to all done, in one run.
#
#   bash bench/slurm/run.sh [--build DIR]
#
# The cluster is tests/integration/slurm/cluster.sh's: a private slurmctld,
# slurmd and munge in network namespaces behind an sshd login node, its
# node c1 given KFB_SLURM_SLOTS CPUs (default: this machine's cores), so
# both sides run that many tasks at once. Each task is the STREAM triad
# on one size n (1024 + 64 i floats, i < KFB_SLURM_CONFIGS, default 1000),
# timed for at least 5 samples and 1 ms:
#
#   sbatch per config  what users do today: a loop of `sbatch --wrap
#                      "triad_job N 5 1"` on the login node (triad_job.c,
#                      compiled once into the shared dir), then wait for the
#                      queue to empty. Submit to all done.
#   sbatch array       the same as one job array (--array=0-999): one
#                      submission, still one Slurm job launch per config.
#   kfleet             `kfleet launch` of KFB_SLURM_SLOTS agents as Slurm
#                      jobs (bundle upload included), then one sweep of the
#                      host triad kernel (1,000 profiles and a build per
#                      agent, the first compiling and the others installing
#                      its artifact; same sizes, min_samples 5, min_time
#                      1ms) with `kfleet submit --follow`. Launch and sweep are timed
#                      apart and together; verify must be clean.
#
# Needs root (namespaces), sshd and Slurm (install-deps.sh --bench) and a
# release build of kfleet (make build). Prints a table last.
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
    sed -n '2,30p' "$0"
    exit 0
    ;;
  *)
    echo "bench/slurm/run.sh: unknown argument '$1' (--build DIR)" >&2
    exit 2
    ;;
  esac
done
[ -x "$BUILD/kfleet" ] || {
  echo "bench/slurm/run.sh: $BUILD/kfleet is missing; run make build" >&2
  exit 1
}
CONFIGS=${KFB_SLURM_CONFIGS:-1000}
SLOTS=${KFB_SLURM_SLOTS:-$(nproc)}
export KF_BIN=$BUILD KF_SRC=$ROOT
# The integration tests' helpers: private home, pods, the Slurm cluster,
# and cleanup of all of it whatever happens.
source "$ROOT/tests/integration/lib.sh"
source "$ROOT/tests/integration/sshd/pods.sh"
source "$ROOT/tests/integration/slurm/cluster.sh"
trap 'rc=$?; set +e; slurm_cleanup; pods_cleanup; (exit $rc); cleanup' EXIT
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
in_login() { ip netns exec "${POD_TAG}-login" "$@"; }

pods_init
"$KFLEET" bundle --out "$T/bundle" >"$T/bundle.log" 2>&1 || fail "kfleet bundle: $(tail -3 "$T/bundle.log")"
SLURM_CPUS=$SLOTS slurm_start login 1
echo "slurm-bench: Slurm $(in_cluster sinfo -V | awk '{print $2}'), node c1 with $SLOTS CPUs; $CONFIGS configurations" >&2
mkdir -p "$T/cluster/each" "$T/cluster/array"
cc -O2 -o "$T/cluster/triad_job" "$ROOT/bench/slurm/triad_job.c"
SIZES=$(seq 0 $((CONFIGS - 1)) | awk '{printf "%s%d", (NR > 1 ? " " : ""), 1024 + $1 * 64}')

# Until no job named $1 is pending, running or completing.
wait_queue() {
  while [ -n "$(in_cluster squeue -h -n "$1" -o %i)" ]; do sleep 0.2; done
}

# Without kfleet: one sbatch per configuration, from the login node.
t0=$(now)
in_login env SIZES="$SIZES" BIN="$T/cluster/triad_job" OUT="$T/cluster/each" bash -c '
  for n in $SIZES; do
    sbatch -Q -J kfb-each -o "$OUT/%j.out" --wrap "$BIN $n 5 1" >/dev/null || exit 1
  done'
submit_each=$(since "$t0")
wait_queue kfb-each
each=$(since "$t0")
done_each=$(cat "$T/cluster/each"/*.out | grep -c '^n=' || true)
[ "$done_each" -eq "$CONFIGS" ] || fail "sbatch per config: $done_each of $CONFIGS jobs printed a result"
echo "slurm-bench: sbatch per config: ${each}s ($submit_each s to submit)" >&2

# Without kfleet, as one job array.
t0=$(now)
in_login sbatch -Q -J kfb-array --array=0-$((CONFIGS - 1)) -o "$T/cluster/array/%A_%a.out" \
  --wrap "$T/cluster/triad_job \$((1024 + SLURM_ARRAY_TASK_ID * 64)) 5 1" >/dev/null
wait_queue kfb-array
array=$(since "$t0")
done_array=$(cat "$T/cluster/array"/*.out | grep -c '^n=' || true)
[ "$done_array" -eq "$CONFIGS" ] || fail "sbatch array: $done_array of $CONFIGS tasks printed a result"
echo "slurm-bench: sbatch array: ${array}s" >&2

# kfleet: agents as Slurm jobs, then the sweep.
start_serve
cat >"$T/fleet.yaml" <<YAML
hosts:
  - name: bench
    provider: slurm
    host: 10.77.1.2
    user: root
    identity: $T/id_ed25519
    workdir: $T/cluster/kfleet
    slurm:
      nodes: $SLOTS
      time: "2:00:00"
      relay_host: $SLURM_RELAY_HOST
YAML
{
  echo "name: slurm-bench"
  echo "kernels:"
  echo "  - name: triad"
  echo "    params:"
  echo "      n: [${SIZES// /, }]"
  echo "tasks: [build, profile]"
  echo "measure: {min_samples: 5, min_time: 1ms, max_noise: 100, precision: 50, timeout: 10s}"
} >"$T/sweep.yaml"
t0=$(now)
"$KFLEET" launch --known-hosts "$T/known_hosts" --accept-new --bundle "$T/bundle" --min-free 4M \
  --register-timeout 120s "$T/fleet.yaml" >"$T/launch.out" 2>"$T/launch.log" ||
  fail "kfleet launch: $(cat "$T/launch.out")"
launch=$(since "$t0")
t1=$(now)
"$KFLEET" submit "$T/sweep.yaml" --follow >"$T/submit.out" 2>"$T/follow.log" ||
  fail "the sweep failed: $(tail -5 "$T/submit.out")"
sweep=$(since "$t1")
total=$(since "$t0")
id=$(grep -o 'submitted sweep [0-9]*' "$T/submit.out" | awk '{print $3}')
"$KFLEET" verify "$id" --format json >"$T/verify.json" || fail "verify found violations"
tasks=$(json_field "$T/verify.json" tasks)
ok=$(json_field "$T/verify.json" succeeded)
# The profiles and one build per agent that got work (the first compiles,
# the others install its artifact).
[ "$ok" -eq "$tasks" ] && [ "$tasks" -gt "$CONFIGS" ] && [ "$tasks" -le $((CONFIGS + SLOTS)) ] ||
  fail "kfleet: $ok of $tasks tasks succeeded, want $CONFIGS profiles and 1 to $SLOTS builds"
"$KFLEET" teardown --known-hosts "$T/known_hosts" --purge "$T/fleet.yaml" >"$T/down.out" 2>&1 ||
  fail "teardown: $(cat "$T/down.out")"

row() { # WAY SECONDS NOTE
  printf '  %-26s %10.1f s %12.1f ms   %s\n' "$1" "$2" "$(awk -v s="$2" -v n="$CONFIGS" 'BEGIN { print s * 1000 / n }')" "$3"
}
echo
echo "Slurm side by side: $CONFIGS short tasks (triad, n = 1024..$((1024 + (CONFIGS - 1) * 64)), >= 5 samples and 1 ms each)," \
  "$SLOTS at a time; Slurm $(in_cluster sinfo -V | awk '{print $2}'), $(nproc) cores"
printf '  %-26s %12s %15s\n' way "submit to all done" "per task"
row "sbatch per config" "$each" "(submitting: $submit_each s)"
row "sbatch job array" "$array" ""
row "kfleet sweep (agents up)" "$sweep" "($tasks tasks, verify clean)"
row "kfleet launch + sweep" "$total" "(launch of $SLOTS agents: $launch s)"

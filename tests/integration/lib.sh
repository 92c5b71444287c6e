# lib.sh — helpers for kfleet's integration tests: a private KFLEET_HOME,
# a real coordinator and real agents on loopback, and cleanup of every
# process the test started, whatever happens.
set -euo pipefail

: "${KF_BIN:?KF_BIN (the build dir) must be set}"
: "${KF_SRC:?KF_SRC (the source dir) must be set}"
KFLEET="$KF_BIN/kfleet"
KFAGENT="$KF_BIN/kfleet-agent"

TEST_NAME=$(basename "$0" .sh)
T=$(mktemp -d "/tmp/kf-${TEST_NAME}.XXXXXX")
export KFLEET_HOME="$T/home"
PIDS=()

cleanup() {
  local rc=$?
  for p in "${PIDS[@]:-}"; do
    [ -n "$p" ] && kill -9 "$p" 2>/dev/null || true
  done
  wait 2>/dev/null || true
  if [ $rc -ne 0 ]; then
    echo "--- $TEST_NAME failed (rc=$rc); logs:" >&2
    for f in "$T"/*.log; do
      [ -f "$f" ] || continue
      echo "=== $f (last 40 lines)" >&2
      tail -n 40 "$f" >&2
    done
  fi
  rm -rf "$T"
  exit $rc
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok - $*"; }

# start_serve [ARGS...]: starts `kfleet serve`, waits for its agent endpoint.
# With SERVE_NOFILE=N set, it runs under `ulimit -n N` (soft and hard).
start_serve() {
  if [ -n "${SERVE_NOFILE:-}" ]; then
    (ulimit -n "$SERVE_NOFILE" && exec "$KFLEET" --log-level debug serve "$@") \
      >"$T/serve.out" 2>"$T/serve.log" &
  else
    "$KFLEET" --log-level debug serve "$@" >"$T/serve.out" 2>"$T/serve.log" &
  fi
  SERVE_PID=$!
  PIDS+=("$SERVE_PID")
  for _ in $(seq 1 200); do
    [ -s "$KFLEET_HOME/run/agent-endpoint" ] && break
    kill -0 "$SERVE_PID" 2>/dev/null || fail "kfleet serve exited early"
    sleep 0.05
  done
  ENDPOINT=$(cat "$KFLEET_HOME/run/agent-endpoint")
  [ -n "$ENDPOINT" ] || fail "no agent endpoint"
}

# need_numpy: fails the test unless $KF_PYTHON (set by the test) imports
# numpy; make test-build installs python3-numpy.
need_numpy() {
  "$KF_PYTHON" -c 'import numpy' 2>"$T/numpy.err" ||
    fail "$KF_PYTHON has no numpy (make test-build installs python3-numpy): $(tail -1 "$T/numpy.err")"
}

# start_agent NAME [ARGS...]: starts an agent; its pid in AGENT_PID.
start_agent() {
  local name=$1
  shift
  "$KFAGENT" --coordinator "$ENDPOINT" --workdir "$T/agents/$name" --name "$name" \
    --log-level debug "$@" 2>>"$T/agent-$name.log" &
  AGENT_PID=$!
  PIDS+=("$AGENT_PID")
}

# wait_agents N: until `kfleet status` lists N agents in state ok.
wait_agents() {
  local n=$1
  for _ in $(seq 1 200); do
    local c
    c=$("$KFLEET" status --format json 2>/dev/null | grep -c '"state": "ok"' || true)
    [ "$c" -ge "$n" ] && return 0
    sleep 0.1
  done
  "$KFLEET" status >&2 || true
  fail "$n agents did not register"
}

# json_field FILE KEY: the first numeric value of "KEY": in FILE.
json_field() {
  grep -o "\"$2\": *[0-9.]*" "$1" | head -n1 | sed 's/.*: *//'
}

# started_beside LOG KERNEL: "KIND KERNEL" of each task an agent started
# (its runner.start lines in LOG, at debug) while KERNEL's validate ran.
started_beside() {
  python3 - "$1" "$2" <<'PY'
import re, sys
lines = open(sys.argv[1], errors="replace").read().splitlines()
start = next(i for i, l in enumerate(lines) if "runner.start" in l and "kind=validate" in l
             and f"kernel={sys.argv[2]} " in l)
task = re.search(r"task=(0x[0-9a-f]+)", lines[start]).group(1)
end = next((i for i in range(start, len(lines)) if "runner.end" in lines[i] and f"task={task} " in lines[i]),
           len(lines))
for l in lines[start + 1:end]:
    if "runner.start" in l:
        print(" ".join(re.search(r"kind=(\S+) kernel=(\S+)", l).groups()))
PY
}

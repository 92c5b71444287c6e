#!/usr/bin/env bash
# A fork bomb under an outer process limit (issue 44: a node whose
# container allows 1,024 processes, where a setsid fork bomb took them all
# and another kernel's build failed meanwhile with "fork: Resource
# temporarily unavailable"). The agent starts inside a group of pids.max
# 1024 with the default limits and two CPU slots: each runner's default
# becomes a quarter of 1024 (half of it, divided among two runners), the
# agent says 256 at start, and while the bomb holds one slot at its limit
# another kernel builds and validates on the other. Needs the cgroup v1 pids
# hierarchy writable (root on a hybrid node like the CI machine); skipped
# with the reason elsewhere.
source "$(dirname "$0")/lib.sh"

PIDS_ROOT=/sys/fs/cgroup/pids
if [ ! -w "$PIDS_ROOT/cgroup.procs" ] || [ ! -d "$PIDS_ROOT" ]; then
  echo "# skip - no writable cgroup v1 pids hierarchy at $PIDS_ROOT to put the agent under an outer limit"
  exit 0
fi
OUTER="$PIDS_ROOT/kf-outer-$$"
mkdir "$OUTER"
echo 1024 >"$OUTER/pids.max"
# The outer group goes with the test: its agent's groups first (emptied by
# the agent's end or by the kill below), then itself.
remove_outer() {
  for p in "${PIDS[@]:-}"; do
    [ -n "$p" ] && kill -9 "$p" 2>/dev/null || true
  done
  { wait; } 2>/dev/null || true
  # What this test's agent left there (a failed run): the bomb's tree.
  for _ in 1 2 3; do
    find "$OUTER" -name cgroup.procs -exec cat {} + 2>/dev/null | xargs -r kill -9 2>/dev/null || true
    sleep 0.3
  done
  find "$OUTER" -mindepth 1 -depth -type d -exec rmdir {} + 2>/dev/null || true
  rmdir "$OUTER" 2>/dev/null || echo "# $OUTER could not be removed: $(cat "$OUTER/cgroup.procs" | head -3)"
}
trap 'rc=$?; remove_outer; (exit $rc); cleanup' EXIT

start_serve
sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$OUTER" \
  "$KFAGENT" --coordinator "$ENDPOINT" --workdir "$T/agents/e" --name e --log-level debug \
  --cpu-slots 2 2>>"$T/agent-e.log" &
AGENT=$!
PIDS+=("$AGENT")
wait_agents 1
line=$(grep -m1 'info agent.contain' "$T/agent-e.log") || fail "the agent logged no agent.contain line"
echo "# $line"
case "$line" in
*" pids=256 "*) pass "under an outer pids.max of 1024 with two slots, each runner's default is 256" ;;
*" pids=0 "*)
  echo "# skip - this agent has no process limit for its runners: $(grep -m1 'warn agent.contain' "$T/agent-e.log")"
  exit 0
  ;;
*) fail "under an outer pids.max of 1024 with two slots each runner should get 256: $line" ;;
esac

K="$KF_SRC/tests/kernels"
printf 'name: bomb\nkernels:\n  - path: %s/contain/fork_bomb.c\nparams: {n: [4K]}\ntasks: [build, validate]\ntime_limit: 10s\nmeasure: {seeds: 1}\n' \
  "$K" >"$T/bomb.yaml"
printf 'name: beside\nkernels:\n  - path: %s/cheat_honest.c\nparams: {n: [4K]}\ntasks: [build, validate]\nmeasure: {seeds: 1}\n' \
  "$K" >"$T/beside.yaml"
"$KFLEET" submit "$T/bomb.yaml" --follow >"$T/bomb.out" 2>"$T/bomb.log" &
BOMB=$!
for _ in $(seq 1 300); do
  grep -q 'runner.start.*kind=validate.*kernel=fork_bomb' "$T/agent-e.log" && break
  sleep 0.1
done
grep -q 'runner.start.*kind=validate.*kernel=fork_bomb' "$T/agent-e.log" || fail "the fork bomb never started"
sleep 1 # its tree at the limit
echo "# the outer group with the bomb at its limit: pids.current $(cat "$OUTER/pids.current") of 1024"
"$KFLEET" submit "$T/beside.yaml" --follow >"$T/beside.out" 2>&1 ||
  fail "a kernel built beside the fork bomb failed: $(grep -i -m3 'fail\|unavailable' "$T/beside.out")"
bid=$(grep -o 'submitted sweep [0-9]*' "$T/beside.out" | awk '{print $3}')
"$KFLEET" verify "$bid" --format json >"$T/bv.json" || fail "verify"
[ "$(json_field "$T/bv.json" failed)" -eq 0 ] || fail "the sweep beside the bomb had failures"
pass "another kernel built and validated beside the fork bomb ($(json_field "$T/bv.json" succeeded) tasks)"
set +e
wait "$BOMB"
set -e
id=$(grep -o 'submitted sweep [0-9]*' "$T/bomb.out" | awk '{print $3}')
"$KFLEET" report "$id" --format json >"$T/r.json"
python3 - "$T/r.json" <<'PY' || fail "the fork bomb's verdict is wrong (above)"
import json, re, sys
v = json.load(open(sys.argv[1]))["rows"][0]["validation"]
print(f"ok - fork bomb: {v['state']} at attempt {v['attempt']}: {(v['error'] or '')[:300]}")
assert v["state"] == "timed_out" and v["attempt"] == 1, v
assert re.search(r"reached the runner's limit of 256 processes and threads", v["error"]), v["error"]
PY
# The other kernel's build ran while the bomb was at its limit.
beside=$(started_beside "$T/agent-e.log" fork_bomb) || fail "no fork bomb validate in the agent's log"
echo "$beside" | grep -qx "build cheat_honest" || fail "the other kernel's build did not run beside the fork bomb: $beside"
pass "beside the fork bomb: $(echo $beside)"

#!/usr/bin/env bash
# The agent's work dir full: its build is refused with the free space in the
# message (agent/runner/build.c checks before compiling), the tasks that needed the
# build fail saying so, each with exactly one terminal record, and the agent
# lives on (its outbox still works on the nearly full disk).
source "$(dirname "$0")/lib.sh"

[ "$(id -u)" -eq 0 ] || { echo "ok - skipped: needs root to mount a tmpfs"; exit 0; }
W="$T/agents/full"
mkdir -p "$W"
mount -t tmpfs -o size=16m,mode=0700 kf-workdir-full "$W" || { echo "ok - skipped: cannot mount a tmpfs"; exit 0; }
trap 'rc=$?; set +e; for p in "${PIDS[@]:-}"; do kill -9 "$p" 2>/dev/null; done; wait 2>/dev/null; umount -l "$W"; (exit $rc); cleanup' EXIT

start_serve
start_agent full --workdir "$W"
AGENT=$AGENT_PID
wait_agents 1
# Fill the disk, leaving the outbox a little room.
avail_kib=$(df -k --output=avail "$W" | tail -n1)
dd if=/dev/zero of="$W/filler" bs=1k count=$((avail_kib - 2048)) 2>/dev/null
free_mib=$(( $(df -k --output=avail "$W" | tail -n1) / 1024 ))
pass "work dir $W nearly full: $free_mib MiB free"

set +e
"$KFLEET" submit "$KF_SRC/examples/quickstart.yaml" --follow >"$T/submit.out" 2>"$T/follow.log"
rc=$?
set -e
[ $rc -eq 1 ] || fail "a sweep whose builds are refused should exit 1, got $rc"
id=$(grep -o 'submitted sweep [0-9]*' "$T/submit.out" | awk '{print $3}')
"$KFLEET" report "$id" --format json >"$T/r.json" || fail "report"
grep -q "work dir $W has [0-9]* MiB free, builds need 256 MiB" "$T/r.json" \
  || fail "no free-space message: $(grep -o '"error": "[^"]*"' "$T/r.json" | sort -u | head -3)"
pass "build refused: $(grep -o "work dir [^\"]*MiB free[^\"]*MiB" "$T/r.json" | head -n1)"
"$KFLEET" verify "$id" --format json >"$T/v.json" || fail "verify: $(cat "$T/v.json")"
tasks=$(json_field "$T/v.json" tasks)
failed=$(json_field "$T/v.json" failed)
[ "$(json_field "$T/v.json" terminal_records)" -eq "$tasks" ] || fail "terminal records != tasks"
skipped=$(json_field "$T/v.json" skipped)
# Validations and builds fail with the cause; each profile waits on its
# validation, so it is skipped (no GPU time), never run nor lost.
[ $((failed + skipped)) -eq "$tasks" ] || fail "$failed failed + $skipped skipped of $tasks; all need the refused build"
[ "$skipped" -gt 0 ] || fail "no profile was skipped after its validation failed"
kill -0 "$AGENT" || fail "the agent died on a full work dir"
pass "$tasks tasks ended once each: $failed failed with the cause, $skipped profiles skipped; agent alive"

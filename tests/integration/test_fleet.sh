#!/usr/bin/env bash
# A real coordinator and three real agents on loopback run a sweep of more
# than 200 tasks; then the store is checked: every task ended in exactly one
# terminal record, every profile has all its samples.
source "$(dirname "$0")/lib.sh"

start_serve
for a in a1 a2 a3; do start_agent "$a"; done
wait_agents 3
pass "3 agents registered"

"$KFLEET" submit "$KF_SRC/tests/data/sweeps/fleet200.yaml" --follow >"$T/submit.out" 2>"$T/follow.log" \
  || fail "submit --follow exited $?"
id=$(grep -o 'submitted sweep [0-9]*' "$T/submit.out" | awk '{print $3}')
[ -n "$id" ] || fail "no sweep id in: $(cat "$T/submit.out")"
pass "sweep $id finished"

"$KFLEET" verify "$id" --format json >"$T/verify.json" || { cat "$T/verify.json"; fail "verify found violations"; }
tasks=$(json_field "$T/verify.json" tasks)
records=$(json_field "$T/verify.json" terminal_records)
succeeded=$(json_field "$T/verify.json" succeeded)
profiles=$(json_field "$T/verify.json" profiles)
samples=$(json_field "$T/verify.json" samples)
[ "$tasks" -ge 200 ] || fail "only $tasks tasks"
[ "$records" -eq "$tasks" ] || fail "$records terminal records for $tasks tasks"
[ "$succeeded" -eq "$tasks" ] || fail "$succeeded of $tasks succeeded"
[ "$profiles" -ge 100 ] || fail "only $profiles profiles"
[ "$samples" -ge $((profiles * 5)) ] || fail "$samples samples for $profiles profiles (min 5 each)"
pass "verify: $tasks tasks, $records terminal records, $profiles profiles, $samples samples"

# Every agent took work: builds are per agent, so each has one per kernel.
"$KFLEET" report "$id" --format json >"$T/builds.json" || fail "report json"
builds=$(grep -c '"kind": "build"' "$T/builds.json" || true)
[ "$builds" -ge 3 ] || fail "expected a build on each of 3 agents, saw $builds"
pass "builds per agent: $builds"

# The report in each format; JSON carries the schema and every row.
"$KFLEET" report "$id" >"$T/report.txt" || fail "report table"
grep -q triad "$T/report.txt" || fail "table lacks triad"
"$KFLEET" report "$id" --format md >"$T/report.md" || fail "report md"
grep -q '^|' "$T/report.md" || fail "md has no table"
"$KFLEET" report --format json >"$T/report.json" || fail "report (latest) json"
grep -q '"schema": "kfleet.report/2"' "$T/report.json" || fail "json schema missing"
pass "report table/md/json"

"$KFLEET" stop >/dev/null || fail "stop"
for _ in $(seq 1 100); do kill -0 "$SERVE_PID" 2>/dev/null || break; sleep 0.05; done
kill -0 "$SERVE_PID" 2>/dev/null && fail "coordinator still running after stop"
pass "coordinator stopped"

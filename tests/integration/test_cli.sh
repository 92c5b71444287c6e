#!/usr/bin/env bash
# Bad input gets a clear error and exit 2; a missing coordinator is one line;
# every command has --help.
source "$(dirname "$0")/lib.sh"

"$KFLEET" --help >"$T/help.out" || fail "kfleet --help exited $?"
grep -q 'usage: kfleet' "$T/help.out" || fail "kfleet --help lacks usage"
for c in run serve submit status report cancel stop verify version; do
  "$KFLEET" "$c" --help >"$T/help.out" || fail "kfleet $c --help exited $?"
  grep -q "usage: kfleet $c" "$T/help.out" || fail "kfleet $c --help lacks usage"
done
pass "--help for every command"

set +e
"$KFLEET" frobnicate 2>"$T/err"; rc=$?
set -e
[ $rc -eq 2 ] || fail "unknown command exit $rc"
grep -q "unknown command 'frobnicate'" "$T/err" || fail "unknown command message"
set +e
"$KFLEET" status --bogus 2>"$T/err"; rc=$?
set -e
[ $rc -eq 2 ] || fail "unknown flag exit $rc"
grep -q "usage: kfleet status" "$T/err" || fail "no usage after a bad flag"
pass "unknown command and flag: exit 2 with usage"

# One --format parser (kf_opt_format): every command names what it takes,
# says what it got, shows its usage and exits 2, before doing anything.
for c in "report:table, md, json, html or csv" "run x.yaml:table, md, json, html or csv" \
  "compare 1 2:table, md or json" "status:table or json" "verify:table or json" \
  "submit x.yaml:table, json or jsonl" "agent-key list:table or json"; do
  set +e
  $KFLEET ${c%%:*} --format xml 2>"$T/err"; rc=$?
  set -e
  [ $rc -eq 2 ] || fail "${c%%:*} --format xml: exit $rc"
  grep -q "kfleet .*: --format wants ${c#*:}, got 'xml'" "$T/err" || fail "${c%%:*}: $(cat "$T/err")"
  grep -q "usage: kfleet" "$T/err" || fail "${c%%:*} --format xml: no usage"
done
pass "--format: one answer to a bad value in every command"

set +e
"$KFLEET" status 2>"$T/err"; rc=$?
set -e
[ $rc -eq 1 ] || fail "status without coordinator exit $rc"
[ "$(wc -l <"$T/err")" -eq 1 ] || fail "not one line: $(cat "$T/err")"
grep -q "no coordinator is running" "$T/err" || fail "message: $(cat "$T/err")"
pass "no coordinator: one line, exit 1"

cat >"$T/bad.yaml" <<'YAML'
name: bad
kernels:
  - triad
measure:
  min_sampels: 3
YAML
set +e
"$KFLEET" submit "$T/bad.yaml" 2>"$T/err"; rc=$?
set -e
[ $rc -eq 2 ] || fail "bad sweep exit $rc"
grep -q "$T/bad.yaml:5:3" "$T/err" || fail "no file:line:col: $(cat "$T/err")"
pass "sweep error: $(head -c 120 "$T/err")"

set +e
"$KFLEET" report 2>"$T/err"; rc=$?
set -e
[ $rc -eq 1 ] || fail "report with no store exit $rc"
pass "report with nothing stored: exit 1"

set +e
"$KFAGENT" --cpu-slots zero 2>"$T/err"; rc=$?
set -e
[ $rc -eq 2 ] || fail "agent bad flag exit $rc"
pass "agent bad flag: exit 2"
set +e
"$KFAGENT" --price -3 2>"$T/err"; rc=$?
set -e
[ $rc -eq 2 ] && grep -q "price wants what one GPU-hour" "$T/err" || fail "agent --price -3: exit $rc"
set +e
"$KFLEET" run x.yaml --price free 2>"$T/err"; rc=$?
set -e
[ $rc -eq 2 ] && grep -q "price wants the price of one GPU-hour" "$T/err" || fail "run --price free: exit $rc"
pass "a price that is not above 0 is refused (agent and run)"
set +e
KF_TIMER=cuda-events "$KFAGENT" --coordinator tcp://127.0.0.1:9 --workdir "$T/agents/timer" 2>"$T/err"
rc=$?
set -e
[ $rc -eq 2 ] && grep -q "KF_TIMER=cuda-events in the environment: it takes cupti" "$T/err" ||
  fail "agent with KF_TIMER=cuda-events: exit $rc, $(cat "$T/err")"
[ ! -e "$T/agents/timer/outbox" ] || fail "the agent made its workdir before refusing KF_TIMER"
pass "an unknown KF_TIMER is refused at the agent's start (exit 2)"

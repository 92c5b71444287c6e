#!/usr/bin/env bash
# The README's daemon way, as written: serve, two agents with nothing but
# --coordinator (each takes its own work dir under KFLEET_HOME), submit
# --follow, status, report by id and the latest, JSON.
source "$(dirname "$0")/lib.sh"

start_serve
for i in 1 2; do
  "$KFAGENT" --coordinator "$ENDPOINT" 2>>"$T/agent-$i.log" &
  PIDS+=("$!")
done
wait_agents 2
"$KFLEET" status --format json >"$T/status.json"
ids=$(grep -o '"agent_id": "[^"]*"' "$T/status.json" | sort -u | wc -l)
[ "$ids" -eq 2 ] || fail "two default agents should have two ids, saw $ids"
[ -d "$KFLEET_HOME/state/agents/agent-0" ] && [ -d "$KFLEET_HOME/state/agents/agent-1" ] \
  || fail "default agent work dirs missing"
pass "two default agents, two work dirs"

"$KFLEET" submit "$KF_SRC/examples/quickstart.yaml" --follow >"$T/submit.out" 2>"$T/follow.log" \
  || fail "submit --follow exited $?"
id=$(grep -o 'submitted sweep [0-9]*' "$T/submit.out" | awk '{print $3}')
"$KFLEET" status >"$T/status.txt" || fail "status"
grep -q "quickstart" "$T/status.txt" || fail "status lacks the sweep"
"$KFLEET" report "$id" >"$T/by-id.txt" || fail "report by id"
"$KFLEET" report >"$T/latest.txt" || fail "report latest"
cmp -s "$T/by-id.txt" "$T/latest.txt" || fail "report with no id is not the latest sweep"
"$KFLEET" report "$id" --format json >"$T/r.json" || fail "report json"
# 9 configurations validated and profiled; the builds: each kernel on each
# agent that ran it, so 2 to 4 of them, each compiled by its own agent:
# agents over TCP with no operator trust list do not build for each other
# (architecture.md, "The trust model of shared builds").
python3 - "$T/r.json" <<'PY' || fail "the quickstart did not all succeed"
import json, sys
d = json.load(open(sys.argv[1]))
rows = d["rows"]
assert len(rows) == 9, len(rows)
for r in rows:
    for k in ("validation", "profile"):
        assert (r.get(k) or {}).get("state") == "succeeded", (r["kernel"], k, r.get(k))
b = d["builds"]
assert 2 <= len(b) <= 4 and all(x["state"] == "succeeded" for x in b), b
assert all(not x["built_by"] for x in b), "a build installed from an untrusted agent"
PY
pass "submit/status/report as in the README"

# A second fleet under another home does not collide with the first.
KFLEET_HOME="$T/home2" "$KFLEET" status 2>"$T/err2" && fail "home2 should have no coordinator"
grep -q "no coordinator is running" "$T/err2" || fail "home2 message"
pass "homes are separate"

#!/usr/bin/env bash
# A network partition between an agent and the coordinator, longer than the
# heartbeat timeout, then healed. The agent lives in its own network
# namespace joined by a veth pair; the partition drops every packet of that
# link (nftables: this kernel has no sch_netem). While cut off, the agent is
# declared lost and its attempt is requeued and finished by the other agent;
# once healed, the agent comes back, its late result is kept as a superseded
# attempt and changes nothing, and the sweep ends with exactly one terminal
# record per task.
source "$(dirname "$0")/lib.sh"
source "$KF_SRC/tests/chaos/netns.sh"

netns_up
PORT=$(free_port)
BIND="tcp://$NS_HOST_IP:$PORT"
start_serve --bind "$BIND" --heartbeat-timeout 2s --heartbeat-interval 250ms
start_agent near --coordinator "$BIND"
# The far agent, inside the namespace (ip netns exec execs it: same pid).
ip netns exec "$NS" "$KFAGENT" --coordinator "$BIND" --workdir "$T/agents/far" --name far \
  --log-level debug 2>>"$T/agent-far.log" &
FAR=$!
PIDS+=("$FAR")
wait_agents 2
pass "agent 'far' registered from namespace $NS ($NS_IP -> $BIND)"

"$KFLEET" submit "$KF_SRC/tests/data/sweeps/slow60.yaml" >"$T/submit.out" || fail "submit"
id=$(grep -o 'submitted sweep [0-9]*' "$T/submit.out" | awk '{print $3}')
for _ in $(seq 1 400); do
  grep -q 'runner.start.*kind=profile' "$T/agent-far.log" 2>/dev/null && break
  sleep 0.05
done
grep -q 'runner.start.*kind=profile' "$T/agent-far.log" || fail "far never started a profile"
netns_cut
cut_at=$(date +%s.%N)
pass "link to 'far' cut while it runs a profile"

for _ in $(seq 1 100); do
  grep -q 'agent.lost.*agent=far' "$T/serve.log" && break
  sleep 0.1
done
grep -q 'agent.lost.*agent=far' "$T/serve.log" || fail "far not declared lost within 10 s of the cut"
grep -q 'task.requeue.*agent far lost' "$T/serve.log" || fail "far's attempt was not requeued"
# Stay cut a while longer: the far agent finishes its profile into its outbox.
sleep 3
kill -0 "$FAR" || fail "far agent died during the partition"
netns_heal
cut_s=$(echo "$(date +%s.%N) - $cut_at" | bc 2>/dev/null || echo ">5")
pass "far lost and its attempt requeued; link healed after ${cut_s%.*} s (timeout 2 s)"

for _ in $(seq 1 200); do
  grep -q 'agent.back.*agent=far' "$T/serve.log" && break
  sleep 0.1
done
grep -q 'agent.back.*agent=far' "$T/serve.log" || fail "far did not come back after the heal"
pass "far came back"

for _ in $(seq 1 600); do
  "$KFLEET" verify "$id" --format json >"$T/verify.json" 2>/dev/null && break
  sleep 0.1
done
"$KFLEET" verify "$id" --format json >"$T/verify.json" || fail "sweep incomplete: $(cat "$T/verify.json")"
tasks=$(json_field "$T/verify.json" tasks)
records=$(json_field "$T/verify.json" terminal_records)
late=$(json_field "$T/verify.json" late_results)
requeued=$(json_field "$T/verify.json" requeued)
[ "$records" -eq "$tasks" ] || fail "$records terminal records for $tasks tasks"
[ "$requeued" -ge 1 ] || fail "nothing was requeued"
grep -q 'result.late.*agent=far' "$T/serve.log" || fail "far's late result was not kept as superseded"
[ "$late" -ge 1 ] || fail "verify counts no late result"
# The late result changed nothing: the task's terminal record is another attempt's.
late_task=$(grep -o 'result.late task=0x[0-9a-f]* attempt=[0-9]* agent=far' "$T/serve.log" | head -n1)
lt=$(echo "$late_task" | sed 's/.*task=0x\([0-9a-f]*\).*/\1/')
la=$(echo "$late_task" | sed 's/.*attempt=\([0-9]*\).*/\1/')
"$KFLEET" report "$id" --format json >"$T/report.json" || fail "report"
python3 - "$T/report.json" "$lt" "$la" <<'EOF' || fail "the late result changed the task's outcome"
import json, sys
rep = json.load(open(sys.argv[1]))
tid, att = int(sys.argv[2], 16), int(sys.argv[3])
def walk(o):
    if isinstance(o, dict):
        yield o
        for v in o.values():
            yield from walk(v)
    elif isinstance(o, list):
        for v in o:
            yield from walk(v)
rows = [o for o in walk(rep) if o.get("task_id") == hex(tid)]
if not rows:
    sys.exit(f"task {hex(tid)} is not in the report")
for r in rows:
    if r.get("attempt") == att and r.get("agent_id") == "far" and not r.get("superseded", False):
        print(f"task {tid:x}: its terminal row is far's superseded attempt {att}", file=sys.stderr)
        sys.exit(1)
EOF
pass "sweep $id: $tasks tasks, $records terminal records, $requeued requeued, $late late result(s) kept, 0 violations"

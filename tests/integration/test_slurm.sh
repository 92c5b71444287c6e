#!/usr/bin/env bash
# Agents as Slurm jobs, on a real Slurm (slurmctld + slurmd + munge, Debian's
# 22.05) started by this test: the login node is sshd in its own network
# namespace, the compute node is another namespace that reaches the login
# node but not the coordinator. `kfleet launch` puts the bundle in the
# shared work dir, starts the relay on the login node, submits one sbatch
# per node, and waits for the agents; a sweep runs through the login node's
# tunnel; a job cancelled under its agent mid-sweep loses nothing (its
# tasks are requeued, verify is clean); a job held by Slurm is reported
# pending with Slurm's reason, in the launch and in `kfleet status`;
# teardown cancels the jobs and stops the relay.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/sshd/pods.sh"
source "$(dirname "$0")/slurm/cluster.sh"
trap 'rc=$?; set +e; slurm_cleanup; pods_cleanup; (exit $rc); cleanup' EXIT

pods_init
"$KFLEET" bundle --out "$T/bundle" >"$T/bundle.log" 2>&1 || fail "kfleet bundle: $(tail -3 "$T/bundle.log")"
slurm_start login 1
pass "Slurm up: slurmctld and slurmd (node c1) behind login node 10.77.1.2"

start_serve --heartbeat-interval 0.5s --heartbeat-timeout 3s
port=${ENDPOINT##*:}
in_cluster bash -c "exec 3<>/dev/tcp/10.77.1.1/$port" 2>/dev/null &&
  fail "the compute node reaches the coordinator's namespace without the login node"
pass "no route from the compute node to the coordinator"

mkdir -p "$T/cluster"
cat >"$T/fleet.yaml" <<YAML
hosts:
  - name: lab
    provider: slurm
    host: 10.77.1.2
    user: root
    identity: $T/id_ed25519
    workdir: $T/cluster/work
    slurm:
      nodes: 2
      partition: cpu
      time: "30:00"
      relay_host: $SLURM_RELAY_HOST
YAML
LAUNCH=("$KFLEET" launch --known-hosts "$T/known_hosts" --bundle "$T/bundle" --min-free 4M
  --register-timeout 60s)
"${LAUNCH[@]}" --accept-new "$T/fleet.yaml" >"$T/launch1.out" 2>"$T/launch1.log" ||
  { cat "$T/launch1.out" "$T/launch1.log"; fail "launch exited $?"; }
cat "$T/launch1.out"
# Each job agent's own Python (the compute node's, not the login node's
# that preflight saw) is in the launch line (issue 33).
grep -q "^lab  *ok .*2 jobs submitted, 0 already queued: lab-0 job [0-9]* on c1, python 3\.[0-9.]*.*, lab-1 job [0-9]* on c1, python 3\.[0-9.]*.*login node: " \
  "$T/launch1.out" || fail "lab's two jobs did not start and register"
grep -q "relay $SLURM_RELAY_HOST:[0-9]* on the login node (started)" "$T/launch1.out" ||
  fail "no relay on the login node"
pgrep -af "kfleet relay --listen $SLURM_RELAY_HOST:[0-9]" >/dev/null ||
  fail "the relay does not listen on relay_host ($SLURM_RELAY_HOST) alone: $(pgrep -af 'kfleet relay')"
job0=$(grep -o 'lab-0 job [0-9]*' "$T/launch1.out" | awk '{print $3}')
job1=$(grep -o 'lab-1 job [0-9]*' "$T/launch1.out" | awk '{print $3}')
[ "$(in_cluster squeue -h -j "$job0,$job1" -o %T | sort -u)" = RUNNING ] || fail "jobs $job0 $job1 not running"
pass "launch: bundle in the shared dir, relay up, jobs $job0 and $job1 running, both agents registered"

"$KFLEET" status >"$T/status1.out"
grep -A1 "^lab-0 " "$T/status1.out" | grep -q "slurm job $job0" || { cat "$T/status1.out"; fail "status lacks lab-0's job"; }
grep -A1 "^lab-1 " "$T/status1.out" | grep -q "slurm job $job1" || { cat "$T/status1.out"; fail "status lacks lab-1's job"; }
pass "status names each agent's Slurm job"

# A second launch of the same inventory queues nothing new.
"${LAUNCH[@]}" "$T/fleet.yaml" >"$T/launch2.out" 2>&1 || { cat "$T/launch2.out"; fail "relaunch exited $?"; }
grep -q "^lab  *ok .*0 jobs submitted, 2 already queued.*bundle unchanged.*(running)" "$T/launch2.out" ||
  { cat "$T/launch2.out"; fail "relaunch submitted again or moved the relay"; }
[ "$(in_cluster squeue -h -o %i | wc -l)" -eq 2 ] || fail "the relaunch queued more jobs"
pass "relaunch: the 2 jobs and the relay kept, nothing resubmitted"

# A sweep through the login node; lab-1's job is cancelled under it while
# it profiles. Each profile runs its 8 s timeout (a min_time no tiny triad
# reaches), longer than Slurm's 5 s from SIGTERM to SIGKILL, so the
# cancelled profile cannot finish on lab-1: it is handed back or lost, and
# must be run again on lab-0.
cat >"$T/sweep.yaml" <<'YAML'
name: slurm-sweep
kernels:
  - name: triad
    params:
      n: [1K, 4K, 16K]
tasks: [build, validate, profile]
measure:
  min_samples: 10
  min_time: 60s
  max_noise: 100
  precision: 50
  timeout: 8s
YAML
"$KFLEET" submit "$T/sweep.yaml" --follow >"$T/submit.out" 2>"$T/follow.log" &
follow=$!
PIDS+=("$follow")
# lab-1's profiles assigned and not yet answered, from the coordinator's log.
profiling() {
  awk '/task.assign/ && /agent=lab-1 / && /kind=3/ { match($0, /task=0x[0-9a-f]+ attempt=[0-9]+/)
         open_[substr($0, RSTART, RLENGTH)] = 1 }
       /task.result/ && /agent=lab-1 / { match($0, /task=0x[0-9a-f]+ attempt=[0-9]+/)
         delete open_[substr($0, RSTART, RLENGTH)] }
       END { n = 0; for (k in open_) n++; print n }' "$T/serve.log"
}
for _ in $(seq 1 600); do
  [ "$(profiling)" -gt 0 ] && break
  sleep 0.1
done
[ "$(profiling)" -gt 0 ] || fail "lab-1 never started a profile"
in_cluster scancel "$job1"
rc=0; wait "$follow" || rc=$?
[ $rc -eq 0 ] || { tail -5 "$T/submit.out"; fail "the sweep exited $rc after lab-1's job was cancelled"; }
id=$(grep -o 'submitted sweep [0-9]*' "$T/submit.out" | awk '{print $3}')
"$KFLEET" verify "$id" --format json >"$T/verify.json" || { cat "$T/verify.json"; fail "verify found violations"; }
tasks=$(json_field "$T/verify.json" tasks)
succeeded=$(json_field "$T/verify.json" succeeded)
[ "$succeeded" -eq "$tasks" ] || fail "$succeeded of $tasks succeeded"
grep -q 'task.requeue' "$T/serve.log" || fail "no task of lab-1 was requeued"
requeued=$(grep -c 'task.requeue' "$T/serve.log")
"$KFLEET" status --format json >"$T/st2.json"
# scancel sends SIGTERM: the agent says goodbye and shows stopped (issue 33).
grep -A3 '"lab-1"' "$T/st2.json" | grep -q '"state": "stopped"' || fail "lab-1 not stopped after scancel"
# Each agent's job and the watched jobs carry their provider's name.
python3 - "$T/st2.json" "$job0" <<'PY' || fail "status JSON lacks lab-0's job under provider slurm"
import json, sys
st = json.load(open(sys.argv[1]))
assert st["schema"] == "kfleet.status/2", st["schema"]  # its keys changed from /1
a = [x for x in st["agents"] if x["agent_id"] == "lab-0"][0]
assert (a["job_id"], a["job_provider"]) == (sys.argv[2], "slurm"), a
assert any(j["provider"] == "slurm" and j["job_id"] == sys.argv[2] for j in st["provider_jobs"]), st
PY
grep -q "agent.flush\|agent.stop" "$T/cluster/work/nodes/1/slurm-$job1.out" ||
  fail "lab-1's agent did not stop on Slurm's SIGTERM"
pass "scancel $job1 mid-sweep: lab-1 drained and lost, $requeued task(s) requeued, $succeeded/$tasks succeeded, verify clean"

# A job Slurm holds (it may not begin for an hour): pending, with the reason.
cat >"$T/held.yaml" <<YAML
hosts:
  - name: held
    provider: slurm
    host: 10.77.1.2
    user: root
    identity: $T/id_ed25519
    workdir: $T/cluster/held
    slurm:
      sbatch: ["--begin=now+3600"]
      relay_host: $SLURM_RELAY_HOST
YAML
# A job near its time limit: Slurm's --signal=B:TERM@signal_before reaches
# the agent (the job execs it), which drains and exits before the limit:
# the job COMPLETED, not TIMEOUT. Slurm sends it on its ~30 s timer, so the
# wait for it overlaps the held and bad launches below.
sed -e 's/name: held/name: short/' -e 's|cluster/held|cluster/short|' \
  -e 's/sbatch: \["--begin=now+3600"\]/time: "1"\n      signal_before: 50/' "$T/held.yaml" >"$T/short.yaml"
"${LAUNCH[@]}" "$T/short.yaml" >"$T/short.out" 2>&1 || { cat "$T/short.out"; fail "the short launch exited $?"; }
grep -q "^short  *ok .*short-0 job [0-9]* on c1" "$T/short.out" || { cat "$T/short.out"; fail "short-0 did not register"; }
jobS=$(grep -o 'short-0 job [0-9]*' "$T/short.out" | awk '{print $3}')

# The held job: the launch does not wait for it past --register-timeout.
"$KFLEET" launch --known-hosts "$T/known_hosts" --bundle "$T/bundle" --min-free 4M --register-timeout 3s \
  "$T/held.yaml" >"$T/held.out" 2>&1 || { cat "$T/held.out"; fail "the held launch exited $?"; }
grep -q "^held  *ok .*held-0 job [0-9]* PENDING (BeginTime)" "$T/held.out" ||
  { cat "$T/held.out"; fail "the held job was not reported pending with its reason"; }
for _ in $(seq 1 100); do
  "$KFLEET" status >"$T/status2.out"
  grep -q "^held-0 .*PENDING .*BeginTime" "$T/status2.out" && break
  sleep 0.1
done
grep -q "^held-0 .*PENDING .*BeginTime" "$T/status2.out" || { cat "$T/status2.out"; fail "status does not show held-0 pending"; }
pass "a held job: launch and status say PENDING (BeginTime)"

# A partition the cluster does not have: sbatch's own words, the host failed.
sed -e 's/name: held/name: bad/' -e 's|cluster/held|cluster/bad|' \
  -e 's/sbatch: \["--begin=now+3600"\]/partition: nosuch/' "$T/held.yaml" >"$T/bad.yaml"
rc=0
"$KFLEET" launch --known-hosts "$T/known_hosts" --bundle "$T/bundle" --min-free 4M --register-timeout 3s \
  "$T/bad.yaml" >"$T/bad.out" 2>&1 || rc=$?
[ $rc -eq 1 ] || { cat "$T/bad.out"; fail "a launch whose sbatch fails exited $rc, not 1"; }
grep -q "^bad  *FAILED" "$T/bad.out" && grep -q "sbatch for node 0: .*invalid partition" "$T/bad.out" ||
  { cat "$T/bad.out"; fail "the failed sbatch was not reported with Slurm's reason"; }
pass "a partition Slurm does not have: the host fails with sbatch's reason"
# The failed launch stops what it started (issue 33): the relay it started
# for bad is gone, and the launch says so.
grep -q "what this launch started is stopped: relay stopped" "$T/bad.out" ||
  { cat "$T/bad.out"; fail "the failed launch did not say it stopped its relay"; }
[ ! -e "$T/cluster/bad/relay.pid" ] && ! pgrep -f "cluster/bad/bundle/kfleet relay" >/dev/null ||
  fail "the failed launch left its relay running"
pass "the failed launch stopped the relay it started"

for _ in $(seq 1 900); do
  stS=$(in_cluster squeue -h -t all -j "$jobS" -o %T 2>/dev/null || true)
  # Until a final state: COMPLETING (the step's cleanup) is not one.
  case "$stS" in COMPLETED | CANCELLED | FAILED | TIMEOUT | NODE_FAIL | PREEMPTED | OUT_OF_MEMORY) break ;; *) sleep 0.1 ;; esac
done
[ "$stS" = COMPLETED ] || fail "short-0's job $jobS ended $stS, not COMPLETED before its 1-minute limit"
grep -q "agent.stop " "$T/cluster/short/nodes/0/slurm-$jobS.out" ||
  fail "short-0's agent did not stop on Slurm's signal: $(tail -3 "$T/cluster/short/nodes/0/slurm-$jobS.out")"
# Its own deadline too (the limit less signal_before), should the signal be lost.
grep -q "agent.stop_after agent=short-0 in_s=[0-9]" "$T/cluster/short/nodes/0/slurm-$jobS.out" ||
  fail "short-0's agent was not given --stop-after: $(head -3 "$T/cluster/short/nodes/0/slurm-$jobS.out")"
for _ in $(seq 1 100); do
  "$KFLEET" status >"$T/status3.out"
  grep -q "^short-0 .*$jobS .*COMPLETED" "$T/status3.out" && break
  sleep 0.1
done
grep -q "^short-0 .*$jobS .*COMPLETED" "$T/status3.out" || { cat "$T/status3.out"; fail "status does not show short-0's job COMPLETED"; }
pass "time limit: Slurm's SIGTERM 50 s before it, the agent stopped, job $jobS COMPLETED (not TIMEOUT)"

"$KFLEET" teardown --known-hosts "$T/known_hosts" --purge "$T/short.yaml" >"$T/down.out" 2>&1 ||
  { cat "$T/down.out"; fail "teardown of short exited $?"; }
"$KFLEET" teardown --known-hosts "$T/known_hosts" --purge "$T/bad.yaml" >>"$T/down.out" 2>&1 ||
  { cat "$T/down.out"; fail "teardown of bad exited $?"; }
grep -q "^bad .*no jobs.*purged" "$T/down.out" || { cat "$T/down.out"; fail "bad's teardown"; }
"$KFLEET" teardown --known-hosts "$T/known_hosts" --purge "$T/fleet.yaml" >>"$T/down.out" 2>&1 ||
  { cat "$T/down.out"; fail "teardown exited $?"; }
"$KFLEET" teardown --known-hosts "$T/known_hosts" --purge "$T/held.yaml" >>"$T/down.out" 2>&1 ||
  { cat "$T/down.out"; fail "teardown of held exited $?"; }
cat "$T/down.out"
grep -q "^lab .*cancelled $job0.*relay stopped.*purged" "$T/down.out" || fail "lab's teardown"
[ -z "$(in_cluster squeue -h -o %i)" ] || fail "jobs left in the queue: $(in_cluster squeue -h)"
[ ! -e "$T/cluster/work" ] || fail "the work dir was not purged"
! grep -q " lab-[01]\$\| held-0\$\| bad-0\$\| short-0\$" "$KFLEET_HOME/state/keys/agents.allow" || fail "keys left in the allow list"
! pgrep -f "kfleet relay --listen $SLURM_RELAY_HOST:" >/dev/null || fail "a relay still runs"
pass "teardown: jobs cancelled, relay stopped, work dirs and keys purged"

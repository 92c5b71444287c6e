#!/usr/bin/env bash
# kfleet launch / teardown against real sshd "pods", each in its own network
# namespace that cannot reach the coordinator except through the SSH tunnel
# the coordinator daemon keeps. Four good pods run a sweep through their
# tunnels (verified); beside them a wrong host key is refused, a host that is
# down is retried then reported, and a pod whose work dir is a 1 MiB tmpfs is
# refused by preflight with the free space. An agent killed on a pod shows as
# lost, and a second launch brings it back without a second copy. Teardown
# --purge stops every agent and removes the work dirs.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/sshd/pods.sh"
trap 'rc=$?; set +e; pods_cleanup; (exit $rc); cleanup' EXIT

# Until main.c lists `launch`, there is nothing to test here.
"$KFLEET" help launch >/dev/null 2>&1 || { echo "skip: this kfleet has no launch command"; exit 0; }
pods_init
"$KFLEET" bundle --out "$T/bundle" >"$T/bundle.log" 2>&1 || fail "kfleet bundle: $(tail -3 "$T/bundle.log")"
pass "bundle built"

start_pod p1 1
# p2 is a booting pod: its first nvidia-smi says nothing for 12 s, longer
# than a connect may take (--connect-timeout, 10 s): slow, not down.
mkdir -p "$T/slowbin"
cat >"$T/slowbin/nvidia-smi" <<EOF
#!/bin/sh
if [ -e "$T/slowbin/hang" ]; then : >"$T/slowbin/hanging"; exec sleep 600; fi
[ -e "$T/slowbin/booted" ] || { sleep 12; : >"$T/slowbin/booted"; }
echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver." >&2
exit 9
EOF
chmod +x "$T/slowbin/nvidia-smi"
POD_SSHD_EXTRA="SetEnv PATH=$T/slowbin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
  start_pod p2 2
start_pod p3 3
start_pod p4 4 "" nosftp
start_pod tiny 5 1m
start_pod badkey 6
# A known_hosts line for badkey that holds another key: a "changed" key.
ssh-keygen -q -t ed25519 -N '' -f "$T/other_key"
echo "10.77.6.2 $(cut -d' ' -f1-2 "$T/other_key.pub")" >>"$T/known_hosts"
pass "6 pods up (sshd in network namespaces)"

# The pods must not reach the coordinator's loopback on their own.
start_serve --heartbeat-interval 0.5s --heartbeat-timeout 3s
port=${ENDPOINT##*:}
ip netns exec "${POD_TAG}-p1" bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>/dev/null &&
  fail "pod p1 reaches the coordinator's 127.0.0.1:$port without a tunnel"
pass "no route from the pods to the coordinator at $ENDPOINT"

{
  echo "hosts:"
  for i in 1 2 3 4; do pod_entry "p$i" "$i"; done
} >"$T/good.yaml"
{
  cat "$T/good.yaml"
  pod_entry tiny 5
  pod_entry badkey 6
  printf '  - name: down\n    host: 127.0.0.1\n    port: 1\n    user: root\n    identity: %s\n    workdir: %s\n' \
    "$T/id_ed25519" "$T/pods/down"
} >"$T/all.yaml"

LAUNCH=("$KFLEET" launch --known-hosts "$T/known_hosts" --bundle "$T/bundle" --min-free 4M
  --attempts 3 --register-timeout 60s)
rc=0
"${LAUNCH[@]}" --accept-new "$T/all.yaml" >"$T/launch1.out" 2>"$T/launch1.log" || rc=$?
cat "$T/launch1.out"; [ -s "$T/launch1.out" ] || { tail -5 "$T/launch1.log"; fail "launch printed nothing"; }
[ $rc -eq 1 ] || fail "launch with bad hosts exited $rc, expected 1"
for i in 1 2 3 4; do
  grep -q "^p$i  *ok .*connect.*preflight.*upload.*tunnel.*start.*register" "$T/launch1.out" ||
    fail "p$i not launched"
done
grep -q "^p4 .*bundle sent (scp)" "$T/launch1.out" || fail "p4 (no sftp) did not get the bundle over scp"
grep -q "^p1 .*bundle sent (sftp)" "$T/launch1.out" || fail "p1 did not get the bundle over sftp"
pass "4 pods launched in parallel (p4 over scp)"
pf=$(sed -n 's/^p2 .* preflight \([0-9]*\)\.[0-9]*s .*/\1/p' "$T/launch1.out")
[ -n "$pf" ] && [ "$pf" -ge 12 ] || fail "p2's preflight took ${pf:-?} s: its slow nvidia-smi did not run"
pass "p2's preflight quiet for ${pf} s (over the connect timeout) and still launched"
grep -A1 "^badkey .*FAILED" "$T/launch1.out" | grep -q "HOST KEY CHANGED.*SHA256:.*SHA256:.*known_hosts" ||
  fail "badkey's changed key not refused loudly"
pass "changed host key refused with both fingerprints and the file"
grep -A1 "^down .*FAILED" "$T/launch1.out" | grep -q "connect:.*gave up after 3 attempts" ||
  fail "the down host was not retried and reported"
pass "down host retried 3 times, then reported"
grep -A1 "^tiny .*FAILED" "$T/launch1.out" | grep -q "preflight:.*free" ||
  fail "the tiny tmpfs pod was not refused by preflight with its free space"
pass "tiny tmpfs refused by preflight: $(grep -A1 '^tiny' "$T/launch1.out" | tail -1 | cut -c1-160)"
[ ! -e "$T/pods/tiny/work/bundle.tar.gz" ] || fail "the tiny pod got an upload despite preflight"
for i in 1 2 3 4; do
  [ "$(stat -c %a "$T/pods/p$i/work/agent.key")" = 600 ] || fail "p$i agent.key is not 0600"
  grep -q " p$i\$" "$KFLEET_HOME/state/keys/agents.allow" || fail "p$i not in the allow list"
done
pass "agent keys 0600 on the pods, public keys allowed"

wait_agents 4
# nodes: all: every pod's agent builds and runs, each through its tunnel.
cat >"$T/sweep.yaml" <<'YAML'
name: launch-pods
kernels:
  - name: triad
    params:
      n: [1K, 16K]
  - name: matmul
    params:
      n: [32]
      block: [8]
tasks: [build, validate, profile]
nodes: all
measure:
  min_samples: 5
  min_time: 1ms
  max_noise: 100
  precision: 50
  timeout: 2s
YAML
"$KFLEET" submit "$T/sweep.yaml" --follow >"$T/submit.out" 2>"$T/follow.log" ||
  fail "submit --follow exited $?"
id=$(grep -o 'submitted sweep [0-9]*' "$T/submit.out" | awk '{print $3}')
"$KFLEET" verify "$id" --format json >"$T/verify.json" || { cat "$T/verify.json"; fail "verify found violations"; }
tasks=$(json_field "$T/verify.json" tasks)
succeeded=$(json_field "$T/verify.json" succeeded)
[ "$tasks" -ge 1 ] && [ "$succeeded" -eq "$tasks" ] || fail "$succeeded of $tasks succeeded"
"$KFLEET" report "$id" --format json >"$T/report.json"
ran_on=$(grep -o '"agent_id": "p[1-4]"' "$T/report.json" | sort -u | wc -l)
[ "$ran_on" -eq 4 ] || fail "tasks ran on $ran_on of the 4 pod agents"
pass "sweep $id through the tunnels: $succeeded/$tasks tasks, on $ran_on pod agents; verify clean"

# An agent killed on a pod: lost; launch again restarts it, once.
kill -9 "$(cat "$T/pods/p2/work/agent.pid")"
for _ in $(seq 1 100); do
  "$KFLEET" status --format json >"$T/status.json" 2>/dev/null || true
  grep -A3 '"p2"' "$T/status.json" | grep -q '"state": "lost"' && break
  sleep 0.1
done
grep -A3 '"p2"' "$T/status.json" | grep -q '"state": "lost"' || { cat "$T/status.json"; fail "p2 not lost"; }
pass "killed agent p2 shows as lost"
"${LAUNCH[@]}" "$T/good.yaml" >"$T/launch2.out" 2>"$T/launch2.log" || { cat "$T/launch2.out"; fail "relaunch failed"; }
cat "$T/launch2.out"
grep -q "^p2 .*started.*bundle unchanged" "$T/launch2.out" || fail "p2 not restarted"
for i in 1 3 4; do grep -q "^p$i .*already running" "$T/launch2.out" || fail "p$i restarted needlessly"; done
n=$(pgrep -f -c -- "--workdir $T/pods/p2/work" || true)
[ "$n" -eq 1 ] || fail "$n agents run in p2's work dir"
wait_agents 4
pass "relaunch: p2 back, one copy; p1 p3 p4 untouched; bundle not sent again"

# The tunnel's SSH session dies (sshd's session processes killed on the pod):
# the coordinator reconnects it on the same remote port, and p1's agent gets
# back through it without being relaunched.
p1_agent=$(cat "$T/pods/p1/work/agent.pid")
listener=$(cat "$T/pods/p1/sshd.pid")
killed=0
for pid in $(ip netns pids "${POD_TAG}-p1"); do
  [ "$pid" = "$listener" ] && continue
  [ "$(cat /proc/"$pid"/comm 2>/dev/null)" = sshd ] || continue
  kill -9 "$pid" 2>/dev/null && killed=$((killed + 1))
done
[ "$killed" -ge 1 ] || fail "no sshd session process of p1's tunnel to kill"
for _ in $(seq 1 300); do
  grep -q 'tunnel.up name=p1 .*reconnects=[1-9]' "$T/serve.log" && break
  sleep 0.1
done
grep -q 'tunnel.down name=p1' "$T/serve.log" || fail "the coordinator did not see p1's tunnel go down"
grep -q 'tunnel.up name=p1 .*reconnects=[1-9]' "$T/serve.log" || fail "p1's tunnel was not reconnected"
kill -0 "$p1_agent" || fail "p1's agent died with its tunnel"
"$KFLEET" submit "$T/sweep.yaml" --follow >"$T/submit3.out" 2>"$T/follow3.log" ||
  fail "the sweep after the tunnel reconnect exited $?"
id3=$(grep -o 'submitted sweep [0-9]*' "$T/submit3.out" | awk '{print $3}')
"$KFLEET" verify "$id3" >/dev/null || fail "verify after the reconnect"
"$KFLEET" report "$id3" --format json >"$T/report3.json"
grep -q '"agent_id": "p1"' "$T/report3.json" || fail "p1 ran nothing after the reconnect"
pass "tunnel session killed ($killed sshd processes): reconnected, p1's agent (same pid) ran sweep $id3"

# No identity file: the key is in the user's ssh-agent. The daemon was
# started without one; the CLI hands it its SSH_AUTH_SOCK.
eval "$(ssh-agent -s)" >/dev/null
PIDS+=("$SSH_AGENT_PID")
ssh-add -q "$T/id_ed25519" 2>/dev/null || fail "ssh-add"
{ echo "hosts:"; pod_entry p3 3 | grep -v identity; } >"$T/p3-agent.yaml"
rc=0
"$KFLEET" launch --known-hosts "$T/known_hosts" --bundle "$T/bundle" --min-free 4M "$T/p3-agent.yaml" \
  >"$T/launch-agent.out" 2>&1 || rc=$?
[ $rc -eq 0 ] || fail "launch with ssh-agent auth exited $rc: $(cat "$T/launch-agent.out")"
grep -q "^p3  *ok " "$T/launch-agent.out" || fail "p3 not reached through ssh-agent: $(cat "$T/launch-agent.out")"
kill "$SSH_AGENT_PID" 2>/dev/null || true
unset SSH_AUTH_SOCK SSH_AGENT_PID
pass "a host without identity: authenticated by the CLI's ssh-agent, passed to the daemon"

# A bundle that needs a newer glibc than the node has: refused at preflight,
# before anything is uploaded, with both versions.
cp -a "$T/bundle" "$T/newglibc"
echo GLIBC_9.99 >"$T/newglibc/GLIBC_REQUIRED"
{ echo "hosts:"; pod_entry p1 1; } >"$T/p1.yaml"
rc=0
"$KFLEET" launch --known-hosts "$T/known_hosts" --bundle "$T/newglibc" --min-free 4M "$T/p1.yaml" \
  >"$T/launch-glibc.out" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "a bundle needing glibc 9.99 launched (exit $rc)"
grep -q "preflight: glibc 2\.[0-9]* on the node, the bundle needs 9.99" "$T/launch-glibc.out" ||
  fail "glibc refusal: $(cat "$T/launch-glibc.out")"
pass "a bundle needing a newer glibc is refused at preflight: $(grep -o 'glibc 2[.0-9]* on the node' "$T/launch-glibc.out")"

# The launch runs in the daemon, not in the CLI: the CLI interrupted right
# after it sent the request leaves it running there. p3's agent is killed
# first, so the launch has something to do.
old3=$(cat "$T/pods/p3/work/agent.pid")
kill -9 "$old3"
"${LAUNCH[@]}" "$T/good.yaml" >"$T/launch-int.out" 2>"$T/launch-int.log" &
cli=$!
for _ in $(seq 1 100); do grep -q "runs in the coordinator" "$T/launch-int.log" && break; sleep 0.05; done
grep -q "launch #[0-9]* (4 hosts) runs in the coordinator" "$T/launch-int.log" ||
  fail "the launch CLI did not say the launch runs in the coordinator: $(cat "$T/launch-int.log")"
kill -INT "$cli"
rc=0; wait "$cli" || rc=$?
[ $rc -eq 1 ] || fail "the interrupted launch CLI exited $rc, expected 1"
grep -q "interrupted; launch [0-9]* goes on in the coordinator" "$T/launch-int.log" ||
  fail "the interrupted CLI did not say the launch goes on: $(cat "$T/launch-int.log")"
# Launching again follows the running launch, or (if it is done already)
# finds p3 restarted by it: either way the first launch went on alone.
"${LAUNCH[@]}" "$T/good.yaml" >"$T/launch3.out" 2>"$T/launch3.log" ||
  { cat "$T/launch3.out" "$T/launch3.log"; fail "the launch after the interrupted one failed"; }
if grep -q "already running in the coordinator; following it" "$T/launch3.log"; then
  grep -q "^p3 .*ok.*agent pid [0-9]* started" "$T/launch3.out" || fail "the followed launch did not restart p3"
  how="followed the running launch"
else
  grep -q "^p3 .*ok.*already running" "$T/launch3.out" || fail "p3 was not restarted by the interrupted launch"
  how="p3 already running"
fi
new3=$(cat "$T/pods/p3/work/agent.pid")
[ "$new3" != "$old3" ] || fail "p3's agent was not restarted"
n=$(pgrep -f -c -- "--workdir $T/pods/p3/work" || true)
[ "$n" -eq 1 ] || fail "$n agents run in p3's work dir"
wait_agents 4
pass "launch CLI interrupted: the launch went on in the coordinator, p3 back ($how)"

"$KFLEET" teardown --known-hosts "$T/known_hosts" --purge "$T/good.yaml" >"$T/teardown.out" 2>"$T/teardown.log" ||
  { cat "$T/teardown.out"; fail "teardown failed"; }
cat "$T/teardown.out"
for i in 1 2 3 4; do
  grep -q "^p$i .*ok.*stopped.*purged" "$T/teardown.out" || fail "p$i not stopped and purged"
  [ ! -d "$T/pods/p$i/work" ] || fail "p$i work dir still there"
done
n=$(pgrep -f -c -- "--workdir $T/pods/" || true)
[ "$n" -eq 0 ] || fail "$n agents still run after teardown"
pass "teardown --purge: agents stopped (SIGTERM), work dirs removed"

# The daemon stopped while a launch of a down host is in its backoff (20
# attempts: minutes) and p2's preflight waits on an nvidia-smi that hangs
# (the node quiet, its command allowed 2 minutes): the launch is cancelled,
# the daemon exits promptly and cleanly (ASan: no leak, no error), and the
# CLI says it lost the launch.
{ echo "hosts:"; printf '  - name: down\n    host: 127.0.0.1\n    port: 1\n    user: root\n    identity: %s\n    workdir: %s\n' \
  "$T/id_ed25519" "$T/pods/down"; pod_entry p2 2; } >"$T/down.yaml"
: >"$T/slowbin/hang"
"$KFLEET" launch --known-hosts "$T/known_hosts" --bundle "$T/bundle" --attempts 20 --min-free 4M \
  "$T/down.yaml" >"$T/launch-down.out" 2>"$T/launch-down.log" &
cli=$!
for _ in $(seq 1 100); do grep -q "runs in the coordinator" "$T/launch-down.log" && break; sleep 0.05; done
for _ in $(seq 1 600); do [ -e "$T/slowbin/hanging" ] && break; sleep 0.05; done
[ -e "$T/slowbin/hanging" ] || fail "p2's preflight did not reach its hanging nvidia-smi"
sleep 1
"$KFLEET" stop >/dev/null || fail "kfleet stop"
t0=$SECONDS
rc=0; wait "$SERVE_PID" || rc=$?
[ $rc -eq 0 ] || fail "kfleet serve exited $rc after stop with a launch running"
took=$((SECONDS - t0))
[ $took -le 10 ] || fail "kfleet serve took $took s to stop with a launch running"
! grep -q "Sanitizer" "$T/serve.log" || fail "sanitizer report in serve.log"
grep -q "launch.cancel\|launch.done" "$T/serve.log" || fail "the daemon did not cancel the launch"
rc=0; wait "$cli" || rc=$?
[ $rc -eq 1 ] || fail "the launch CLI exited $rc when its daemon stopped, expected 1"
pass "daemon stopped mid-launch (a host in backoff, p2 quiet in preflight): cancelled, exited 0 in $took s, no sanitizer report"

# Without a daemon: an inventory error is still reported first (exit 2,
# FILE:LINE:COL), then launch asks for `kfleet serve`; teardown works alone.
printf 'hosts:\n  - name: x\n    port: nope\n' >"$T/bad.yaml"
rc=0; "$KFLEET" launch "$T/bad.yaml" >/dev/null 2>"$T/bad.err" || rc=$?
[ $rc -eq 2 ] || fail "a bad inventory exited $rc, expected 2"
grep -q "bad.yaml:[0-9]*:[0-9]*:" "$T/bad.err" || fail "no FILE:LINE:COL: $(cat "$T/bad.err")"
rc=0; "${LAUNCH[@]}" "$T/good.yaml" >/dev/null 2>"$T/nodaemon.err" || rc=$?
[ $rc -eq 1 ] || fail "launch without a daemon exited $rc, expected 1"
grep -q "start it with \`kfleet serve\`" "$T/nodaemon.err" || fail "no hint to start kfleet serve: $(cat "$T/nodaemon.err")"
"$KFLEET" teardown --known-hosts "$T/known_hosts" "$T/good.yaml" >"$T/teardown2.out" 2>"$T/teardown2.log" ||
  { cat "$T/teardown2.out" "$T/teardown2.log"; fail "teardown without a daemon failed"; }
grep -q "^4 of 4 hosts stopped" "$T/teardown2.out" || fail "teardown without a daemon: $(cat "$T/teardown2.out")"
pass "no daemon: inventory errors first (exit 2), launch asks for \`kfleet serve\`, teardown runs from the CLI"

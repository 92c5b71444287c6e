#!/usr/bin/env bash
# bench/gpu/launch.sh — the README's pod flow against a real GPU host, in one
# device call: the GPU machine is made a pod by starting a carried OpenSSH
# sshd on it (bench/gpu/sshd-carry.sh, carried as bench/gpu/sshd-carry) in a
# network namespace of its own, so the pod reaches the coordinator only
# through the SSH tunnel, as a rented pod does. Then, from a `kfleet serve`
# on the same machine: `kfleet bundle`, `kfleet launch` with strict host-key
# checking (a known_hosts written from the pod's host key, no --accept-new),
# the preflight's view of the GPU, `kfleet status`, a GPU sweep with
# `kfleet submit --follow` through the tunnel, `kfleet verify`; the agent
# killed mid-sweep and launched again (only it restarts, its tasks requeue,
# nothing lost); the SSH session carrying the tunnel killed (the coordinator
# reconnects, the agent keeps running and serves the next sweep); `kfleet
# teardown --purge`. Every phase's time, and a PASS/FAIL table, last.
#
#   bench/gpu/launch.sh            (needs bundle/ and bench/gpu/sshd-carry)
#
# Logs and reports go under $OUT (default /tmp/kf-launch-out). Without
# network namespaces (no CAP_SYS_ADMIN) the pod listens on 127.0.0.1:2222
# instead and the table says so. Runs on a CPU machine too (SWEEP= a host
# sweep), which is how it is checked before a device call.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
B=$ROOT/bundle
C=${SSHD_CARRY:-$ROOT/bench/gpu/sshd-carry}
OUT=${OUT:-/tmp/kf-launch-out}
W=/tmp/kf-launch
SWEEP=${SWEEP:-$ROOT/bench/gpu/launch.yaml}
FAULT_SWEEP=${FAULT_SWEEP:-$ROOT/bench/gpu/launch-fault.yaml}
NS=kfpod$$
export KFLEET_HOME=$W/home
export PATH=$PATH:/usr/local/cuda/bin
rm -rf "$W"
mkdir -p "$OUT" "$W/pod" "$W/home"
K="$B/kfleet"
ROWS=()
SERVE_PID=""
SSHD_PID=""

row() { ROWS+=("| $1 | $2 | $3 |"); echo "== $1: $2 ($3)"; }
finish() {
  [ -n "$SERVE_PID" ] && { "$K" stop >/dev/null 2>&1; sleep 1; kill "$SERVE_PID" 2>/dev/null; }
  pkill -9 -f -- "--workdir $W/pod/work" 2>/dev/null
  [ -n "$SSHD_PID" ] && kill "$SSHD_PID" 2>/dev/null
  if [ "${USE_NS:-0}" = 1 ]; then
    for pid in $(ip netns pids "$NS" 2>/dev/null); do kill -9 "$pid" 2>/dev/null; done
    ip netns del "$NS" 2>/dev/null
  fi
  cp "$W/pod/work/agent.log" "$W/pod-agent.log" 2>/dev/null
  # One archive: the device tool brings back few files.
  (cd "$W" && tar czf "$OUT/launch-logs.tgz" ./*.log ./*.out ./*.json ./*.yaml ./*.txt 2>/dev/null)
  {
    echo "| step | result | verdict |"
    echo "| --- | --- | --- |"
    printf '%s\n' "${ROWS[@]}"
  } | tee "$OUT/launch-summary.md"
}
trap finish EXIT
die() { row "$1" "$2" FAIL; exit 1; }
# ms since t0 (set by `t0=$(now)`)
now() { date +%s%N; }
since() { echo $((($(now) - $1) / 1000000)); }

[ -x "$K" ] || die setup "no bundle at $B (make bundle, carry bundle)"
[ -x "$C/bin/sshd" ] || die setup "no sshd at $C (bash bench/gpu/sshd-carry.sh, carry bench/gpu/sshd-carry)"
{
  date -u +"date: %Y-%m-%dT%H:%M:%SZ"
  nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv 2>&1 || echo "no nvidia-smi"
  nvcc --version 2>&1 | tail -1
  echo "sshd: $(cat "$C/VERSIONS" 2>/dev/null | tr '\n' ' ')"
  echo "user: $(id -un) ($(id -u))"
} | tee "$W/machine.log"

# ---- the pod: sshd in a network namespace ----
t0=$(now)
keygen() { LD_LIBRARY_PATH=$C/lib "$C/bin/ssh-keygen" "$@"; }
keygen -q -t ed25519 -N '' -f "$W/id_ed25519" -C kf-gpu-launch || die "pod keys" "ssh-keygen failed"
keygen -q -t ed25519 -N '' -f "$W/pod/host_key" -C kf-gpu-pod || die "pod keys" "ssh-keygen failed"
cp "$W/id_ed25519.pub" "$W/pod/authorized_keys"
if [ "$(id -u)" -eq 0 ]; then
  mkdir -p /run/sshd && chmod 0755 /run/sshd
  id sshd >/dev/null 2>&1 || useradd -r -M -d /run/sshd -s /usr/sbin/nologin sshd 2>/dev/null ||
    echo 'sshd:x:977:65534::/run/sshd:/usr/sbin/nologin' >>/etc/passwd
fi
USE_NS=0
HOST=127.0.0.1 PORT=2222
if [ "$(id -u)" -eq 0 ] && command -v ip >/dev/null && ip netns add "$NS" 2>/dev/null; then
  USE_NS=1
  ip link add "${NS}v" type veth peer name "${NS}p" &&
    ip link set "${NS}p" netns "$NS" &&
    ip addr add 10.78.1.1/30 dev "${NS}v" && ip link set "${NS}v" up &&
    ip -n "$NS" addr add 10.78.1.2/30 dev "${NS}p" && ip -n "$NS" link set "${NS}p" up &&
    ip -n "$NS" link set lo up || die pod "veth setup failed"
  HOST=10.78.1.2 PORT=22
fi
source "$ROOT/tests/integration/sshd/config.sh"
sshd_pod_config "$HOST" "$PORT" "$W/pod" "$C/bin/sftp-server" >"$W/pod/sshd_config"
IN_NS=()
[ $USE_NS = 1 ] && IN_NS=(ip netns exec "$NS")
"${IN_NS[@]}" env LD_LIBRARY_PATH="$C/lib" "$C/bin/sshd" -D -f "$W/pod/sshd_config" \
  -E "$W/sshd.log" &
SSHD_PID=$!
for _ in $(seq 1 100); do
  bash -c "exec 3<>/dev/tcp/$HOST/$PORT" 2>/dev/null && break
  kill -0 "$SSHD_PID" 2>/dev/null || die pod "sshd exited: $(tail -3 "$W/sshd.log")"
  sleep 0.05
done
bash -c "exec 3<>/dev/tcp/$HOST/$PORT" 2>/dev/null || die pod "sshd did not listen on $HOST:$PORT"
# Strict host-key checking: the pod's key, as its provider would show it.
if [ "$PORT" = 22 ]; then kh=$HOST; else kh="[$HOST]:$PORT"; fi
echo "$kh $(cut -d' ' -f1-2 "$W/pod/host_key.pub")" >"$W/known_hosts"
where=$([ $USE_NS = 1 ] && echo "network namespace $NS at $HOST:22" || echo "loopback $HOST:$PORT (no network namespaces here)")
row "pod up" "carried sshd in a $where, $(since "$t0") ms" PASS

# ---- coordinator ----
t0=$(now)
"$K" --log-level debug serve --heartbeat-interval 0.5s --heartbeat-timeout 3s \
  >"$W/serve.out" 2>"$W/serve.log" &
SERVE_PID=$!
for _ in $(seq 1 200); do
  [ -s "$KFLEET_HOME/run/agent-endpoint" ] && break
  sleep 0.05
done
[ -s "$KFLEET_HOME/run/agent-endpoint" ] || die serve "kfleet serve did not start: $(tail -3 "$W/serve.log")"
port=$(sed 's/.*://' "$KFLEET_HOME/run/agent-endpoint")
if [ $USE_NS = 1 ] && ip netns exec "$NS" bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>/dev/null; then
  die serve "the pod reaches the coordinator's 127.0.0.1:$port without a tunnel"
fi
row "kfleet serve" "$(cat "$KFLEET_HOME/run/agent-endpoint"), $(since "$t0") ms$([ $USE_NS = 1 ] && echo '; the pod cannot reach it but by the tunnel')" PASS

# `kfleet bundle` runs in a build tree; this machine has the bundle it
# made there (make bundle), carried: the same directory launch uploads.
t0=$(now)
if "$K" bundle --out "$W/bundle" >"$W/bundle.out" 2>&1; then
  row "kfleet bundle" "$(tail -1 "$W/bundle.out" | cut -c1-120), $(since "$t0") ms" PASS
else
  rm -rf "$W/bundle"
  cp -a "$B" "$W/bundle"
  row "kfleet bundle" "made on the build machine (here: $(head -c 160 "$W/bundle.out")); the carried one, $(du -sh "$B" | cut -f1), is uploaded" INFO
fi

cat >"$W/fleet.yaml" <<YAML
hosts:
  - name: gpu-pod
    provider: ssh
    host: $HOST
    port: $PORT
    user: $(id -un)
    identity: $W/id_ed25519
    workdir: $W/pod/work
YAML
LAUNCH=("$K" launch --known-hosts "$W/known_hosts" --bundle "$W/bundle" --register-timeout 120s)
t0=$(now)
"${LAUNCH[@]}" "$W/fleet.yaml" >"$W/launch1.out" 2>"$W/launch1.log"
rc=$?
cat "$W/launch1.out"
[ $rc -eq 0 ] || die "kfleet launch" "exit $rc: $(tail -3 "$W/launch1.out" "$W/launch1.log" | tr '\n' ' ' | cut -c1-300)"
row "kfleet launch (strict known_hosts)" "$(grep '^gpu-pod' "$W/launch1.out" | tr -s ' ' | cut -c1-220), $(since "$t0") ms" PASS
pre=$(grep '^gpu-pod' "$W/launch1.out" | sed 's/.*— //')
row "preflight (what launch printed)" "${pre:-(see launch1.out)}" INFO

"$K" status >"$W/status1.out" 2>&1
"$K" status --format json >"$W/status1.json" 2>&1
cat "$W/status1.out"
grep -q '"state": "ok"' "$W/status1.json" || die "kfleet status" "the pod's agent is not ok: $(head -5 "$W/status1.out")"
gpus=$(grep -c '"uuid"' "$W/status1.json")
row "kfleet status" "agent ok, $gpus GPU(s): $(grep -o 'NVIDIA [^",]*' "$W/status1.json" | head -1)" PASS

# ---- a GPU sweep through the tunnel ----
t0=$(now)
"$K" submit "$SWEEP" --follow >"$W/submit1.out" 2>"$W/follow1.log"
rc=$?
tail -25 "$W/submit1.out"
id1=$(grep -o 'submitted sweep [0-9]*' "$W/submit1.out" | awk '{print $3}')
[ $rc -eq 0 ] && [ -n "$id1" ] || die "sweep through the tunnel" "submit --follow exit $rc: $(tail -3 "$W/follow1.log")"
"$K" verify "$id1" --format json >"$W/verify1.json" 2>&1 || die "verify" "$(head -c 300 "$W/verify1.json")"
"$K" report "$id1" --format json >"$W/report1.json"
"$K" report "$id1" >"$W/report1.txt"
row "sweep through the tunnel" "sweep $id1: $(grep -o '"succeeded": [0-9]*' "$W/verify1.json" | head -1) of $(grep -o '"tasks": [0-9]*' "$W/verify1.json" | head -1), verify clean, $(since "$t0") ms" PASS

# ---- the agent killed mid-sweep, launched again ----
"$K" submit "$FAULT_SWEEP" --follow >"$W/submit2.out" 2>"$W/follow2.log" &
follow=$!
# Wait until the sweep has finished some tasks, then kill the agent.
for _ in $(seq 1 600); do
  "$K" status --format json >"$W/status2.json" 2>/dev/null
  python3 - "$W/status2.json" <<'PY' && break
import json, sys
d = json.load(open(sys.argv[1]))
done = sum(s.get("succeeded", 0) for s in d.get("sweeps", []))
sys.exit(0 if done >= 3 else 1)
PY
  sleep 0.2
done
apid=$(cat "$W/pod/work/agent.pid" 2>/dev/null)
[ -n "$apid" ] || die "agent killed" "no agent.pid in the pod's work dir"
kill -9 "$apid"
t0=$(now)
for _ in $(seq 1 200); do
  "$K" status --format json 2>/dev/null | grep -A3 '"gpu-pod"' | grep -q '"state": "lost"' && break
  sleep 0.1
done
"$K" status --format json 2>/dev/null | grep -A3 '"gpu-pod"' | grep -q '"state": "lost"' ||
  die "agent killed" "the coordinator did not take the agent for lost"
lost_ms=$(since "$t0")
t0=$(now)
"${LAUNCH[@]}" "$W/fleet.yaml" >"$W/launch2.out" 2>"$W/launch2.log" ||
  die "relaunch" "$(tail -3 "$W/launch2.out")"
cat "$W/launch2.out"
grep -q "^gpu-pod .*started" "$W/launch2.out" || die "relaunch" "the agent was not started again: $(cat "$W/launch2.out")"
relaunch_ms=$(since "$t0")
n=$(pgrep -af -- "--workdir $W/pod/work" | grep -vc -- "--runner" || true)
[ "$n" -eq 1 ] || die "relaunch" "$n agents run in the pod's work dir: $(pgrep -af -- "--workdir $W/pod/work" | cut -c1-200)"
# Bounded: a sweep that never ends is a failure to explain, not a hang.
for _ in $(seq 1 1200); do kill -0 "$follow" 2>/dev/null || break; sleep 0.2; done
if kill -0 "$follow" 2>/dev/null; then
  "$K" status >"$W/status-stuck.out" 2>&1
  kill "$follow"
  die "sweep after the kill" "not done 4 min after the relaunch: $(tail -4 "$W/status-stuck.out" | tr -s ' ' | tr '\n' ';' | cut -c1-300)"
fi
wait "$follow"
rc=$?
tail -25 "$W/submit2.out"
id2=$(grep -o 'submitted sweep [0-9]*' "$W/submit2.out" | awk '{print $3}')
[ -n "$id2" ] || die "sweep after the kill" "no sweep id: $(tail -3 "$W/follow2.log")"
"$K" verify "$id2" --format json >"$W/verify2.json" 2>&1 || die "verify after the kill" "$(head -c 300 "$W/verify2.json")"
"$K" report "$id2" --format json >"$W/report2.json"
"$K" report "$id2" >"$W/report2.txt"
requeued=$(python3 - "$W/report2.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(sum(1 for r in d["rows"] if (r.get("attempt_count") or 1) > 1))
PY
)
row "agent killed mid-sweep (kill -9)" "lost after ${lost_ms} ms; launch again: only it started, $relaunch_ms ms; sweep $id2 exit $rc, $(grep -o '"succeeded": [0-9]*' "$W/verify2.json" | head -1) of $(grep -o '"tasks": [0-9]*' "$W/verify2.json" | head -1), $requeued row(s) took a second attempt, verify clean" "$([ $rc -eq 0 ] && echo PASS || echo FAIL)"

# ---- the SSH session carrying the tunnel killed ----
apid=$(cat "$W/pod/work/agent.pid")
killed=0
# The listener's children are the sessions (each connection's privileged
# sshd and its user-side child): the tunnel's among them.
for pid in $(pgrep -P "$SSHD_PID"); do
  [ "$(cat /proc/"$pid"/comm 2>/dev/null)" = sshd ] || continue
  for c in $(pgrep -P "$pid"); do
    [ "$(cat /proc/"$c"/comm 2>/dev/null)" = sshd ] && kill -9 "$c" 2>/dev/null && killed=$((killed + 1))
  done
  kill -9 "$pid" 2>/dev/null && killed=$((killed + 1))
done
[ "$killed" -ge 1 ] || die "tunnel session killed" "no sshd session process to kill"
t0=$(now)
for _ in $(seq 1 600); do
  grep -q 'tunnel.up name=gpu-pod .*reconnects=[1-9]' "$W/serve.log" && break
  sleep 0.1
done
grep -q 'tunnel.up name=gpu-pod .*reconnects=[1-9]' "$W/serve.log" ||
  die "tunnel session killed" "not reconnected: $(grep tunnel "$W/serve.log" | tail -3)"
recon_ms=$(since "$t0")
kill -0 "$apid" || die "tunnel session killed" "the agent died with its tunnel"
"$K" submit "$SWEEP" --follow >"$W/submit3.out" 2>"$W/follow3.log" ||
  die "sweep after the reconnect" "exit $?: $(tail -3 "$W/follow3.log")"
id3=$(grep -o 'submitted sweep [0-9]*' "$W/submit3.out" | awk '{print $3}')
"$K" verify "$id3" >/dev/null 2>&1 || die "sweep after the reconnect" "verify failed"
[ "$(cat "$W/pod/work/agent.pid")" = "$apid" ] || die "sweep after the reconnect" "the agent was replaced"
row "tunnel's SSH session killed ($killed sshd processes)" "reconnected in $recon_ms ms, same agent (pid $apid) ran sweep $id3, verify clean" PASS

# ---- teardown ----
cp "$W/pod/work/agent.log" "$W/pod-agent.log" 2>/dev/null
"$K" report "$id1" >"$W/report1.txt" 2>&1
t0=$(now)
"$K" teardown --known-hosts "$W/known_hosts" --purge "$W/fleet.yaml" >"$W/teardown.out" 2>"$W/teardown.log" ||
  die teardown "$(tail -3 "$W/teardown.out")"
cat "$W/teardown.out"
[ ! -d "$W/pod/work" ] || die teardown "the work dir is still there"
n=$(pgrep -f -c -- "--workdir $W/pod/work" || true)
[ "$n" -eq 0 ] || die teardown "$n agents still run"
row "kfleet teardown --purge" "$(grep '^gpu-pod' "$W/teardown.out" | tr -s ' ' | cut -c1-160), $(since "$t0") ms" PASS

# pods.sh — fake GPU pods for the launch tests: OpenSSH's sshd, each in its
# own network namespace, reachable from this namespace only over a veth /30
# (10.77.N.1 here, 10.77.N.2 in the pod). A pod cannot reach this
# namespace's 127.0.0.1, where the coordinator listens: only the SSH
# connection (the tunnel) gets its agent there. Work dirs are directories of
# the shared filesystem; the namespace is what isolates the network.
#
# Sourced after lib.sh (needs T, PIDS, fail). Root only. pods_cleanup stops
# every sshd, agent, namespace and mount made here, whatever happened.
source "$(dirname "${BASH_SOURCE[0]}")/config.sh"
POD_TAG="kf$$"
POD_NS=()
POD_MOUNTS=()
POD_DIRS=()

pods_init() {
  [ "$(id -u)" -eq 0 ] || { echo "skip: the launch test needs root (network namespaces)"; exit 0; }
  [ -x /usr/sbin/sshd ] || fail "/usr/sbin/sshd missing: bash deploy/install-deps.sh --test"
  command -v ip >/dev/null || fail "ip (iproute2) missing"
  mkdir -p /run/sshd "$T/pods"
  chmod 0755 /run/sshd
  ssh-keygen -q -t ed25519 -N '' -f "$T/id_ed25519" -C kf-launch-test
  : >"$T/known_hosts"
  POD_COORD_NS="${POD_TAG}-coord"
  ip netns add "$POD_COORD_NS"
  POD_NS+=("$POD_COORD_NS")
  ip -n "$POD_COORD_NS" link set lo up
  # ip execs the command in place: the pid start_serve records is kfleet's.
  printf '#!/bin/sh\nexec ip netns exec %s %s "$@"\n' "$POD_COORD_NS" "$KFLEET" >"$T/kfleet-in-ns"
  chmod 0755 "$T/kfleet-in-ns"
  KFLEET="$T/kfleet-in-ns"
}

# in_coord CMD...: runs CMD in the coordinator's namespace.
in_coord() { ip netns exec "$POD_COORD_NS" "$@"; }

# start_pod NAME N [tmpfs-size] [nosftp]: a pod at 10.77.N.2:22.
start_pod() {
  local name=$1 n=$2 tmpfs=${3:-} nosftp=${4:-}
  local d="$T/pods/$name" ns="${POD_TAG}-$name" veth="${POD_TAG}v$n"
  mkdir -p "$d/work"
  POD_DIRS+=("$d")
  ip netns add "$ns"
  POD_NS+=("$ns")
  ip link add "$veth" type veth peer name "${veth}p"
  ip link set "${veth}p" netns "$ns"
  ip link set "$veth" netns "$POD_COORD_NS"
  ip -n "$POD_COORD_NS" addr add "10.77.$n.1/30" dev "$veth"
  ip -n "$POD_COORD_NS" link set "$veth" up
  ip -n "$ns" addr add "10.77.$n.2/30" dev "${veth}p"
  ip -n "$ns" link set "${veth}p" up
  ip -n "$ns" link set lo up
  if [ -n "$tmpfs" ]; then
    mount -t tmpfs -o "size=$tmpfs" tmpfs "$d/work"
    POD_MOUNTS+=("$d/work")
  fi
  ssh-keygen -q -t ed25519 -N '' -f "$d/host_key" -C "$name"
  cp "$T/id_ed25519.pub" "$d/authorized_keys"
  local sftp=/usr/lib/openssh/sftp-server
  [ -z "$nosftp" ] || sftp=""
  sshd_pod_config "10.77.$n.2" 22 "$d" "$sftp" >"$d/sshd_config"
  ip netns exec "$ns" /usr/sbin/sshd -D -f "$d/sshd_config" -E "$T/sshd-$name.log" &
  PIDS+=("$!")
  eval "POD_SSHD_$name=$!"
  for _ in $(seq 1 100); do
    in_coord bash -c "exec 3<>/dev/tcp/10.77.$n.2/22" 2>/dev/null && return 0
    sleep 0.05
  done
  fail "sshd of pod $name did not listen"
}

# pod_inventory_line NAME N: one hosts: entry for the pod.
pod_entry() {
  printf '  - name: %s\n    provider: ssh\n    host: 10.77.%s.2\n    port: 22\n    user: root\n    identity: %s\n    workdir: %s\n' \
    "$1" "$2" "$T/id_ed25519" "$T/pods/$1/work"
}

pods_cleanup() {
  local d ns m pid
  for d in "${POD_DIRS[@]:-}"; do
    [ -n "$d" ] || continue
    pid=$(cat "$d/work/agent.pid" 2>/dev/null || true)
    [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null || true
    pid=$(cat "$d/sshd.pid" 2>/dev/null || true)
    [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null || true
  done
  for m in "${POD_MOUNTS[@]:-}"; do
    [ -n "$m" ] && umount -l "$m" 2>/dev/null || true
  done
  # Everything still inside a pod's namespace (sshd's session children, a
  # runner) holds its veth and address: a later run would route into it.
  for ns in "${POD_NS[@]:-}"; do
    [ -n "$ns" ] || continue
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
    ip netns del "$ns" 2>/dev/null || true
  done
}

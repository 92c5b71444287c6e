# netns.sh — a network namespace joined to the host by a veth pair, for the
# partition and lossy-link tests; sourced after tests/integration/lib.sh.
#   netns_up       creates it: NS (name), NS_HOST_IP (host end), NS_IP (inside)
#   netns_cut      drops every packet in and out of the namespace (nft)
#   netns_heal     lets them through again
#   netns_lossy P  drops P percent of packets each way (nft numgen random)
#   ns_exec CMD    runs CMD inside
# The kernel here may lack sch_netem (tc qdisc ... netem), so loss is made by
# nftables; netns_down runs from the EXIT trap.

netns_up() {
  [ "$(id -u)" -eq 0 ] || { echo "ok - skipped: network namespaces need root"; exit 0; }
  command -v nft >/dev/null && command -v ip >/dev/null \
    || { echo "ok - skipped: needs ip and nft (deploy/install-deps.sh --test)"; exit 0; }
  local tag=$(( $$ % 10000 ))
  NS="kfp${tag}"
  NS_VETH_HOST="kfp${tag}h"
  local sub="10.$(( 100 + tag % 150 )).$(( 200 + tag % 50 ))"
  NS_HOST_IP="$sub.1"
  NS_IP="$sub.2"
  ip netns add "$NS"
  NETNS_MADE=1
  ip link add "$NS_VETH_HOST" type veth peer name "kfp${tag}p"
  ip link set "kfp${tag}p" netns "$NS"
  ip addr add "$NS_HOST_IP/24" dev "$NS_VETH_HOST"
  ip link set "$NS_VETH_HOST" up
  ip netns exec "$NS" ip addr add "$NS_IP/24" dev "kfp${tag}p"
  ip netns exec "$NS" ip link set "kfp${tag}p" up
  ip netns exec "$NS" ip link set lo up
  ip netns exec "$NS" nft add table inet kfnet
  ip netns exec "$NS" nft add chain inet kfnet in '{ type filter hook input priority 0; }'
  ip netns exec "$NS" nft add chain inet kfnet out '{ type filter hook output priority 0; }'
  trap 'rc=$?; set +e; netns_down; (exit $rc); cleanup' EXIT
}

netns_down() {
  [ -n "${NETNS_MADE:-}" ] || return 0
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill -9 "$p" 2>/dev/null; done
  wait 2>/dev/null
  ip link del "$NS_VETH_HOST" 2>/dev/null
  ip netns del "$NS" 2>/dev/null
  NETNS_MADE=
}

ns_exec() { ip netns exec "$NS" "$@"; }

netns_cut() {
  ns_exec nft add rule inet kfnet in drop
  ns_exec nft add rule inet kfnet out drop
}

netns_heal() { ns_exec nft flush table inet kfnet; }

netns_lossy() {
  ns_exec nft add rule inet kfnet in numgen random mod 100 lt "$1" counter drop
  ns_exec nft add rule inet kfnet out numgen random mod 100 lt "$1" counter drop
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# cluster.sh — a real Slurm cluster for the Slurm tests and benchmark:
# Debian's slurmctld and slurmd (22.05) with munge, all private to the test
# (own key, socket, config, state, ports inside namespaces), nothing of the
# machine's /etc/slurm or services touched.
#
# The shape is a cluster's: a login node (a pods.sh pod: sshd in its own
# network namespace, 10.77.N.2 from the coordinator's namespace) and a
# compute side (slurmctld and one slurmd node "c1" with $SLURM_CPUS CPUs,
# default 8, in namespace ${POD_TAG}-cl at 10.78.N.2), joined to the
# login node by a veth (10.78.N.1 on the login side). Compute nodes reach
# the login node but not the coordinator: an agent gets there only through
# the login node. The filesystem is shared, as a cluster's home or scratch
# is.
#
# Sourced after lib.sh and pods.sh. slurm_cleanup stops what slurm_start
# started; call it before pods_cleanup.
SLURM_PIDS=()

# slurm_start LOGIN_NAME N: the login pod LOGIN_NAME at 10.77.N.2 and the
# cluster behind it. Sets SLURM_CONF (exported) and SLURM_RELAY_HOST.
slurm_start() {
  local login=$1 n=$2 d="$T/slurm"
  for b in slurmctld slurmd munged sbatch squeue scancel; do
    command -v "$b" >/dev/null || [ -x "/usr/sbin/$b" ] ||
      fail "$b missing: bash deploy/install-deps.sh --test installs slurmctld, slurmd and munge"
  done
  mkdir -p "$d/state" "$d/spool/c1" "$d/log" "$d/munge"
  chmod 0700 "$d/munge"
  head -c 1024 /dev/urandom >"$d/munge/munge.key"
  chmod 0400 "$d/munge/munge.key"
  /usr/sbin/munged --socket="$d/munge/munge.sock" --key-file="$d/munge/munge.key" \
    --pid-file="$d/munge/munged.pid" --log-file="$d/log/munged.log" \
    --seed-file="$d/munge/munge.seed" --force
  SLURM_MUNGE_PID=$(cat "$d/munge/munged.pid")
  local host
  host=$(hostname -s)
  SLURM_CONF="$d/slurm.conf"
  export SLURM_CONF
  cat >"$SLURM_CONF" <<CONF
ClusterName=kftest
SlurmctldHost=$host(10.78.$n.2)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$d/munge/munge.sock
CredType=cred/munge
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool/%n
SlurmctldPidFile=$d/slurmctld.pid
SlurmdPidFile=$d/slurmd-%n.pid
SlurmctldLogFile=$d/log/slurmctld.log
SlurmdLogFile=$d/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1,bf_interval=1
MessageTimeout=10
KillWait=5
MinJobAge=600
MaxJobCount=20000
SlurmctldPort=6817
SlurmdPort=6818
NodeName=c1 NodeAddr=10.78.$n.2 CPUs=${SLURM_CPUS:-8} RealMemory=4000 State=UNKNOWN
PartitionName=cpu Nodes=c1 Default=YES MaxTime=INFINITE State=UP
CONF
  printf 'CgroupPlugin=cgroup/v1\nCgroupMountpoint=%s/cgroup\nCgroupAutomount=no\n' "$d" \
    >"$d/cgroup.conf"
  mkdir -p "$d/cgroup"
  # The login node: sshd whose sessions know where the cluster's config is.
  POD_SSHD_EXTRA="SetEnv SLURM_CONF=$SLURM_CONF" start_pod "$login" "$n"
  local cl="${POD_TAG}-cl" lns="${POD_TAG}-$login" veth="${POD_TAG}s$n"
  ip netns add "$cl"
  POD_NS+=("$cl")
  ip -n "$cl" link set lo up
  ip link add "$veth" type veth peer name "${veth}p"
  ip link set "$veth" netns "$lns"
  ip link set "${veth}p" netns "$cl"
  ip -n "$lns" addr add "10.78.$n.1/30" dev "$veth"
  ip -n "$lns" link set "$veth" up
  ip -n "$cl" addr add "10.78.$n.2/30" dev "${veth}p"
  ip -n "$cl" link set "${veth}p" up
  SLURM_RELAY_HOST="10.78.$n.1"
  SLURM_NS="$cl"
  ip netns exec "$cl" /usr/sbin/slurmctld -D -f "$SLURM_CONF" >"$T/slurmctld.log" 2>&1 &
  SLURM_PIDS+=("$!")
  ip netns exec "$cl" /usr/sbin/slurmd -D -N c1 -f "$SLURM_CONF" >"$T/slurmd.log" 2>&1 &
  SLURM_PIDS+=("$!")
  for _ in $(seq 1 200); do
    if in_cluster sinfo -h -N -o '%N %t' 2>/dev/null | grep -q '^c1 idle'; then
      return 0
    fi
    sleep 0.1
  done
  in_cluster sinfo -N 2>&1 | tail -3 >&2
  fail "slurmd's node c1 did not come up idle (logs: $d/log)"
}

# in_cluster CMD...: runs CMD on the compute side (scontrol, sinfo).
in_cluster() { ip netns exec "$SLURM_NS" "$@"; }

slurm_cleanup() {
  local p
  if [ -n "${SLURM_CONF:-}" ] && [ -f "$SLURM_CONF" ]; then
    in_cluster scancel -u root --full >/dev/null 2>&1 || true
  fi
  for p in "${SLURM_PIDS[@]:-}"; do
    [ -n "$p" ] && kill -TERM "$p" 2>/dev/null || true
  done
  sleep 0.3
  for p in "${SLURM_PIDS[@]:-}"; do
    [ -n "$p" ] && kill -9 "$p" 2>/dev/null || true
  done
  # slurmstepd and the jobs live in the cluster's namespace: pods_cleanup
  # kills everything left there.
  [ -n "${SLURM_MUNGE_PID:-}" ] && kill -TERM "$SLURM_MUNGE_PID" 2>/dev/null || true
  return 0
}

# config.sh — the sshd_config of a pod: one for the launch tests' pods
# (pods.sh) and for the GPU machine made a pod (bench/gpu/launch.sh), so the
# two run the same server settings. Key-only root login, no PAM, TCP
# forwarding for the coordinator's tunnel.
#
# sshd_pod_config ADDR PORT DIR [SFTP_SERVER]: prints a config listening on
# ADDR:PORT with DIR's host_key, authorized_keys and sshd.pid; without
# SFTP_SERVER the pod has no SFTP (launch falls back to SCP).
sshd_pod_config() {
  local addr=$1 port=$2 dir=$3 sftp=${4:-}
  echo "Port $port"
  echo "ListenAddress $addr"
  echo "HostKey $dir/host_key"
  echo "PidFile $dir/sshd.pid"
  echo "AuthorizedKeysFile $dir/authorized_keys"
  echo "PermitRootLogin prohibit-password"
  echo "PasswordAuthentication no"
  echo "KbdInteractiveAuthentication no"
  echo "UsePAM no"
  echo "StrictModes no"
  echo "AllowTcpForwarding yes"
  echo "ClientAliveInterval 5"
  echo "LogLevel VERBOSE"
  [ -z "$sftp" ] || echo "Subsystem sftp $sftp"
  # More lines from the caller (a login node's SetEnv SLURM_CONF=...).
  [ -z "${POD_SSHD_EXTRA:-}" ] || printf '%s\n' "$POD_SSHD_EXTRA"
}

#!/usr/bin/env bash
# Installs kfleet's build dependencies with apt-get, and nothing else; with
# --test also what the test suite needs (cmocka, Chromium for the HTML
# report's browser test, clang and its runtimes for the libFuzzer targets,
# OpenSSH server and client for the fake pods of the launch test, Slurm
# (slurmctld, slurmd, its client commands) and munge for the Slurm test, iproute2,
# nftables and python3 for the partition and chaos tests, numpy and the
# shared libpython for the Python-kernel test, Debian's CPU torch for the
# KernelBench and GPU MODE problems of test_formats),
# so `make demo` does not fetch a browser; with --bench what `make bench`
# compares against (beanstalkd, gearmand and libgearman's C client, perf,
# and a private Slurm with sshd for the Slurm side-by-side),
# so neither `make demo` nor `make test` fetches them.
# Idempotent: a package already present is not fetched again, and apt-get update
# runs only when something is missing.
set -euo pipefail

pkgs=(
  build-essential cmake pkg-config git
  libzmq3-dev libsodium-dev
  libprotobuf-c-dev protobuf-c-compiler
  liblmdb-dev lmdb-utils
  libssh2-1-dev
  libyaml-dev libjansson-dev
  procps
)
case "${1:-}" in
"") ;;
--test) pkgs+=(libcmocka-dev chromium clang libclang-rt-14-dev openssh-server openssh-client
  iproute2 nftables python3 python3-numpy python3-torch libpython3-dev slurmctld slurmd slurm-client munge) ;;
--bench) pkgs+=(beanstalkd gearman-job-server libgearman-dev gearman-tools linux-perf openssh-server
  openssh-client iproute2 slurmctld slurmd slurm-client munge) ;;
*)
  echo "install-deps: unknown argument '$1' (none, --test or --bench)" >&2
  exit 2
  ;;
esac

missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#pkgs[@]} packages present"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  SUDO=sudo
else
  SUDO=
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"

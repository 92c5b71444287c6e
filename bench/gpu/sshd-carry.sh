#!/usr/bin/env bash
# bench/gpu/sshd-carry.sh [OUT] — OpenSSH's sshd, sftp-server and ssh-keygen
# from this machine (Debian's openssh-server, which `make test` installs),
# with the shared libraries they need beside them, for a machine that has
# no SSH server and cannot fetch one (the GPU machine: bench/gpu/launch.sh).
# glibc is left out: the target's own (newer) one serves. Carried as
# bench/gpu/sshd-carry (ignored by git): name it in the device tool's carry.
set -euo pipefail
OUT=${1:-$(cd "$(dirname "$0")" && pwd)/sshd-carry}
for b in /usr/sbin/sshd /usr/lib/openssh/sftp-server /usr/bin/ssh-keygen; do
  [ -x "$b" ] || { echo "sshd-carry: $b missing: bash deploy/install-deps.sh --test" >&2; exit 1; }
done
rm -rf "$OUT"
mkdir -p "$OUT/bin" "$OUT/lib"
cp /usr/sbin/sshd /usr/lib/openssh/sftp-server /usr/bin/ssh-keygen "$OUT/bin/"
for b in "$OUT"/bin/*; do
  ldd "$b" | awk '$3 ~ /^\// {print $3}'
done | sort -u | while read -r lib; do
  case $(basename "$lib") in
  libc.so.* | libm.so.* | libdl.so.* | libpthread.so.* | librt.so.* | libresolv.so.* | ld-linux*) ;;
  *) cp -L "$lib" "$OUT/lib/" ;;
  esac
done
dpkg-query -W -f='${Package} ${Version}\n' openssh-server openssh-sftp-server openssh-client \
  >"$OUT/VERSIONS" 2>/dev/null || true
echo "sshd-carry: $(ls "$OUT/bin" | wc -l) programs, $(ls "$OUT/lib" | wc -l) libraries, $(du -sh "$OUT" | cut -f1) in $OUT"

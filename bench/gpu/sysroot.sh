#!/usr/bin/env bash
# bench/gpu/sysroot.sh DIR — what building kfleet on the GPU machine needs
# and it lacks: the headers, .pc files and libraries of kfleet's
# dependencies (taken from this Debian machine's packages), and pkg-config
# and protoc-c with their libraries. The GPU machine (Ubuntu 24.04: a newer
# glibc, its own gcc, CMake) has no apt and no network, so this is carried
# there (`carry: [DIR]`) and bench/gpu/run.sh build uses it:
#   PKG_CONFIG_SYSROOT_DIR=DIR, PKG_CONFIG_LIBDIR=DIR/pc, DIR/bin on PATH.
# The build on that machine is the proof that a user's compiler builds us
# (issue 33): it compiles with that machine's gcc and its own flags.
set -euo pipefail
D=${1:?usage: bench/gpu/sysroot.sh DIR}
rm -rf "$D"
mkdir -p "$D/bin" "$D/lib" "$D/libexec" "$D/pc"
pkgs="libzmq3-dev libsodium-dev libprotobuf-c-dev liblmdb-dev libssh2-1-dev libyaml-dev libjansson-dev"
for p in $pkgs; do
  dpkg -L "$p" | while read -r f; do
    case "$f" in
    /usr/include/*) [ -f "$f" ] && install -D -m 0644 "$f" "$D$f" ;;
    *.so) [ -L "$f" ] || [ -f "$f" ] && install -D "$(readlink -f "$f")" "$D$f" ;;
    esac
  done
done
# Every .pc file: Requires.private chains (libzmq -> krb5-gssapi, norm, ...)
# must resolve for --cflags, even where the headers are not needed.
for d in /usr/lib/x86_64-linux-gnu/pkgconfig /usr/share/pkgconfig; do
  cp -L "$d"/*.pc "$D/pc/" 2>/dev/null || true
done
# The libraries those .so files need at link time (ld follows NEEDED).
libdir=/usr/lib/x86_64-linux-gnu
for so in "$D$libdir"/*.so; do ldd "$so"; done | awk '/=> \//{print $3}' | sort -u |
  grep -Ev '/(libc|libm|libpthread|libdl|librt|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so' |
  while read -r l; do cp -Ln "$l" "$D$libdir/" 2>/dev/null || true; done
# Each .so also under its SONAME, which is what the binaries ask for at run time.
for so in "$D$libdir"/*.so; do
  n=$(objdump -p "$so" | awk '/SONAME/{print $2}')
  [ -n "$n" ] && [ ! -e "$D$libdir/$n" ] && cp "$so" "$D$libdir/$n"
done
# The tools, each with its libraries beside it, behind a wrapper in bin/.
for t in pkgconf protoc-c; do
  cp -L "/usr/bin/$t" "$D/libexec/$t" # its own name: protoc-c reads argv[0]
  ldd "/usr/bin/$t" | awk '/=> \//{print $3}' |
    grep -Ev '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*)\.so' | xargs -r -I{} cp -Ln {} "$D/lib/"
  printf '#!/bin/sh\nd=$(dirname "$(readlink -f "$0")")\nLD_LIBRARY_PATH="$d/../lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$d/../libexec/%s" "$@"\n' \
    "$t" >"$D/bin/$t"
  chmod +x "$D/bin/$t"
done
ln -s pkgconf "$D/bin/pkg-config"
# CMake refuses an imported target whose include directory is missing: make
# the ones the Requires.private chains name (their headers are not needed).
for m in libzmq libprotobuf-c lmdb libsodium yaml-0.1 jansson libssh2; do
  PKG_CONFIG_LIBDIR="$D/pc" PKG_CONFIG_SYSROOT_DIR="$D" "$D/bin/pkg-config" --static --cflags "$m"
done | tr ' ' '\n' | grep "^$D/\|^-I$D/" | sed 's/^-I//' | sort -u | xargs -r mkdir -p
du -sh "$D" | awk '{print "sysroot: " $1}'

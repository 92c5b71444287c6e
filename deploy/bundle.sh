#!/usr/bin/env bash
# bundle — builds the relocatable kfleet bundle: a directory you can copy to
# any Linux machine with a new-enough glibc and run from anywhere.
#
#   bash deploy/bundle.sh BUILD_DIR OUT_DIR
#
# OUT_DIR/
#   kfleet, kfleet-agent   the binaries, linked with RPATH $ORIGIN/lib
#   lib/                   every shared library they need (ldd's transitive
#                          closure) except the system's glibc family,
#                          libstdc++ and libgcc_s, which every target has and
#                          which must match its kernel/loader
#   kernels/               kf_kernel.h, host/, cuda/, python/ (if present)
#   VERSION                version, commit, build type, arch, requirements
#   GLIBC_REQUIRED         the highest GLIBC_x.y symbol version any file in
#                          the bundle needs: the oldest glibc it runs on
#   MANIFEST               "sha256  path" for every other file, sorted
#
# Why RPATH and not RUNPATH: the binaries are linked --disable-new-dtags, so
# their $ORIGIN/lib also applies to the libraries' own dependencies (libzmq →
# libsodium); RUNPATH would only cover the binary's direct ones.
#
# The script is idempotent (OUT_DIR is removed first) and fails loudly when a
# library is missing or would not resolve from inside the bundle. libcuda and
# NVML are dlopen'd by the agent at run time, never bundled: they belong to
# the target's driver.
set -euo pipefail

die() {
  echo "bundle: error: $*" >&2
  exit 1
}

[ $# -eq 2 ] || die "usage: bash deploy/bundle.sh BUILD_DIR OUT_DIR"
BUILD_DIR=$1
OUT_ARG=$2
SRC_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BINS=(kfleet kfleet-agent)

for tool in ldd objdump sha256sum readelf du sort; do
  command -v "$tool" >/dev/null || die "'$tool' not found on PATH (install binutils/coreutils)"
done

[ -d "$BUILD_DIR" ] || die "build dir '$BUILD_DIR' does not exist (run 'make build' first)"
BUILD_DIR=$(cd "$BUILD_DIR" && pwd)
for b in "${BINS[@]}"; do
  [ -x "$BUILD_DIR/$b" ] || die "'$BUILD_DIR/$b' is missing or not executable (run 'make build' first)"
  # Captured first: with pipefail, grep -q closing the pipe early could fail
  # readelf with SIGPIPE and turn a match into an error.
  dyn=$(readelf -d "$BUILD_DIR/$b") || die "readelf cannot read '$BUILD_DIR/$b'"
  # shellcheck disable=SC2016  # a literal $ORIGIN, not an expansion
  grep -q '(RPATH).*\$ORIGIN/lib' <<<"$dyn" ||
    die "'$BUILD_DIR/$b' has no RPATH \$ORIGIN/lib (was it linked outside CMakeLists.txt's settings?)"
done

# Guard the rm -rf below: OUT_DIR must be a dedicated directory: never /,
# $HOME or a directory holding the sources or the build, and, when it already
# has files, one that an earlier run of this script made (it has the marker).
mkdir -p "$OUT_ARG" || die "cannot create '$OUT_ARG'"
OUT_DIR=$(cd "$OUT_ARG" && pwd -P)
MARKER=.kfleet-bundle
for keep in / "${HOME:-/}" "$SRC_DIR" "$BUILD_DIR"; do
  keep=$(cd "$keep" 2>/dev/null && pwd -P) || continue
  case "$keep/" in
    "$OUT_DIR"/*) die "refusing to use '$OUT_DIR' as OUT_DIR: deleting it would delete '$keep'" ;;
  esac
done
if [ -n "$(ls -A "$OUT_DIR")" ] && [ ! -e "$OUT_DIR/$MARKER" ]; then
  die "'$OUT_DIR' is not empty and is not a kfleet bundle; remove it or pick another OUT_DIR"
fi
rm -rf "$OUT_DIR"
mkdir -p "$OUT_DIR/lib"
echo "kfleet bundle made by deploy/bundle.sh; this directory is replaced on rebuild" >"$OUT_DIR/$MARKER"

# The glibc family, libstdc++ and libgcc_s stay the target's own: glibc is
# tied to the target's loader and kernel, and the C++ runtime must be the one
# any other C++ library in the process uses. vdso has no file at all.
is_system_lib() {
  case "$1" in
    linux-vdso.so* | linux-gate.so* | ld-linux*.so* | ld64.so*) return 0 ;;
    libc.so.* | libm.so.* | libmvec.so.* | libdl.so.* | libpthread.so.* | librt.so.*) return 0 ;;
    libresolv.so.* | libutil.so.* | libanl.so.* | libnsl.so.* | libnss_*.so.*) return 0 ;;
    libBrokenLocale.so.* | libthread_db.so.* | libc_malloc_debug.so.*) return 0 ;;
    libstdc++.so.* | libgcc_s.so.*) return 0 ;;
  esac
  return 1
}

# Prints "name path" for each library ldd lists for $1 ("name not-found"
# when it does not resolve). LD_LIBRARY_PATH is cleared so that it can
# neither hide a missing library nor fake a resolution.
ldd_pairs() {
  local out
  out=$(env -u LD_LIBRARY_PATH -u LD_PRELOAD ldd "$1" 2>&1) || die "ldd '$1' failed: $out"
  awk '
    $2 == "=>" && $3 == "not" { print $1, "not-found"; next }
    $2 == "=>" && $3 ~ /^\// { print $1, $3; next }
    $1 ~ /^\// { n = split($1, p, "/"); print p[n], $1 }
  ' <<<"$out"
}

echo "bundle: $BUILD_DIR -> $OUT_DIR"
for b in "${BINS[@]}"; do
  cp "$BUILD_DIR/$b" "$OUT_DIR/$b"
done

# ldd prints the whole transitive closure already; asking it again about
# each copied library is a cheap guard for anything it missed.
declare -A copied=()
queue=("${BINS[@]/#/$BUILD_DIR/}")
while [ ${#queue[@]} -gt 0 ]; do
  item=${queue[0]}
  queue=("${queue[@]:1}")
  while read -r name path; do
    is_system_lib "$name" && continue
    [ "$path" = not-found ] && die "'$item' needs $name, which ldd cannot find: install it, or fix LD_LIBRARY_PATH for the build"
    [ -n "${copied[$name]:-}" ] && continue
    cp -L "$path" "$OUT_DIR/lib/$name" || die "cannot copy $path"
    chmod u+w,a+r "$OUT_DIR/lib/$name"
    copied[$name]=$path
    queue+=("$path")
  done < <(ldd_pairs "$item")
done

if [ -d "$SRC_DIR/kernels" ]; then
  KERNELS=$SRC_DIR/kernels
elif [ -d "$BUILD_DIR/kernels" ]; then
  KERNELS=$BUILD_DIR/kernels
else
  die "no kernels/ directory in '$SRC_DIR' or '$BUILD_DIR'"
fi
[ -f "$KERNELS/kf_kernel.h" ] || die "'$KERNELS/kf_kernel.h' is missing"
mkdir -p "$OUT_DIR/kernels"
cp -L "$KERNELS/kf_kernel.h" "$OUT_DIR/kernels/"
for sub in host cuda python; do
  [ -d "$KERNELS/$sub" ] && cp -RL "$KERNELS/$sub" "$OUT_DIR/kernels/$sub"
done

# Verify from the bundle itself: every library that is not the system's must
# resolve into OUT_DIR/lib, else the bundle would silently use (or miss) the
# host's copy on the target.
bad=0
for b in "${BINS[@]}"; do
  while read -r name path; do
    if [ "$path" = not-found ]; then
      echo "bundle: error: $OUT_DIR/$b: $name not found" >&2
      bad=1
    elif ! is_system_lib "$name" && [ "$(dirname "$(readlink -f "$path")")" != "$OUT_DIR/lib" ]; then
      echo "bundle: error: $OUT_DIR/$b: $name resolves to $path, not $OUT_DIR/lib" >&2
      bad=1
    fi
  done < <(ldd_pairs "$OUT_DIR/$b")
done
[ $bad -eq 0 ] || die "the bundle does not resolve its own libraries (see above)"

# The highest symbol versions needed from the system's libraries decide the
# oldest target: GLIBC_ for glibc, GLIBCXX_/CXXABI_ for libstdc++ (libzmq is
# C++). GLIBC_PRIVATE is not a version and never matches [0-9].
elfs=()
for b in "${BINS[@]}"; do elfs+=("$OUT_DIR/$b"); done
for f in "$OUT_DIR"/lib/*; do elfs+=("$f"); done
highest() {
  objdump -T "${elfs[@]}" 2>/dev/null | grep -o "\b$1_[0-9][0-9.]*" | sort -u -V | tail -n 1 || true
}
GLIBC=$(highest GLIBC)
GLIBCXX=$(highest GLIBCXX)
CXXABI=$(highest CXXABI)
[ -n "$GLIBC" ] || die "objdump -T found no GLIBC_ symbol version in the bundle; is it really dynamically linked?"
echo "$GLIBC" >"$OUT_DIR/GLIBC_REQUIRED"

version=$(sed -n 's/^CMAKE_PROJECT_VERSION:[A-Z]*=//p' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null || true)
build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null || true)
commit=$(git -C "$SRC_DIR" rev-parse HEAD 2>/dev/null || echo unknown)
{
  echo "version=${version:-unknown}"
  echo "commit=$commit"
  echo "build_type=${build_type:-unknown}"
  echo "arch=$(uname -m)"
  echo "glibc_required=$GLIBC"
  echo "glibcxx_required=${GLIBCXX:-none}"
  echo "cxxabi_required=${CXXABI:-none}"
} >"$OUT_DIR/VERSION"

# Paths relative to OUT_DIR so the manifest (and its hash) do not depend on
# where the bundle sits.
# (Into a variable first: a redirection would create MANIFEST before find runs.)
manifest=$(cd "$OUT_DIR" && find . -type f -printf '%P\n' | LC_ALL=C sort |
  xargs -d '\n' sha256sum) || die "cannot checksum the files in '$OUT_DIR'"
printf '%s\n' "$manifest" >"$OUT_DIR/MANIFEST"

nfiles=$(wc -l <"$OUT_DIR/MANIFEST")
size_h=$(du -sh "$OUT_DIR" | cut -f1)
size_b=$(du -sb "$OUT_DIR" | cut -f1)
echo "bundle: ${#copied[@]} libraries: $(printf '%s\n' "${!copied[@]}" | LC_ALL=C sort | tr '\n' ' ')"
echo "bundle: glibc-required $GLIBC (the oldest glibc it runs on); libstdc++ ${GLIBCXX:-none}"
echo "bundle: $nfiles files, total size $size_h ($size_b bytes)"
echo "bundle-sha256 $(sha256sum "$OUT_DIR/MANIFEST" | cut -d' ' -f1)"

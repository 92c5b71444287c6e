#!/usr/bin/env bash
# Every build type a user may pick builds, with gcc and with clang, with
# warnings as errors (issue 33): a user's `cmake -DCMAKE_BUILD_TYPE=Release`
# once failed on a -O3-only maybe-uninitialized warning that our Debug
# builds never saw. Also: a plain configure on a machine without cmocka (a
# user who only builds kfleet) succeeds and says the tests are off, and one
# that insists on tests says what to install.
#
# Each configuration builds kfleet alone (-DBUILD_TESTING=OFF) in a scratch
# tree, so the suite is not compiled, or run, once per type.
#   tests/build/types.sh --src DIR [--types "Debug Release"] [--compilers "gcc clang"]
set -euo pipefail

src=
types="Debug RelWithDebInfo Release MinSizeRel"
compilers="gcc clang"
while [ $# -gt 0 ]; do
  case "$1" in
  --src) src=$2; shift 2 ;;
  --types) types=$2; shift 2 ;;
  --compilers) compilers=$2; shift 2 ;;
  *) echo "types.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[ -n "$src" ] || { echo "types.sh: --src DIR is required" >&2; exit 2; }

T=$(mktemp -d /tmp/kf-types.XXXXXX)
trap 'rm -rf "$T"' EXIT
jobs=$(nproc 2>/dev/null || echo 2)
failed=0

for cc in $compilers; do
  if ! command -v "$cc" >/dev/null; then
    echo "not ok - $cc is not installed (bash deploy/install-deps.sh --test installs it)"
    failed=$((failed + 1))
    continue
  fi
  for t in $types; do
    b="$T/$cc-$t"
    t0=$(date +%s)
    if CC=$cc cmake -S "$src" -B "$b" -DCMAKE_BUILD_TYPE="$t" -DKF_WERROR=ON \
      -DBUILD_TESTING=OFF >"$b.log" 2>&1 &&
      cmake --build "$b" -j "$jobs" >>"$b.log" 2>&1 &&
      [ -x "$b/kfleet" ] && [ -x "$b/kfleet-agent" ]; then
      echo "ok - $cc $t builds with -Werror ($(($(date +%s) - t0)) s)"
    else
      echo "not ok - $cc $t does not build:"
      grep -E "error|warning" "$b.log" | head -10 | sed 's/^/    /'
      failed=$((failed + 1))
    fi
    rm -rf "$b"
  done
done

# A machine without cmocka: pkg-config sees every .pc file but cmocka's.
pc="$T/pc"
mkdir -p "$pc"
for d in $(pkg-config --variable pc_path pkg-config | tr : ' '); do
  [ -d "$d" ] || continue
  for f in "$d"/*.pc; do
    [ -e "$f" ] && [ "$(basename "$f")" != cmocka.pc ] && [ ! -e "$pc/$(basename "$f")" ] &&
      ln -s "$f" "$pc/"
  done
done
if PKG_CONFIG_LIBDIR="$pc" pkg-config --exists cmocka; then
  echo "not ok - the cmocka-less pkg-config still finds cmocka"
  failed=$((failed + 1))
elif PKG_CONFIG_LIBDIR="$pc" cmake -S "$src" -B "$T/nocmocka" >"$T/nocmocka.log" 2>&1 &&
  grep -q "cmocka not found: the tests are not built" "$T/nocmocka.log" &&
  grep -q "^BUILD_TESTING:BOOL=OFF" "$T/nocmocka/CMakeCache.txt"; then
  echo "ok - without cmocka a plain configure succeeds, tests off, and says so"
else
  echo "not ok - a plain configure without cmocka:"
  tail -5 "$T/nocmocka.log" | sed 's/^/    /'
  failed=$((failed + 1))
fi
if PKG_CONFIG_LIBDIR="$pc" cmake -S "$src" -B "$T/insist" -DBUILD_TESTING=ON >"$T/insist.log" 2>&1; then
  echo "not ok - -DBUILD_TESTING=ON without cmocka configured"
  failed=$((failed + 1))
elif grep -q "deploy/install-deps.sh --test" "$T/insist.log"; then
  echo "ok - -DBUILD_TESTING=ON without cmocka fails and says what to install"
else
  echo "not ok - -DBUILD_TESTING=ON without cmocka failed without saying what to install:"
  tail -5 "$T/insist.log" | sed 's/^/    /'
  failed=$((failed + 1))
fi

[ "$failed" -eq 0 ] || { echo "types: $failed failed"; exit 1; }
echo "types: all passed"

#!/usr/bin/env bash
# test_bundle — deploy/bundle.sh makes a relocatable bundle: both binaries,
# the non-system libraries in lib/, a MANIFEST that checks out, and binaries
# that resolve libzmq from their own lib/ even after the bundle is moved.
# Checks linkage only (ldd), never the binaries' behaviour.
#
# Env: KF_BIN (build dir, with kfleet and kfleet-agent), KF_SRC (source dir).
set -euo pipefail

: "${KF_BIN:?KF_BIN must name the build dir}"
: "${KF_SRC:?KF_SRC must name the source dir}"

fail() {
  echo "test_bundle: FAIL: $*" >&2
  exit 1
}

TMP=$(mktemp -d "${TMPDIR:-/tmp}/kf-bundle-test.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

B=$TMP/bundle
log=$TMP/bundle.log
bash "$KF_SRC/deploy/bundle.sh" "$KF_BIN" "$B" >"$log" 2>&1 ||
  fail "bundle.sh exited $?: $(cat "$log")"

for f in kfleet kfleet-agent; do
  [ -x "$B/$f" ] || fail "$f missing or not executable in the bundle"
done
for lib in libzmq liblmdb libprotobuf-c libsodium; do
  compgen -G "$B/lib/$lib.so*" >/dev/null || fail "lib/ has no $lib.so*: $(ls "$B/lib")"
done
for lib in libc.so libm.so libstdc++.so libgcc_s.so ld-linux; do
  if compgen -G "$B/lib/$lib*" >/dev/null; then fail "lib/ holds system library $lib"; fi
done
[ -s "$B/MANIFEST" ] || fail "MANIFEST missing or empty"
[ -s "$B/VERSION" ] || fail "VERSION missing or empty"
[ -f "$B/kernels/kf_kernel.h" ] || fail "kernels/kf_kernel.h missing"
grep -Eqx 'GLIBC_[0-9]+\.[0-9]+(\.[0-9]+)?' "$B/GLIBC_REQUIRED" ||
  fail "GLIBC_REQUIRED is not GLIBC_x.y: $(cat "$B/GLIBC_REQUIRED")"
grep -Eq '^bundle-sha256 [0-9a-f]{64}$' "$log" || fail "no 'bundle-sha256 <hex>' line in the output"
grep -q '^bundle: glibc-required GLIBC_' "$log" || fail "the glibc requirement was not printed"
(cd "$B" && sha256sum -c --quiet MANIFEST) || fail "MANIFEST does not match the files"
grep -q ' lib/libzmq.so' "$B/MANIFEST" || fail "MANIFEST does not list lib/libzmq"

# Where ldd says libzmq comes from, with no LD_LIBRARY_PATH to help.
zmq_path() {
  env -u LD_LIBRARY_PATH ldd "$1" | awk '$1 ~ /^libzmq\.so/ { print $3 }'
}
check_resolves_in() {
  local dir=$1 got
  for f in kfleet kfleet-agent; do
    got=$(zmq_path "$dir/$f")
    [ "$got" = "$dir/lib/$(basename "$got")" ] ||
      fail "$dir/$f resolves libzmq to '$got', not $dir/lib"
    if env -u LD_LIBRARY_PATH ldd "$dir/$f" | grep -q 'not found'; then
      fail "$dir/$f has unresolved libraries: $(ldd "$dir/$f" | grep 'not found')"
    fi
  done
}
check_resolves_in "$B"

# Relocated: a copy elsewhere must use its own lib/, and keep working when
# the original is gone.
M=$TMP/moved/elsewhere
mkdir -p "$(dirname "$M")"
cp -a "$B" "$M"
rm -rf "$B"
check_resolves_in "$M"
(cd "$M" && sha256sum -c --quiet MANIFEST) || fail "MANIFEST does not match after the copy"

# Idempotent: a rebuild into the same dir replaces it (no stale files) and
# gives the same manifest hash.
sum1=$(grep '^bundle-sha256 ' "$log")
touch "$M/stale"
bash "$KF_SRC/deploy/bundle.sh" "$KF_BIN" "$M" >"$log" 2>&1 || fail "rebuild failed: $(cat "$log")"
[ ! -e "$M/stale" ] || fail "rebuild kept a stale file"
sum2=$(grep '^bundle-sha256 ' "$log")
[ "$sum1" = "$sum2" ] || fail "rebuild changed the bundle hash: $sum1 vs $sum2"

# Refuses to wipe a directory that is not a bundle, and says so.
mkdir -p "$TMP/notabundle" && touch "$TMP/notabundle/keep"
if bash "$KF_SRC/deploy/bundle.sh" "$KF_BIN" "$TMP/notabundle" >"$log" 2>&1; then
  fail "bundle.sh overwrote a non-bundle directory"
fi
[ -e "$TMP/notabundle/keep" ] || fail "bundle.sh deleted a non-bundle directory"
grep -q 'not a kfleet bundle' "$log" || fail "unclear refusal message: $(cat "$log")"

# A missing build dir is a clear error, not a crash.
if bash "$KF_SRC/deploy/bundle.sh" "$TMP/nobuild" "$TMP/out" >"$log" 2>&1; then
  fail "bundle.sh accepted a missing build dir"
fi
grep -q 'does not exist' "$log" || fail "unclear error for a missing build dir: $(cat "$log")"

echo "test_bundle: ok ($(cat "$M/GLIBC_REQUIRED"), $(find "$M/lib" -type f | wc -l) libraries)"

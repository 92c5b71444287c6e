#!/usr/bin/env bash
# Local files are never trusted by their name alone (issue 19):
#  1. a second local user pre-creates the victim's default run directory
#     (/tmp/kfleet-UID, used without XDG_RUNTIME_DIR: su, sudo, cron) mode
#     0777 with symlinks named like its files: the victim's `kfleet serve`
#     refuses it naming the directory, writes nothing through the links, and
#     `kfleet status` will not talk to a control socket there;
#  2. a symlink inside the victim's own run directory is replaced, never
#     written through;
#  3. a damaged store (its data file cut in half, or to zero) is refused by
#     serve, report and verify with a message naming the file — no SIGBUS
#     (exit 135), no silent new store.
source "$(dirname "$0")/lib.sh"

if [ "$(id -u)" -ne 0 ] || ! command -v useradd >/dev/null; then
  echo "ok - skipped: needs root and useradd for the second local user"
  exit 0
fi

V="kfv$$" A="kfa$$"
cleanup_users() {
  local vu
  vu=$(id -u "$V" 2>/dev/null) && rm -rf "/tmp/kfleet-$vu"
  userdel "$V" 2>/dev/null || true
  userdel "$A" 2>/dev/null || true
}
trap 'rc=$?; set +e; cleanup_users; (exit $rc); cleanup' EXIT
useradd -M -d "$T/home-v" -s /bin/sh "$V"
useradd -M -d "$T/home-a" -s /bin/sh "$A"
VU=$(id -u "$V")
RUNDIR="/tmp/kfleet-$VU"
rm -rf "$RUNDIR"
# The binaries where both users can run them (the build tree may sit in a
# directory only root can enter).
chmod 755 "$T"
mkdir -p "$T/bin" "$T/home-v" "$T/home-a"
cp "$KFLEET" "$KFAGENT" "$T/bin/"
chmod 755 "$T/bin" "$T/bin/kfleet" "$T/bin/kfleet-agent"
chown "$V:" "$T/home-v"
chown "$A:" "$T/home-a"
as_victim() { runuser -u "$V" -- env -i HOME="$T/home-v" PATH=/usr/bin:/bin "$@"; }
as_attacker() { runuser -u "$A" -- env -i HOME="$T/home-a" PATH=/usr/bin:/bin "$@"; }

# ---- 1. the attacker's run dir ----
as_victim sh -c 'echo "the victim'"'"'s precious bytes" >"$HOME/precious"; chmod 600 "$HOME/precious"'
before=$(sha256sum "$T/home-v/precious")
as_attacker sh -c "mkdir -m 0777 '$RUNDIR' && chmod 0777 '$RUNDIR' &&
  ln -s '$T/home-v/precious' '$RUNDIR/agent-endpoint' &&
  ln -s '$T/home-v/precious' '$RUNDIR/control.sock'"
set +e
as_victim timeout 20 "$T/bin/kfleet" serve >"$T/serve1.out" 2>"$T/serve1.err"
rc=$?
set -e
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "kfleet serve in the attacker's run dir: exit $rc: $(cat "$T/serve1.err")"
grep -q "$RUNDIR belongs to uid $(id -u "$A") with mode 0777" "$T/serve1.err" ||
  fail "the refusal does not name the directory, owner and mode: $(cat "$T/serve1.err")"
[ "$(sha256sum "$T/home-v/precious")" = "$before" ] || fail "the victim's file was written through a link"
[ -L "$RUNDIR/agent-endpoint" ] || fail "the attacker's link was touched"
set +e
as_victim "$T/bin/kfleet" status >"$T/status.out" 2>"$T/status.err"
src=$?
set -e
[ "$src" -ne 0 ] || fail "kfleet status talked to a run dir the attacker owns"
grep -q "belongs to uid" "$T/status.err" || fail "status's refusal: $(cat "$T/status.err")"
pass "an attacker's /tmp/kfleet-UID: serve exit $rc and status refuse it, naming it; nothing written through its links"

# ---- 2. a symlink in the victim's own run dir ----
rm -rf "$RUNDIR"
as_victim sh -c "mkdir -m 0700 '$RUNDIR' && ln -s \"\$HOME/precious\" '$RUNDIR/agent-endpoint'"
as_victim "$T/bin/kfleet" serve >"$T/serve2.out" 2>"$T/serve2.err" &
SP=$!
PIDS+=("$SP")
for _ in $(seq 1 200); do
  [ -f "$RUNDIR/agent-endpoint" ] && [ ! -L "$RUNDIR/agent-endpoint" ] && break
  sleep 0.05
done
[ ! -L "$RUNDIR/agent-endpoint" ] || fail "serve did not replace the symlink: $(cat "$T/serve2.err")"
grep -q '^tcp://' "$RUNDIR/agent-endpoint" || fail "no endpoint written: $(cat "$RUNDIR/agent-endpoint")"
[ "$(sha256sum "$T/home-v/precious")" = "$before" ] || fail "the victim's file was written through its own link"
as_victim "$T/bin/kfleet" stop >/dev/null || fail "stop"
wait "$SP" || true
pass "a symlink where the endpoint file goes is replaced, not followed"

# ---- 3. a damaged store ----
"$KFLEET" run "$KF_SRC/tests/data/sweeps/tiny.yaml" >/dev/null 2>&1 || fail "the first run"
data="$KFLEET_HOME/state/store/data.mdb"
size=$(stat -c %s "$data")
cp "$data" "$T/data.good"
for cut in half zero; do
  if [ $cut = half ]; then truncate -s $((size / 2)) "$data"; else : >"$data"; fi
  for cmd in "report" "verify" "serve"; do
    set +e
    timeout 20 "$KFLEET" $cmd >"$T/d.out" 2>"$T/d.err"
    rc=$?
    set -e
    [ "$rc" -eq 1 ] || fail "$cmd on a $cut store: exit $rc (135 is SIGBUS): $(cat "$T/d.err")"
    grep -q "$data is" "$T/d.err" || fail "$cmd on a $cut store does not name the file: $(cat "$T/d.err")"
  done
  [ $cut = zero ] && [ "$(stat -c %s "$data")" -ne 0 ] && fail "the empty store was taken as a new one"
  pass "a store cut to $cut: report, verify and serve exit 1 naming $data"
done

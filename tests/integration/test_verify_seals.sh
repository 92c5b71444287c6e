#!/usr/bin/env bash
# `kfleet verify` finds stored samples and results whose bytes were changed
# after they were written (issue 31, item 2). A profile sweep runs; verify
# is clean and says how many records it checked against their seals. Then
# one stored sample's time is rewritten to 1 ns through liblmdb itself
# (Python ctypes on the library kfleet links, as a kernel with write access
# to the store did): verify exits 1 naming the task and its samples (an
# attempt's samples are sealed together). The same for the terminal
# result's bytes.
source "$(dirname "$0")/lib.sh"

cat >"$T/sweep.yaml" <<EOF2
name: seals
kernels:
  - path: $KF_SRC/kernels/host/triad.c
params: {n: [4K]}
tasks: [validate, profile]
measure: {min_samples: 10, min_time: 0.01}
EOF2
"$KFLEET" run "$T/sweep.yaml" --agents 1 >"$T/run.out" 2>"$T/run.log" ||
  fail "the sweep failed: $(tail -3 "$T/run.log")"
"$KFLEET" verify >"$T/v0.out" 2>"$T/v0.err" || fail "verify of the untouched store failed: $(cat "$T/v0.out" "$T/v0.err")"
grep -q 'violations: 0' "$T/v0.out" || fail "untouched store: $(cat "$T/v0.out")"
grep -Eq '[1-9][0-9]* samples and results checked against their seals' "$T/v0.out" ||
  fail "verify did not check seals: $(cat "$T/v0.out")"
pass "untouched: $(grep -o '[0-9]* samples and results checked.*' "$T/v0.out")"

# rewrite DB WHICH: changes the first record of table DB (samples: its
# time, to 1 ns; results: one byte of its error string area) in place.
rewrite() {
  python3 - "$KFLEET_HOME/state/store" "$1" <<'PY'
import ctypes, ctypes.util, struct, sys
lib = ctypes.CDLL(ctypes.util.find_library("lmdb") or "liblmdb.so.0")
class Val(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t), ("data", ctypes.c_void_p)]
env, txn, dbi, cur = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_uint(), ctypes.c_void_p()
def ok(rc, what):
    if rc:
        sys.exit("%s: %s" % (what, ctypes.string_at(lib.mdb_strerror(rc)).decode()))
lib.mdb_strerror.restype = ctypes.c_void_p
ok(lib.mdb_env_create(ctypes.byref(env)), "env_create")
ok(lib.mdb_env_set_maxdbs(env, 32), "maxdbs")
ok(lib.mdb_env_set_mapsize(env, ctypes.c_size_t(1 << 30)), "mapsize")
ok(lib.mdb_env_open(env, sys.argv[1].encode(), 0, 0o600), "env_open")
ok(lib.mdb_txn_begin(env, None, 0, ctypes.byref(txn)), "txn_begin")
ok(lib.mdb_dbi_open(txn, sys.argv[2].encode(), 0, ctypes.byref(dbi)), "dbi_open")
ok(lib.mdb_cursor_open(txn, dbi, ctypes.byref(cur)), "cursor_open")
k, v = Val(), Val()
MDB_FIRST, MDB_NEXT = 0, 8
rc = lib.mdb_cursor_get(cur, ctypes.byref(k), ctypes.byref(v), MDB_FIRST)
key = data = None
while rc == 0:
    d = bytearray(ctypes.string_at(v.data, v.size))
    if sys.argv[2] == "samples":
        i = d.find(b"\x11")  # field 2 (seconds), a double
        if i >= 0 and i + 9 <= len(d):
            d[i + 1:i + 9] = struct.pack("<d", 1e-9)
            key, data = ctypes.string_at(k.data, k.size), bytes(d)
            break
    else:
        d[-1] ^= 1
        key, data = ctypes.string_at(k.data, k.size), bytes(d)
        break
    rc = lib.mdb_cursor_get(cur, ctypes.byref(k), ctypes.byref(v), MDB_NEXT)
if key is None:
    sys.exit("no record to rewrite in " + sys.argv[2])
lib.mdb_cursor_close(cur)
kb, db = ctypes.create_string_buffer(key, len(key)), ctypes.create_string_buffer(data, len(data))
ok(lib.mdb_put(txn, dbi, ctypes.byref(Val(len(key), ctypes.cast(kb, ctypes.c_void_p))),
               ctypes.byref(Val(len(data), ctypes.cast(db, ctypes.c_void_p))), 0), "put")
ok(lib.mdb_txn_commit(txn), "commit")
lib.mdb_env_close(env)
print("rewrote one record of", sys.argv[2])
PY
}

rewrite samples >/dev/null || fail "could not rewrite a sample through liblmdb"
rc=0
"$KFLEET" verify >"$T/v1.out" 2>"$T/v1.err" || rc=$?
[ $rc -eq 1 ] || fail "verify after a sample was rewritten exited $rc: $(cat "$T/v1.out" "$T/v1.err")"
grep -q "the attempt's samples (sealed together) changed after it was written" "$T/v1.err" ||
  fail "verify did not name the rewritten sample: $(cat "$T/v1.err")"
pass "a sample rewritten to 1 ns through liblmdb: $(head -1 "$T/v1.err")"

rewrite results >/dev/null || fail "could not rewrite a result through liblmdb"
rc=0
"$KFLEET" verify >"$T/v2.out" 2>"$T/v2.err" || rc=$?
[ $rc -eq 1 ] || fail "verify after a result was rewritten exited $rc"
grep -q 'the terminal result changed after it was written' "$T/v2.err" ||
  fail "verify did not name the rewritten result: $(cat "$T/v2.err")"
pass "a terminal result rewritten through liblmdb: $(grep 'terminal result' "$T/v2.err" | head -1)"

# Without the key (coordinator.key unreadable here) verify says it did not
# check, rather than claiming the store is sound.
mv "$KFLEET_HOME/state/keys/coordinator.key" "$T/coordinator.key"
"$KFLEET" verify >"$T/v3.out" 2>"$T/v3.err" || true
grep -q 'seals not checked' "$T/v3.out" || fail "verify without the key: $(cat "$T/v3.out")"
mv "$T/coordinator.key" "$KFLEET_HOME/state/keys/coordinator.key"
pass "without coordinator.key: $(grep -o 'seals not checked.*' "$T/v3.out" | cut -c1-120)"

#!/usr/bin/env bash
# `kfleet compare` as a CI gate judges correctness first (issue 12), on real
# sweeps run by `kfleet run`: sweep A has a correct kernel "work"; then B is
#   the same kernel faster, its source (flags) changed
#                                     -> exit 1, "changed: kernel source changed" (issue 29:
#                                        it brings its own reference), and with
#                                        --accept-changed-source exit 0, "faster"
#   the same kernel returning wrong   -> exit 1, broken: its validation failed
#   the same kernel crashing          -> exit 1, broken: it crashed
#   a sweep with nothing in common    -> exit 2, "no configuration in common"
source "$(dirname "$0")/lib.sh"

sweep() { # NAME PATH [FLAGS] -> a sweep file of one kernel named "work" (or NAME=other)
  local kname=work
  [ "$1" = other ] && kname=other
  cat >"$T/$1.yaml" <<YAML
name: $1
kernels:
  - path: $2
    name: $kname
    flags: [${3:-}]
params: {n: [256K]}
tasks: [validate, profile]
measure: {min_samples: 20, min_time: 100ms, max_noise: 100, precision: 50, timeout: 2s, seeds: 1}
YAML
}
run_sweep() { # NAME -> its id
  "$KFLEET" run "$T/$1.yaml" --format json -o "$T/$1.json" >/dev/null 2>"$T/$1.err" || true
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["sweep"]["sweep_id"])' "$T/$1.json"
}
compare() { # A B [FLAGS] -> exit code in RC, output in $T/cmp.out
  set +e
  "$KFLEET" compare "$@" >"$T/cmp.out" 2>"$T/cmp.err"
  RC=$?
  set -e
}

sweep slow "$KF_SRC/tests/kernels/reps.c" -DREPS=16
sweep fast "$KF_SRC/tests/kernels/reps.c" -DREPS=1
sweep wrong "$KF_SRC/tests/kernels/wrong.c"
sweep crash "$KF_SRC/tests/kernels/crash.c"
sweep other "$KF_SRC/tests/kernels/reps.c"
A=$(run_sweep slow)
B_FAST=$(run_sweep fast)
B_WRONG=$(run_sweep wrong)
B_CRASH=$(run_sweep crash)
B_OTHER=$(run_sweep other)

compare "$A" "$B_FAST"
[ "$RC" -eq 1 ] || fail "faster, source changed: exit $RC: $(cat "$T/cmp.out" "$T/cmp.err")"
grep -q 'REGRESSION changed: kernel source changed' "$T/cmp.out" ||
  fail "faster, source changed: not called changed: $(cat "$T/cmp.out")"
grep -q ' faster$' "$T/cmp.out" && fail "a changed source called faster: $(cat "$T/cmp.out")"
pass "the same kernel faster with its source changed: exit 1, changed, not faster"

compare "$A" "$B_FAST" --accept-changed-source
[ "$RC" -eq 0 ] || fail "faster: exit $RC: $(cat "$T/cmp.out" "$T/cmp.err")"
grep -q ' faster' "$T/cmp.out" || fail "faster: no 'faster' verdict: $(cat "$T/cmp.out")"
pass "the same kernel faster: exit 0, $(grep -o '[-+][0-9.]*%' "$T/cmp.out" | head -1)"

compare "$A" "$B_WRONG"
[ "$RC" -eq 1 ] || fail "wrong: exit $RC: $(cat "$T/cmp.out")"
grep -q 'REGRESSION broken: validation failed' "$T/cmp.out" ||
  fail "wrong: not a broken regression naming the failed validation: $(cat "$T/cmp.out")"
pass "the same kernel wrong: exit 1, $(grep -o 'REGRESSION broken: validation failed[^,]*' "$T/cmp.out" | head -c 120)"

compare "$A" "$B_CRASH"
[ "$RC" -eq 1 ] || fail "crash: exit $RC: $(cat "$T/cmp.out")"
grep -q 'REGRESSION broken: validation failed: the kernel crashed' "$T/cmp.out" ||
  fail "crash: not a broken regression naming the crash: $(cat "$T/cmp.out")"
pass "the same kernel crashing: exit 1, $(grep -o 'the kernel crashed[^\n]*' "$T/cmp.out" | head -c 100)"

compare "$A" "$B_OTHER"
[ "$RC" -eq 2 ] || fail "disjoint: exit $RC: $(cat "$T/cmp.out" "$T/cmp.err")"
grep -q 'no configuration in common' "$T/cmp.err" || fail "disjoint: message: $(cat "$T/cmp.err")"
pass "disjoint sweeps: exit 2, $(head -c 120 "$T/cmp.err")"

# The same gate in JSON and Markdown, for CI bots.
compare "$A" "$B_WRONG"
"$KFLEET" compare "$A" "$B_WRONG" --format json >"$T/cmp.json" || true
python3 - "$T/cmp.json" <<'EOF' || fail "JSON: see above"
import json, sys
o = json.load(open(sys.argv[1]))
r = o["rows"][0]
assert o["summary"]["regressions"] == 1, o["summary"]
assert r["verdict"] == "broken" and r["regression"] and r["a"]["passed"] and not r["b"]["passed"], r
assert "validation failed" in r["b"]["why"], r
EOF
"$KFLEET" compare "$A" "$B_WRONG" --format md >"$T/cmp.md" || true
grep -q '| work |' "$T/cmp.md" && grep -q '\*\*REGRESSION\*\*' "$T/cmp.md" || fail "md: $(cat "$T/cmp.md")"
pass "--format json and md carry the verdict, each side's state and why"

# The kernel's own declared name shows beside the sweep's name for it.
"$KFLEET" report "$B_WRONG" >"$T/wrong.txt"
grep -q 'work (wrong)' "$T/wrong.txt" || fail "the declared name is not shown: $(grep -m2 work "$T/wrong.txt")"
pass "a kernel named 'work' in the sweep that declares itself 'wrong' is shown as 'work (wrong)'"

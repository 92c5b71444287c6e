#!/usr/bin/env bash
# A Python kernel of several files (issue 33 item 1): its `files = [...]`
# line names a module of its own and a data file beside it; both travel
# with it (it validates on an agent whose work dir never saw them) and
# enter its hash (a changed helper is a new kernel hash). A kernel that
# imports a module of its own without listing it is told how to ship it.
# A files line that names a directory, or a file that is not there, is
# refused at submit with file and line.
source "$(dirname "$0")/lib.sh"

export KF_PYTHON=/usr/bin/python3
need_numpy

# A copy of the kernels, so the helper can be changed.
mkdir -p "$T/k/tests/kernels/python" "$T/k/tests/data/sweeps"
cp -r "$KF_SRC"/tests/kernels/python/{py_with_files.py,pyf_helper.py,pyf_scale.txt,pyf_pkg,py_missing_local.py} \
  "$T/k/tests/kernels/python/"
mkdir -p "$T/k/tests/kernels/python/pyf_pkg/__pycache__"
echo junk >"$T/k/tests/kernels/python/pyf_pkg/__pycache__/x.pyc"
cp "$KF_SRC/tests/data/sweeps/python_files.yaml" "$T/k/tests/data/sweeps/"
SWEEP="$T/k/tests/data/sweeps/python_files.yaml"

rc=0
"$KFLEET" run "$SWEEP" --agents 1 --format json -o "$T/r1.json" >"$T/run1.out" 2>"$T/run1.log" || rc=$?
[ $rc -eq 1 ] || fail "the sweep (one kernel failing on purpose) exited $rc, expected 1: $(tail -3 "$T/run1.log")"
python3 - "$T/r1.json" <<'PY' || fail "a kernel of several files did not run as it should"
import json, sys
d = json.load(open(sys.argv[1]))
rows = {r["kernel"]: r for r in d["rows"]}
v = rows["py_with_files"]["validation"]
assert v["state"] == "succeeded", v.get("error")
print("ok - py_with_files imported pyf_helper (reading pyf_scale.txt) and the package pyf_pkg/ "
      "(reading pyf_pkg/sub/offset.txt) on the node: validated")
e = rows["py_missing_local"]["validation"].get("error") or ""
want = "list it in the kernel's files = [\"pyf_helper.py\"] line so that it travels with it"
assert "No module named 'pyf_helper'" in e and want in e, e
print("ok - py_missing_local: " + e.splitlines()[0][:200])
PY
h1=$(python3 -c 'import json,sys; print([k["hash"] for k in json.load(open(sys.argv[1]))["sweep"]["kernels"] if k["name"] == "py_with_files"][0])' "$T/r1.json")

# The helper changes (the kernel file does not): a new kernel hash, and
# the node runs the new helper (scale 5 now; the kernel's reference reads
# it too, so it still validates).
echo 5.0 >"$T/k/tests/kernels/python/pyf_scale.txt"
rc=0
"$KFLEET" run "$SWEEP" --agents 1 --format json -o "$T/r2.json" >"$T/run2.out" 2>"$T/run2.log" || rc=$?
h2=$(python3 -c 'import json,sys; print([k["hash"] for k in json.load(open(sys.argv[1]))["sweep"]["kernels"] if k["name"] == "py_with_files"][0])' "$T/r2.json")
[ -n "$h1" ] && [ "$h1" != "$h2" ] || fail "a changed data file left the kernel's hash at $h1"
files=$(ls -t "$KFLEET_HOME"/state/agents/run-0/cache/*.files/pyf_scale.txt 2>/dev/null | head -1)
[ -n "$files" ] || fail "no kernel files directory in the agent's cache"
grep -qx 5.0 "$files" || fail "the node did not get the changed data file ($files: $(cat "$files"))"
pkg=$(dirname "$files")/pyf_pkg
[ -f "$pkg/__init__.py" ] && grep -qx 0.5 "$pkg/sub/offset.txt" && [ ! -e "$pkg/__pycache__" ] ||
  fail "the package directory did not arrive whole (or brought its __pycache__): $(find "$pkg" | head)"
pass "the kernel's files enter its hash (${h1:0:12} -> ${h2:0:12}) and reach the node"

# A files line naming a directory, or a missing file: refused at submit.
sed -i 's/^files = .*/files = ["sub\/pyf_helper.py"]/' "$T/k/tests/kernels/python/py_with_files.py"
rc=0
"$KFLEET" run "$SWEEP" --agents 1 >"$T/run3.out" 2>"$T/run3.log" || rc=$?
[ $rc -ne 0 ] || fail "a files line naming a directory was accepted"
grep -q "py_with_files.py:12: the files line names 'sub/pyf_helper.py', which is neither a file name" \
  "$T/run3.log" || fail "the refusal does not say file, line and why: $(cat "$T/run3.log")"
sed -i 's/^files = .*/files = ["pyf_gone.py"]/' "$T/k/tests/kernels/python/py_with_files.py"
rc=0
"$KFLEET" run "$SWEEP" --agents 1 >"$T/run4.out" 2>"$T/run4.log" || rc=$?
[ $rc -ne 0 ] && grep -q "py_with_files.py:12: file pyf_gone.py (files = \[...\]) is not a regular file" \
  "$T/run4.log" || fail "a missing file was not refused at submit: $(cat "$T/run4.log")"
pass "a files line naming a path into a directory or a missing file is refused with file and line"

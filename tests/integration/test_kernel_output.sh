#!/usr/bin/env bash
# A kernel's stdout and stderr are its own text (issue 41): a C kernel that
# printf()s on every run, one that writes 16 MiB of zero bytes, a Python
# kernel and a problem's candidate that print all pass, their output kept
# (bounded) and shown with their tasks; a kernel that writes on the
# runner's message channel is killed, said so, and not tried again.
source "$(dirname "$0")/lib.sh"

export KF_PYTHON=/usr/bin/python3
need_numpy

set +e
"$KFLEET" run "$KF_SRC/tests/data/sweeps/kernel_output.yaml" >"$T/run.out" 2>"$T/run.log"
rc=$?
set -e
[ $rc -eq 1 ] || fail "kfleet run of kernel_output.yaml should exit 1 (the forger fails), got $rc"
"$KFLEET" report --format json >"$T/r.json" || fail "report"
python3 - "$T/r.json" <<'PY' || fail "the kernels' output is not what they wrote"
import json, sys
rows = {w["kernel"]: w for w in json.load(open(sys.argv[1]))["rows"]}
for k in ("chatty", "flood", "py_chatty"):
    w = rows[k]
    assert w["validation"]["state"] == "succeeded", (k, w["validation"]["error"])
    assert w["profile"]["state"] == "succeeded", (k, w["profile"]["error"])
out = rows["chatty"]["validation"]["output"]
assert "chatty: setup of 4096 elements" in out["kept"] and "chatty: run 1," in out["kept"], out
assert out["bytes"] == len(out["kept"].encode()), out
prof = rows["chatty"]["profile"]["output"]
assert prof["bytes"] > 16384 and "bytes not kept]" in prof["kept"], prof["bytes"]
py = rows["py_chatty"]["profile"]["output"]["kept"]
assert "py_chatty: setup n=4096" in py and "py_chatty: run" in py, py[:200]
# 16 MiB of zero bytes a setup (2 seeds): every byte counted, 8 KiB kept.
fl = rows["flood"]["validation"]["output"]
assert fl["bytes"] == 2 * 16 * 1048576, fl["bytes"]
head, mark, tail = fl["kept"].partition("\n[kfleet: %d bytes not kept]\n" % (fl["bytes"] - 8192))
assert mark and head == "\\x00" * 4096 and tail == "\\x00" * 4096, (
    len(head), head.count("\\x00"), mark, len(tail), tail.count("\\x00"), fl["kept"][:80],
    fl["kept"][-80:])
v = rows["forger"]["validation"]
assert v["state"] == "failed" and v["attempt"] == 1, (v["state"], v["attempt"])
assert "kfleet killed the runner: its message channel carried a frame" in v["error"], v["error"]
assert "out-of-memory" not in v["error"], v["error"]
print("ok - chatty %d bytes, flood %d bytes (kept %d escapes), forger: %s" % (
    prof["bytes"], fl["bytes"], fl["kept"].count("\\x00"), v["error"][:60]))
PY
grep -q "kernel output (stdout and stderr):" "$T/run.out" || fail "no kernel output section in the text report"
grep -q "chatty: run 1, out" "$T/run.out" || fail "the text report lacks chatty's lines"
grep -q "forger.*kfleet killed the runner" "$T/run.out" || fail "the forger's failure is not named"
pass "printing kernels pass with their output shown; the channel's forger is killed, not retried"
# The flood cost the agents' logs nothing.
logs=$(find "$KFLEET_HOME" -name '*.log' -printf '%s\n' | awk '{s += $1} END {print s + 0}')
[ "$logs" -lt 1048576 ] || fail "the logs grew to $logs bytes with the kernels' output"
pass "the logs hold $logs bytes"

rm -rf "$KFLEET_HOME"
"$KFLEET" run "$KF_SRC/tests/data/sweeps/problem_print.yaml" >"$T/p.out" 2>"$T/p.log" ||
  fail "kfleet run of problem_print.yaml exited $?"
"$KFLEET" report --format json >"$T/p.json" || fail "report"
python3 - "$T/p.json" <<'PY' || fail "the printing candidate's output or verdict is wrong"
import json, sys
rows = {w["kernel"]: w for w in json.load(open(sys.argv[1]))["rows"]}
w = rows["cand_print"]
assert w["validation"]["state"] == "succeeded" and w["profile"]["state"] == "succeeded"
assert "cand_print: rows=64" in w["validation"]["output"]["kept"], w["validation"]["output"]
assert rows["numpy_naive"]["validation"]["output"] is None
print("ok - cand_print passed, %d bytes of output" % w["profile"]["output"]["bytes"])
PY
grep -q "cand_print: rows=64" "$T/p.out" || fail "the candidate's output is not in the text report"
pass "a printing candidate is judged as any other, its output shown"

# 3. A kernel forging the runner's samples (a well-formed frame on its
#    channel, one sample numbered 0 every run): killed, said so, no forged
#    time kept — in a validate (which takes no samples) and in a profile
#    alone (the second sample 0 is a duplicate).
#    The same in C and in Python (py_sample_forger.py).
rm -rf "$KFLEET_HOME"
for forger in sample_forger.c py_sample_forger.py; do
for tasks in "build, validate, profile" "build, profile"; do
  cat >"$T/forge.yaml" <<YAML
name: forge
kernels:
  - path: $KF_SRC/tests/kernels/output/$forger
    params: {n: [4K]}
tasks: [$tasks]
attempts: 3
measure: {min_samples: 10, min_time: 10ms, max_noise: 50, timeout: 1s}
YAML
  set +e
  "$KFLEET" run "$T/forge.yaml" >"$T/forge.out" 2>"$T/forge.log"
  rc=$?
  set -e
  [ $rc -eq 1 ] || fail "the sample forger's sweep ($forger, $tasks) should exit 1, got $rc"
  "$KFLEET" report --format json >"$T/f.json" || fail "report"
  python3 - "$T/f.json" "$tasks" <<'PY' || fail "the sample forger was not caught ($forger, $tasks)"
import json, sys
row = json.load(open(sys.argv[1]))["rows"][0]
t = row["validation"] if row["validation"] and row["validation"]["state"] == "failed" else row["profile"]
assert t["state"] == "failed" and t["attempt"] == 1, t
want = ("samples came from a task that takes none" if "validate" in sys.argv[2]
        else "sample number 0 came where 1 was due")
assert want in t["error"], t["error"]
p = row["profile"]
assert p is None or p["state"] in ("failed", "skipped") and not p.get("median_s"), p
print("ok -", row["kernel"], sys.argv[2], ":", t["error"][:100])
PY
done
done
pass "a kernel forging samples on the runner's channel (C and Python) is killed, no forged time kept"

# 3b. A kernel whose process outlives its runner's kill (setsid) and then
#     writes a well-formed Result saying the task succeeded on the channel:
#     the agent takes nothing from a runner it killed. Before, a Result
#     still in the pipe when the kill landed was taken as the task's (the
#     forger above passed its validate once in a loaded CI run).
rm -rf "$KFLEET_HOME"
mkdir -p "$T/late"
ver=$(sed -n 's/^#define KF_PROTOCOL_VERSION \([0-9]*\)$/\1/p' "$KF_SRC/common/wire.h")
[ -n "$ver" ] && [ "$ver" -lt 128 ] || fail "KF_PROTOCOL_VERSION is '$ver': late_forger.c writes it as one varint byte"
echo "#define LATE_VERSION $ver" >"$T/late/late_version.h"
cp "$KF_SRC/tests/kernels/output/late_forger.c" "$KF_SRC/tests/kernels/output/output_common.h" "$T/late/"
cat >"$T/late.yaml" <<YAML
name: late
kernels:
  - path: $T/late/late_forger.c
    params: {n: [4K]}
tasks: [build, validate, profile]
attempts: 3
time_limit: 30s
measure: {min_samples: 10, min_time: 10ms, max_noise: 50, timeout: 1s}
YAML
set +e
"$KFLEET" run "$T/late.yaml" >"$T/late.out" 2>"$T/late.log"
rc=$?
set -e
[ $rc -eq 1 ] || fail "the late forger's sweep should exit 1, got $rc"
"$KFLEET" report --format json >"$T/l.json" || fail "report"
python3 - "$T/l.json" <<'PY' || fail "a Result written after the runner's kill was taken"
import json, sys
row = json.load(open(sys.argv[1]))["rows"][0]
v = row["validation"]
assert v["state"] == "failed" and v["attempt"] == 1, (v["state"], v["attempt"], v["error"])
assert "its message channel carried a frame of 2147483647 bytes" in v["error"], v["error"]
assert not v.get("trials"), v
print("ok - late_forger:", v["error"][:80])
PY
grep -q "runner.killed" "$KFLEET_HOME"/run/agent-*.log || fail "no agent logged the kill"
pass "a Result written on a runner's channel after its kill is not taken"

# 4. Seeds stay secret: a candidate that spies the problem's setup and
#    prints the seeds, and a problem whose setup fails naming its seed.
rm -rf "$KFLEET_HOME"
set +e
"$KFLEET" run "$KF_SRC/tests/data/problems/leaky/sweep.yaml" >"$T/leaky.out" 2>"$T/leaky.log"
set -e
for f in json md; do "$KFLEET" report --format $f >"$T/leaky.$f" || fail "report $f"; done
python3 - "$T/leaky.json" <<'PY' || fail "a seed reached the report"
import json, re, sys
d = json.load(open(sys.argv[1]))
text = json.dumps(d)
assert "<secret seed>" in text, "nothing was scrubbed: " + text[:300]
for m in re.finditer(r"seed[^0-9a-f]{0,12}([0-9a-fA-F]{8,})", text):
    raise AssertionError("a seed in the report: ..." + text[max(0, m.start() - 80):m.end() + 20])
spy = [r for r in d["rows"] if r["kernel"] == "spy" and r["params"]["n"] == 1024][0]
assert spy["validation"]["state"] == "succeeded", spy["validation"]
assert "spy saw seed <secret seed>, hex <secret seed>" in spy["validation"]["output"]["kept"]
err = " ".join(f.get("error") or "" for f in d["failures"])
assert "cannot use seed <secret seed>" in err and "pool seed #0" in err, err
print("ok - scrubbed:", text.count("<secret seed>"), "times")
PY
grep -qE "seed [0-9]{8,}" "$T/leaky.md" "$T/leaky.out" && fail "a seed in the text reports"
pass "no seed in any report: spied and printed, or in the problem's own error"

#!/usr/bin/env bash
# Text a kernel controls is inert (issue 31 item 6) and errors are whole
# (issue 33 item 2). A Python kernel whose name, description and exception
# carry ESC/BEL/CR sequences, an OSC title, a C1 CSI, a bidi override,
# `<script>`, `</td>`, `|` and backticks: `kfleet run`'s terminal output, the
# text report, the Markdown report, the HTML report and the logs show it as
# text. A C kernel whose error holds a byte that is not UTF-8, a C1 CSI, a
# bidi override and DEL (issue 44): every output shows the byte as \xff and
# keeps the rest; the JSON escapes DEL, C1 and bidi controls. Beside it, a kernel raising in its own frames and one with a syntax
# error: the text report shows the frames, and the file, line, caret and
# message of the syntax error; a validation that raised shows no error
# figure it did not measure.
source "$(dirname "$0")/lib.sh"

export KF_PYTHON=/usr/bin/python3
need_numpy

rc=0
"$KFLEET" run "$KF_SRC/tests/data/sweeps/hostile_text.yaml" --agents 1 >"$T/run.out" 2>"$T/run.err" ||
  rc=$?
[ $rc -eq 1 ] || fail "a sweep of failing kernels exited $rc, expected 1: $(tail -3 "$T/run.err")"
"$KFLEET" report 1 >"$T/report.txt" || fail "kfleet report failed"
"$KFLEET" report 1 --format md >"$T/report.md" || fail "kfleet report --format md failed"
"$KFLEET" report 1 --format html -o "$T/report.html" || fail "kfleet report --format html failed"
"$KFLEET" report 1 --format json -o "$T/report.json" || fail "kfleet report --format json failed"

python3 - "$T" "$KFLEET_HOME/run" <<'PY' || fail "kernel-controlled text reached an output raw"
import glob, json, os, re, sys
T, run = sys.argv[1], sys.argv[2]
def read(p):
    return open(p, "rb").read()
# The JSON keeps the error as the kernel wrote it (JSON escapes it): the
# payload really went through the fleet.
d = json.load(open(os.path.join(T, "report.json")))
errs = [(r.get("validation") or {}).get("error") or "" for r in d["rows"]]
raw = [e for e in errs if "KFPAY" in e]
assert raw and "\x1b[2K" in raw[0] and "<script>" in raw[0], errs
print("ok - the JSON carries the kernel's error as it was raised (escapes included)")
# Issue 44: a C kernel's error that is not UTF-8 keeps its text, the odd
# byte written "\xff" (not replaced by "<not UTF-8>"), and the file holds
# no raw DEL, C1 or bidi control: JSON escapes (\u009B, \u202E) that read
# back as the characters the kernel wrote.
c = [e for e in errs if "KFBYTES" in e]
assert c and "KFBYTES \\xff not UTF-8 \u009b31m \u202eevil\x7f done" in c[0], errs
b = read(os.path.join(T, "report.json"))
bad = [ch for ch in ("\x7f", "\u009b", "\u202e") if ch.encode() in b]
assert not bad, f"raw controls {bad} in the JSON"
assert b"\\u009B" in b and b"\\u202E" in b and b"\\u007F" in b, "the JSON lost the controls"
print("ok - the JSON keeps a non-UTF-8 error's text (\\xff) and escapes DEL, C1 and bidi controls")

# Terminal outputs and logs: no control byte but newline (and the colour
# codes kfleet adds itself are not asked for: stdout is not a terminal).
outs = [os.path.join(T, f) for f in ("run.out", "run.err", "report.txt")]
logs = glob.glob(os.path.join(run, "*.log"))
assert logs, "no log in " + run
for p in outs + logs:
    b = read(p)
    bad = sorted({c for c in b if (c < 0x20 and c not in (0x0a,)) or c == 0x7f})
    assert not bad, f"{p}: control bytes {bad} in {b[:0] or ''}"
    t = b.decode("utf-8")
    assert "\u009b" not in t and "\u202e" not in t, f"{p}: a C1 control or bidi override"
txt = read(os.path.join(T, "report.txt")).decode()
assert "KFPAY" in txt and "\\x1b[2K" in txt and "\\x07" in txt, "the text report hides the error:\n" + txt
assert "\\u202e" in txt and "\\u009b" in txt, txt
assert "KFBYTES \\xff not UTF-8 \\u009b31m \\u202eevil\\x7f done" in txt, txt
print("ok - run's output, the text report and %d logs hold no control byte; escapes show as \\x1b" % len(logs))

# Markdown: outside code fences, no raw HTML from the kernel and every table
# row has as many cells as its header.
md = read(os.path.join(T, "report.md")).decode()
assert "\x1b" not in md and "\x07" not in md, "control bytes in the Markdown"
fence, rows_cells, header = None, [], None
for line in md.split("\n"):
    s = line.strip()
    m = re.match(r"^(`{3,})", s)
    if fence:
        if s == fence:
            fence = None
        continue
    if m:
        fence = m.group(1)
        continue
    assert "<script" not in line and "<img" not in line and "</td>" not in line, "raw HTML: " + line
    if line.startswith("|"):
        n = len(re.findall(r"(?<!\\)\|", line))
        if header is None or line.startswith("| kernel") or set(s) <= set("|-: "):
            header = n if line.startswith("| kernel") else header
        assert header is None or n == header, f"a row with {n} cell bars, header {header}: {line}"
    elif not line.strip():
        header = None
assert fence is None, "a code fence left open"
assert "KFPAY <script>" in md and "&lt;b&gt;" in md and "\\|" in md, "the Markdown hides the error"
assert "KFBYTES \\xff not UTF-8 \\u009b31m \\u202eevil\\x7f done" in md, "the Markdown hides bad_text"
print("ok - the Markdown has no raw kernel HTML, every table row keeps its cells, fences close")

html = read(os.path.join(T, "report.html")).decode()
assert "<script>alert" not in html and "<img src=x" not in html and "\x1b" not in html, "the HTML is not intact"
assert "&lt;script&gt;alert(" in html, "the HTML lost the error"
assert "FAIL 0.0e+00" not in html and "FAIL 1024 non-finite" in html, "the HTML shows an unmeasured error figure"
print("ok - the HTML report escapes the kernel's markup and control bytes")

# Errors whole (issue 33 item 2): the frame that raised, the syntax error's
# file, line, caret and message; a validation that raised shows no figure.
assert 'File "py_raises.py", line 16, in helper' in txt, txt
assert "RuntimeError: kernel gave up on call 2" in txt, txt
assert txt.count("SyntaxError: expected ':'") >= 3, "the validate failure lost the build's error"
assert 'File "py_syntax.py", line 7' in txt and re.search(r"^\s+\^$", txt, re.M) and \
    "SyntaxError: expected ':'" in txt, txt
builds = txt[txt.index("\nbuilds:"):txt.index("\nfailures:")]
assert re.search(r"py_syntax .*failed.*does not compile in Python [0-9.]+: SyntaxError: expected ':'", builds), builds
for line in txt.splitlines():
    if line.lstrip().startswith(("py_raises", "py_hostile")) and " cpu " in line:
        assert "max|err| 0.0e+00" not in line, "a figure that was not measured: " + line
        assert ("FAIL: error, nothing measured" if "hostile" in line else
                "FAIL 1024 non-finite or unwritten, 1 seed") in line, line
print("ok - the text report shows the raising frame, the syntax error with its caret and message, "
      "and no error figure for a kernel that raised")
PY
pass "text a kernel controls is inert in every output; errors are whole"

# kfleet compare shows a failing kernel's error (its first line) too.
"$KFLEET" compare 1 1 >"$T/compare.txt" 2>&1 || true
"$KFLEET" compare 1 1 --format md >"$T/compare.md" 2>&1 || true
python3 - "$T/compare.txt" "$T/compare.md" <<'PY' || fail "kfleet compare printed a kernel's text raw"
import sys
txt, md = (open(p, "rb").read() for p in sys.argv[1:3])
for name, b in (("table", txt), ("md", md)):
    bad = sorted({c for c in b if (c < 0x20 and c != 0x0a) or c == 0x7f})
    assert not bad, f"compare {name}: control bytes {bad}"
assert b"py_hostile_text" in txt and b"\\x1b[1A" in txt, txt.decode()
assert b"<script" not in md and b"\\x1b\\[1A" in md, md.decode()
print("ok - kfleet compare (table and md) shows the kernel's error inert")
PY

# What an agent reports is its own to write too: an interpreter path full
# of escapes reaches `kfleet status` (its "python: none (...)" line) inert.
start_serve
KF_PYTHON=$'/nonexistent/\e[2J\e[31mevil\a/python3' start_agent a1
wait_agents 1
"$KFLEET" status >"$T/status.txt" || fail "kfleet status failed"
python3 - "$T/status.txt" <<'PY' || fail "kfleet status printed an agent's control bytes"
import sys
b = open(sys.argv[1], "rb").read()
bad = sorted({c for c in b if (c < 0x20 and c != 0x0a) or c == 0x7f})
assert not bad, f"control bytes {bad} in kfleet status"
assert b"/nonexistent/\\x1b[2J\\x1b[31mevil\\x07/python3" in b, b.decode()
print("ok - kfleet status shows the agent's escapes as \\x1b text")
PY
pass "kfleet status: an agent's text is inert"

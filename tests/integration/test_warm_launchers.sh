#!/usr/bin/env bash
# The warm runner's Triton launchers (agent/runner/pywarm.py, warm.h): a
# runner forked from the warm interpreter records the signature it generates
# a launcher for, in its kernel's own cache; the warm interpreter, handed
# that cache, builds the launcher itself from the types, with the generator,
# and every runner forked after finds it built. What a kernel can write
# there is data the warm interpreter checks: a link (to a file or to the
# directory), a FIFO, an oversized file, a type that is not a type, a tuple:
# never built, and nothing waited on.
#
# The CI machine has no Triton: a stand-in package with Triton's two entry
# points (make_launcher, compile_module_from_src; their real use is measured
# on a GPU, docs/benchmarks.md) records who built what. The glue is the
# agent's own, concatenated as agent/runner/CMakeLists.txt does.
source "$(dirname "$0")/lib.sh"

R="$KF_SRC/agent/runner"
cat "$R/pyglue.py" "$R/pyformats.py" "$R/pylayout.py" "$R/pywarm.py" >"$T/glue.py"
mkdir -p "$T/site/triton/backends/nvidia" "$T/work" "$T/k/triton"
touch "$T/site/triton/__init__.py" "$T/site/triton/backends/__init__.py" \
  "$T/site/triton/backends/nvidia/__init__.py"
cat >"$T/site/triton/backends/nvidia/driver.py" <<'PY'
"""Stand-in for Triton's NVIDIA driver module: the launcher's source is a
function of the types as Triton's is (by table, pointers by their first
character); a build is counted, never compiled."""
import types

builds = []
include_dirs, libraries = [], []


def library_dirs():
    return []


def make_launcher(constants, signature, tensordesc_meta):
    table = {"constexpr": "O", "i32": "i", "i64": "L", "fp32": "f"}
    return "launcher:" + "".join("P" if t[0] == "*" else table[t] for t in signature.values())


def compile_module_from_src(src, name, library_dirs=None, include_dirs=None, libraries=None):
    builds.append(src)
    return types.SimpleNamespace(src=src, built_by="process")
PY

cat >"$T/check.py" <<'PY'
import json, os, socket, sys

T = sys.argv[1]
# The warm interpreter's stdin is its socket to the agent: a request waiting
# there stops a build before it starts.
agent, warm = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
os.dup2(warm.fileno(), 0)
sys.path.insert(0, os.path.join(T, "site"))
import triton  # noqa: F401,E402  (the stand-in)

g = {"__name__": "__main__"}
exec(compile(open(os.path.join(T, "glue.py")).read(), "glue.py", "exec"), g)
root = os.path.join(os.path.realpath(os.path.join(T, "work")), "")
got = g["_warm_triton_launchers"](root)
assert got == ["launchers"], got
drv = sys.modules["triton.backends.nvidia.driver"]
SIG = {0: "*fp32", 1: "*fp32", 2: "i32", 3: "i32", 4: "constexpr"}
K = os.path.join(T, "k")
rec = os.path.join(K, "triton", "kf-launchers")


def child(check):
    pid = os.fork()
    if pid == 0:
        rc = 1
        try:
            os.environ["TRITON_CACHE_DIR"] = os.path.join(K, "triton")
            rc = 0 if check() else 3
        except BaseException as e:  # noqa: BLE001
            print("child: %r" % e, flush=True)
        os._exit(rc)
    _, st = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(st)


def first():
    m = drv.compile_module_from_src(src=drv.make_launcher({}, SIG, None), name="__triton_launcher")
    return drv.builds == ["launcher:PPiiO"] and m.src == "launcher:PPiiO"


assert child(first) == 0, "the first runner did not build its own launcher"
files = os.listdir(rec)
assert len(files) == 1, files
assert json.load(open(os.path.join(rec, files[0]))) == list(SIG.values())
print("ok - a forked runner builds its launcher and records its signature %s" % files[0])

# What a kernel may leave there instead: none of it is built.
os.symlink("/etc/passwd", os.path.join(rec, "link.json"))
open(os.path.join(rec, "big.json"), "w").write(json.dumps(["i32"] * 3000))
open(os.path.join(rec, "text.json"), "w").write(json.dumps(['*fp32"; system("x")']))
open(os.path.join(rec, "tuple.json"), "w").write(json.dumps([["i32", "i32"]]))
open(os.path.join(rec, "empty.json"), "w").write("[]")
open(os.path.join(rec, "junk.json"), "w").write("{not json")
os.mkfifo(os.path.join(rec, "fifo.json"))  # a read of it would wait for a writer
# A signature reached through a link the kernel planted in its cache, for
# its recording directory or its Triton directory: not read.
ELSE = os.path.join(T, "elsewhere")
os.makedirs(os.path.join(ELSE, "kf-launchers"))
open(os.path.join(ELSE, "kf-launchers", "x.json"), "w").write(json.dumps(["*fp32", "i64"]))
os.makedirs(os.path.join(T, "k2", "triton"))
os.symlink(os.path.join(ELSE, "kf-launchers"), os.path.join(T, "k2", "triton", "kf-launchers"))
os.makedirs(os.path.join(T, "k3"))
os.symlink(ELSE, os.path.join(T, "k3", "triton"))
assert g["learn_launchers"](os.path.join(T, "k2")) == "0", "learn followed a planted link"
assert g["learn_launchers"](os.path.join(T, "k3")) == "0", "learn followed a planted link"
assert drv.builds == [], drv.builds
assert g["learn_launchers"](K) == "1", "learn did not build exactly the recorded launcher"
assert drv.builds == ["launcher:PPiiO"], drv.builds
assert g["learn_launchers"](K) == "0", "a launcher built twice"
assert g["learn_launchers"](os.path.join(T, "none")) == "0"
assert os.environ.get("TRITON_CACHE_DIR") is None, "learn left its cache dir in the environment"
print("ok - the warm interpreter builds the recorded signature once, and nothing a kernel planted")

for f in os.listdir(rec):
    os.unlink(os.path.join(rec, f))


def later():
    m = drv.compile_module_from_src(src=drv.make_launcher({}, SIG, None), name="__triton_launcher")
    other = drv.compile_module_from_src(src="helper", name="cuda_utils")
    return (len(drv.builds) == 2 and drv.builds[-1] == "helper" and m.src == "launcher:PPiiO"
            and other.src == "helper" and not os.listdir(rec))


assert child(later) == 0, "a runner forked after the learn built the launcher again"
print("ok - a runner forked after it finds the launcher built and records nothing")

# The agent's next request waiting: nothing built until it is taken.
open(os.path.join(rec, "s0.json"), "w").write(json.dumps(["*fp32", "i64"]))
agent.send(b"request")
assert g["learn_launchers"](K) == "0", "a build started while a request waited"
os.read(0, 64)
assert g["learn_launchers"](K) == "1" and len(drv.builds) == 2, drv.builds
print("ok - no build starts while the agent's next request waits")

# Over its life the warm interpreter builds a bounded number: past it, a
# new signature is left to the runners.
g["_LEARN_TOTAL"] = 3
for n, sig in enumerate((["*fp32", "i64", "i64"], ["i64"] * 4, ["i64"] * 5)):
    open(os.path.join(rec, "t%d.json" % n), "w").write(json.dumps(sig))
assert g["learn_launchers"](K) == "1", "the life's bound was not kept"
assert g["learn_launchers"](K) == "0" and len(drv.builds) == 3, drv.builds
print("ok - at most _LEARN_TOTAL launchers over the warm interpreter's life")
PY
python3 "$T/check.py" "$T" || fail "the warm interpreter's launchers (above)"
pass "test_warm_launchers"

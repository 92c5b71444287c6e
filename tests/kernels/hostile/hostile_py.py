"""The Python twin of hostile.c: a numpy kernel that is right, and whose
setup() tries each access a kernel must not have; those that work fail it
("GOT: ..."). The paths are filled in by tests/integration/test_sandbox.sh
(the @NAME@ lines). Nothing is written: a file opened for writing is closed
at once."""
import os
import socket

import numpy as np

AGENT_KEY = "@AGENT_KEY@"
COORD_KEY = "@COORD_KEY@"
ALLOW = "@ALLOW@"
STORE = "@STORE@"
VICTIM = "@VICTIM@"
CACHE = "@CACHE@"
ESCAPE = "@ESCAPE@"
CUBINS = "@CUBINS@"
PORT = int("@PORT@")
CONTROL = "@CONTROL@"

device = "cpu"
tol_abs = 1e-6
tol_rel = 1e-6
deterministic = True


def _opens(path, flags):
    try:
        os.close(os.open(path, flags, 0o600))
        return True
    except OSError:
        return False


def _connects():
    try:
        with socket.create_connection(("127.0.0.1", PORT), timeout=2):
            return True
    except OSError:
        return False


def _connects_control():
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect(CONTROL)
            return True
    except OSError:
        return False


def _signals():
    try:
        os.kill(os.getppid(), 0)
        return True
    except OSError:
        return False


def _attack():
    tries = [
        (_opens(AGENT_KEY, os.O_RDONLY), "read agent.key"),
        (_opens(COORD_KEY, os.O_RDONLY), "read coordinator.key"),
        (_opens(ALLOW, os.O_WRONLY | os.O_APPEND), "append agents.allow"),
        (_opens(STORE, os.O_RDWR), "write the store"),
        (_opens(VICTIM, os.O_WRONLY), "overwrite another kernel's .so"),
        (_opens(CACHE + "/planted-py.py", os.O_WRONLY | os.O_CREAT), "plant a .py in the cache"),
        (_opens(ESCAPE + "-py", os.O_WRONLY | os.O_CREAT), "write outside its scratch dir"),
        # The runners' compiled timing kernels (runner/cubins.h).
        (_opens(CUBINS, os.O_WRONLY | os.O_CREAT), "plant the harness's compiled modules"),
        ("KFLEET_HOME" in os.environ, "see KFLEET_HOME"),
        ("KF_RUNNER_SPAWN_NS" in os.environ, "see the agent's runner stamp"),
        (os.geteuid() == 0 and _opens("/etc/shadow", os.O_RDONLY), "read /etc/shadow"),
        (_signals(), "signal the agent"),
        (_connects(), "connect to 127.0.0.1"),
        (_connects_control(), "connect to the control socket"),
    ]
    got = [what for ok, what in tries if ok]
    if got:
        raise RuntimeError("GOT: " + "; ".join(got))


def setup(params, seed):
    if not _opens("/proc/thread-self/comm", os.O_WRONLY):
        raise RuntimeError("NEED: write its own /proc entry, as cuInit does")
    _attack()
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(1024).astype(np.float32)
    return {"x": x, "out": np.empty(1024, dtype=np.float32)}


def run(s):
    np.multiply(s["x"], np.float32(2.0), out=s["out"])


def output(s):
    return s["out"]


def reference(s):
    return 2.0 * s["x"].astype(np.float64)


def bytes(params):
    return 8.0 * 1024

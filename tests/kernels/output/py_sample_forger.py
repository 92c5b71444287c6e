"""sample_forger.c in Python (issue 43): a right numpy kernel that, on
every run, writes on the runner's message channel (descriptor 4,
runner/channel.h) a well-formed frame of one sample numbered 0 that took
1 ns. The agent keeps each task's sample numbers in order: it is killed,
saying so, and no forged time is kept."""
import os
import struct

import numpy as np

device = "cpu"
tol_abs = 1e-5
tol_rel = 1e-6

# Envelope {version 1, samples {samples [{seq 0, seconds 1e-9}]}} in
# protobuf's wire format, after its u32 little-endian length.
_SAMPLE = b"\x08\x00\x11" + struct.pack("<d", 1e-9)
_ENV = b"\x08\x01\x7a\x0d\x1a\x0b" + _SAMPLE
_FRAME = struct.pack("<I", len(_ENV)) + _ENV


def setup(params, seed):
    rng = np.random.default_rng(seed)
    n = params["n"]
    return {"x": rng.standard_normal(n, dtype=np.float32), "out": np.empty(n, dtype=np.float32)}


def run(s):
    np.multiply(s["x"], 3.0, out=s["out"])
    os.write(4, _FRAME)


def output(s):
    return s["out"]


def reference(s):
    return 3.0 * s["x"].astype(np.float64)

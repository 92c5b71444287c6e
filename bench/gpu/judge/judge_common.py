"""What bench/gpu/judge's Triton candidates share (each brings it with
`files = [...]`): the launch of examples/problems/softmax's Triton row
softmax (its triton_softmax.py, copied beside them by run.sh); the probe
that goes for the judge (as tests/data/problems/ahead/reach.py); a forged
sample frame (as tests/kernels/output/py_sample_forger.py)."""
import ctypes
import os
import socket
import stat
import struct
import sys

import triton

# The kernel of examples/problems/softmax (run.sh copies it beside these).
from triton_softmax import softmax_kernel

_done = []


def _reach():
    libc = ctypes.CDLL(None, use_errno=True)
    me = os.getpid()
    own = set(int(t) for t in os.listdir("/proc/self/task"))
    got = []
    try:  # every pid a process here could have: up to the kernel's pid_max
        with open("/proc/sys/kernel/pid_max") as f:
            top = int(f.read())
    except (OSError, ValueError):
        top = 1 << 22
    for pid in range(1, top):
        if pid == me or pid in own:
            continue
        try:
            os.kill(pid, 0)
        except OSError:
            continue
        got.append("can signal %d" % pid)
        if libc.ptrace(0x4206, pid, None, None) == 0:  # PTRACE_SEIZE
            got.append("attached to %d" % pid)
            libc.ptrace(17, pid, None, None)  # PTRACE_DETACH
        try:
            os.close(os.open("/proc/%d/mem" % pid, os.O_RDONLY))
            got.append("opened the memory of %d" % pid)
        except OSError:
            pass
    asked = False
    for fd in range(3, 1024):
        if asked:
            break
        try:
            if not stat.S_ISSOCK(os.fstat(fd).st_mode):
                continue
            s = socket.socket(fileno=os.dup(fd))
        except OSError:
            continue
        with s:  # closes the duplicate only
            try:
                if s.getsockopt(socket.SOL_SOCKET, socket.SO_TYPE) != socket.SOCK_SEQPACKET:
                    continue
                # The checker's spot check: type 3, reference 0, one element,
                # at position 0, guessed -1.0 (no product of these
                # inputs, no ReLU, is negative).
                s.settimeout(5)
                s.send(struct.pack("=IIIIQQQd", 3, 0, 0, 1, 0, 0, 0, -1.0))
                passed, bad = struct.unpack("=ii", s.recv(8))
                asked = True
                print("reach: socket %d answered passed=%d bad=%d" % (fd, passed, bad))
            except OSError:
                pass
    print("reach: " + ("; ".join(got[:20]) if got else "reached no process"))
    sys.stdout.flush()
    return got


def launch(s):
    x, out = s["x"], s["out"]
    block = triton.next_power_of_2(x.shape[1])
    softmax_kernel[(x.shape[0],)](out, x, x.stride(0), out.stride(0), x.shape[1],
                                  BLOCK=block, num_warps=4 if block <= 2048 else 8)


# Envelope {version 1, samples {samples [{seq 0, seconds 1e-9}]}} in
# protobuf's wire format, after its u32 little-endian length.
_SAMPLE = b"\x08\x00\x11" + struct.pack("<d", 1e-9)
_ENV = b"\x08\x01\x7a\x0d\x1a\x0b" + _SAMPLE
FRAME = struct.pack("<I", len(_ENV)) + _ENV

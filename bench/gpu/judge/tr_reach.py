"""Triton's softmax candidate (examples/problems/softmax) that goes for its
judge before the work (issue 43 item 1), as tests/data/problems/ahead/reach.py
does for numpy: every other process signalled, attached to and its memory
opened; the checker asked a spot check of its own, guessing -1.0 (no
softmax value). Reaching a process, it writes zeros; its own question's
FAIL fails it, though it then computes the right softmax."""
import ctypes
import os
import socket
import stat
import struct
import sys

import torch
import triton
import triton.language as tl

device = "cuda"


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


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(in_ptr + row * in_stride + offs, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    den = tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_stride + offs, num / den, mask=mask)


def _launch(s):
    x, out = s["x"], s["out"]
    block = triton.next_power_of_2(x.shape[1])
    softmax_kernel[(x.shape[0],)](out, x, x.stride(0), out.stride(0), x.shape[1],
                                  BLOCK=block, num_warps=4 if block <= 2048 else 8)


def prepare(s):
    if not _done:
        _done.append(_reach())


def run(s):
    if _done and _done[0]:
        s["out"].zero_()
    else:
        _launch(s)

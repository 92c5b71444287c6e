"""A candidate that goes for its judge (issue 43 item 1) before the work:
every other process it can name by pid is asked to take a signal, to be
attached (ptrace) and to have its memory opened; on every SOCK_SEQPACKET
socket it holds (its runner's to the checker) it asks a spot check of its
own, guessing an element (an oracle's first question); on every stream
socket (its task socket) it writes a frame back. Reaching a process,
it returns zeros. The checker answers its question PASS or FAIL and fails
the task on the FAIL: it fails, though it computes the right product."""
import ctypes
import os
import socket
import stat
import struct
import sys

import numpy as np

_done = []


def _held_sockets():
    """(fd, a socket on a duplicate of it) for each socket this process
    holds; the caller closes the duplicate."""
    for fd in range(3, 1024):
        try:
            if not stat.S_ISSOCK(os.fstat(fd).st_mode):
                continue
            yield fd, socket.socket(fileno=os.dup(fd))
        except OSError:
            continue


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
    for fd, s in _held_sockets():
        if asked:
            s.close()
            break
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
    # Its task socket (a serving runner's, runner/channel.h) is one way: a
    # frame of its own written back to the agent is refused.
    wrote = streams = 0
    for fd, s in _held_sockets():
        with s:
            try:
                if s.getsockopt(socket.SOL_SOCKET, socket.SO_TYPE) != socket.SOCK_STREAM:
                    continue
                streams += 1
                s.send(struct.pack("<I", 4) + b"fake", socket.MSG_DONTWAIT)
                wrote += 1
            except OSError:
                pass
    print("reach: wrote on %d of %d stream sockets" % (wrote, streams))
    print("reach: " + ("; ".join(got[:20]) if got else "reached no process"))
    sys.stdout.flush()
    return got


def prepare(s):
    if not _done:
        _done.append(_reach())


def run(s):
    if _done and _done[0]:
        s["out"][...] = 0
    else:
        np.matmul(s["a"], s["b"], out=s["out"])

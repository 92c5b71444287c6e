#!/usr/bin/env python3
"""bench/gpu/triton_first_call.py — where a Triton kernel's first call goes in
a process forked from a warm interpreter (issue 45: agent/warms.c forks each
candidate's runner from one that imported torch and Triton), its compile
already in the cache (the validate's, agent/kcache.h). Children forked
before and after the parent warms what it can without a CUDA context;
each prints its CUDA context, first call and second call; one child runs
its first call under cProfile and prints the top functions."""
import cProfile
import io
import json
import os
import pstats
import sys
import tempfile
import time

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_k(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    o = tl.arange(0, BLOCK)
    m = o < cols
    x = tl.load(x_ptr + row * cols + o, mask=m, other=-float("inf"))
    e = tl.exp(x - tl.max(x, 0))
    tl.store(y_ptr + row * cols + o, e / tl.sum(e, 0), mask=m)


def call(x, y):
    softmax_k[(x.shape[0],)](x, y, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))


def child(cache, tag, prof):
    os.environ["TRITON_CACHE_DIR"] = cache
    t0 = time.perf_counter()
    torch.cuda.init()
    x = torch.randn(512, 1024, device="cuda")
    y = torch.empty_like(x)
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    p = cProfile.Profile() if prof else None
    if p:
        p.enable()
    call(x, y)
    torch.cuda.synchronize()
    if p:
        p.disable()
    t2 = time.perf_counter()
    call(x, y)
    torch.cuda.synchronize()
    t3 = time.perf_counter()
    print(json.dumps({"tag": tag, "ctx_s": round(t1 - t0, 4), "first_s": round(t2 - t1, 4),
                      "second_s": round(t3 - t2, 6)}), flush=True)
    if p:
        s = io.StringIO()
        pstats.Stats(p, stream=s).sort_stats("cumulative").print_stats(25)
        print(s.getvalue()[-6000:], flush=True)


def fork(cache, tag, prof=False):
    pid = os.fork()
    if pid == 0:
        rc = 0
        try:
            child(cache, tag, prof)
        except BaseException as e:  # noqa: BLE001
            print("child %s failed: %r" % (tag, e), flush=True)
            rc = 1
        os._exit(rc)
    os.waitpid(pid, 0)


def main():
    cache = tempfile.mkdtemp(prefix="tfc-")
    fork(cache, "compile")  # the validate: compiles into the cache
    for i in range(3):
        fork(cache, "cold-%d" % i, prof=(i == 0))
    # What the warm interpreter does ahead (agent/runner/pyglue.py
    # _warm_triton), without a CUDA context.
    t0 = time.perf_counter()
    from triton.runtime import cache as tcache
    tcache.triton_key()
    t1 = time.perf_counter()
    import triton.experimental.gluon  # noqa: F401
    t2 = time.perf_counter()
    print(json.dumps({"parent_triton_key_s": round(t1 - t0, 4), "parent_gluon_s": round(t2 - t1, 4),
                      "cuda_initialized": torch.cuda.is_initialized()}), flush=True)
    for i in range(3):
        fork(cache, "warm-%d" % i, prof=(i == 0))
    import inspect
    from triton.backends.nvidia import driver as nvd
    from triton.runtime import build as tbuild
    print(inspect.getsource(nvd.CudaUtils), flush=True)
    print(inspect.getsource(nvd.CudaLauncher.__init__), flush=True)
    print(inspect.getsource(tbuild.compile_module_from_src), flush=True)
    fork(tempfile.mkdtemp(prefix="tfc-"), "compile-warm-before-utils")
    # Triton's own helper module, built once here into a cache of its own.
    t0 = time.perf_counter()
    own = tempfile.mkdtemp(prefix="tfc-own-")
    prev = os.environ.get("TRITON_CACHE_DIR")
    os.environ["TRITON_CACHE_DIR"] = own
    u = nvd.CudaUtils()
    if prev is None:
        del os.environ["TRITON_CACHE_DIR"]
    else:
        os.environ["TRITON_CACHE_DIR"] = prev
    nvd.CudaUtils.__init__ = lambda self: None
    print(json.dumps({"parent_cuda_utils_s": round(time.perf_counter() - t0, 4),
                      "cuda_initialized": torch.cuda.is_initialized(),
                      "has": hasattr(u, "load_binary")}), flush=True)
    fork(tempfile.mkdtemp(prefix="tfc-"), "compile-warm-utils", prof=True)
    # A validate after it, in a kernel's own empty cache: what its first
    # call compiles or builds, and the files it leaves.
    empty = tempfile.mkdtemp(prefix="tfc-")
    fork(empty, "compile-warm", prof=True)
    for root, _, files in os.walk(empty):
        for f in files:
            p = os.path.join(root, f)
            print("cache file %s %d" % (os.path.relpath(p, empty), os.path.getsize(p)), flush=True)


if __name__ == "__main__":
    sys.exit(main())

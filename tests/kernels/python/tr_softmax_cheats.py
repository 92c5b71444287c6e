"""tr_softmax_cheats — the Triton row softmax of examples/python/triton_softmax.py,
honest (mode 0) and in each way a generated kernel cheats a harness (issue 29),
for the GPU run (bench/gpu/cheats.yaml, bench/gpu/run.sh cheats). Params:
rows, cols, mode, every.

  mode 0  honest: the twin every other mode is judged against
  mode 1  sentinel memoize, on the device: each row is skipped when its first
          output element still holds what the kernel stored last for it
  mode 2  input identity: no launch when called on the inputs of its last
          call (a one-entry cache keyed on the tensor)
  mode 3  every Nth call (N = every): no launch on the others
  mode 4  side stream: launched on a non-blocking stream of its own
  mode 5  host thread: launched from a thread that run() starts and
          output() joins
  mode 6  zeros, with a reference of zeros

kfleet must time modes 1, 2, 4 and 5 doing the work (no faster than mode 0,
4 flagged outside-stream), fail 3 at its first skipped sample, and fail 6's
validation as vacuous."""
import threading

import torch
import triton
import triton.language as tl

device = "cuda"
tol_abs = 1e-6
tol_rel = 1e-5
deterministic = True

_last = {"x": None}
_calls = [0]


@triton.jit
def softmax_kernel(out_ptr, in_ptr, stash_ptr, in_stride, out_stride, n_cols,
                   BLOCK: tl.constexpr, SENTINEL: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    go = True
    if SENTINEL:
        # "this row's output is what I stored last": skip it
        go = tl.load(out_ptr + row * out_stride) != tl.load(stash_ptr + row)
    if go:
        x = tl.load(in_ptr + row * in_stride + offs, mask=mask, other=-float("inf"))
        x = x - tl.max(x, axis=0)
        num = tl.exp(x)
        y = num / tl.sum(num, axis=0)
        tl.store(out_ptr + row * out_stride + offs, y, mask=mask)
        if SENTINEL:
            tl.store(stash_ptr + row, tl.sum(tl.where(offs == 0, y, 0.0), axis=0))


def setup(params, seed):
    rows, cols = params["rows"], params["cols"]
    if cols > 16384:
        raise ValueError("cols = %d: this kernel holds a row in registers, at most 16384" % cols)
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(rows, cols, device="cuda", dtype=torch.float32, generator=g)
    block = triton.next_power_of_2(cols)
    return {"x": x, "out": torch.empty_like(x), "block": block,
            "warps": 4 if block <= 2048 else 8 if block <= 8192 else 16,
            "stash": torch.full((rows,), float("nan"), device="cuda"),
            "mode": params.get("mode", 0), "every": params.get("every", 3), "calls": 0,
            "side": torch.cuda.Stream() if params.get("mode", 0) == 4 else None,
            "thread": None}


def _launch(s):
    x, out = s["x"], s["out"]
    torch.cuda.set_device(x.device)  # a thread of the kernel's own: the context current there
    softmax_kernel[(x.shape[0],)](out, x, s["stash"], x.stride(0), out.stride(0), x.shape[1],
                                  BLOCK=s["block"], SENTINEL=s["mode"] == 1,
                                  num_warps=s["warps"])


def run(s):
    mode = s["mode"]
    s["calls"] += 1
    if mode == 2:
        if _last["x"] is s["x"] and s["calls"] > 2:
            return  # "the same inputs as last time: the output is there"
        _last["x"] = s["x"]
    elif mode == 3 and s["calls"] > 2:
        _calls[0] += 1
        if _calls[0] % s["every"] != 0:
            return  # "nobody checks this one"
    elif mode == 4:
        with torch.cuda.stream(s["side"]):  # waits for nothing, nothing waits for it
            _launch(s)
        return
    elif mode == 5:
        s["thread"] = threading.Thread(target=_launch, args=(s,))
        s["thread"].start()
        return
    elif mode == 6:
        s["out"].zero_()
        return
    _launch(s)


def output(s):
    if s["thread"] is not None:
        s["thread"].join()
        s["thread"] = None
    return s["out"]


def reference(s):
    if s["mode"] == 6:
        return torch.zeros(s["x"].shape, dtype=torch.float64)
    return torch.softmax(s["x"].double().cpu(), dim=-1)


def bytes(params):
    return 8.0 * params["rows"] * params["cols"]


def flops(params):
    return 5.0 * params["rows"] * params["cols"]


# ---- pyformats: the problems people already have, as they are (issue 42) ----
#
# Appended to pyglue.py (agent/runner/CMakeLists.txt), in the same __main__.
# load() and load_candidate() hand every module they import to
# _adapt_problem() / _adapt_candidate(); a module in kfleet's own format
# (setup/output/reference, run) comes back unchanged, one in another format
# comes back as a module in kfleet's format that calls the file's own
# functions, so the harness, the checker and the seeds are the ones every
# problem gets (docs/problems.md, "KernelBench and GPU MODE as they are").
#
# KernelBench (ScalingIntelligence/KernelBench, conventions of commit
# 423217d9, src/kernelbench/eval.py): a problem file defines class Model,
# get_inputs() and get_init_inputs() and sizes as module-level integers; a
# candidate file defines class ModelNew (or is a problem file: its Model is
# the candidate). For one configuration (params: module-level sizes to
# override) and one secret seed of the pool:
#   - set_seed(42) (torch, its CUDA generators, numpy, random), then
#     get_init_inputs(); set_seed(42) again, then Model(*init) or
#     ModelNew(*init) under no_grad, .to(device, float32): the reference's
#     and the candidate's weights are the same draws, as eval.py makes them
#     (its seed_num, 42: one model for every trial, only the inputs vary).
#     Weights drawn from the secret seed failed every profile of a model
#     with weights: a timed sample's audit puts a pool seed's inputs in
#     place (fresh.h), but the candidate's model keeps the weights of the
#     seed its set started on, and rebuilding it at an audit would tell the
#     candidate which samples are judged;
#   - set_seed(seed ^ _KB_INPUT_SALT), then get_inputs() with the device
#     as torch's default device (drawn there; eval.py draws on the host and
#     moves them: the same distributions, other values, and the seeds are
#     secret), each floating tensor cast to float32 and every tensor moved
#     to the device (eval.py's _process_input_tensor casts every tensor; an
#     integer one, class indices, keeps its dtype here);
#   - the reference is Model's forward on them, computed by the reference
#     task (a process that loads only the problem); the candidate's forward
#     result is copied into the problem's output buffer (allocated once per
#     state from the candidate's first, untimed forward in prepare), so the
#     timed work is forward() plus one copy of its result, the same for
#     every candidate;
#   - tolerances: atol = rtol = 1e-4 (fp32), 1e-2 for a float16 or
#     bfloat16 output, as get_tolerance_for_precision; kfleet's relative L2
#     bound (0.5 where atol/rtol are stated) stays on top, so an output of
#     zeros fails where every reference value is under atol (softmax over
#     16 x 16384).
#
# GPU MODE (gpu-mode/reference-kernels, problems/pmpp_v2/eval.py): a
# problem is reference.py (generate_input(**args), ref_kernel(data),
# check_implementation(data, output)) with task.yml beside it; its tests
# then its benchmarks are the configurations, by index: params {case: i}.
# The case's seed is combined with the pool's secret seed as eval.py's
# _combine does with POPCORN_SEED. A candidate is a submission.py with
# custom_kernel(data). The reference is ref_kernel on the case's data (the
# reference task); the candidate's output is judged by kfleet's checker
# with check_implementation's tolerances when it is utils.py's
# make_match_reference(ref_kernel, rtol=, atol=) (match_reference's
# defaults otherwise); check_implementation itself runs in the reference
# task, on the reference, where only the problem is loaded.

_KB_INPUT_SALT = 0x9E3779B97F4A7C15
_KB_WEIGHT_SEED = 42  # eval.py's seed_num
_KB_TOL = {"float16": 1e-2, "bfloat16": 1e-2}  # every other dtype: 1e-4
_CASE = "case"


def _problem_format(mod):
    """kfleet, kernelbench or gpumode, from what the module defines."""
    if callable(getattr(mod, "setup", None)):
        return "kfleet"
    if all(callable(getattr(mod, n, None)) for n in ("Model", "get_inputs", "get_init_inputs")):
        return "kernelbench"
    if all(callable(getattr(mod, n, None))
           for n in ("generate_input", "ref_kernel", "check_implementation")):
        return "gpumode"
    return "kfleet"


def _seed_all(seed):
    import random

    import torch

    torch.manual_seed(seed)
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.manual_seed_all(seed)
    random.seed(seed)
    np = sys.modules.get("numpy")
    if np is not None:
        np.random.seed(seed % (1 << 32))


def _out_like(r, what):
    """The output buffer for a result r: its shape, on its device, in a
    dtype the harness compares (an int64 or bool result in float64, exact
    to 2**53)."""
    import torch

    if not isinstance(r, torch.Tensor):
        raise TypeError("%s returned a %s; kfleet compares one tensor (a tuple or a list of "
                        "outputs is not supported yet)" % (what, type(r).__name__))
    dt = r.dtype if str(r.dtype).replace("torch.", "") in _DTYPES else torch.float64
    return torch.empty(r.shape, dtype=dt, device=r.device)


def _as_output(r, what):
    """r itself as the reference task's output when the harness can read
    it (a contiguous tensor of a dtype it compares), else a copy that it
    can: a large reference is not held twice."""
    if str(getattr(r, "dtype", "")).replace("torch.", "") in _DTYPES and r.is_contiguous():
        return r
    out = _out_like(r, what)
    out.copy_(r)
    return out


class _Adapted(types.ModuleType):
    """What both formats' problems share: the output buffer a state holds
    (the reference task's own result, or the one the candidate's prepare
    allocated) and the reference the reference task computed."""

    def output(self, s):
        if s["out"] is None:
            raise RuntimeError("the candidate made no output (its prepare did not run)")
        return s["out"]

    def reference(self, s):
        return s["ref"]


class _KernelBenchProblem(_Adapted):
    """A KernelBench problem file seen as a kfleet problem."""

    def __init__(self, kb, cuda):
        types.ModuleType.__init__(self, kb.__name__ + "_kfleet")
        self.kb = kb
        self.device = "cuda" if cuda else "cpu"
        self.atol = 1e-4
        self.rtol = 1e-4
        self.kf_format = "kernelbench"
        self.__doc__ = (kb.Model.__doc__ or kb.__doc__ or "").strip()
        self.sizes = sorted(k for k, v in vars(kb).items()
                            if isinstance(v, int) and not isinstance(v, bool)
                            and not k.startswith("_"))

    def tolerances(self, params, dtype):
        t = _KB_TOL.get(dtype, 1e-4)
        return {"atol": t, "rtol": t}

    def _dev(self, x):
        import torch

        if not isinstance(x, torch.Tensor):
            return x
        if x.is_floating_point():
            x = x.to(dtype=torch.float32)
        return x.to(device=self.device)

    def _draw(self):
        """get_inputs() with the device as torch's default device: drawn
        there (a level's inputs are up to gigabytes: drawn on the host, as
        eval.py does before moving them, they cost seconds a state, and a
        timed sample's fresh inputs are a state), with the same seeded
        generator in every process, so the reference task and each
        candidate's runner draw the same values. A get_inputs() that cannot
        run there (it calls something host-only) is run on the host."""
        import torch

        if self.device == "cpu":
            return self.kb.get_inputs()
        try:
            with torch.device(self.device):
                return self.kb.get_inputs()
        except Exception:
            return self.kb.get_inputs()

    def setup(self, params, seed):
        import torch

        for k, v in params.items():
            if k not in self.sizes:
                raise ValueError("params names %s, which is not a module-level integer of the "
                                 "KernelBench problem; its sizes are %s"
                                 % (k, ", ".join(self.sizes) or "none"))
            setattr(self.kb, k, v)
        _seed_all(_KB_WEIGHT_SEED)
        init = [self._dev(x) for x in self.kb.get_init_inputs()]
        _seed_all(seed ^ _KB_INPUT_SALT)
        inputs = [self._dev(x) for x in self._draw()]
        # init is held, not listed: it is the same for every seed, and what
        # fresh inputs renew (the state's lists of arrays) is the inputs.
        s = {"inputs": inputs, "init": types.SimpleNamespace(args=init),
             "wseed": _KB_WEIGHT_SEED, "device": self.device, "out": None}
        if _cand is None:  # the reference task: only the problem is in this process
            model = _kb_model(self.kb.Model, s)
            why = _kb_random(model)
            if why:
                raise _ProblemRefused(
                    "its Model is random: %s draws new random numbers at every forward "
                    "(nn.Module's training mode, as KernelBench builds it), so a candidate "
                    "could meet its reference only by chance, and KernelBench's own eval.py "
                    "draws Model's and ModelNew's from different generator states too; "
                    "kfleet does not judge a random problem: set that probability to 0 or "
                    "call .eval() in a copy of the file" % why)
            with torch.no_grad():
                r = model(*inputs)
            s["ref"] = s["out"] = _as_output(r, "Model.forward()")
        return s


    def inputs(self, s):
        import torch

        return [x for x in s["inputs"] if isinstance(x, torch.Tensor)]


class _ProblemRefused(Exception):
    """A problem that cannot judge any candidate: what the reference task
    says instead of a traceback."""


def _kb_random(model):
    """Where a KernelBench Model draws random numbers in training mode (the
    mode its constructor leaves it in): the first module found, named as
    its attribute path, else None. What its forward draws itself
    (torch.rand, F.dropout) is not seen here."""
    import torch.nn as nn

    for name, m in model.named_modules():
        if not m.training:
            continue
        where = "Model.%s" % name if name else "Model"
        if isinstance(m, nn.modules.dropout._DropoutNd) and m.p > 0:
            return "%s (%s, p=%g)" % (where, type(m).__name__, m.p)
        if isinstance(m, nn.RReLU) and m.lower != m.upper:
            return "%s (RReLU, slopes %g..%g)" % (where, m.lower, m.upper)
        if isinstance(m, nn.RNNBase) and m.dropout > 0 and m.num_layers > 1:
            return "%s (%s, dropout=%g)" % (where, type(m).__name__, m.dropout)
        if isinstance(m, nn.MultiheadAttention) and m.dropout > 0:
            return "%s (MultiheadAttention, dropout=%g)" % (where, m.dropout)
    return None


def _kb_model(cls, s):
    """cls(*init) with the state's weight seed, as eval.py builds Model and
    ModelNew: set_seed, then the constructor under no_grad, then .to()."""
    import torch

    _seed_all(s["wseed"])
    with torch.no_grad():
        m = cls(*s["init"].args)
    return m.to(device=s["device"], dtype=torch.float32)


class _KernelBenchCandidate(types.ModuleType):
    """A KernelBench ModelNew (or Model) file seen as a kfleet candidate."""

    def __init__(self, mod, cls):
        types.ModuleType.__init__(self, mod.__name__ + "_kfleet")
        self.mod = mod
        self.cls = cls
        self.device = getattr(mod, "device", None)
        self.models = {}

    def prepare(self, s):
        import torch

        m = _kb_model(self.cls, s)
        with torch.no_grad():
            r = m(*s["inputs"])
        s["out"] = _out_like(r, "%s.forward()" % self.cls.__name__)
        s["model"] = m

    def run(self, s):
        import torch

        with torch.no_grad():
            s["out"].copy_(s["model"](*s["inputs"]))


def _flow_cases(text):
    """tests then benchmarks of a task.yml without PyYAML: GPU MODE writes
    each case as a flow mapping on a line of its own, `- {"size": 127,
    "seed": 4242}`, which is a Python literal once keys are quoted."""
    import ast
    import re

    cases = {"tests": [], "benchmarks": []}
    part = None
    for line in text.splitlines():
        m = re.match(r"^([A-Za-z_]+):", line)
        if m:
            part = m.group(1) if m.group(1) in cases else None
            continue
        item = line.strip()
        if part and item.startswith("- {"):
            item = re.sub(r'([{,]\s*)([A-Za-z_]\w*)\s*:', r'\1"\2":', item[2:])
            cases[part].append(ast.literal_eval(item))
    return cases["tests"] + cases["benchmarks"]


def _task_cases(mod):
    """task.yml's tests then benchmarks, beside the problem (or in its
    files): a list of argument dicts, in the order the sweep parser
    numbered them (coordinator/core/sweep_formats.c)."""
    here = getattr(mod, "KF_FILES_DIR", "") or os.path.dirname(mod.__file__)
    for d in (here, os.path.dirname(mod.__file__)):
        path = os.path.join(d, "task.yml")
        if os.path.exists(path):
            with open(path) as f:
                text = f.read()
            try:
                import yaml
            except ImportError:
                return _flow_cases(text)
            task = yaml.safe_load(text) or {}
            return [dict(c) for c in (task.get("tests") or []) + (task.get("benchmarks") or [])]
    raise FileNotFoundError("a GPU MODE problem needs task.yml beside reference.py")


def _clone(data):
    import torch

    if isinstance(data, tuple):
        return tuple(_clone(x) for x in data)
    if isinstance(data, list):
        return [_clone(x) for x in data]
    if isinstance(data, dict):
        return {k: _clone(v) for k, v in data.items()}
    if isinstance(data, torch.Tensor):
        return data.clone()
    return data


def _gm_tolerances(check):
    """(rtol, atol) of check_implementation when it is GPU MODE's
    make_match_reference(reference, **kwargs); None for another check."""
    code = getattr(check, "__code__", None)
    if code is None:
        return None
    cells = dict(zip(code.co_freevars, (c.cell_contents for c in (check.__closure__ or ()))))
    if "reference" not in cells or "kwargs" not in cells:
        return None
    kw = cells["kwargs"]
    return float(kw.get("rtol", 1e-05)), float(kw.get("atol", 1e-08))


class _GpuModeProblem(_Adapted):
    """A GPU MODE reference.py (+ task.yml) seen as a kfleet problem."""

    def __init__(self, gm, cuda):
        types.ModuleType.__init__(self, gm.__name__ + "_kfleet")
        self.gm = gm
        self.device = "cuda" if cuda else "cpu"
        self.kf_format = "gpumode"
        self.__doc__ = (gm.__doc__ or "GPU MODE problem").strip()
        self.cases = _task_cases(gm)
        tol = _gm_tolerances(gm.check_implementation)
        if tol is None:
            raise TypeError("check_implementation is not make_match_reference(ref_kernel, ...); "
                            "kfleet judges a GPU MODE problem by the tolerances that call "
                            "states, in a process the candidate cannot reach, and does not yet "
                            "run another check_implementation there")
        self.rtol, self.atol = tol

    def setup(self, params, seed):
        if set(params) - {_CASE}:
            raise ValueError("params names %s; a GPU MODE problem's only axis is case, the "
                             "index of a test (then a benchmark) of task.yml"
                             % ", ".join(sorted(set(params) - {_CASE})))
        i = params.get(_CASE, 0)
        if not 0 <= i < len(self.cases):
            raise ValueError("case %d: task.yml has %d tests and benchmarks" % (i, len(self.cases)))
        args = dict(self.cases[i])
        if "seed" in args:  # eval.py's _combine(test seed, POPCORN_SEED)
            a, b = int(args["seed"]), seed % (1 << 31)
            args["seed"] = a + (a + b) * (a + b + 1) // 2
        data = self.gm.generate_input(**args)
        s = {"data": data, "out": None}
        if _cand is None:  # the reference task: only the problem is in this process
            r = self.gm.ref_kernel(_clone(data))
            ok = self.gm.check_implementation(_clone(data), r)
            good, msg = ok if isinstance(ok, tuple) else (not ok, ok)
            if not good:
                raise AssertionError("check_implementation fails the problem's own ref_kernel "
                                     "output: %s" % msg)
            s["ref"] = s["out"] = _as_output(r, "ref_kernel()")
        return s



class _GpuModeCandidate(types.ModuleType):
    """A GPU MODE submission.py (custom_kernel(data)) seen as a kfleet
    candidate: the first call, untimed, sizes the output; each run calls
    custom_kernel on the state's data and copies its result into it."""

    def __init__(self, mod):
        types.ModuleType.__init__(self, mod.__name__ + "_kfleet")
        self.mod = mod

    def prepare(self, s):
        r = self.mod.custom_kernel(_clone(s["data"]))
        s["out"] = _out_like(r, "custom_kernel()")

    def run(self, s):
        s["out"].copy_(self.mod.custom_kernel(s["data"]))


def _adapt_problem(mod, want_cuda):
    """mod, or mod in kfleet's problem format."""
    fmt = _problem_format(mod)
    if fmt == "kernelbench":
        return _KernelBenchProblem(mod, want_cuda)
    if fmt == "gpumode":
        return _GpuModeProblem(mod, want_cuda)
    return mod


def _adapt_candidate(mod):
    """mod, or mod in kfleet's candidate format, for the loaded problem's
    format."""
    fmt = getattr(_mod, "kf_format", "kfleet")
    if fmt == "kernelbench" and not callable(getattr(mod, "run", None)):
        cls = getattr(mod, "ModelNew", None) or getattr(mod, "Model", None)
        if cls is None:
            raise TypeError("a KernelBench candidate defines class ModelNew (or is a problem "
                            "file, whose Model is the candidate)")
        return _KernelBenchCandidate(mod, cls)
    if fmt == "gpumode" and not callable(getattr(mod, "run", None)):
        if not callable(getattr(mod, "custom_kernel", None)):
            raise TypeError("a GPU MODE candidate defines custom_kernel(data)")
        return _GpuModeCandidate(mod)
    return mod

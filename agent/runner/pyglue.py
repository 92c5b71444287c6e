# kfleet's side of a Python kernel, run in the runner's embedded interpreter
# (pykernel.c). The C harness drives the kernel through these functions, so
# seeds, poisoning, the determinism check, timing and statistics are the
# ones C kernels get. Each function returns a str: a payload on success, or
# "E" and the message (with the traceback of the kernel's exception) on
# failure; nothing raises into C.
import ctypes
import os
import sys
import traceback
import types

_mod = None
# A candidate task (docs/problems.md): _mod is the problem (setup, output,
# inputs, tolerances, bytes, flops) and _cand the candidate (run, prepare).
_cand = None
_alias = ["", "", ""]  # the cached file's path, the user's file name, the files dir + "/"
_states = {}
_next = [1]
_shapes = {}  # handle -> shape of the last output()
_params_of = {}  # handle -> its configuration's text, for refresh()
_tol = {}  # the kernel's module-level tol_abs, tol_rel, atol, rtol (load)

# Element types the harness compares, by kf_dtype code (kf_kernel.h).
_DTYPES = {"float32": 0, "float64": 1, "float16": 2, "bfloat16": 3, "int32": 4}
_TYPESTR = {"f4": "float32", "f8": "float64", "f2": "float16", "i4": "int32"}


def _fail(what):
    """The exception first (what a one-line view shows), then the
    traceback from the kernel's own frames (this glue's are dropped)."""
    et, ev, tb = sys.exc_info()
    if et.__name__ == "_ProblemRefused":  # pyformats': a diagnosis, not a fault of its code
        return "E%s" % ev
    while tb is not None and tb.tb_frame.f_code.co_filename == "<string>":
        tb = tb.tb_next
    summary = "".join(traceback.format_exception_only(et, ev)).strip()
    hint = ""
    if isinstance(ev, ImportError):
        top = (getattr(ev, "name", None) or "").split(".")[0]
        # A module of the user's own (not an installed package) reaches the
        # node only when the kernel lists it.
        own = ("if %s is a file of yours beside the kernel, list it in the kernel's files = "
               "[\"%s.py\"] line so that it travels with it (docs/python-kernels.md); if it is "
               "a package, " % (top, top)) if top else ""
        hint = (" (%sthe node's Python is %s; install the package there, or point KF_PYTHON "
                "at an interpreter that has it)" % (own, sys.executable))
    tbtext = "".join(traceback.format_exception(et, ev, tb)).rstrip()
    text = "E%s: %s%s\n%s" % (what, summary, hint, tbtext)
    if _alias[2]:
        text = text.replace(_alias[2], "")
    return text.replace(_alias[0], _alias[1]) if _alias[0] else text


def _extension(ext_dir, module):
    """Puts the kernel's torch extension, as the build task built it, first
    on the module path, once its record says it was built for the torch
    this runner imports: a module built for another torch would crash or
    misbehave inside it. "" when it may load, else "E" and why."""
    import json

    try:
        with open(os.path.join(ext_dir, "record.json")) as f:
            rec = json.load(f)
    except (OSError, ValueError) as e:
        return ("Ethe torch extension %s was not built here (%s); the build task builds it "
                "before the kernel runs" % (module, e))
    try:
        import torch
    except BaseException:
        return _fail("importing torch for the extension %s failed" % module)
    built = (rec.get("torch"), rec.get("torch_cuda") or "", rec.get("cxx11_abi"))
    here = (torch.__version__, torch.version.cuda or "", int(torch._C._GLIBCXX_USE_CXX11_ABI))
    if built != here:
        return ("Ethe torch extension %s was built for torch %s (CUDA %s, C++11 ABI %s) but this "
                "runner imports torch %s (CUDA %s, C++11 ABI %s) from %s; it is not loaded. The "
                "build's cache key has the torch version of the package metadata, so that "
                "metadata does not match the torch Python imports: reinstall torch, or remove "
                "%s to build it again"
                % (module, built[0], built[1] or "none", built[2], here[0], here[1] or "none",
                   here[2], os.path.dirname(torch.__file__), ext_dir))
    sys.path.insert(0, ext_dir)
    return ""


def _exec_module(path, prefix, name, files_dir=""):
    """The module compiled from path under its own name, or "E" and why."""
    try:
        with open(path, "rb") as f:
            code = compile(f.read(), path, "exec")
    except SyntaxError:
        return _fail("kernel %s does not compile" % name)
    except OSError as e:
        return "Ecannot read the kernel %s: %s" % (path, e)
    # Its own module name: a kernel called "torch" must not shadow torch.
    mod = types.ModuleType(prefix + name.replace("-", "_").replace(".", "_"))
    mod.__file__ = path
    # Where the kernel's own files are (its data files too): beside it.
    mod.KF_FILES_DIR = files_dir or os.path.dirname(path)
    sys.modules[mod.__name__] = mod
    try:
        exec(code, mod.__dict__)
    except BaseException:
        return _fail("importing kernel %s failed" % name)
    return mod


def _import(path, filename, name, prefix, ext_dir, ext_module, files_dir):
    """A kernel's or a candidate's module, its own files first on the module
    path and its torch extension importable; or "E" and why."""
    _alias[0], _alias[1] = path, filename
    if files_dir:
        _alias[2] = os.path.join(files_dir, "")
        sys.path.insert(0, files_dir)
    if ext_dir:
        why = _extension(ext_dir, ext_module)
        if why:
            return why
    return _exec_module(path, prefix, name, files_dir)


def load_candidate(path, filename, name, ext_dir="", ext_module="", files_dir=""):
    """Imports a candidate (run(s), optionally prepare(s)) beside the
    problem load() imported: from now on run() is the candidate's and
    setup() calls its prepare(); the problem's reference() is never called
    in this process (the checker judges against stored values). ext_dir,
    ext_module, files_dir: the candidate's torch extension and own files,
    as load() takes a kernel's."""
    global _cand
    if _mod is None:
        return "Ethe problem must be loaded before candidate %s" % name
    mod = _import(path, filename, name, "kfleet_candidate_", ext_dir, ext_module, files_dir)
    if isinstance(mod, str):
        return mod
    try:
        mod = _adapt_candidate(mod)  # pyformats.py: KernelBench's, GPU MODE's
    except BaseException:
        return _fail("candidate %s" % name)
    if not callable(getattr(mod, "run", None)):
        return ("Ecandidate %s does not define run(s); a Python candidate defines run(s) and "
                "may define prepare(s) (docs/problems.md)" % name)
    _cand = mod
    return ""


def load(path, filename, name, want_cuda, ext_dir="", ext_module="", files_dir="", problem=0):
    """Imports the kernel from its cached copy, a real file (Triton and
    inspect read a kernel's source from its file); messages name the user's
    file instead. files_dir: the kernel's own files (`files = [...]`),
    first on the module path so that it imports its modules."""
    global _mod
    mod = _import(path, filename, name, "kfleet_kernel_", ext_dir, ext_module, files_dir)
    if isinstance(mod, str):
        return mod
    ext = sys.modules.get(ext_module) if ext_dir else None
    if ext is not None and os.path.dirname(os.path.abspath(getattr(ext, "__file__", "") or "")) \
            != os.path.abspath(ext_dir):
        return ("Ekernel %s imported %s from %s, not the extension the build task built in %s "
                "(a module of that name was already loaded)"
                % (name, ext_module, getattr(ext, "__file__", "?"), ext_dir))
    if problem:
        try:
            mod = _adapt_problem(mod, want_cuda)  # pyformats.py: KernelBench's, GPU MODE's
        except BaseException:
            return _fail("problem %s" % name)
    # A problem brings no run(): its candidates do.
    missing = [f for f in ("setup", "run", "output", "reference")
               if not callable(getattr(mod, f, None)) and not (problem and f == "run")]
    if missing:
        return ("Ekernel %s does not define %s; a Python kernel defines setup(params, seed), "
                "run(state), output(state) and reference(state) (docs/python-kernels.md)"
                % (name, ", ".join(m + "()" for m in missing)))
    device = getattr(mod, "device", "cpu")
    if device not in ("cpu", "cuda"):
        return "Ekernel %s: device = %r; it is 'cpu' or 'cuda'" % (name, device)
    if (device == "cuda") != bool(want_cuda):
        return ("Ekernel %s: device is %r when imported but the sweep read it as %r from the "
                "source; write device = \"cuda\" (or \"cpu\") as a plain top-level line"
                % (name, device, "cuda" if want_cuda else "cpu"))
    # Its tolerances: tol_abs and tol_rel (max abs, relative L2), and/or
    # atol and rtol (numpy.isclose, element by element), and/or
    # tolerances(params, dtype) for each configuration (kf_kernel.h).
    names = {"tol_abs": "absolute", "tol_rel": "relative L2",
             "atol": "absolute (numpy.isclose's atol)", "rtol": "relative (numpy.isclose's rtol)"}
    _tol.clear()
    for t in names:
        v = getattr(mod, t, None)
        if v is None and t in ("atol", "rtol"):
            continue
        if v is None and (callable(getattr(mod, "tolerances", None)) or
                          getattr(mod, "atol", None) is not None or
                          getattr(mod, "rtol", None) is not None):
            continue
        if not isinstance(v, (int, float)) or v != v or v < 0:
            return ("Ekernel %s: %s is %r; set it to the largest %s error the output may "
                    "have (a number >= 0)" % (name, t, v, names[t]))
        _tol[t] = float(v)
    tol = _tol_line(_tol).split()
    _mod = mod
    desc = str(getattr(mod, "description", "") or (mod.__doc__ or "").strip().split("\n")[0])
    # Whether the runner asks tolerances() per configuration: with atol,
    # rtol or tolerances(); a kernel with only tol_abs and tol_rel is
    # judged by those, refused before any run when they cannot fail.
    per_config = 1 if (callable(getattr(mod, "tolerances", None)) or "atol" in _tol or
                       "rtol" in _tol) else 0
    det = 1 if getattr(mod, "deterministic", False) else 0
    return "%s %s %d %d %s\n%s" % (tol[0], tol[1], det, per_config,
                                   str(getattr(mod, "name", name)).replace("\n", " "),
                                   desc.replace("\n", " "))


def _params(text):
    out = {}
    for item in text.split(","):
        if item:
            k, v = item.split("=", 1)
            out[k] = int(v)
    return out


def setup(params, seed):
    try:
        state = _mod.setup(_params(params), seed)
        if getattr(_mod, "device", "cpu") == "cpu":  # a host kernel's (pylayout.py)
            _layout_host(state)
    except BaseException:
        return _fail("setup()")
    h = _next[0]
    _next[0] += 1
    _states[h] = state
    _params_of[h] = params
    prep = getattr(_cand, "prepare", None) if _cand is not None else None
    if prep is not None:
        try:
            prep(state)
        except BaseException:
            _states.pop(h, None)
            return _fail("the candidate's prepare()")
    # The output is checked here, where there is an error channel: output()
    # in kf_kernel.h has none, and the harness would only see "no view".
    out = output(h)
    if out.startswith("E"):
        teardown(h)
        return out
    return str(h)


def run(h):
    try:
        (_cand if _cand is not None else _mod).run(_states[h])
    except BaseException:
        return _fail("run()")
    return ""


def _describe(o, what):
    """(pointer, elements, dtype name, on device, shape, writable) of an
    array the harness reads: a torch tensor, a numpy array, or anything with
    __cuda_array_interface__ (CuPy, Numba)."""
    mod = type(o).__module__ or ""
    if mod.startswith("torch"):
        if not o.is_contiguous():
            raise ValueError("%s is a non-contiguous tensor (strides %s); return "
                             ".contiguous()" % (what, tuple(o.stride())))
        return (o.data_ptr(), o.numel(), str(o.dtype).replace("torch.", ""),
                o.device.type == "cuda", tuple(o.shape), True)
    cai = getattr(o, "__cuda_array_interface__", None)
    if cai is not None:
        if cai.get("strides") is not None:
            raise ValueError("%s is not C-contiguous; return a contiguous array" % what)
        ts = cai["typestr"]
        n = 1
        for d in cai["shape"]:
            n *= d
        return (cai["data"][0], n, _TYPESTR.get(ts[1:], ts), True, tuple(cai["shape"]),
                not cai["data"][1])
    ai = getattr(o, "__array_interface__", None)
    if ai is not None:
        if not o.flags["C_CONTIGUOUS"]:
            raise ValueError("%s is not C-contiguous; return numpy.ascontiguousarray(...)"
                             % what)
        return (ai["data"][0], o.size, o.dtype.name, False, tuple(o.shape), not ai["data"][1])
    raise TypeError("%s is a %s.%s; return a torch tensor, a numpy array or an array with "
                    "__cuda_array_interface__" % (what, mod, type(o).__name__))


def output(h):
    try:
        o = _mod.output(_states[h])
        ptr, n, dt, dev, shape, writable = _describe(o, "output()")
    except BaseException:
        return _fail("output()")
    if dt not in _DTYPES:
        return ("Eoutput() has dtype %s; the harness compares %s (cast it, or compare a view "
                "of that type)" % (dt, ", ".join(_DTYPES)))
    if not writable:
        return "Eoutput() is read-only; the harness poisons it before each run"
    if n == 0:
        return "Eoutput() is empty"
    _shapes[h] = shape
    return "%d %d %d %d" % (ptr, n, _DTYPES[dt], 1 if dev else 0)


def inputs(h):
    """The problem's inputs(s), for a C candidate: "ptr count dtype dev"
    lines, or "E" and why."""
    try:
        arrs = _mod.inputs(_states[h])
        lines = []
        for i, a in enumerate(arrs):
            ptr, n, dt, dev, _, _ = _describe(a, "inputs()[%d]" % i)
            if dt not in _DTYPES:
                return "Einputs()[%d] has dtype %s, not one of %s" % (i, dt, ", ".join(_DTYPES))
            lines.append("%d %d %d %d" % (ptr, n, _DTYPES[dt], 1 if dev else 0))
    except BaseException:
        return _fail("the problem's inputs()")
    return "\n".join(lines)


def reference(h, ptr, count, width=8):
    """State h's reference at ptr: count f64 (width 8) or f32 (4) values."""
    if _cand is not None:
        return ("Ereference() is not called in a candidate's process: the checker judges it "
                "against the stored reference")
    try:
        r = _mod.reference(_states[h])
        torch_ref = (type(r).__module__ or "").startswith("torch")
        if not torch_ref:
            if hasattr(r, "__cuda_array_interface__") and hasattr(r, "get"):
                r = r.get()  # CuPy to the host
            import numpy

            r = numpy.ascontiguousarray(
                numpy.asarray(r, dtype=numpy.float64 if width == 8 else numpy.float32))
        shape, n = tuple(r.shape), r.numel() if torch_ref else r.size
        want = _shapes.get(h)
        if want is not None and shape != tuple(want):
            return ("Ereference() has shape %s but output() has shape %s; they are compared "
                    "element by element" % (shape, tuple(want)))
        if n != count:
            return "Ereference() has %d elements, output() %d" % (n, count)
        if torch_ref:
            _copy_torch(r, ptr, n, width)
        else:
            ctypes.memmove(ptr, r.ctypes.data, n * width)
    except BaseException:
        return _fail("reference()")
    return ""


# Elements of a torch reference converted and copied at a time: one of
# gigabytes is never converted whole on the device or the host.
_REF_PIECE = 1 << 26


def _copy_torch(r, ptr, n, width):
    """A torch reference (on its device) into the harness's buffer, in
    pieces: no host copy of it beside the buffer, no second copy."""
    import torch

    flat = r.detach().reshape(-1)
    ct, dt = (ctypes.c_double, torch.float64) if width == 8 else (ctypes.c_float, torch.float32)
    dst = torch.frombuffer((ct * n).from_address(ptr), dtype=dt)
    for at in range(0, n, _REF_PIECE):
        dst[at:at + _REF_PIECE].copy_(flat[at:at + _REF_PIECE])


def _tol_line(t):
    """'tol_abs tol_rel close atol rtol' from the stated ones: with atol or
    rtol (the other 0), tol_abs defaults to inf and tol_rel to 0.5, so the
    element-wise bound decides and an output of zeros (relative L2 1)
    still fails."""
    close = "atol" in t or "rtol" in t
    return "%r %r %d %r %r" % (t.get("tol_abs", float("inf") if close else 0.0),
                               t.get("tol_rel", 0.5 if close else 0.0), 1 if close else 0,
                               t.get("atol", 0.0), t.get("rtol", 0.0))


def tolerances(arg):
    """The kernel's tolerances for one configuration and output dtype
    ("DTYPE a=1,b=2"): its module-level ones, changed by its
    tolerances(params, dtype) where it has one; 'E' and why."""
    dtype, _, params = arg.partition(" ")
    t = dict(_tol)
    fn = getattr(_mod, "tolerances", None)
    if callable(fn):
        try:
            got = fn(_params(params), dtype)
        except BaseException:
            return _fail("tolerances()")
        if not isinstance(got, dict) or set(got) - {"tol_abs", "tol_rel", "atol", "rtol"}:
            return ("Etolerances(params, dtype) returned %r; return a dict of any of tol_abs, "
                    "tol_rel, atol, rtol" % (got,))
        for k, v in got.items():
            if not isinstance(v, (int, float)) or v != v or v < 0:
                return "Etolerances(params, dtype) returned %s = %r; a number >= 0" % (k, v)
            t[k] = float(v)
    if not t:
        return ("Ethe kernel states no tolerance: set tol_abs and tol_rel, or atol and rtol, or "
                "define tolerances(params, dtype)")
    return _tol_line(t)


def flush(_unused):
    """What the kernel printed, out of Python's buffers onto the pipe the
    agent keeps (its Result takes it): the runner leaves by _exit."""
    for f in (sys.stdout, sys.stderr):
        try:
            if f is not None:
                f.flush()
        except BaseException:
            pass  # a kernel that closed or replaced its stdout keeps the loss
    return ""


def measure(fn, params):
    f = getattr(_mod, fn, None)
    if f is None:
        return "0"
    try:
        return repr(float(f(_params(params))))
    except BaseException:
        return _fail(fn + "()")


def _arrays(state):
    """(key, array or module) pairs of a state: a dict's items, a list's or
    tuple's, an object's attributes; a list or tuple inside them opened
    once more (KernelBench-style input lists)."""
    if isinstance(state, dict):
        items = list(state.items())
    elif isinstance(state, (list, tuple)):
        items = list(enumerate(state))
    else:
        items = list(getattr(state, "__dict__", {}).items())
    out = []
    for k, v in items:
        if isinstance(v, (list, tuple)):
            out.extend(((k, i), x) for i, x in enumerate(v))
        else:
            out.append((k, v))
    return out


def _flat(x):
    """x's contents as one flat view (a torch tensor or numpy array laid
    out contiguously), or None."""
    mod = type(x).__module__ or ""
    if mod.startswith("torch"):
        return x.view(-1) if x.is_contiguous() else None
    if mod.startswith("numpy") and x.flags.c_contiguous:
        return x.reshape(-1)
    return None


def _put(d, s):
    if hasattr(d, "copy_"):
        d.copy_(s)
    else:
        d[...] = s


def _window(d, s, start, length, off):
    """d[start + j] = s[(start + off + j) % n] for j < length: a cyclic
    window of s, two slices' copies at most."""
    n = s.shape[0]
    a = (start + off) % n
    first = min(length, n - a)
    if first > 0:
        _put(d[start:start + first], s[a:a + first])
    if length > first:
        _put(d[start + first:start + length], s[:length - first])


def _copy(dst, src, mix=None):
    """dst[...] = src, or with mix (src2, rng): dst's flat contents a
    cyclic window of src's from an offset rng draws and, from a place rng
    draws, one of src2's: values the problem's setup() made, in places
    and proportions no sample had, so that neither a memo keyed by a few
    values nor one keyed by the sum or any function of the values alone
    finds an earlier input's answer."""
    d = _flat(dst)
    s = _flat(src)
    s2 = _flat(mix[0]) if mix is not None else None
    if d is None or s is None or s2 is None or d.shape[0] == 0 or s2.shape[0] != s.shape[0]:
        _put(dst, src)
        return
    n, rng = d.shape[0], mix[1]
    m = rng.randrange(n + 1)
    _window(d, s, 0, m, rng.randrange(n))
    _window(d, s2, m, n - m, rng.randrange(n))


def _fill(dst, src, mix=None):
    """Copies src's contents into dst in place (mixed with another's where
    mix, see _copy): an array of the same type, shape and dtype (numpy,
    torch, anything with __cuda_array_interface__ that takes dst[...] =
    src), or a torch module's parameters and buffers by name. 1 when
    something was copied, 0 when dst is no such thing."""
    mod = type(dst).__module__ or ""
    if mod.startswith("torch"):
        import torch
        if isinstance(dst, torch.nn.Module):
            if not isinstance(src, torch.nn.Module):
                return 0
            theirs = dict(src.state_dict())
            other = dict(mix[0].state_dict()) if mix is not None else {}
            with torch.no_grad():
                for name, t in dst.state_dict().items():
                    if name in theirs and theirs[name].shape == t.shape:
                        _copy(t, theirs[name], (other[name], mix[1]) if name in other else None)
            return 1
        if not isinstance(dst, torch.Tensor):
            return 0
        if tuple(dst.shape) != tuple(src.shape) or dst.dtype != src.dtype:
            raise ValueError("an input of the fresh state has shape %s %s, not %s %s" %
                             (tuple(src.shape), src.dtype, tuple(dst.shape), dst.dtype))
        with torch.no_grad():
            _copy(dst, src, mix)
        return 1
    if hasattr(dst, "__array_interface__") or hasattr(dst, "__cuda_array_interface__"):
        if tuple(dst.shape) != tuple(src.shape) or dst.dtype != src.dtype:
            raise ValueError("an input of the fresh state has shape %s %s, not %s %s" %
                             (tuple(src.shape), src.dtype, tuple(dst.shape), dst.dtype))
        _copy(dst, src, mix)
        return 1
    return 0


# Where fresh inputs come from (issue 43 item 3), by configuration: states
# the problem's setup() made, kept. A setup() before every timed sample
# costs more than a microsecond kernel's sample (GPU task time +42 % on
# examples/problems/softmax, H200), so two states made from unpredictable
# seeds serve _FRESH_USES samples, each sample's inputs a mix of the two
# drawn from that sample's unpredictable seed (_copy), and a pool seed's
# state is made once and copied back as it is at each of its audits. Kept
# only when every array can be mixed so (contiguous torch or numpy, of
# floating-point values: integers are often indices or offsets whose
# structure a mix would break, and a kernel reading by them could fault)
# and the states are small (_FRESH_KEEP): a large kernel's sample outweighs
# its setup(). Anything else: a setup() per sample, as before.
_FRESH_USES = 16
_FRESH_KEEP = 128 << 20
_fresh_src = {}  # configuration text -> {"base": [[state, state], uses left], pool seed: [[state], 0]}


def _keepable(state):
    total = 0
    for _k, v in _arrays(state):
        mod = type(v).__module__ or ""
        if mod.startswith("torch"):
            import torch
            ts = list(v.state_dict().values()) if isinstance(v, torch.nn.Module) else [v]
            for t in ts:
                if (not isinstance(t, torch.Tensor) or not t.is_contiguous() or
                        not (t.is_floating_point() or t.is_complex())):
                    return False
                total += t.numel() * t.element_size()
        elif mod.startswith("numpy") and hasattr(v, "flags"):
            if not v.flags.c_contiguous or v.dtype.kind not in "fc":
                return False
            total += v.nbytes
        elif hasattr(v, "__array_interface__") or hasattr(v, "__cuda_array_interface__"):
            return False
    return total <= _FRESH_KEEP


def _drop_state(state):
    """The problem's teardown() of a state it made for fresh inputs: ""
    or its failure, which is the task's as teardown()'s of any state."""
    f = getattr(_mod, "teardown", None)
    if f is not None:
        try:
            f(state)
        except BaseException:
            return _fail("teardown() (of the fresh inputs before a timed sample)")
    return ""


def _drop_fresh(key):
    err = ""
    for states, _uses in _fresh_src.pop(key, {}).values():
        for state in states:
            err = _drop_state(state) or err
    return err


def _make(key, seeds):
    """The problem's setup() states for seeds: (states, "") or (None, its
    failure), the ones made before it torn down."""
    made = []
    for seed in seeds:
        try:
            made.append(_mod.setup(_params(key), seed))
        except BaseException:
            err = _fail("setup() (fresh inputs before a timed sample)")
            for st in made:
                _drop_state(st)
            return None, err
    return made, ""


def refresh(arg):
    """Fresh contents for a candidate's state before a timed sample (issue
    43 item 3): the problem's setup() alone (never the candidate's
    prepare()) makes states from unpredictable seeds, or ones kept
    (_fresh_src) serve again, and their arrays are copied into the state's
    own, in place, mixed (_copy): the candidate keeps its buffers and its
    prepare()'s scratch, and nothing it computed ahead matches the new
    contents. pool "1": the seed is a pool seed's (an audit), its inputs
    copied as they are; else seed and seed2 make the two states a mix
    draws from. The output buffer is left (the guard poisons it next).
    Answers how many fresh seeds reached setup() ("", "1", "2")."""
    import random
    h, seed, seed2, pool = arg.split()
    h, seed, seed2, pool = int(h), int(seed), int(seed2), pool == "1"
    s = _states[h]
    key = _params_of[h]
    kept = _fresh_src.setdefault(key, {})
    slot = seed if pool else "base"
    entry = kept.get(slot)
    made = None
    keep = False
    if entry is None or (not pool and entry[1] <= 0):
        made, err = _make(key, [seed])
        keep = made is not None and _keepable(made[0])
        # The second state to mix with only where the pair will be kept: a
        # state too large to keep is used once, as setup() made it.
        if keep and not pool:
            more, err = _make(key, [seed2])
            if more is None:
                _drop_state(made[0])
                made = None
            else:
                made += more
        if made is None:
            return err
        srcs = made
    else:
        srcs = entry[0]
        entry[1] -= 1
    err = None
    n = 0
    try:
        out = _mod.output(s)
        theirs = dict(_arrays(srcs[0]))
        other = dict(_arrays(srcs[1])) if len(srcs) > 1 else {}
        rng = random.Random(seed ^ 0x5DEECE66D)
        for k, dst in _arrays(s):
            if dst is out or k not in theirs:
                continue
            n += _fill(dst, theirs[k], (other[k], rng) if k in other else None)
    except BaseException:
        err = _fail("fresh inputs before a timed sample (set fresh_inputs = False in the "
                    "problem to time its candidates on the pool's inputs)")
    if made is not None:
        if err is None and keep and all(_keepable(st) for st in made[1:]):
            for st in (entry[0] if entry is not None else []):
                err = err or _drop_state(st) or None
            kept[slot] = [made, 0 if pool else _FRESH_USES - 1]
        else:
            for st in made:
                err = err or _drop_state(st) or None
    if err:
        return err
    if n == 0:
        return ("Ethe problem's state holds no array that fresh inputs could be copied into "
                "(a dict, list or object of numpy arrays or torch tensors); set fresh_inputs = "
                "False in the problem to time its candidates on the pool's inputs")
    # How many of the fresh seeds reached setup(), for the agent's scrub.
    return "" if pool or made is None else str(len(made))


def fresh_inputs(_arg=""):
    """Whether the problem lets its candidates' timed samples run on fresh
    inputs: "1" unless it says fresh_inputs = False."""
    return "0" if getattr(_mod, "fresh_inputs", True) is False else "1"


def teardown(h):
    state = _states.pop(h, None)
    _shapes.pop(h, None)
    key = _params_of.pop(h, None)
    # The fresh inputs' kept states go with the configuration's last state.
    err = _drop_fresh(key) if key is not None and key not in _params_of.values() else ""
    f = getattr(_mod, "teardown", None)
    if f is not None and state is not None:
        try:
            f(state)
        except BaseException:
            return _fail("teardown()")
    return err

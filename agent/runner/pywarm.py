

# The warm interpreter (agent/warms.c, runner/warm.c): what it imports and
# does before any fork, and what each runner forked from it restores. Runs
# in the glue's namespace (agent/runner/CMakeLists.txt appends it).

# The packages kernels use, imported by a warm interpreter when installed.
_WARM = ("numpy", "torch", "triton")


def _inside(root):
    """"E" and the first module imported from under root, or ""."""
    for mname, m in list(sys.modules.items()):
        f = getattr(m, "__file__", None) or ""
        if f and os.path.realpath(f).startswith(root):
            return ("Ethe warm runner imported %s from %s, inside the agent's work dir, "
                    "which kernels write: refused" % (mname, f))
    return ""


# What Triton does at a kernel's first call in every process, the same in
# each and needing no CUDA context: its key (a hash of its own installed
# files, lru-cached) and the modules its first specialization imports. On
# an H200 host (Triton 3.6, bench/gpu/triton_first_call.py) they were 0.39
# and 0.11 s of a cached kernel's 0.54-0.60 s first call in a forked
# runner, paid by each candidate's validate and again by its profile.
_TRITON_KEYS = (("triton.runtime.cache", "triton_key"), ("triton.compiler.compiler", "triton_key"))
_TRITON_IMPORTS = ("triton.experimental.gluon",)


def _warm_triton():
    """Triton's per-process first-call work done here, before the forks:
    the names of what was done ("triton_key", modules), for the log.
    Where a Triton lacks one, it is skipped: each runner then pays it."""
    import importlib

    if "triton" not in sys.modules:
        return []
    done = []
    for mod, fn in _TRITON_KEYS:
        try:
            getattr(importlib.import_module(mod), fn)()
            done.append(fn)
            break
        except (ImportError, AttributeError, OSError):
            continue
    for mod in _TRITON_IMPORTS:
        try:
            importlib.import_module(mod)
            done.append(mod)
        except ImportError:
            continue
    return done


def warm(unsafe):
    """Imports the installed packages of _WARM from the module path the
    warm start left (pykernel.c: nothing inside the agent's work dir,
    `unsafe`, nothing others may write), before any sandbox: so each is
    checked to come from outside `unsafe`. Neither torch nor triton
    initializes CUDA on import. The names imported, or "E" and why."""
    import importlib
    import importlib.util

    root = os.path.join(os.path.realpath(unsafe), "")
    names = []
    # KF_WARM_IMPORTS="numpy": only those of _WARM (torch alone takes seconds
    # to import, in which the first tasks get fresh runners).
    only = os.environ.get("KF_WARM_IMPORTS")
    for name in _WARM if only is None else [n for n in _WARM if n in only.split()]:
        try:
            if importlib.util.find_spec(name) is None:
                continue
        except (ImportError, ValueError):
            continue
        try:
            importlib.import_module(name)
        except BaseException:
            return _fail("the warm runner could not import %s" % name)
        names.append(name)
    names += _warm_triton()
    inside = _inside(root)
    if inside:
        return inside
    # A CUDA context made here would be every forked runner's, broken
    # after the fork: refused, so that the candidates get fresh runners.
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        return "Eimporting %s initialized CUDA in the warm runner" % " ".join(names)
    return " ".join(names)


def restore_path(path_json):
    """In a runner forked from a warm interpreter: the probe's whole module
    path, and the .pth files of its site-packages, as a fresh start has
    them (pykernel.c's boot)."""
    import json
    import site

    try:
        sys.path[:] = json.loads(path_json)
        for p in list(sys.path):
            if p.endswith(("site-packages", "dist-packages")):
                site.addsitedir(p)
    except BaseException:
        return _fail("restoring the module path")
    try:
        _environ_from_process()
    except BaseException:
        return _fail("reading the runner's environment")
    return ""


def _environ_from_process():
    """os.environ as the process has it now. It is a copy taken when the
    warm interpreter started, and the runner forked from it has since set
    HOME, TMPDIR and the caches' variables to its own scratch directory
    (confine.c): with the warm's copy, tempfile and Triton looked for a
    temporary directory the sandbox does not let them write ("No usable
    temporary directory", every Triton candidate on an H200)."""
    import tempfile

    env = ctypes.POINTER(ctypes.c_char_p).in_dll(ctypes.CDLL(None), "environ")
    now = {}
    i = 0
    while env[i] is not None:
        k, _, v = env[i].partition(b"=")
        now[os.fsdecode(k)] = os.fsdecode(v)
        i += 1
    for k in [k for k in os.environ if k not in now]:
        del os.environ[k]
    for k, v in now.items():
        if os.environ.get(k) != v:
            os.environ[k] = v
    tempfile.tempdir = None


def after_fork(_unused):
    """In a runner forked from a warm interpreter: numpy's global generator
    reseeded from the OS, as a fresh import would seed it (random reseeds
    itself at fork)."""
    np = sys.modules.get("numpy")
    try:
        if np is not None:
            np.random.seed()
    except BaseException:
        return _fail("reseeding numpy")
    return ""

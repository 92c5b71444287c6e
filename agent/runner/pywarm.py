

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


def _nvidia_driver():
    """Triton's NVIDIA driver module, where Triton was imported and has
    one, else None."""
    if "triton" not in sys.modules:
        return None
    try:
        from triton.backends.nvidia import driver as nvd
    except BaseException:
        return None
    return nvd


def _own_dir(prefix, root):
    """A new directory of this interpreter's own, outside the agent's work
    dir (root), for Triton's C builds; None where there is none."""
    import shutil
    import tempfile

    try:
        d = tempfile.mkdtemp(prefix=prefix)
    except OSError:
        return None
    if os.path.join(os.path.realpath(d), "").startswith(root):
        shutil.rmtree(d, ignore_errors=True)
        return None
    return d


def _end_own_dir(d, prev):
    """TRITON_CACHE_DIR back to prev (None: unset) and d removed."""
    import shutil

    if prev is None:
        os.environ.pop("TRITON_CACHE_DIR", None)
    else:
        os.environ["TRITON_CACHE_DIR"] = prev
    shutil.rmtree(d, ignore_errors=True)


# Triton's CUDA helper module (its driver.c, built as cuda_utils), which
# every process builds with the C compiler into its Triton cache at its
# first kernel's launch. A runner's cache is its kernel's own (confine.c,
# agent/kcache.h), empty for a new candidate, so each candidate's validate
# built it again: 0.28-0.38 s of a 0.75 s first call in a runner forked from
# here (bench/gpu/triton_first_call.py, an H200 host, Triton 3.6). No
# kernel's code is in it.
def _warm_triton_utils(root):
    """Starts building Triton's CudaUtils, here, once, before the forks, in
    a directory of this interpreter's own (outside the agent's work dir,
    removed once loaded), on a thread: the C compiler runs as its own
    process while Triton's key is hashed. Returns the function that waits
    for it: then each forked runner has the module loaded, and no file of it
    that a kernel could write; Triton's later CudaUtils() calls reuse it.
    That function returns ["cuda_utils"], or [] where Triton has no
    CudaUtils of this shape or it cannot be built (each runner then builds
    its own)."""
    import threading

    none = lambda: []  # noqa: E731
    nvd = _nvidia_driver()
    cls = getattr(nvd, "CudaUtils", None)
    if not isinstance(cls, type) or "__init__" not in vars(cls):
        return none
    d = _own_dir("kf-warm-triton-", root)
    if d is None:
        return none
    prev = os.environ.get("TRITON_CACHE_DIR")
    os.environ["TRITON_CACHE_DIR"] = d
    ok = []

    def build():
        try:
            ok.append(hasattr(cls(), "load_binary"))
        except BaseException:
            pass

    t = threading.Thread(target=build, name="kf-warm-cuda-utils")
    t.start()

    def wait():
        t.join()
        _end_own_dir(d, prev)
        if ok != [True]:
            return []
        init = vars(cls)["__init__"]

        def once(self):
            if not hasattr(self, "load_binary"):
                init(self)

        cls.__init__ = once
        return ["cuda_utils"]

    return wait


# Triton's launcher of a kernel's signature: C that Triton generates from
# the argument types alone and builds with the C compiler at the kernel's
# first launch, into the kernel's own cache: 0.18-0.27 s of a candidate's
# validate on an H200 host, the same source for every candidate of one
# signature. A runner cannot share what it built (a kernel could write it),
# so each records its signature (data) in its cache, and this interpreter,
# which no kernel's code reaches, builds the launcher from the recorded
# types itself, with Triton's own generator, when the agent hands it a
# kernel's kept cache (learn_launchers): every runner forked after that
# finds it loaded.
_LAUNCHERS = {"root": "", "built": {}, "nvd": None, "make": None, "compile": None}
_LAUNCHER_NAME = "__triton_launcher"
_LEARN_FILES = 16        # signatures read at one learn
_LEARN_BUILDS = 2        # launchers built at one learn (each a C compile)
# Launchers built over the warm interpreter's life: the signatures are the
# kernels' to record, and a stream of candidates each recording new ones
# must not keep it compiling between forks, or growing.
_LEARN_TOTAL = 64
_LEARN_BYTES = 8192      # a signature's file
_LEARN_ARGS = 128        # arguments a signature may have


def _launcher_key(src):
    import hashlib

    return hashlib.sha256(src.encode("utf-8")).hexdigest()


def _signature_ok(sig):
    """A recorded signature as types Triton's launcher generator maps by
    table (scalars), by their first character (pointers) or by name: no
    text of it reaches the C source. Tuples and tensor descriptors: no."""
    import re

    if not isinstance(sig, list) or not 0 < len(sig) <= _LEARN_ARGS:
        return False
    scalar = re.compile(r"^(?:[iu](?:1|8|16|32|64)|fp16|bf16|fp32|f32|fp64)$")
    pointer = re.compile(r"^\*k?[a-z0-9]{1,16}$")
    return all(isinstance(t, str) and (t == "constexpr" or scalar.match(t) or pointer.match(t))
               for t in sig)


def _warm_triton_launchers(root):
    """Wraps Triton's launcher generator (each forked runner records the
    signature it generates a launcher for) and its module builder (a
    launcher this interpreter built is returned, not built again).
    ["launchers"], or [] where Triton's NVIDIA driver has neither."""
    nvd = _nvidia_driver()
    make, build = getattr(nvd, "make_launcher", None), getattr(nvd, "compile_module_from_src", None)
    if not callable(make) or not callable(build):
        return []
    _LAUNCHERS.update(root=root, nvd=nvd, make=make, compile=build)
    built = _LAUNCHERS["built"]

    def make_recorded(constants, signature, tensordesc_meta=None, *args, **kw):
        src = make(constants, signature, tensordesc_meta, *args, **kw)
        try:
            sig = list(signature.values())
            cache = os.environ.get("TRITON_CACHE_DIR", "")
            if cache and not tensordesc_meta and _signature_ok(sig) and \
                    _launcher_key(src) not in built:
                import json

                d = os.path.join(cache, "kf-launchers")
                os.makedirs(d, exist_ok=True)
                text = json.dumps(sig)
                with open(os.path.join(d, _launcher_key(text)[:32] + ".json"), "w") as f:
                    f.write(text)
        except BaseException:
            pass  # unrecorded: the next candidate builds its own
        return src

    def compile_known(src, name, *args, **kw):
        if name == _LAUNCHER_NAME:
            mod = built.get(_launcher_key(src))
            if mod is not None:
                return mod
        return build(src, name, *args, **kw)

    nvd.make_launcher = make_recorded
    nvd.compile_module_from_src = compile_known
    return ["launchers"]


def _read_signature(dfd, name):
    """The signature recorded in name under the directory dfd: a regular
    file of at most _LEARN_BYTES (no link followed), or None."""
    import json
    import stat

    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dfd)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > _LEARN_BYTES:
            return None
        sig = json.loads(os.read(fd, _LEARN_BYTES + 1).decode("utf-8"))
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
    return sig if _signature_ok(sig) else None


def _recorded(kcache):
    """The signatures recorded under kcache/triton/kf-launchers, the first
    _LEARN_FILES files there; walked by descriptor, never through a link
    (the kept cache is the kernel's to write: a link it planted must not
    make this interpreter read elsewhere)."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    fds, sigs = [], []
    try:
        fds.append(os.open(kcache, flags))
        for part in ("triton", "kf-launchers"):
            fds.append(os.open(part, flags, dir_fd=fds[-1]))
        with os.scandir(fds[-1]) as it:
            for e in it:
                if len(sigs) >= _LEARN_FILES:
                    break
                if e.name.endswith(".json"):
                    sig = _read_signature(fds[-1], e.name)
                    if sig is not None:
                        sigs.append(sig)
    except OSError:
        pass
    finally:
        for fd in fds:
            os.close(fd)
    return sigs


def _request_waiting():
    """Whether the agent's next request waits on this warm interpreter's
    socket (its stdin): the agent waits for the answer, so no build
    starts then (the signatures stay recorded for a later learn)."""
    import select
    import stat

    try:
        return stat.S_ISSOCK(os.fstat(0).st_mode) and bool(select.select([0], [], [], 0)[0])
    except (OSError, ValueError):
        return False


def learn_launchers(kcache):
    """In the warm interpreter, after a fork: the launchers of the
    signatures a kernel's runners recorded in its kept cache (kcache, the
    agent's copy: agent/kcache.h), built here from the types with Triton's
    own generator, in a directory of this interpreter's own. Returns how
    many were built (as text); a signature refused, a build that fails, or
    no cache: not built, never an error (the runners build their own)."""
    nvd, make, build = _LAUNCHERS["nvd"], _LAUNCHERS["make"], _LAUNCHERS["compile"]
    room = min(_LEARN_BUILDS, _LEARN_TOTAL - len(_LAUNCHERS["built"]))
    if nvd is None or room <= 0:
        return "0"
    todo = []
    for sig in _recorded(kcache):
        try:
            src = make({}, dict(enumerate(sig)), None)
        except BaseException:
            continue
        k = _launcher_key(src)
        if k not in _LAUNCHERS["built"] and k not in (x[0] for x in todo):
            todo.append((k, src))
    tmp = _own_dir("kf-warm-launchers-", _LAUNCHERS["root"]) if todo else None
    if tmp is None:
        return "0"
    n = 0
    prev = os.environ.get("TRITON_CACHE_DIR")
    try:
        os.environ["TRITON_CACHE_DIR"] = tmp
        for k, src in todo[:room]:
            if _request_waiting():
                break
            try:
                _LAUNCHERS["built"][k] = build(src=src, name=_LAUNCHER_NAME,
                                               library_dirs=nvd.library_dirs(),
                                               include_dirs=nvd.include_dirs,
                                               libraries=nvd.libraries)
                n += 1
            except BaseException:
                continue
    finally:
        _end_own_dir(tmp, prev)
    return str(n)


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
    # The helper's compile (gcc, its own process) beside the key's hashing.
    utils = _warm_triton_utils(root)
    names += _warm_triton()
    names += utils()
    names += _warm_triton_launchers(root)
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

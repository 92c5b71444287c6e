/* confine — see confine.h. */
#include "runner/confine.h"

#include "common/log.h"
#include "common/taskspec.h"
#include "common/util.h"
#include "common/xalloc.h"
#include "runner/build.h"
#include "runner/pyenv.h"
#include "runner/pyfiles.h"
#include "runner/sandbox.h"
#include "runner/toolhost.h"

#include <dirent.h>
#include <glob.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const system_dirs[] = {"/usr",  "/lib", "/lib32", "/lib64", "/libx32", "/bin",
                                          "/sbin", "/etc", "/opt",   "/proc",  "/sys"};
static const char *const dev_read[] = {"/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"};
static const char *const dev_write[] = {"/dev/null", "/dev/shm", "/dev/nvidia-caps", "/dev/dxg"};

/* fn(s, entry) for each entry of a ':' list (a PATH). */
static void each_entry(kf_sandbox *s, const char *list, void (*fn)(kf_sandbox *, const char *))
{
    char part[PATH_MAX];
    for (const char *p = list; p && *p;) {
        size_t n = strcspn(p, ":");
        if (n > 0 && n < sizeof part) {
            snprintf(part, sizeof part, "%.*s", (int)n, p);
            fn(s, part);
        }
        p += n + (p[n] == ':');
    }
}

/* The directory holding the tool a variable names (found on PATH when it
 * has no '/'), and the tool itself when it is a link elsewhere. */
static void read_tool_of(kf_sandbox *s, const char *var)
{
    const char *v = getenv(var);
    char path[PATH_MAX], real[PATH_MAX];
    if (!v || !*v || !kf_find_exe(v, path, sizeof path))
        return;
    char *slash = strrchr(path, '/');
    if (realpath(path, real))
        kf_sandbox_read(s, real);
    if (slash && slash != path) {
        *slash = '\0';
        kf_sandbox_read(s, path);
    }
}

static void read_python(kf_sandbox *s)
{
    const kf_pyenv *py;
    if (kf_pyenv_get(&py, NULL) != KF_OK)
        return;
    kf_sandbox_read(s, py->base_prefix);
    kf_sandbox_read(s, py->base_exec_prefix);
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", py->executable);
    for (int up = 0; up < 2; up++) { /* bin/, and a venv's root above it */
        char *slash = strrchr(dir, '/');
        if (!slash || slash == dir)
            break;
        *slash = '\0';
        kf_sandbox_read(s, dir);
    }
    json_t *path = json_loads(py->path_json ? py->path_json : "[]", 0, NULL);
    size_t i;
    json_t *v;
    json_array_foreach(path, i, v) kf_sandbox_read(s, json_string_value(v));
    json_decref(path);
}

/* For a root runner, which keeps uid 0 and so reads root's files by
 * ownership: what under path others may read. Returns 1 when all of it is
 * (the caller grants it whole, as the largest such directory), else grants
 * each part that is and returns 0: /etc without /etc/shadow, the SSH host
 * keys, sudoers and whatever else is not world-readable. A non-root runner
 * could read none of those either, so no toolchain needs them. A symbolic
 * link is left to its target's own grant, never granted by itself (its
 * target may lie anywhere). Deeper than 12 levels, nothing is granted. */
static int readable_parts(kf_sandbox *s, const char *path, int depth)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return 0;
    if (S_ISLNK(st.st_mode))
        return 1;
    if (!S_ISDIR(st.st_mode))
        return (st.st_mode & S_IROTH) != 0;
    if ((st.st_mode & (S_IROTH | S_IXOTH)) != (S_IROTH | S_IXOTH) || depth > 12)
        return 0;
    DIR *d = opendir(path);
    if (!d)
        return 0;
    char **ok = NULL;
    size_t nok = 0;
    int all = 1;
    char child[PATH_MAX];
    for (struct dirent *e; (e = readdir(d));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (snprintf(child, sizeof child, "%s/%s", path, e->d_name) >= (int)sizeof child) {
            all = 0;
            continue;
        }
        struct stat cs;
        if (readable_parts(s, child, depth + 1)) {
            if (lstat(child, &cs) == 0 && !S_ISLNK(cs.st_mode)) {
                ok = kf_xrealloc(ok, (nok + 1) * sizeof *ok);
                ok[nok++] = kf_xstrdup(child);
            }
        } else {
            all = 0;
        }
    }
    closedir(d);
    for (size_t i = 0; i < nok; i++) {
        if (!all)
            kf_sandbox_read(s, ok[i]);
        free(ok[i]);
    }
    free(ok);
    return all;
}

/* The common part: see confine.h. */
static kf_sandbox *base(const Kfleet__TaskSpec *sp, const char *workdir, const char *scratch)
{
    kf_sandbox *s = kf_sandbox_new();
    kf_sandbox_protect(s, workdir);
    each_entry(s, getenv("KF_SANDBOX_PROTECT"), kf_sandbox_protect);
    for (size_t i = 0; i < sizeof system_dirs / sizeof *system_dirs; i++)
        if (strcmp(system_dirs[i], "/etc") != 0 || geteuid() != 0 ||
            readable_parts(s, system_dirs[i], 0))
            kf_sandbox_read(s, system_dirs[i]);
    for (size_t i = 0; i < sizeof dev_read / sizeof *dev_read; i++)
        kf_sandbox_read(s, dev_read[i]);
    for (size_t i = 0; i < sizeof dev_write / sizeof *dev_write; i++)
        kf_sandbox_write(s, dev_write[i]);
    glob_t g;
    if (glob("/dev/nvidia*", 0, NULL, &g) == 0)
        for (size_t i = 0; i < g.gl_pathc; i++)
            kf_sandbox_write(s, g.gl_pathv[i]);
    globfree(&g);
    each_entry(s, getenv("PATH"), kf_sandbox_read);
    each_entry(s, getenv("LD_LIBRARY_PATH"), kf_sandbox_read);
    each_entry(s, getenv("KF_CUDA_COMPAT_DIR"), kf_sandbox_read);
    each_entry(s, getenv("KF_SANDBOX_READ"), kf_sandbox_read); /* the operator's additions */
    each_entry(s, getenv("KF_SANDBOX_WRITE"), kf_sandbox_write);
    static const char *const tools[] = {"KF_CC", "KF_NVCC", "KF_CXX", "KF_PYTHON"};
    for (size_t i = 0; i < sizeof tools / sizeof *tools; i++)
        read_tool_of(s, tools[i]);
    char tk[PATH_MAX], cuda[16];
    if (kf_build_toolkit(tk, sizeof tk, cuda, sizeof cuda) == KF_OK)
        kf_sandbox_read(s, tk);
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        /* A nested runner (ncu, sanitizer) execs it, with the libraries
         * beside it (a bundle's lib/, its RPATH), wherever the bundle was
         * unpacked (a launch puts it in the work dir): the directory is
         * granted unless it holds the work dir's own files. */
        self[n] = '\0';
        kf_sandbox_own(s, self, 0);
        char *slash = strrchr(self, '/');
        if (slash && slash != self) {
            *slash = '\0';
            kf_sandbox_own(s, self, 0);
        }
    }
    if (sp->python)
        read_python(s);
    kf_sandbox_own(s, scratch, 1);
    /* The process's own /proc entry: the CUDA driver writes there at cuInit
     * (its threads' names; without it: CUDA_ERROR_OPERATING_SYSTEM, seen
     * with driver 580 on an H200, bench/gpu/run.sh sandboxdiag). Only this
     * pid's: the rest of /proc (sysrq-trigger, sysctls) stays read-only
     * for a runner that keeps uid 0. */
    kf_sandbox_write(s, "/proc/self");
    /* Tools that write where HOME or TMPDIR say write in the scratch dir:
     * in SCRATCH/tmp where the agent made it, a tmpfs of a bounded size
     * private to the runner where the node allows (contain.h). */
    char tmp[PATH_MAX + 16], xdg[PATH_MAX + 32];
    struct stat st;
    snprintf(tmp, sizeof tmp, "%s/tmp", scratch);
    if (stat(tmp, &st) != 0 || !S_ISDIR(st.st_mode))
        snprintf(tmp, sizeof tmp, "%s", scratch);
    setenv("HOME", tmp, 1);
    setenv("TMPDIR", tmp, 1);
    snprintf(xdg, sizeof xdg, "%s/.cache", tmp);
    setenv("XDG_CACHE_HOME", xdg, 1);
    return s;
}

/* The artifact of sp as the runner loads it, and its torch extension. */
static void own_artifact(kf_sandbox *s, const Kfleet__TaskSpec *sp, const char *workdir)
{
    char key[65], so[PATH_MAX], ext[PATH_MAX];
    kf_err err;
    if (kf_build_artifact(workdir, sp->kernel_hash, kf_build_lang(sp), key, so, sizeof so, &err) !=
        KF_OK)
        return;
    kf_sandbox_own(s, so, 0);
    if (sp->python) { /* its own files (`files = [...]`), beside it */
        char files[PATH_MAX];
        kf_pyfiles_dir(so, files, sizeof files);
        kf_sandbox_own(s, files, 0);
    }
    if (kf_build_lang(sp) == KF_LANG_TORCH_EXT) {
        kf_build_ext_dir(so, ext, sizeof ext);
        kf_sandbox_own(s, ext, 0);
    }
}

int kf_confine_kcache_dir(const char *workdir, const char *hash, char *out, size_t len)
{
    size_t n = hash ? strlen(hash) : 0;
    if (!n || n > 128 || strspn(hash, "0123456789abcdefABCDEF") != n)
        return -1;
    if (out && (size_t)snprintf(out, len, "%s/kcache/%s", workdir, hash) >= len)
        return -1;
    return 0;
}

/* The kernel's own caches: SCRATCH/kcache where the agent put them there
 * (a tmpfs of the cache quota, agent/kcache.h), else WORKDIR/kcache/HASH,
 * made here. */
static void kernel_cache(kf_sandbox *s, const Kfleet__TaskSpec *sp, const char *workdir,
                         const char *scratch)
{
    char dir[PATH_MAX], sub[PATH_MAX + 16];
    if (kf_confine_kcache_dir(workdir, sp->kernel_hash, NULL, 0) != 0)
        return;
    struct stat st;
    snprintf(dir, sizeof dir, "%s/kcache", scratch);
    if ((stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) &&
        kf_confine_kcache_dir(workdir, sp->kernel_hash, dir, sizeof dir) != 0)
        return;
    if (kf_mkdirs(dir, 0700, NULL) != KF_OK)
        return;
    kf_sandbox_own(s, dir, 1);
    snprintf(sub, sizeof sub, "%s/triton", dir);
    setenv("TRITON_CACHE_DIR", sub, 1);
    snprintf(sub, sizeof sub, "%s/cuda", dir);
    setenv("CUDA_CACHE_PATH", sub, 1);
    snprintf(sub, sizeof sub, "%s/torch_extensions", dir);
    setenv("TORCH_EXTENSIONS_DIR", sub, 1);
}

#define LANDLOCK_ALL (KF_SB_LANDLOCK | KF_SB_LANDLOCK_TCP | KF_SB_SIGNAL)

/* The runner of a sweep with tools: the namespace, seccomp (Unix sockets
 * allowed: the tools are NVIDIA's code) and no_new_privs first, for the
 * tool host and the tools it starts; the host forked; then Landlock, a
 * second seccomp filter (no Unix or inet sockets) and no capability for
 * this process, which loads the kernel. */
static int confine_with_host(const Kfleet__TaskSpec *sp, const char *workdir, const char *scratch,
                             unsigned *missing, struct kf_toolhost **toolhost, kf_err *err)
{
    kf_sandbox *s = base(sp, workdir, scratch);
    kf_sandbox_skip(s, LANDLOCK_ALL);
    kf_sandbox_allow_loopback(s, 1); /* the tools talk to their target over loopback TCP */
    kf_sandbox_allow_unix(s, 1);
    unsigned outer = 0, inner = 0;
    int rc = kf_sandbox_enter(s, &outer, err);
    kf_sandbox_destroy(&s);
    char dir[PATH_MAX + 8];
    snprintf(dir, sizeof dir, "%s" KF_TOOLHOST_DIR_SUFFIX, scratch); /* beside it, not in it */
    if (rc == KF_OK)
        rc = kf_toolhost_start(workdir, dir, sp->kernel_hash, toolhost, err);
    if (rc != KF_OK)
        return rc;
    s = base(sp, workdir, scratch);
    kf_sandbox_skip(s, KF_SB_NETNS); /* the host's, which this process shares */
    if (sp->device_cuda)
        kf_sandbox_defer_unix(s); /* kf_confine_runner_finish, after cuInit */
    own_artifact(s, sp, workdir);
    kernel_cache(s, sp, workdir, scratch);
    rc = kf_sandbox_enter(s, &inner, err);
    kf_sandbox_destroy(&s);
    if (missing)
        *missing = (inner & ~KF_SB_NETNS) | (outer & KF_SB_NETNS);
    return rc;
}

int kf_confine_runner(const Kfleet__TaskSpec *sp, const char *workdir, const char *scratch,
                      unsigned *missing, struct kf_toolhost **toolhost, kf_err *err)
{
    if (missing)
        *missing = 0;
    if (!scratch || !kf_sandbox_enabled())
        return KF_OK;
    const Kfleet__MeasureSettings *ms = sp->measure;
    if (!sp->ncu_pass && ms && (ms->sanitize || ms->n_ncu_metrics > 0))
        return confine_with_host(sp, workdir, scratch, missing, toolhost, err);
    kf_sandbox *s = base(sp, workdir, scratch);
    if (sp->ncu_pass) {
        /* Under a tool, started by the tool host: Landlock for this
         * process (its /proc/PID is base()'s /proc/self, resolved now),
         * in the host's namespace, loopback TCP allowed: the tool's
         * library injected here talks to the tool over it. The signal
         * scope stays (no signal to the tool, the host or the agent). */
        kf_sandbox_skip(s, KF_SB_NETNS);
        kf_sandbox_allow_loopback(s, 1);
    }
    if (sp->device_cuda)
        kf_sandbox_defer_unix(s); /* kf_confine_runner_finish, after cuInit */
    own_artifact(s, sp, workdir);
    if (sp->problem_hash && *sp->problem_hash) {
        /* A candidate's task loads its problem too (docs/problems.md). */
        Kfleet__TaskSpec ps;
        kf_taskspec_problem(sp, &ps);
        own_artifact(s, &ps, workdir);
    }
    kernel_cache(s, sp, workdir, scratch);
    int rc = kf_sandbox_enter(s, missing, err);
    kf_sandbox_destroy(&s);
    return rc;
}

int kf_confine_runner_finish(const Kfleet__TaskSpec *sp, const char *scratch, unsigned *missing,
                             kf_err *err)
{
    if (!scratch || !kf_sandbox_enabled() || !sp->device_cuda)
        return KF_OK; /* nothing was deferred */
    return kf_sandbox_deny_unix(missing, err);
}

kf_sandbox *kf_confine_build(const Kfleet__TaskSpec *sp, const char *workdir, const char *scratch)
{
    if (!scratch || !kf_sandbox_enabled())
        return NULL;
    kf_sandbox *s = base(sp, workdir, scratch);
    if (sp->kernel_hash && *sp->kernel_hash)
        own_artifact(s, sp, workdir); /* cuobjdump inspects a cached one */
    return s;
}

/* build — compiles kernels into the agent's artifact cache; see build.h.
 *
 * How it works: the key is computed first (it needs the compiler's version,
 * so a node without the compiler fails here with a message that says so).
 * A cached artifact is only hashed. Otherwise the sources go into the
 * task's scratch dir — the same tmp/<task>-<attempt>/ the agent made for the
 * runner and removes after it — and the compiler runs there, by fork and
 * execvp (no shell parses the flags), with its output captured in
 * compile.log. Relative file names on the command line make the compiler's
 * messages read "kernel.c:6:12: error ..." rather than a scratch path. The
 * finished .so reaches the cache by rename, after its JSON sidecar, so a
 * reader sees either no artifact or a complete one with its record. */
#include "runner/build.h"
#include "runner/cgroup.h"
#include "common/json.h"
#include "common/xalloc.h"
#include "runner/cudrv.h"
#include "runner/proc.h"
#include "runner/pyenv.h"
#include "runner/pyext.h"
#include "runner/pyfiles.h"
#include "common/util.h"
#include "runner/compat.h"
#include "common/wire.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#define NVCC_FALLBACK "/usr/local/cuda/bin/nvcc"

/* Names in the scratch dir that belong to the agent (task.pb, runner.log)
 * or to the build itself; a source by one of these names would clobber it. */
static const char *const reserved_names[] = {"task.pb",     "runner.log", "kernel.so",
                                             "compile.log", "ext.build",  "stale.ext"};

/* Where a torch extension is built in the scratch dir (a reserved name). */
#define EXT_OUT "ext.build"

/* $KF_CC / $KF_NVCC as given, else cc / nvcc from PATH; nvcc also from the
 * toolkit's usual place, which a service's PATH often lacks. */
static const char *compiler_path(int cuda)
{
    const char *env = getenv(cuda ? "KF_NVCC" : "KF_CC");
    if (env && *env)
        return env;
    char found[PATH_MAX];
    if (cuda && !kf_find_exe("nvcc", found, sizeof found) && access(NVCC_FALLBACK, X_OK) == 0)
        return NVCC_FALLBACK;
    return cuda ? "nvcc" : "cc";
}

/* Runs `cc --version`; fills out with what it printed. Returns 0 when it
 * exited 0, else KF_ENOTFOUND. */
static int run_version(const char *cc, kf_buf *out)
{
    char *argv[] = {(char *)cc, "--version", NULL};
    int st = kf_proc_capture(argv, out, 1 << 20);
    return st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? KF_OK : KF_ENOTFOUND;
}

/* Copies the line at s (without its newline and trailing blanks) to out. */
static void copy_line(const char *s, char *out, size_t len)
{
    size_t n = strcspn(s, "\r\n");
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    snprintf(out, len, "%.*s", (int)n, s);
}

typedef struct version_memo {
    char path[PATH_MAX]; /* the compiler it was asked of; "" = not yet */
    int rc;
    char line[512];
} version_memo;

int kf_build_compiler_version(int lang, const char **out, kf_err *err)
{
    if (kf_build_is_python(lang)) {
        const kf_pyenv *py;
        int rc = kf_pyenv_get(&py, err);
        *out = py->identity;
        return rc;
    }
    int cuda = lang == KF_LANG_CUDA;
    /* A per-process memo, as the brief for the runner asks: the key is
     * computed by every task kind, and a compiler takes tens of ms to say
     * its version. Keyed by the path, so a changed $KF_CC is seen. */
    static version_memo memo[2];
    version_memo *m = &memo[cuda ? 1 : 0];
    const char *cc = compiler_path(cuda);
    if (strcmp(m->path, cc) != 0) {
        snprintf(m->path, sizeof m->path, "%s", cc);
        m->line[0] = '\0';
        kf_buf text = KF_BUF_INIT;
        m->rc = run_version(cc, &text);
        const char *rel = cuda ? strstr(text.data, "release ") : NULL;
        if (rel) {
            while (rel > text.data && rel[-1] != '\n')
                rel--;
            copy_line(rel, m->line, sizeof m->line);
        } else {
            copy_line(text.data + strspn(text.data, "\r\n"), m->line, sizeof m->line);
        }
        kf_buf_release(&text);
        if (m->rc == KF_OK && !m->line[0])
            m->rc = KF_ENOTFOUND;
    }
    *out = m->line;
    if (m->rc != KF_OK)
        return kf_err_set(err, KF_ENOTFOUND,
                          "compiler %s does not run (`%s --version` failed) on this node; "
                          "install it or set %s",
                          cc, cc, cuda ? "KF_NVCC" : "KF_CC");
    return KF_OK;
}

/* The CUDA arch to build for: KF_CUDA_ARCH (e.g. "90a"), else the GPU's
 * compute capability as libcuda reports it ("90a" on Hopper, where wgmma
 * needs the arch-specific target), else "native". */
static void cuda_arch(char *out, size_t len)
{
    const char *env = getenv("KF_CUDA_ARCH");
    int major = 0, minor = 0;
    if (env && *env)
        snprintf(out, len, "%s", env);
    else if (kf_cudrv_compute_capability(0, &major, &minor) == KF_OK && major > 0)
        kf_build_arch_name(major, minor, out, len);
    else
        snprintf(out, len, "native");
}

int kf_build_cache_key(const char *kernel_hash, int lang, char out[65], kf_err *err)
{
    const char *ver;
    int rc = kf_build_compiler_version(lang, &ver, err);
    if (rc != KF_OK)
        return rc;
    struct utsname u;
    if (uname(&u) != 0)
        return kf_err_set(err, KF_EIO, "uname: %s", strerror(errno));
    char arch[64] = "";
    if (lang == KF_LANG_CUDA || lang == KF_LANG_TORCH_EXT)
        cuda_arch(arch, sizeof arch);
    /* A torch extension's .cu is compiled by nvcc: its release too. */
    const char *nvcc = "";
    if (lang == KF_LANG_TORCH_EXT && kf_build_compiler_version(KF_LANG_CUDA, &nvcc, NULL) != KF_OK)
        nvcc = "";
    /* Each part with its NUL: no two different part lists hash the same. */
    kf_hash_part parts[] = {{kernel_hash, strlen(kernel_hash) + 1},
                            {ver, strlen(ver) + 1},
                            {u.machine, strlen(u.machine) + 1},
                            {arch, strlen(arch) + 1},
                            {nvcc, strlen(nvcc) + 1}};
    kf_hash_hex(parts, lang == KF_LANG_TORCH_EXT ? 5 : 4, out);
    return KF_OK;
}

int kf_build_artifact(const char *workdir, const char *kernel_hash, int lang, char key[65],
                      char *path, size_t len, kf_err *err)
{
    int rc = kf_build_cache_key(kernel_hash ? kernel_hash : "", lang, key, err);
    if (rc != KF_OK)
        return rc;
    int w =
        snprintf(path, len, "%s/cache/%s.%s", workdir, key, kf_build_is_python(lang) ? "py" : "so");
    if (w < 0 || (size_t)w >= len)
        return kf_err_set(err, KF_EINVAL, "work dir path too long: %s", workdir);
    return KF_OK;
}

void kf_build_ext_dir(const char *artifact, char *out, size_t len)
{
    size_t n = strlen(artifact);
    snprintf(out, len, "%.*s.ext", (int)(n > 3 ? n - 3 : n), artifact);
}

int kf_build_file_hash(const char *path, char out[65])
{
    kf_buf b = KF_BUF_INIT;
    int rc = kf_buf_read_file(&b, path);
    if (rc == KF_OK) {
        kf_hash_part part = {b.data, b.len};
        kf_hash_hex(&part, 1, out);
    }
    kf_buf_release(&b);
    return rc;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n > m && strcmp(s + n - m, suffix) == 0;
}

static const char *source_suffix(const Kfleet__TaskSpec *sp)
{
    return sp->python ? ".py" : sp->device_cuda ? ".cu" : ".c";
}

/* Writes the sources into dir; *kernel is the one to compile: the first
 * .cu (CUDA) or .c (host) file. Names are plain file names, nothing that
 * could leave dir or clobber the agent's files. */
static int write_sources(const Kfleet__TaskSpec *sp, const char *dir, const char **kernel,
                         kf_buf *text, kf_err *err)
{
    *kernel = NULL;
    for (size_t i = 0; i < sp->n_sources; i++) {
        const char *name = sp->sources[i]->name;
        if (!name || !*name || strchr(name, '/') || name[0] == '.')
            return kf_err_set(err, KF_EINVAL, "source file name '%s' refused: plain names only",
                              name ? name : "");
        for (size_t r = 0; r < sizeof reserved_names / sizeof *reserved_names; r++)
            if (strcmp(name, reserved_names[r]) == 0)
                return kf_err_set(err, KF_EINVAL, "source file name '%s' is reserved", name);
        char path[PATH_MAX];
        if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
            return kf_err_set(err, KF_EINVAL, "source path too long: %s/%s", dir, name);
        int rc = kf_write_file(path, sp->sources[i]->content.data, sp->sources[i]->content.len,
                               0600, err);
        if (rc != KF_OK)
            return rc;
        if (!*kernel && ends_with(name, source_suffix(sp))) {
            *kernel = name;
            /* A view, not a copy: the spec outlives the build. */
            text->data = (char *)sp->sources[i]->content.data;
            text->len = sp->sources[i]->content.len;
        }
    }
    if (!*kernel)
        return kf_err_set(err, KF_EINVAL, "none of the %zu source files is a %s file to compile",
                          sp->n_sources, source_suffix(sp));
    return KF_OK;
}

int kf_build_source_flags(const char *text, size_t len, char ***argv, size_t *argc, kf_err *err)
{
    static const char tag[] = "//@kfleet flags:";
    const char *p = text, *end = text + len;
    int line = 1;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        const char *q = p;
        while (q < le && (*q == ' ' || *q == '\t'))
            q++;
        if ((size_t)(le - q) >= sizeof tag - 1 && memcmp(q, tag, sizeof tag - 1) == 0) {
            q += sizeof tag - 1;
            while (q < le) {
                while (q < le && (*q == ' ' || *q == '\t' || *q == '\r'))
                    q++;
                const char *w = q;
                while (q < le && *q != ' ' && *q != '\t' && *q != '\r')
                    q++;
                if (q == w)
                    break;
                if (*argc >= 64)
                    return kf_err_set(err, KF_EINVAL,
                                      "line %d: more than 64 //@kfleet flags; keep the list short",
                                      line);
                *argv = kf_xrealloc(*argv, (*argc + 1) * sizeof **argv);
                char *word = kf_xmalloc((size_t)(q - w) + 1);
                memcpy(word, w, (size_t)(q - w));
                word[q - w] = '\0';
                (*argv)[(*argc)++] = word;
            }
        }
        p = nl ? nl + 1 : end;
        line++;
    }
    return KF_OK;
}

/* The toolkit's directory (…/cuda-13.0) from the nvcc that builds, so its
 * lib64 and cuobjdump are the ones that match. "" when not found. */
static void toolkit_dir(char *out, size_t len)
{
    char exe[PATH_MAX], real[PATH_MAX];
    out[0] = '\0';
    if (!kf_find_exe(compiler_path(1), exe, sizeof exe) || !realpath(exe, real))
        return;
    char *slash = strrchr(real, '/');
    if (slash)
        *slash = '\0'; /* …/bin */
    slash = strrchr(real, '/');
    if (slash && strcmp(slash, "/bin") == 0)
        *slash = '\0';
    snprintf(out, len, "%s", real);
}

typedef struct cmdline {
    char **argv;
    size_t n;
    char **owned; /* strings to free: the source's flags, the rpath */
    size_t nowned;
    char gencode[2][96];
} cmdline;

static void cmdline_free(cmdline *c)
{
    for (size_t i = 0; i < c->nowned; i++)
        free(c->owned[i]);
    free(c->owned);
    free(c->argv);
    memset(c, 0, sizeof *c);
}

/* The compiler's command line: fixed arguments, the sweep's flags, then the
 * source's own //@kfleet flags. */
static int command(const Kfleet__TaskSpec *sp, const char *kernel, const kf_buf *source, cmdline *c,
                   kf_err *err)
{
    memset(c, 0, sizeof *c);
    int rc = kf_build_source_flags(source->data, source->len, &c->owned, &c->nowned, err);
    if (rc != KF_OK)
        return rc;
    char tk[PATH_MAX] = "", rpath[PATH_MAX + 16] = "";
    if (sp->device_cuda) {
        toolkit_dir(tk, sizeof tk);
        if (tk[0]) {
            snprintf(rpath, sizeof rpath, "-rpath=%s/lib64", tk);
            c->owned = kf_xrealloc(c->owned, (c->nowned + 1) * sizeof *c->owned);
            c->owned[c->nowned++] = kf_xstrdup(rpath);
        }
    }
    c->argv = kf_xcalloc(sp->n_flags + c->nowned + 28, sizeof *c->argv);
    char **argv = c->argv;
    size_t n = 0;
    argv[n++] = (char *)compiler_path(sp->device_cuda);
    if (sp->device_cuda) {
        char arch[64];
        cuda_arch(arch, sizeof arch);
        const char *cu[] = {
            "-O3",   "-std=c++17", "-shared", "-Xcompiler",
            "-fPIC", "-Xptxas",    "-v"}; /* -v: registers and spills for BuildInfo */
        for (size_t i = 0; i < sizeof cu / sizeof *cu; i++)
            argv[n++] = (char *)cu[i];
        if (strcmp(arch, "native") == 0) {
            argv[n++] = "-arch=native";
        } else {
            /* Machine code for this GPU, plus PTX so a newer GPU can JIT it. */
            snprintf(c->gencode[0], 96, "-gencode=arch=compute_%s,code=sm_%s", arch, arch);
            snprintf(c->gencode[1], 96, "-gencode=arch=compute_%s,code=compute_%s", arch, arch);
            argv[n++] = c->gencode[0];
            argv[n++] = c->gencode[1];
        }
    } else {
        const char *host[] = {"-std=gnu11", "-O2", "-march=native", "-fPIC", "-shared"};
        for (size_t i = 0; i < sizeof host / sizeof *host; i++)
            argv[n++] = (char *)host[i];
    }
    argv[n++] = "-I.";
    argv[n++] = "-o";
    argv[n++] = "kernel.so";
    argv[n++] = (char *)kernel;
    for (size_t i = 0; i < sp->n_flags; i++)
        argv[n++] = sp->flags[i];
    size_t nsrc = c->nowned - (rpath[0] ? 1 : 0);
    for (size_t i = 0; i < nsrc; i++)
        argv[n++] = c->owned[i];
    if (rpath[0]) {
        argv[n++] = "-Xlinker";
        argv[n++] = c->owned[nsrc];
    }
    if (!sp->device_cuda)
        argv[n++] = "-lm";
    argv[n] = NULL;
    c->n = n;
    return KF_OK;
}

/* Runs the compiler in dir with its output in dir/compile.log (read into
 * bi->log); classifies a failure. */
static int compile(const Kfleet__TaskSpec *sp, const char *dir, const char *kernel,
                   const kf_buf *source, kf_build_info *bi, kf_err *err)
{
    char logp[PATH_MAX];
    if (snprintf(logp, sizeof logp, "%s/compile.log", dir) >= (int)sizeof logp)
        return kf_err_set(err, KF_EINVAL, "scratch path too long: %s", dir);
    cmdline cl;
    int rc = command(sp, kernel, source, &cl, err);
    if (rc != KF_OK) {
        cmdline_free(&cl);
        return rc;
    }
    char **argv = cl.argv;
    int fd = open(logp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        int e = errno;
        cmdline_free(&cl);
        return kf_err_set(err, KF_EIO, "cannot prepare the compile in %s: %s", dir, strerror(e));
    }
    kf_cgroup_events ev0, ev1;
    kf_cgroup_self_events(&ev0); /* its group's OOM kills so far (cgroup.h) */
    uint64_t t0 = kf_mono_ns();
    pid_t pid = kf_proc_spawn(argv, fd, dir);
    int e = errno;
    close(fd);
    int st = pid > 0 ? kf_proc_wait(pid) : -1;
    bi->compile_s = (double)(kf_mono_ns() - t0) / 1e9;
    char cc[PATH_MAX];
    snprintf(cc, sizeof cc, "%s", argv[0]);
    cmdline_free(&cl);
    if (st < 0)
        return kf_err_set(err, KF_EIO, "compile failed: cannot run %s: %s", cc,
                          strerror(pid > 0 ? errno : e));
    if (kf_buf_read_file(&bi->log, logp) != KF_OK)
        return kf_err_set(err, KF_EIO, "cannot read the compiler's output %s: %s", logp,
                          strerror(errno));
    if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
        return kf_err_set(err, KF_ENOTFOUND,
                          "compile failed: compiler %s not found on this node; install it or "
                          "set %s",
                          cc, sp->device_cuda ? "KF_NVCC" : "KF_CC");
    if (WIFEXITED(st) && WEXITSTATUS(st) == 126)
        return kf_err_set(err, KF_EIO, "compile failed: cannot start %s in %s", cc, dir);
    if ((WIFSIGNALED(st) || WEXITSTATUS(st) != 0) && kf_cgroup_self_events(&ev1) == 0 &&
        ev1.oom_kills > ev0.oom_kills) {
        /* The compiler (cc1, cicc, ptxas: the driver only reports "Killed")
         * met the runner's memory limit: the kernel's source's verdict. */
        bi->rejected = 1;
        return kf_err_set(err, KF_EINVAL,
                          "compile failed: the compiler used more than %.2f GiB, the build "
                          "runner's memory limit (the sweep's memory_limit, else the agent's): "
                          "the out-of-memory killer ended it inside the runner's control group",
                          (double)ev1.memory_max / (1u << 30));
    }
    if (WIFSIGNALED(st)) {
        bi->rejected = 1;
        return kf_err_set(err, KF_EINVAL, "compile failed: %s killed by signal %d", cc,
                          WTERMSIG(st));
    }
    if (WEXITSTATUS(st) != 0) {
        bi->rejected = 1;
        return kf_err_set(err, KF_EINVAL, "compile failed");
    }
    return KF_OK;
}

/* Writes cache/<key>.json: what built the artifact, for a person or a
 * cleanup tool looking at the cache. */
static int write_sidecar(const Kfleet__TaskSpec *sp, const char *workdir, const kf_build_info *bi,
                         kf_err *err)
{
    json_t *o = json_object(), *flags = json_array();
    for (size_t i = 0; o && flags && i < sp->n_flags; i++)
        json_array_append_new(flags, kf_json_str(sp->flags[i]));
    json_object_set_new(o, "kernel", kf_json_str(sp->kernel ? sp->kernel : ""));
    json_object_set_new(o, "kernel_hash", kf_json_str(sp->kernel_hash));
    json_object_set_new(o, "key", kf_json_str(bi->key));
    json_object_set_new(o, "artifact_hash", kf_json_str(bi->artifact_hash));
    json_object_set_new(o, "compiler", kf_json_str(bi->compiler));
    json_object_set_new(o, "flags", flags);
    json_object_set_new(o, "compile_s", json_real(bi->compile_s));
    json_object_set_new(o, "forward_compat", kf_json_str(bi->forward_compat));
    json_object_set_new(o, "torch_extension", kf_json_str(bi->torch_ext));
    json_object_set_new(o, "built_by", kf_json_str(bi->built_by));
    json_object_set_new(o, "registers", json_integer(bi->registers));
    json_object_set_new(o, "shared_bytes", json_integer(bi->shared_bytes));
    json_object_set_new(o, "stack_bytes", json_integer(bi->stack_bytes));
    json_object_set_new(o, "spill_bytes", json_integer(bi->spill_bytes));
    char *text = o ? kf_json_dumps(o, JSON_INDENT(2) | JSON_SORT_KEYS) : NULL;
    json_decref(o);
    if (!text)
        return kf_err_set(err, KF_ENOMEM, "out of memory for the build record");
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/cache/%s.json", workdir, bi->key);
    int rc = kf_write_file(path, text, strlen(text), 0600, err);
    free(text);
    return rc;
}

/* A cached artifact's resource usage, which only its compile printed: from
 * its sidecar (none in one written before these fields: zeros). */
static void read_sidecar(const char *workdir, kf_build_info *bi)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/cache/%s.json", workdir, bi->key);
    json_t *o = json_load_file(path, 0, NULL);
    if (!json_is_object(o)) {
        json_decref(o);
        return;
    }
    bi->registers = (int)json_integer_value(json_object_get(o, "registers"));
    bi->shared_bytes = (int)json_integer_value(json_object_get(o, "shared_bytes"));
    bi->stack_bytes = (int)json_integer_value(json_object_get(o, "stack_bytes"));
    bi->spill_bytes = (int)json_integer_value(json_object_get(o, "spill_bytes"));
    json_decref(o);
}

/* "13.0" from nvcc's "Cuda compilation tools, release 13.0, V13.0.88". */
static void nvcc_release(const char *line, char *out, size_t len)
{
    const char *r = strstr(line, "release ");
    out[0] = '\0';
    if (r)
        snprintf(out, len, "%.*s", (int)strspn(r + 8, "0123456789."), r + 8);
}

int kf_build_toolkit(char *dir, size_t dlen, char *cuda, size_t clen)
{
    const char *line;
    kf_err err;
    if (kf_build_compiler_version(KF_LANG_CUDA, &line, &err) != KF_OK)
        return KF_ENOTFOUND;
    nvcc_release(line, cuda, clen);
    toolkit_dir(dir, dlen);
    return KF_OK;
}

/* An nvcc newer than the driver builds code the driver cannot load, unless
 * the toolkit's forward-compatibility libraries stand in for the driver's:
 * caught here, before any launch. A runner the agent started with those
 * libraries first on its path says so in KF_CUDA_COMPAT_DIR (its libcuda is
 * then the toolkit's, and reports the toolkit's version). A node without a
 * driver (a build-only node, the tests) has nothing to compare with and
 * passes. */
static int check_driver(const char *nvcc_line, kf_build_info *bi, kf_err *err)
{
    nvcc_release(nvcc_line, bi->nvcc_cuda, sizeof bi->nvcc_cuda);
    int dv = 0;
    if (kf_cudrv_driver_version(&dv) != KF_OK)
        dv = 0;
    kf_compat_driver_cuda(dv, bi->driver_cuda, sizeof bi->driver_cuda);
    const char *active = getenv("KF_CUDA_COMPAT_DIR");
    if (active && *active) {
        snprintf(bi->forward_compat, sizeof bi->forward_compat, "%s", active);
        return KF_OK;
    }
    char tk[PATH_MAX];
    toolkit_dir(tk, sizeof tk);
    return kf_compat_check(tk, bi->nvcc_cuda, bi->driver_cuda, NULL, bi->forward_compat,
                           sizeof bi->forward_compat, err);
}

/* Which machine code and PTX the artifact holds, by the toolkit's
 * cuobjdump; without one, what the gencode flags asked for. Then whether
 * this node's GPU has machine code to run. */
static void inspect(const char *so, kf_build_info *bi)
{
    char tk[PATH_MAX], tool[PATH_MAX + 16];
    toolkit_dir(tk, sizeof tk);
    snprintf(tool, sizeof tool, "%s/bin/cuobjdump", tk);
    int done = 0;
    if (tk[0] && access(tool, X_OK) == 0) {
        char *argv[] = {tool, "--list-elf", "--list-ptx", (char *)so, NULL};
        kf_buf out = KF_BUF_INIT;
        int st = kf_proc_capture(argv, &out, 1 << 20);
        if (st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0 && out.data) {
            kf_build_parse_cuobjdump(out.data, bi->sass_archs, sizeof bi->sass_archs, &bi->has_ptx);
            done = 1;
        }
        kf_buf_release(&out);
    }
    if (!done) {
        char arch[64];
        cuda_arch(arch, sizeof arch);
        if (strcmp(arch, "native") != 0)
            snprintf(bi->sass_archs, sizeof bi->sass_archs, "sm_%s", arch);
        bi->has_ptx = strcmp(arch, "native") != 0;
    }
    int major = 0, minor = 0;
    if (kf_cudrv_compute_capability(0, &major, &minor) != KF_OK || major <= 0)
        return; /* no GPU here: nothing to fall back on */
    int native = 0;
    char list[sizeof bi->sass_archs];
    snprintf(list, sizeof list, "%s", bi->sass_archs);
    for (char *save = NULL, *a = strtok_r(list, ",", &save); a; a = strtok_r(NULL, ",", &save))
        native |= kf_build_sass_runs_on(a, major, minor);
    bi->jit_fallback = !native;
}

int kf_build_artifact_hash(const char *path, const char *ext_dir, char *line, size_t linelen,
                           char out[65], kf_err *err)
{
    if (!ext_dir || !*ext_dir) {
        if (kf_build_file_hash(path, out) != KF_OK)
            return kf_err_set(err, KF_EIO, "cannot read the artifact %s: %s", path,
                              strerror(errno));
        return KF_OK;
    }
    char so[PATH_MAX], dummy[512];
    int rc = kf_pyext_describe(ext_dir, line ? line : dummy, line ? linelen : sizeof dummy, so,
                               sizeof so, err);
    if (rc != KF_OK)
        return rc;
    kf_buf a = KF_BUF_INIT, b = KF_BUF_INIT;
    if (kf_buf_read_file(&a, path) != KF_OK || kf_buf_read_file(&b, so) != KF_OK) {
        int e = errno;
        kf_buf_release(&a);
        kf_buf_release(&b);
        return kf_err_set(err, KF_EIO, "cannot read the built extension %s: %s", so, strerror(e));
    }
    kf_hash_part parts[] = {{a.data, a.len}, {b.data, b.len}};
    kf_hash_hex(parts, 2, out);
    kf_buf_release(&a);
    kf_buf_release(&b);
    return KF_OK;
}

/* A torch-extension artifact: its record line into bi->torch_ext, and one
 * hash of the .py and the built module together. */
static int ext_artifact(const char *py_path, const char *ext_dir, kf_build_info *bi, kf_err *err)
{
    return kf_build_artifact_hash(py_path, ext_dir, bi->torch_ext, sizeof bi->torch_ext,
                                  bi->artifact_hash, err);
}

/* Builds a Python kernel's torch extension from the sources in scratch
 * into scratch/EXT_OUT, for this GPU's arch with the agent's nvcc. */
static int build_extension(const kf_pyenv *py, const Kfleet__TaskSpec *sp, const char *scratch,
                           kf_build_info *bi, kf_err *err)
{
    char out[PATH_MAX + 16], arch[64];
    snprintf(out, sizeof out, "%s/" EXT_OUT, scratch);
    cuda_arch(arch, sizeof arch);
    return kf_pyext_build(py, sp, scratch, out, arch, compiler_path(1), &bi->log, &bi->rejected,
                          err);
}

/* Writes another agent's artifact (sp->artifact) to `so` in the scratch
 * dir. 0 when its bytes hash to what the coordinator said; else 1 (the
 * caller compiles: a damaged copy costs a compile, never a wrong binary). */
static int install_shared(const Kfleet__TaskSpec *sp, const char *so, kf_build_info *bi)
{
    char got[65];
    kf_hash_part part = {sp->artifact.data, sp->artifact.len};
    kf_hash_hex(&part, 1, got);
    if (!sp->artifact_hash || strcmp(got, sp->artifact_hash) != 0 ||
        kf_write_file(so, sp->artifact.data, sp->artifact.len, 0700, NULL) != KF_OK)
        return 1;
    snprintf(bi->built_by, sizeof bi->built_by, "%s",
             sp->artifact_built_by && *sp->artifact_built_by ? sp->artifact_built_by : "?");
    const Kfleet__BuildInfo *src = sp->artifact_build;
    if (src) { /* only its compile printed these */
        bi->registers = src->registers;
        bi->shared_bytes = src->shared_bytes;
        bi->stack_bytes = src->stack_bytes;
        bi->spill_bytes = src->spill_bytes;
    }
    return 0;
}

/* The artifact's bytes for the coordinator to hand to agents with this
 * toolchain, when it asked. Too big or unreadable: none (they compile). */
static void attach_artifact(const Kfleet__TaskSpec *sp, const char *so, kf_build_info *bi)
{
    char why[256];
    if (!sp->want_artifact || bi->built_by[0] ||
        kf_buf_read_file_max(&bi->artifact, so, KF_MAX_SHARED_ARTIFACT, why, sizeof why) != KF_OK)
        kf_buf_release(&bi->artifact);
}

int kf_build_kernel(const Kfleet__TaskSpec *sp, const char *workdir, const char *scratch,
                    kf_build_info *bi, kf_err *err)
{
    memset(bi, 0, sizeof *bi);
    kf_buf_init(&bi->log);
    kf_buf_init(&bi->artifact);
    if (sp->n_sources == 0 || !sp->kernel_hash || !*sp->kernel_hash)
        return kf_err_set(err, KF_EINVAL, "build task without sources or kernel hash");
    char so[PATH_MAX], dir[PATH_MAX];
    int lang = kf_build_lang(sp);
    int rc = kf_build_artifact(workdir, sp->kernel_hash, lang, bi->key, so, sizeof so, err);
    if (rc != KF_OK)
        return rc;
    const char *ver;
    kf_build_compiler_version(lang, &ver, NULL); /* memoized: cannot fail now */
    snprintf(bi->compiler, sizeof bi->compiler, "%s", ver);
    if (lang == KF_LANG_CUDA && (rc = check_driver(ver, bi, err)) != KF_OK)
        return rc;
    char ext[PATH_MAX] = "";
    if (lang == KF_LANG_TORCH_EXT)
        kf_build_ext_dir(so, ext, sizeof ext);
    if (ext[0] && access(so, F_OK) == 0) {
        /* A .py without its extension (removed by hand) builds anew. */
        char rec[PATH_MAX + 16];
        snprintf(rec, sizeof rec, "%s/record.json", ext);
        if (access(rec, F_OK) == 0) {
            bi->cached = 1;
            return ext_artifact(so, ext, bi, err);
        }
    } else if (access(so, F_OK) == 0 && kf_pyfiles_present(sp, so)) {
        bi->cached = 1;
        if (kf_build_file_hash(so, bi->artifact_hash) != KF_OK)
            return kf_err_set(err, KF_EIO, "cannot read the cached artifact %s: %s", so,
                              strerror(errno));
        if (lang == KF_LANG_CUDA) {
            inspect(so, bi);
            read_sidecar(workdir, bi);
        }
        attach_artifact(sp, so, bi);
        return KF_OK;
    }
    uint64_t free_b;
    if (kf_free_bytes(workdir, &free_b) != KF_OK)
        return kf_err_set(err, KF_EIO, "cannot read the free space of work dir %s: %s", workdir,
                          strerror(errno));
    if (free_b < KF_BUILD_MIN_FREE)
        return kf_err_set(err, KF_EFULL,
                          "work dir %s has %llu MiB free, builds need %llu MiB; free space and "
                          "retry",
                          workdir, (unsigned long long)(free_b >> 20),
                          (unsigned long long)(KF_BUILD_MIN_FREE >> 20));
    snprintf(dir, sizeof dir, "%s/cache", workdir);
    const char *kernel;
    kf_buf text = KF_BUF_INIT;
    if ((rc = kf_mkdirs(dir, 0700, err)) != KF_OK || (rc = kf_mkdirs(scratch, 0700, err)) ||
        (rc = write_sources(sp, scratch, &kernel, &text, err)) != KF_OK)
        return rc;
    if (kf_build_is_python(lang)) {
        /* The artifact is the source itself, checked to compile in the
         * node's Python: a syntax error fails the build, not each task. */
        const kf_pyenv *py;
        uint64_t t0 = kf_mono_ns();
        snprintf(dir, sizeof dir, "%s/%s", scratch, kernel);
        if ((rc = kf_pyenv_get(&py, err)) != KF_OK)
            return rc;
        rc = kf_pyenv_compile(py, dir, kernel, &bi->log, err);
        if (rc == KF_OK && ext[0])
            rc = build_extension(py, sp, scratch, bi, err);
        bi->compile_s = (double)(kf_mono_ns() - t0) / 1e9;
        if (rc != KF_OK) {
            bi->rejected |= rc == KF_EINVAL;
            return rc;
        }
    } else {
        snprintf(dir, sizeof dir, "%s/kernel.so", scratch);
        if ((sp->artifact.len == 0 || install_shared(sp, dir, bi) != 0) &&
            (rc = compile(sp, scratch, kernel, &text, bi, err)) != KF_OK)
            return rc;
    }
    char built_ext[PATH_MAX + 16];
    snprintf(built_ext, sizeof built_ext, "%s/" EXT_OUT, scratch);
    if (ext[0] && (rc = ext_artifact(dir, built_ext, bi, err)) != KF_OK)
        return rc;
    if (!ext[0] && kf_build_file_hash(dir, bi->artifact_hash) != KF_OK)
        return kf_err_set(err, KF_EIO, "the compiler exited 0 but %s cannot be read: %s", dir,
                          strerror(errno));
    if (lang == KF_LANG_CUDA) {
        if (!bi->built_by[0]) /* an installed artifact's came with it */
            kf_cudrv_parse_ptxas(bi->log.data, &bi->registers, &bi->shared_bytes, &bi->stack_bytes,
                                 &bi->spill_bytes);
        inspect(dir, bi);
    }
    if ((rc = write_sidecar(sp, workdir, bi, err)) != KF_OK)
        return rc;
    /* The extension first: a reader that sees the .py finds it complete.
     * One left by a build that died before its .py is moved aside into
     * the scratch dir, which the agent removes. */
    if (ext[0] && rename(built_ext, ext) != 0) {
        char stale[PATH_MAX + 16];
        snprintf(stale, sizeof stale, "%s/stale.ext", scratch);
        if ((errno != ENOTEMPTY && errno != EEXIST) || rename(ext, stale) != 0 ||
            rename(built_ext, ext) != 0)
            return kf_err_set(err, KF_EIO, "cannot move the extension into %s: %s", ext,
                              strerror(errno));
    }
    if (sp->n_files && (rc = kf_pyfiles_install(sp, scratch, so, err)) != KF_OK)
        return rc;
    if (rename(dir, so) != 0)
        return kf_err_set(err, KF_EIO, "cannot move the artifact into %s: %s", so, strerror(errno));
    if (!ext[0])
        attach_artifact(sp, so, bi);
    return KF_OK;
}

void kf_build_info_release(kf_build_info *bi)
{
    kf_buf_release(&bi->log);
    kf_buf_release(&bi->artifact);
}

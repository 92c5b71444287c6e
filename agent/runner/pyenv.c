/* pyenv — see pyenv.h. */
#include "runner/pyenv.h"
#include "runner/proc.h"
#include "runner/pysrc.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static void copy_str(json_t *o, const char *key, char *out, size_t len)
{
    const char *s = json_string_value(json_object_get(o, key));
    snprintf(out, len, "%s", s ? s : "");
}

static const char *interpreter(void)
{
    const char *env = getenv("KF_PYTHON");
    return env && *env ? env : "python3";
}

/* Fills m from the probe's JSON; 0, or -1 when it is not what pyprobe.py
 * prints. */
static int parse(const char *text, kf_pyenv *m)
{
    json_error_t je;
    json_t *o = json_loads(text, 0, &je);
    if (!json_is_object(o)) {
        json_decref(o);
        return -1;
    }
    copy_str(o, "executable", m->executable, sizeof m->executable);
    copy_str(o, "version", m->version, sizeof m->version);
    copy_str(o, "base_prefix", m->base_prefix, sizeof m->base_prefix);
    copy_str(o, "base_exec_prefix", m->base_exec_prefix, sizeof m->base_exec_prefix);
    copy_str(o, "torch_cuda", m->torch_cuda, sizeof m->torch_cuda);
    copy_str(o, "torch_cxx11_abi", m->torch_abi, sizeof m->torch_abi);
    json_t *libs = json_object_get(o, "libpython");
    const char *lib = json_string_value(json_array_get(libs, 0));
    snprintf(m->libpython, sizeof m->libpython, "%s", lib ? lib : "");
    json_t *pk = json_object_get(o, "packages");
    copy_str(pk, "numpy", m->numpy, sizeof m->numpy);
    copy_str(pk, "torch", m->torch, sizeof m->torch);
    copy_str(pk, "triton", m->triton, sizeof m->triton);
    copy_str(pk, "cupy", m->cupy, sizeof m->cupy);
    free(m->path_json);
    m->path_json = json_dumps(json_object_get(o, "path"), JSON_COMPACT | JSON_ENSURE_ASCII);
    json_decref(o);
    if (!m->version[0] || !m->base_prefix[0] || !m->path_json)
        return -1;
    snprintf(m->identity, sizeof m->identity, "Python %s %s numpy %s torch %s%s%s%s%s triton %s",
             m->version, m->executable, m->numpy[0] ? m->numpy : "-", m->torch[0] ? m->torch : "-",
             m->torch_cuda[0] ? " CUDA " : "", m->torch_cuda, m->torch_abi[0] ? " C++11 ABI " : "",
             m->torch_abi, m->triton[0] ? m->triton : "-");
    return 0;
}

typedef struct pyenv_memo {
    kf_pyenv env; /* env.interpreter "" = not probed yet */
    int rc;
    char why[512];
    char *probe; /* the probe's JSON, when it described the interpreter */
} pyenv_memo;

/* The names kf_pyenv_export sets. */
#define ENV_FOR "KF_PYENV_FOR"
#define ENV_PROBE "KF_PYENV_PROBE"

static pyenv_memo memo;

/* The probe reads package metadata and imports nothing: one that runs
 * this long is stuck (an interpreter that waits on something), and an
 * agent waiting for it would never register. */
#define PYENV_PROBE_LIMIT_S 60

int kf_pyenv_get(const kf_pyenv **out, kf_err *err)
{
    /* Per process, keyed by the interpreter asked for (as the compiler
     * memo in build.c): every task kind computes the cache key. */
    const char *py = interpreter();
    if (strcmp(memo.env.interpreter, py) != 0) {
        snprintf(memo.env.interpreter, sizeof memo.env.interpreter, "%s", py);
        memo.rc = KF_OK;
        memo.why[0] = '\0';
        kf_buf text = KF_BUF_INIT;
        /* What the agent probed at its start, when it started this
         * process for the same interpreter (kf_pyenv_export): a runner
         * then starts no Python to learn it (a build's cold runner paid
         * one interpreter start for it, of three). */
        const char *for_ = getenv(ENV_FOR), *given = getenv(ENV_PROBE);
        int st = 0;
        if (for_ && given && strcmp(for_, py) == 0) {
            kf_buf_adds(&text, given);
        } else {
            char *argv[] = {(char *)py, "-c", (char *)kf_py_probe_src, NULL};
            st = kf_proc_capture_limit(argv, &text, 1 << 20, PYENV_PROBE_LIMIT_S);
        }
        free(memo.probe);
        memo.probe = NULL;
        if (st == -2) {
            memo.rc = KF_ENOTFOUND;
            snprintf(memo.why, sizeof memo.why,
                     "Python interpreter %s did not describe itself within %d s (its probe "
                     "imports no package and takes well under a second): it was killed; check "
                     "that `%s -c pass` returns, or set KF_PYTHON to an interpreter that does",
                     py, PYENV_PROBE_LIMIT_S, py);
        } else if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) == 127) {
            memo.rc = KF_ENOTFOUND;
            snprintf(memo.why, sizeof memo.why,
                     "Python interpreter %s does not run on this node; install python3 or set "
                     "KF_PYTHON to the interpreter that has your packages",
                     py);
        } else if (WEXITSTATUS(st) != 0 || !text.data || parse(text.data, &memo.env) != 0) {
            memo.rc = KF_ENOTFOUND;
            snprintf(memo.why, sizeof memo.why,
                     "Python interpreter %s did not describe itself (exit %d): %.300s", py,
                     WEXITSTATUS(st), text.data ? text.data : "");
        } else if (!memo.env.libpython[0]) {
            const char *dot = strrchr(memo.env.version, '.');
            int minor = dot ? (int)(dot - memo.env.version) : (int)strlen(memo.env.version);
            memo.rc = KF_ENOTFOUND;
            snprintf(memo.why, sizeof memo.why,
                     "Python %s (%s) has no shared libpython, which the runner embeds to host "
                     "a Python kernel; install libpython%.*s (Debian, Ubuntu) or use an "
                     "interpreter built with --enable-shared (KF_PYTHON)",
                     memo.env.version, memo.env.executable, minor, memo.env.version);
        }
        if (memo.rc == KF_OK)
            memo.probe = strdup(text.data);
        kf_buf_release(&text);
    }
    *out = &memo.env;
    if (memo.rc != KF_OK)
        return kf_err_set(err, memo.rc, "%s", memo.why);
    return KF_OK;
}

int kf_pyenv_compile(const kf_pyenv *py, const char *path, const char *filename, kf_buf *log,
                     kf_err *err)
{
    /* Prints what Python says of a syntax error (file, line, the line
     * itself, a caret), not the checker's own traceback. */
    static const char check[] = "import sys, traceback\n"
                                "src = open(sys.argv[1], 'rb').read()\n"
                                "try:\n"
                                "    compile(src, sys.argv[2], 'exec')\n"
                                "except (SyntaxError, ValueError) as e:\n"
                                "    sys.stdout.write(''.join(traceback.format_exception_only(\n"
                                "        type(e), e)))\n"
                                "    sys.exit(1)\n";
    char *argv[] = {(char *)py->executable, "-c", (char *)check, (char *)path,
                    (char *)filename,       NULL};
    int st = kf_proc_capture(argv, log, 1 << 20);
    if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) == 127)
        return kf_err_set(err, KF_ENOTFOUND, "cannot run %s to check the kernel", py->executable);
    if (WEXITSTATUS(st) != 0)
        return kf_err_set(err, KF_EINVAL, "the kernel does not compile in Python %s", py->version);
    return KF_OK;
}

void kf_pyenv_export(kf_execenv *env)
{
    if (memo.probe && memo.rc == KF_OK && strcmp(memo.env.interpreter, interpreter()) == 0) {
        kf_execenv_set(env, ENV_FOR, memo.env.interpreter);
        kf_execenv_set(env, ENV_PROBE, memo.probe);
    } else {
        kf_execenv_unset(env, ENV_FOR);
        kf_execenv_unset(env, ENV_PROBE);
    }
}

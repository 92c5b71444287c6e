/* provider_local — see provider_local.h. The agents are forked on the
 * caller's thread and die with the process (PR_SET_PDEATHSIG); their pids
 * are kept in AGENTS_DIR/local.pids for the teardown. */
#include "fleet/provider_local.h"
#include "common/execenv.h"
#include "common/keys.h"
#include "common/log.h"
#include "common/util.h"
#include "common/xalloc.h"
#include "fleet/launch.h"
#include "fleet/launch_int.h"
#include "fleet/provider.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct local_block {
    int agents, gpus;
    int warm_later; /* KF_WARM=later for the agents, unless set (provider_local.h) */
    char *logdir;
} local_block;

static void *dup_block(const void *block)
{
    const local_block *b = block;
    local_block *d = kf_xmalloc(sizeof *d);
    *d = *b;
    d->logdir = kf_xstrdup(b->logdir);
    return d;
}

static void free_block(void **block)
{
    local_block *b = *block;
    if (b)
        free(b->logdir);
    free(b);
    *block = NULL;
}

static int nagents(const kf_fleet_host *h)
{
    return ((const local_block *)h->block)->agents;
}

/* Agent n's key pair in its work dir, enrolled: the run owns both ends, so
 * it enrolls them as `kfleet launch` does on pods. */
static int enroll(const job *j, int n, kf_err *err)
{
    char wd[PATH_MAX + 32], keyp[PATH_MAX + 48], name[160];
    snprintf(wd, sizeof wd, "%s/run-%d", j->h->workdir, n);
    snprintf(keyp, sizeof keyp, "%s/agent.key", wd);
    snprintf(name, sizeof name, "%s-%d", j->h->name, n);
    kf_keypair kp;
    int rc;
    if ((rc = kf_mkdirs(wd, 0700, err)) || (rc = kf_keys_load(keyp, 1, &kp, err)) ||
        (rc = kf_allow_enroll(j->o->allow_file, kp.pub, name, err)))
        return rc;
    memset(&kp, 0, sizeof kp);
    return KF_OK;
}

/* Agent n's environment: this process's, with CUDA_VISIBLE_DEVICES its GPU
 * and KF_WARM=later unless KF_WARM is set (provider_local.h). */
static kf_execenv *agent_env(const local_block *b, int n)
{
    kf_execenv *env = kf_execenv_new();
    if (b->gpus > 0) {
        char cvd[24];
        snprintf(cvd, sizeof cvd, "%d", n % b->gpus);
        kf_execenv_set(env, "CUDA_VISIBLE_DEVICES", cvd);
    }
    if (b->warm_later)
        kf_execenv_default(env, "KF_WARM", "later");
    return env;
}

/* Forks and execs agent n. Everything the child needs is made here first:
 * kfleet run has other threads (the embedded coordinator's, libzmq's),
 * and a lock one of them held at the fork (the allocator's, a stream's)
 * stays held forever in the child, so between fork and exec the child
 * only calls what takes none. Allocating there (freopen, setenv) is how a
 * local agent once hung before its exec, its log empty (ASan's allocator
 * keeps no lock across fork). */
static pid_t spawn(const job *j, int n)
{
    const local_block *b = j->h->block;
    char exe[PATH_MAX], agent[PATH_MAX + 32], wd[PATH_MAX + 32], name[160], logp[PATH_MAX + 32];
    if (kf_exe_dir(exe, sizeof exe) != KF_OK)
        return -1;
    snprintf(agent, sizeof agent, "%s/kfleet-agent", exe);
    snprintf(wd, sizeof wd, "%s/run-%d", j->h->workdir, n);
    snprintf(name, sizeof name, "%s-%d", j->h->name, n);
    snprintf(logp, sizeof logp, "%s/agent-%d.log", b->logdir, n);
    char *argv[] = {"kfleet-agent",
                    "--coordinator",
                    (char *)j->o->direct,
                    "--workdir",
                    wd,
                    "--name",
                    name,
                    "--server-key",
                    (char *)j->o->server_pub_file,
                    "--log-level",
                    kf_log_get_level() == KF_LOG_DEBUG ? "debug" : "info",
                    NULL};
    kf_execenv *env = agent_env(b, n);
    int log_fd = open(logp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid != 0) {
        if (log_fd >= 0)
            close(log_fd);
        kf_execenv_destroy(&env);
        return pid;
    }
    /* Child: dies with kfleet run, whatever kills it. */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent)
        _exit(1);
    if (log_fd >= 0)
        dup2(log_fd, STDERR_FILENO);
    execve(agent, argv, kf_execenv_array(env));
    kf_exec_say(STDERR_FILENO, "kfleet run: cannot exec ", agent, kf_exec_why(errno));
    _exit(127);
}

static void pidfile_in(const char *agents_dir, char *out, size_t n)
{
    snprintf(out, n, "%s/local.pids", agents_dir);
}

static void pidfile(const job *j, char *out, size_t n)
{
    pidfile_in(j->h->workdir, out, n);
}

pid_t kf_provider_local_pid(const char *agents_dir, int i)
{
    char path[PATH_MAX + 16];
    pidfile_in(agents_dir, path, sizeof path);
    FILE *f = fopen(path, "r");
    long v = -1;
    for (int n = 0; f && n <= i; n++)
        if (fscanf(f, "%ld", &v) != 1)
            v = -1;
    if (f)
        fclose(f);
    return v > 0 ? (pid_t)v : -1;
}

static void launch(job *j)
{
    kf_err err;
    kf_err_clear(&err);
    int n = nagents(j->h);
    if (!j->o->direct || !j->o->server_pub_file || !j->o->allow_file) {
        kf_launch_fail(j->r, KF_PHASE_START, KF_EINVAL,
                       "local agents need an agent endpoint, the coordinator's key and its "
                       "allow list");
        return;
    }
    for (int i = 0; i < n; i++)
        if (enroll(j, i, &err) != KF_OK) {
            kf_launch_fail(j->r, KF_PHASE_START, err.code, err.msg);
            return;
        }
    char path[PATH_MAX + 16];
    pidfile(j, path, sizeof path);
    FILE *f = fopen(path, "w");
    if (!f) {
        snprintf(err.msg, sizeof err.msg, "cannot write %s: %s", path, strerror(errno));
        kf_launch_fail(j->r, KF_PHASE_START, KF_EIO, err.msg);
        return;
    }
    for (int i = 0; i < n; i++) {
        pid_t pid = spawn(j, i);
        fprintf(f, "%ld\n", (long)pid);
        if (i == 0)
            j->r->pid = pid;
    }
    fclose(f);
    snprintf(j->r->msg, sizeof j->r->msg, "%d local agents", n);
}

/* SIGTERM to each (they flush their outboxes), then up to 5 s for all of
 * them before SIGKILL. One that is not this process's child (a teardown
 * from elsewhere) counts as gone once signalled. */
static void teardown(job *j)
{
    char path[PATH_MAX + 16];
    pidfile(j, path, sizeof path);
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(j->r->msg, sizeof j->r->msg, "no local agents");
        return;
    }
    long v;
    pid_t pids[1024];
    int n = 0;
    while (n < (int)(sizeof pids / sizeof pids[0]) && fscanf(f, "%ld", &v) == 1)
        pids[n++] = (pid_t)v;
    fclose(f);
    unlink(path);
    for (int i = 0; i < n; i++)
        if (pids[i] > 0)
            kill(pids[i], SIGTERM);
    uint64_t deadline = kf_mono_ns() + 5000000000ull;
    for (int i = 0; i < n; i++) {
        while (pids[i] > 0) {
            if (waitpid(pids[i], NULL, WNOHANG) == pids[i] || errno == ECHILD) {
                pids[i] = 0;
                break;
            }
            if (kf_mono_ns() > deadline) {
                kill(pids[i], SIGKILL);
                waitpid(pids[i], NULL, 0);
                pids[i] = 0;
                break;
            }
            struct timespec ts = {0, 20000000};
            nanosleep(&ts, NULL);
        }
    }
    snprintf(j->r->msg, sizeof j->r->msg, "stopped %d local agents", n);
}

const kf_provider kf_provider_local = {
    .name = "local",
    .what = "this machine",
    .internal = 1,
    .dup = dup_block,
    .free = free_block,
    .nagents = nagents,
    .launch = launch,
    .teardown = teardown,
};

void kf_provider_local_host(kf_fleet_host *h, const char *agents_dir, int agents, int gpus,
                            int warm_later, const char *logdir)
{
    local_block *b = kf_xcalloc(1, sizeof *b);
    b->agents = agents;
    b->gpus = gpus;
    b->warm_later = warm_later;
    b->logdir = kf_xstrdup(logdir);
    h->name = kf_xstrdup("local");
    h->provider = kf_xstrdup("local");
    h->host = kf_xstrdup("localhost");
    h->workdir = kf_xstrdup(agents_dir);
    h->prov = &kf_provider_local;
    h->block = b;
}

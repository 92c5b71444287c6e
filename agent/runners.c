/* runners — one runner process per task: fork + exec of this binary with
 * --runner, in its own process group (so a kill takes the compiler or the
 * kernel's children too), stdin from the task file, stdout a pipe of
 * frames (harness.h), stderr a log whose tail explains a runner that died
 * without a result. A runner past its time limit is killed; one killed by
 * a signal kfleet did not send ends its attempt as an infrastructure
 * failure (Result.infra: tried again), a crash as the kernel's own. */
#include "agent/agent_int.h"
#include "common/log.h"
#include "common/util.h"
#include "common/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

krunner *runners_find(kf_agent *a, uint64_t task, uint32_t attempt)
{
    for (size_t i = 0; i < a->nrunners; i++)
        if (a->runners[i]->task_id == task && a->runners[i]->attempt == attempt)
            return a->runners[i];
    return NULL;
}

static void send_result(kf_agent *a, krunner *r, int state, int infra, const char *error)
{
    Kfleet__Result res = KFLEET__RESULT__INIT;
    res.infra = infra;
    res.task_id = r->task_id;
    res.attempt = r->attempt;
    res.state = (Kfleet__TaskState)state;
    res.error = (char *)error;
    res.agent_id = a->info->agent_id;
    res.elapsed_s = (double)(kf_mono_ns() - r->started_mono) / 1e9;
    res.sample_count = r->nsamples;
    res.finished_ns = kf_now_ns();
    Kfleet__Envelope env = KFLEET__ENVELOPE__INIT;
    env.body_case = KFLEET__ENVELOPE__BODY_RESULT;
    env.result = &res;
    link_emit(a, &env, r->task_id, r->attempt, 1);
    r->got_result = 1;
}

void runners_fail_assignment(kf_agent *a, const Kfleet__TaskAssign *ta, const char *why)
{
    krunner tmp;
    memset(&tmp, 0, sizeof tmp);
    tmp.task_id = ta->task_id;
    tmp.attempt = ta->attempt;
    tmp.started_mono = kf_mono_ns();
    /* The runner never ran: nothing the kernel did. */
    send_result(a, &tmp, KFLEET__TASK_STATE__FAILED, 1, why);
}

/* The CUDA_VISIBLE_DEVICES entry for the agent's GPU `index`: the agent
 * numbers the GPUs it sees, so when it was itself started with a subset
 * ("2,3"), its GPU 1 is the node's "3", not "1". */
void runners_visible_device(uint32_t index, char *out, size_t len)
{
    const char *vis = getenv("CUDA_VISIBLE_DEVICES");
    snprintf(out, len, "%u", index);
    if (!vis || !*vis)
        return;
    const char *p = vis;
    for (uint32_t i = 0; i < index && p; i++) {
        p = strchr(p, ',');
        if (p)
            p++;
    }
    if (p && *p)
        snprintf(out, len, "%.*s", (int)strcspn(p, ","), p);
}

int runners_start(kf_agent *a, const Kfleet__TaskAssign *ta, kf_err *err)
{
    krunner *r = kf_xcalloc(1, sizeof *r);
    kf_buf_init(&r->in);
    r->task_id = ta->task_id;
    r->attempt = ta->attempt;
    r->kind = ta->spec ? ta->spec->kind : 0;
    r->out_fd = -1;
    r->gpu = ta->spec && ta->spec->device_cuda && ta->spec->kind != KFLEET__TASK_KIND__BUILD;
    r->gpu_index = ta->gpu_index;
    snprintf(r->dir, sizeof r->dir, "%s/tmp/0x%llx-%u", a->workdir, (unsigned long long)r->task_id,
             r->attempt);
    int rc = kf_mkdirs(r->dir, 0700, err);
    if (rc)
        goto fail;
    char path[PATH_MAX + 32];
    size_t n = kfleet__task_assign__get_packed_size(ta);
    kf_buf_reset(&a->scratch);
    kf_buf_grow(&a->scratch, n);
    kfleet__task_assign__pack(ta, (uint8_t *)a->scratch.data);
    snprintf(path, sizeof path, "%s/task.pb", r->dir);
    if ((rc = kf_write_file(path, a->scratch.data, n, 0600, err)))
        goto fail;
    int in_fd = open(path, O_RDONLY | O_CLOEXEC);
    snprintf(path, sizeof path, "%s/runner.log", r->dir);
    int log_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    int pfd[2];
    if (in_fd < 0 || log_fd < 0 || pipe2(pfd, O_CLOEXEC) != 0) {
        rc =
            kf_err_set(err, KF_EIO, "cannot prepare the runner in %s: %s", r->dir, strerror(errno));
        if (in_fd >= 0)
            close(in_fd);
        if (log_fd >= 0)
            close(log_fd);
        goto fail;
    }
    pid_t pid = fork();
    if (pid < 0) {
        rc = kf_err_set(err, KF_EIO, "fork: %s", strerror(errno));
        close(in_fd);
        close(log_fd);
        close(pfd[0]);
        close(pfd[1]);
        goto fail;
    }
    if (pid == 0) {
        /* Child: own process group, so a kill reaches everything it starts;
         * and it dies with the agent, so a killed agent leaves no runner. */
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(in_fd, 0);
        dup2(pfd[1], 1);
        dup2(log_fd, 2);
        /* In a sanitizer build, let a kernel's fault kill the runner by its
         * signal (what the task reports) instead of ASan's own exit. */
        const char *asan = getenv("ASAN_OPTIONS");
        if (asan) {
            char opts[1024];
            snprintf(opts, sizeof opts, "%s:handle_segv=0:handle_sigbus=0:handle_sigfpe=0", asan);
            setenv("ASAN_OPTIONS", opts, 1);
        }
        if (a->compat_dir[0]) {
            /* The toolkit's libcuda before the system's (runner/compat.h). */
            const char *old = getenv("LD_LIBRARY_PATH");
            char libpath[8192];
            snprintf(libpath, sizeof libpath, "%s%s%s", a->compat_dir, old && *old ? ":" : "",
                     old ? old : "");
            setenv("LD_LIBRARY_PATH", libpath, 1);
            setenv("KF_CUDA_COMPAT_DIR", a->compat_dir, 1);
        }
        if (r->gpu) {
            char dev[128];
            runners_visible_device(r->gpu_index, dev, sizeof dev);
            setenv("CUDA_VISIBLE_DEVICES", dev, 1);
        }
        execl(a->runner_exe, "kfleet-agent", "--runner", "--workdir", a->workdir, (char *)NULL);
        dprintf(2, "cannot exec runner %s: %s\n", a->runner_exe, strerror(errno));
        _exit(127);
    }
    setpgid(pid, pid);
    close(in_fd);
    close(log_fd);
    close(pfd[1]);
    fcntl(pfd[0], F_SETFL, O_NONBLOCK);
    r->pid = pid;
    r->out_fd = pfd[0];
    r->started_mono = kf_mono_ns();
    r->limit_s =
        ta->spec && ta->spec->time_limit_s > 0 ? ta->spec->time_limit_s : a->cfg.default_limit_s;
    r->deadline_mono = r->started_mono + (uint64_t)(r->limit_s * 1e9);
    if (r->gpu && r->gpu_index < 64)
        a->gpu_busy[r->gpu_index] = 1;
    else
        a->cpu_used++;
    a->runners[a->nrunners++] = r;
    static const char *kinds[] = {"?", "build", "validate", "profile", "doctor"};
    kf_debug("runner.start", "task=0x%llx attempt=%u kind=%s pid=%d limit_s=%.0f",
             (unsigned long long)r->task_id, r->attempt, kinds[r->kind <= 4 ? r->kind : 0],
             (int)pid, r->limit_s);
    return KF_OK;
fail:
    kf_buf_release(&r->in);
    free(r);
    return rc;
}

/* Handles the frames a runner wrote so far. */
void runners_drain(kf_agent *a, krunner *r)
{
    char buf[65536];
    for (;;) {
        ssize_t n = read(r->out_fd, buf, sizeof buf);
        if (n > 0) {
            kf_buf_add(&r->in, buf, (size_t)n);
            continue;
        }
        if (n == 0) {
            close(r->out_fd);
            r->out_fd = -1;
        } else if (errno == EINTR) {
            continue;
        } else if (errno != EAGAIN) {
            close(r->out_fd);
            r->out_fd = -1;
        }
        break;
    }
    size_t off = 0;
    while (r->in.len - off >= 4) {
        const uint8_t *p = (const uint8_t *)r->in.data + off;
        uint32_t len =
            (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
        if (len > KF_MAX_FRAME) {
            kf_error("runner.bad_frame", "task=0x%llx len=%u", (unsigned long long)r->task_id, len);
            kill(-r->pid, SIGKILL);
            off = r->in.len;
            break;
        }
        if (r->in.len - off - 4 < len)
            break;
        kf_err err;
        Kfleet__Envelope *env = kf_wire_unpack(p + 4, len, &err);
        off += 4 + len;
        if (!env) {
            kf_error("runner.bad_frame", "task=0x%llx error=\"%s\"", (unsigned long long)r->task_id,
                     err.msg);
            continue;
        }
        if (env->body_case == KFLEET__ENVELOPE__BODY_SAMPLES && !r->got_result) {
            env->samples->task_id = r->task_id;
            env->samples->attempt = r->attempt;
            r->nsamples += (uint32_t)env->samples->n_samples;
            link_emit(a, env, r->task_id, r->attempt, 0);
        } else if (env->body_case == KFLEET__ENVELOPE__BODY_RESULT && !r->got_result) {
            Kfleet__Result *res = env->result;
            char *runner_agent = res->agent_id;
            res->task_id = r->task_id;
            res->attempt = r->attempt;
            res->agent_id = a->info->agent_id;
            res->sample_count = r->nsamples;
            if (r->cancelled)
                res->state = KFLEET__TASK_STATE__CANCELLED;
            link_emit(a, env, r->task_id, r->attempt, 1);
            r->got_result = 1;
            res->agent_id = runner_agent; /* ours is not the decoder's to free */
        }
        kf_wire_free(env);
    }
    if (off) {
        memmove(r->in.data, r->in.data + off, r->in.len - off);
        r->in.len -= off;
    }
}

static void tail_of(const char *path, char *out, size_t len)
{
    out[0] = '\0';
    kf_buf b = KF_BUF_INIT;
    if (kf_buf_read_file(&b, path) != KF_OK) {
        kf_buf_release(&b);
        return;
    }
    /* The last 10 lines, at most len-1 bytes. */
    size_t start = b.len, lines = 0;
    while (start > 0 && lines <= 10) {
        start--;
        if (b.data[start] == '\n' && start + 1 < b.len)
            lines++;
    }
    if (lines > 10)
        start++;
    if (b.len - start >= len)
        start = b.len - (len - 1);
    snprintf(out, len, "%s", b.data + start);
    kf_buf_release(&b);
}

static int rm_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void finish_runner(kf_agent *a, size_t idx)
{
    krunner *r = a->runners[idx];
    if (!r->got_result) {
        char why[3072], tail[2048], logp[PATH_MAX + 16];
        snprintf(logp, sizeof logp, "%s/runner.log", r->dir);
        tail_of(logp, tail, sizeof tail);
        int state = KFLEET__TASK_STATE__FAILED, infra = 0;
        int sig = WIFSIGNALED(r->status) ? WTERMSIG(r->status) : 0;
        if (r->timed_out) {
            state = KFLEET__TASK_STATE__TIMED_OUT;
            snprintf(why, sizeof why,
                     "timed out: the task ran past its limit of %.1f s and was "
                     "killed",
                     r->limit_s);
        } else if (r->cancelled) {
            state = KFLEET__TASK_STATE__CANCELLED;
            snprintf(why, sizeof why, "cancelled by the coordinator");
        } else if (sig == SIGKILL || sig == SIGTERM || sig == SIGHUP || sig == SIGINT) {
            /* Not a signal a kernel raises on itself, and not ours (a time
             * limit or a cancel is said above): the OS or a person killed
             * it, typically the out-of-memory killer. Tried again. */
            infra = 1;
            snprintf(why, sizeof why,
                     "the runner was killed by signal %d (%s), not by kfleet (the out-of-memory "
                     "killer? the node's kernel log says); tried again while attempts remain%s%s",
                     sig, strsignal(sig), *tail ? "\n" : "", tail);
        } else if (sig) {
            snprintf(why, sizeof why, "the kernel crashed: runner killed by signal %d (%s)%s%s",
                     sig, strsignal(sig), *tail ? "\n" : "", tail);
        } else if (WIFEXITED(r->status) && WEXITSTATUS(r->status) == 127) {
            infra = 1; /* exec failed: the node, not the kernel */
            snprintf(why, sizeof why, "the runner could not start (exit 127)%s%s",
                     *tail ? "\n" : "", tail);
        } else {
            snprintf(why, sizeof why, "runner exited with status %d without a result%s%s",
                     WIFEXITED(r->status) ? WEXITSTATUS(r->status) : -1, *tail ? "\n" : "", tail);
        }
        send_result(a, r, state, infra, why);
    }
    kf_debug("runner.end", "task=0x%llx attempt=%u status=%d", (unsigned long long)r->task_id,
             r->attempt, r->status);
    if (r->gpu && r->gpu_index < 64)
        a->gpu_busy[r->gpu_index] = 0;
    else if (a->cpu_used > 0)
        a->cpu_used--;
    if (!a->cfg.keep_tmp)
        nftw(r->dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
    kf_buf_release(&r->in);
    free(r);
    a->runners[idx] = a->runners[--a->nrunners];
}

void runners_reap(kf_agent *a)
{
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        for (size_t i = 0; i < a->nrunners; i++) {
            if (a->runners[i]->pid == pid) {
                a->runners[i]->exited = 1;
                a->runners[i]->status = status;
            }
        }
    }
    uint64_t now = kf_mono_ns();
    for (size_t i = 0; i < a->nrunners;) {
        krunner *r = a->runners[i];
        if (!r->exited && !r->timed_out && now > r->deadline_mono) {
            kf_warn("runner.timeout", "task=0x%llx attempt=%u limit_s=%.1f",
                    (unsigned long long)r->task_id, r->attempt, r->limit_s);
            r->timed_out = 1;
            kill(-r->pid, SIGKILL);
        }
        if (r->exited && r->out_fd >= 0)
            runners_drain(a, r);
        if (r->exited && r->out_fd < 0) {
            finish_runner(a, i);
            continue;
        }
        i++;
    }
}

void runners_stop_all(kf_agent *a)
{
    for (size_t i = 0; i < a->nrunners; i++) {
        krunner *r = a->runners[i];
        if (!r->exited) {
            kill(-r->pid, SIGKILL);
            waitpid(r->pid, NULL, 0);
        }
        if (r->out_fd >= 0)
            close(r->out_fd);
        if (!a->cfg.keep_tmp)
            nftw(r->dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
        kf_buf_release(&r->in);
        free(r);
    }
    a->nrunners = 0;
}

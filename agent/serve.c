/* serve — see serve.h. */
#include "agent/serve.h"
#include "agent/checkers.h"
#include "common/log.h"
#include "common/taskkind.h"
#include "common/util.h"
#include "common/wire.h"
#include "runner/thermal.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* A candidate task's configuration as text ("name=value;..."), into out:
 * 0, or -1 when it does not fit (such a task is not served). */
static int config_of(const Kfleet__TaskSpec *s, char *out, size_t len)
{
    size_t off = 0;
    out[0] = '\0';
    for (size_t i = 0; i < s->n_params; i++) {
        int n =
            snprintf(out + off, len - off, "%s=%lld;", s->params[i]->name ? s->params[i]->name : "",
                     (long long)s->params[i]->value);
        if (n < 0 || (size_t)n >= len - off)
            return -1;
        off += (size_t)n;
    }
    return 0;
}

/* The tasks a serving runner takes: those that run a built kernel. A
 * candidate's runner serves one more task, the profile of the
 * configuration it validated, with a new checker (the checker holds one
 * task's references and verdicts): its seeds are the pool's held out from
 * the validation (coordinator/core/problem.h), and another configuration
 * (the same seeds at another size) gets a runner of its own. */
int serve_takes(const Kfleet__TaskAssign *ta)
{
    const Kfleet__TaskSpec *s = ta->spec;
    char config[sizeof((krunner *)0)->config];
    return s && kf_task_kind_at(s->kind)->served && !s->ncu_pass && s->kernel_hash &&
           *s->kernel_hash && strlen(s->kernel_hash) < sizeof((krunner *)0)->kernel_hash &&
           (!s->problem_hash || strlen(s->problem_hash) < sizeof((krunner *)0)->problem_hash) &&
           config_of(s, config, sizeof config) == 0;
}

/* Whether idle serving runner r holds ta's kernel, and for a candidate's
 * profile, its problem and the configuration of r's one task, a
 * validation. */
int serve_holds(const krunner *r, const Kfleet__TaskAssign *ta)
{
    const Kfleet__TaskSpec *s = ta->spec;
    if (strcmp(r->kernel_hash, s->kernel_hash) != 0)
        return 0;
    if (!s->problem_hash || !*s->problem_hash)
        return !r->problem_hash[0];
    char config[sizeof r->config];
    return strcmp(r->problem_hash, s->problem_hash) == 0 && r->tasks == 1 &&
           kf_task_kind_at(r->kind)->report == KF_REPORT_VALIDATION &&
           kf_task_kind_at(s->kind)->report == KF_REPORT_TIMING &&
           config_of(s, config, sizeof config) == 0 && strcmp(config, r->config) == 0;
}

/* The outputs a candidate's task must have judged: a profile re-checks
 * during its samples and after them. */
uint32_t serve_checks_wanted(const Kfleet__TaskAssign *ta)
{
    return kf_task_kind_at(ta->spec->kind)->report == KF_REPORT_VALIDATION
               ? (uint32_t)ta->spec->n_seeds
               : 2;
}

int serve_on_gpu(const Kfleet__TaskAssign *ta)
{
    return ta->spec && ta->spec->device_cuda && !kf_task_kind_at(ta->spec->kind)->builds;
}

/* r's own hold (a serving runner's first task begins before it is handed)
 * does not count; slot_warm: held by another task now, its runner on its
 * way out after its result, or until less than KF_SLOT_WARM_S ago (the
 * profile's warm-up is then shorter, thermal.h). */
Kfleet__TaskAssign serve_stamped(const kf_agent *a, const krunner *r, const Kfleet__TaskAssign *ta)
{
    Kfleet__TaskAssign c = *ta;
    uint32_t g = ta->gpu_index;
    if (!serve_on_gpu(ta) || g >= 64)
        return c.slot_warm = 0, c;
    int others = a->gpu_busy[g] - (r->slot_held && r->gpu && r->gpu_index == g);
    uint64_t freed = a->gpu_freed_mono[g];
    c.slot_warm = others > 0 || (freed && kf_mono_ns() - freed < (uint64_t)(KF_SLOT_WARM_S * 1e9));
    return c;
}

void serve_frame(const kf_agent *a, const krunner *r, const Kfleet__TaskAssign *task, kf_buf *out)
{
    Kfleet__TaskAssign st = serve_stamped(a, r, task);
    size_t n = kfleet__task_assign__get_packed_size(&st);
    kf_buf_reset(out);
    kf_buf_grow(out, n + 4);
    uint8_t *p = (uint8_t *)out->data;
    kf_frame_len_put(p, (uint32_t)n);
    kfleet__task_assign__pack(&st, p + 4);
    out->len = n + 4;
}

int serve_send(const krunner *r, const kf_buf *frame, int cfd, kf_err *err)
{
    const uint8_t *p = (const uint8_t *)frame->data;
    /* The checker's socket goes with the header (harness.c read_header). */
    if (cfd >= 0 && kf_send_fds(r->in_fd, p, 4, &cfd, 1) != KF_OK)
        return kf_err_set(err, KF_EIO, "cannot pass the checker to runner %d: %s", (int)r->pid,
                          strerror(errno));
    size_t off = cfd >= 0 ? 4 : 0;
    if (kf_write_all(r->in_fd, p + off, frame->len - off) != KF_OK)
        return kf_err_set(err, KF_EIO, "cannot hand the task to runner %d: %s", (int)r->pid,
                          strerror(errno));
    return KF_OK;
}

int serve_hand(kf_agent *a, krunner *r, const Kfleet__TaskAssign *task, int cfd, kf_err *err)
{
    serve_frame(a, r, task, &a->scratch);
    return serve_send(r, &a->scratch, cfd, err);
}

/* Candidate task ta to idle runner r, which holds its candidate: the last
 * task's checker ended (its verdicts were read with that Result), a new
 * one started for ta and its socket passed with the task. */
int serve_hand_candidate(kf_agent *a, krunner *r, const Kfleet__TaskAssign *ta, kf_err *err)
{
    checkers_stop(r);
    if (r->verdict_fd >= 0) {
        close(r->verdict_fd);
        r->verdict_fd = -1;
    }
    r->refs_recomputed = r->refs_differ = 0;
    r->verdict_why[0] = '\0';
    int cfd = -1;
    int rc = checkers_start(a, r, ta, &cfd, err);
    if (rc != KF_OK)
        return rc;
    rc = serve_hand(a, r, ta, cfd, err);
    close(cfd);
    r->want_checks = serve_checks_wanted(ta);
    return rc;
}

void serve_mark(krunner *r, const Kfleet__TaskAssign *ta)
{
    const Kfleet__TaskSpec *s = ta->spec;
    snprintf(r->kernel_hash, sizeof r->kernel_hash, "%s", s->kernel_hash);
    snprintf(r->problem_hash, sizeof r->problem_hash, "%s", s->problem_hash ? s->problem_hash : "");
    if (r->problem_hash[0])
        config_of(s, r->config, sizeof r->config);
}

int serve_gpu_retiring(const kf_agent *a, uint32_t g)
{
    for (size_t i = 0; i < a->nrunners; i++)
        if (a->runners[i]->retiring && a->runners[i]->gpu && a->runners[i]->gpu_index == g)
            return 1;
    return 0;
}

/* A held runner whose GPU's last runner outlived the task's limit after
 * its SIGKILL (a process the kernel left unkillable, a driver stuck in its
 * teardown): the task never started, so it is no time-out of this kernel;
 * the node's fault, tried again. */
static void hold_expired(krunner *r)
{
    kf_warn("runner.hold_expired", "task=0x%llx attempt=%u limit_s=%.1f",
            (unsigned long long)r->task_id, r->attempt, r->limit_s);
    snprintf(r->killed_why, sizeof r->killed_why,
             "this task never started: its GPU's last runner, killed by kfleet, was still not "
             "gone after the task's limit of %.1f s (a process left unkillable or a driver stuck "
             "tearing its CUDA context down); the node's fault, tried again while attempts remain",
             r->limit_s);
    r->infra_kill = 1;
    r->holding = 0;
    kf_buf_release(&r->held);
    if (r->pid > 0)
        kill(-r->pid, SIGKILL);
}

void serve_hand_held(kf_agent *a)
{
    uint64_t now = kf_mono_ns();
    for (size_t i = 0; i < a->nrunners; i++) {
        krunner *r = a->runners[i];
        if (!r->holding || r->exited)
            continue;
        if (serve_gpu_retiring(a, r->gpu_index)) {
            if (now > r->deadline_mono)
                hold_expired(r);
            continue;
        }
        r->holding = 0;
        /* Its time limit from now: a kernel that made its own runner slow
         * to be reaped (a teardown of many GB) spends the slot's time, not
         * the next candidate's limit. */
        r->deadline_mono = kf_mono_ns() + (uint64_t)(r->limit_s * 1e9);
        kf_err err;
        if (serve_send(r, &r->held, -1, &err) != KF_OK) {
            snprintf(r->killed_why, sizeof r->killed_why, "%s", err.msg);
            kill(-r->pid, SIGKILL);
        }
        kf_buf_release(&r->held);
    }
}

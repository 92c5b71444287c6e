/* verify — store invariants of a sweep; see verify.h. */
#include "report/verify.h"
#include "core/seal.h"
#include "common/taskkind.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct vctx {
    kf_txn *t;
    kf_verify_summary *sum;
    kf_buf *problems;
    uint32_t next_seq, bad_seq;
    const Kfleet__Result *terminal; /* the task's terminal record, while its late ones are walked */
    uint32_t late_dups;
};

static void problem(struct vctx *v, const char *fmt, unsigned long long task, const char *what)
{
    v->sum->violations++;
    if (v->sum->violations <= 50) {
        kf_buf_addf(v->problems, fmt, task, what);
        kf_buf_addc(v->problems, '\n');
    }
}

static int sample_cb(void *ctx, const Kfleet__Sample *s)
{
    struct vctx *v = ctx;
    if (s->seq != v->next_seq)
        v->bad_seq++;
    v->next_seq = s->seq + 1;
    return 0;
}

static int attempt_cb(void *ctx, const Kfleet__Attempt *a)
{
    struct vctx *v = ctx;
    (void)a;
    v->sum->attempts++;
    return 0;
}

static int late_cb(void *ctx, const Kfleet__Result *r)
{
    struct vctx *v = ctx;
    v->sum->late++;
    /* The terminal result itself, stored again as late: a resend counted
     * twice. (A real late result of the same attempt, after the coordinator
     * gave up on it, has the agent's own finish time, not this one.) */
    const Kfleet__Result *t = v->terminal;
    if (t && r->attempt == t->attempt && r->finished_ns == t->finished_ns &&
        strcmp(r->agent_id, t->agent_id) == 0)
        v->late_dups++;
    return 0;
}

/* The stored bytes of the task's result and of its attempt's samples are
 * what the coordinator wrote (store.h, seals). */
static void check_seals(struct vctx *v, const Kfleet__Task *task, const Kfleet__Result *r)
{
    kf_seal_count sc = {0, 0, 0, 0, 0};
    int rc = kf_seal_check(v->t, task->task_id, r->attempt, &sc);
    if (rc == KF_EINVAL) {
        v->sum->seals = 0;
        return;
    }
    if (rc == KF_ENOTFOUND) {
        v->sum->seals = -1;
        return;
    }
    v->sum->sealed += sc.checked;
    static const char *const verdicts[] = {
        "", "changed after it was written (its seal does not match)",
        "has no seal in a sealed sweep (added after the coordinator wrote it?)"};
    const struct {
        int bad;
        const char *what;
    } parts[] = {{sc.result_bad, "the terminal result"},
                 {sc.samples_bad, "the attempt's samples (sealed together)"}};
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) {
        char line[256];
        if (parts[i].bad < 1 || parts[i].bad > 2)
            continue;
        snprintf(line, sizeof line, ": %s %s", parts[i].what, verdicts[parts[i].bad]);
        problem(v, "task 0x%llx%s", (unsigned long long)task->task_id, line);
    }
}

static int task_cb(void *ctx, const Kfleet__Task *task)
{
    struct vctx *v = ctx;
    kf_verify_summary *s = v->sum;
    unsigned long long id = (unsigned long long)task->task_id;
    s->tasks++;
    if (!kf_state_terminal(task->state))
        problem(
            v, "task 0x%llx has not ended (%s)", id,
            protobuf_c_enum_descriptor_get_value(&kfleet__task_state__descriptor, task->state)
                ? protobuf_c_enum_descriptor_get_value(&kfleet__task_state__descriptor, task->state)
                      ->name
                : "?");
    else
        s->terminal++;
    uint32_t before = s->attempts;
    kf_store_foreach_attempt(v->t, task->task_id, attempt_cb, v);
    if (s->attempts - before > 1)
        s->requeued += s->attempts - before - 1;
    Kfleet__Result *r = NULL;
    if (kf_store_get_result(v->t, task->task_id, &r) != KF_OK) {
        kf_store_foreach_late(v->t, task->task_id, late_cb, v);
        if (kf_state_terminal(task->state))
            problem(v, "task 0x%llx ended but has no terminal record%s", id, "");
        return 0;
    }
    v->terminal = r;
    v->late_dups = 0;
    kf_store_foreach_late(v->t, task->task_id, late_cb, v);
    v->terminal = NULL;
    if (v->late_dups)
        problem(v, "task 0x%llx: its terminal result is stored again as a late record%s", id, "");
    s->results++;
    if (r->task_id != task->task_id)
        problem(v, "task 0x%llx: its terminal record names another task%s", id, "");
    if (r->state != task->state)
        problem(v, "task 0x%llx: terminal record and task disagree on the state%s", id, "");
    switch (r->state) {
    case KFLEET__TASK_STATE__SUCCEEDED:
        s->succeeded++;
        break;
    case KFLEET__TASK_STATE__FAILED:
        s->failed++;
        break;
    case KFLEET__TASK_STATE__TIMED_OUT:
        s->timed_out++;
        break;
    case KFLEET__TASK_STATE__CANCELLED:
        s->cancelled++;
        break;
    case KFLEET__TASK_STATE__SKIPPED:
        s->skipped++;
        break;
    default:
        problem(v, "task 0x%llx: terminal record with a non-terminal state%s", id, "");
        break;
    }
    check_seals(v, task, r);
    if (kf_task_kind_at(task->kind)->report == KF_REPORT_TIMING &&
        r->state == KFLEET__TASK_STATE__SUCCEEDED) {
        s->profiles++;
        v->next_seq = 0;
        v->bad_seq = 0;
        kf_store_foreach_sample(v->t, task->task_id, r->attempt, sample_cb, v);
        uint32_t stored = v->next_seq;
        s->samples += stored;
        if (v->bad_seq)
            problem(v, "task 0x%llx: sample sequence numbers are not contiguous%s", id, "");
        if (stored == 0)
            problem(v, "task 0x%llx: a successful profile without samples%s", id, "");
        else if (stored != r->sample_count) {
            char what[96];
            snprintf(what, sizeof what, " (%u stored, the agent sent %u)", stored, r->sample_count);
            problem(v, "task 0x%llx: samples missing or extra%s", id, what);
        }
    }
    kfleet__result__free_unpacked(r, NULL);
    return 0;
}

int kf_verify_sweep(kf_txn *t, uint32_t sweep_id, kf_verify_summary *sum, kf_buf *problems)
{
    memset(sum, 0, sizeof *sum);
    Kfleet__Sweep *sw = NULL;
    int rc = kf_store_get_sweep(t, sweep_id, &sw);
    if (rc)
        return rc;
    kfleet__sweep__free_unpacked(sw, NULL);
    struct vctx v = {t, sum, problems, 0, 0, NULL, 0};
    sum->seals = 1;
    return kf_store_foreach_task(t, sweep_id, task_cb, &v);
}

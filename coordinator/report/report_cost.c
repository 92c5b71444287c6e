/* report_cost — what a sweep cost (issue 32): evaluations per GPU-hour
 * (slot-hour of a CPU sweep) and, with a price, the cost and cost per
 * evaluation, per node and in total; and the thermal protocol its profiles
 * ran under. Rented GPU time is what users pay for, so every report says
 * how much of it one evaluation took. report_rows.h has the contracts. */
#include "report/report_rows.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* A check ran to an end: succeeded, failed or timed out; not cancelled or
 * skipped before it ran (a sweep cut by its time limit). */
static int ran(const rtask *x)
{
    if (!x || !x->res)
        return 0;
    Kfleet__TaskState st = x->res->state;
    return st == KFLEET__TASK_STATE__SUCCEEDED || st == KFLEET__TASK_STATE__FAILED ||
           st == KFLEET__TASK_STATE__TIMED_OUT;
}

/* A row counts as an evaluation once its validation or profile ran. */
static int evaluated(const rrow *w)
{
    return ran(w->validate) || ran(w->profile);
}

static void finish(kf_rep_cost *c)
{
    c->per_slot_hour = c->slot_hours > 0 ? c->evaluations / c->slot_hours : NAN;
    c->cost = isfinite(c->price) && isfinite(c->slot_hours) ? c->price * c->slot_hours : NAN;
    c->per_evaluation = isfinite(c->cost) && c->evaluations ? c->cost / c->evaluations : NAN;
}

size_t kf_rep_costs(const rep *r, kf_rep_cost *out, size_t cap)
{
    if (cap == 0)
        return 0;
    int gpu = r->sched.gpu_attempts > 0;
    double makespan_h = r->sw->finished_ns > r->sw->created_ns
                            ? (double)(r->sw->finished_ns - r->sw->created_ns) / 3.6e12
                            : NAN;
    double fallback = r->sw->price_per_gpu_hour > 0 ? r->sw->price_per_gpu_hour : NAN;
    kf_rep_cost *all = &out[0];
    *all = (kf_rep_cost){.slot_hours = 0, .cost = 0};
    for (size_t i = 0; i < r->nrows; i++)
        all->evaluations += (uint32_t)evaluated(&r->rows[i]);
    double cost = 0;
    int priced = 1;
    size_t n = 1;
    for (size_t k = 0; k < r->nagents; k++) {
        const Kfleet__AgentInfo *a = r->agents[k];
        kf_rep_cost c = {.node = a->agent_id};
        for (size_t i = 0; i < r->nrows; i++) {
            const rrow *w = &r->rows[i];
            c.evaluations +=
                (uint32_t)(evaluated(w) && w->node && strcmp(w->node, a->agent_id) == 0);
        }
        c.slot_hours = makespan_h * kf_rep_agent_slots(a, gpu);
        c.price = a->price_per_gpu_hour > 0 ? a->price_per_gpu_hour : fallback;
        finish(&c);
        all->slot_hours += c.slot_hours;
        if (isfinite(c.cost))
            cost += c.cost;
        else
            priced = 0;
        if (n < cap)
            out[n++] = c;
    }
    if (r->nagents == 0)
        all->slot_hours = NAN;
    finish(all);
    /* Nodes may differ in price: the total is their sum, and its price the
     * mean per slot-hour; unknown when any node has none. */
    all->cost = priced && r->nagents && isfinite(all->slot_hours) ? cost : NAN;
    all->price = isfinite(all->cost) && all->slot_hours > 0 ? cost / all->slot_hours : NAN;
    all->per_evaluation =
        isfinite(all->cost) && all->evaluations ? all->cost / all->evaluations : NAN;
    return n;
}

void kf_rep_thermal_why(const char *th, char *out, size_t len)
{
    int gpu = strstr(th, "burst") || strstr(th, "sustained");
    snprintf(out, len, "%s%s%s%s", gpu ? "after a warm-up to a steady SM clock; " : "",
             strstr(th, "burst") ? "burst: each sample after a rest as long, the kernel as it "
                                   "runs alone; "
                                 : "",
             strstr(th, "sustained") ? "sustained: samples back to back, at the power cap; " : "",
             strstr(th, "host") ? "host: CPU kernels, back to back, the CPU clock not observed; "
                                : "");
    size_t n = strlen(out);
    if (n >= 2)
        out[n - 2] = 0; /* the last "; " */
}

void kf_rep_thermal(const rep *r, char *out, size_t len)
{
    /* In this order, each once: a sweep's rows may mix them (a host
     * kernel beside GPU ones, agents from before "burst"). */
    static const char *const names[] = {"burst", "sustained", "host"};
    enum { N = sizeof names / sizeof *names };
    int seen[N] = {0};
    for (size_t i = 0; i < r->nrows; i++) {
        const rtask *p = r->rows[i].profile;
        const Kfleet__ProfileStats *ps = p && p->res ? p->res->profile : NULL;
        if (!ps || !ps->thermal || !*ps->thermal)
            continue;
        for (int k = 0; k < N; k++)
            seen[k] |= strcmp(ps->thermal, names[k]) == 0;
    }
    size_t at = 0;
    if (len)
        *out = 0;
    for (int k = 0; k < N; k++)
        if (seen[k] && at < len)
            at += (size_t)snprintf(out + at, len - at, "%s%s", at ? ", " : "", names[k]);
}

/* report_schedule — where a finished sweep's idle slot time went, slot by
 * slot (kf_rep_slot_idle, contract in report_rows.h). The schedule's
 * figures say how far the makespan is over ideal; these say why: slots
 * that waited for the agents to start and the first builds (start-up),
 * slots that waited between tasks (a profile for its validation, a kernel
 * for its build, the dispatcher), and slots that had nothing left while
 * another ran the sweep's last long task (tail). The coordinator does not
 * store which slot an attempt held, so an agent's attempts are laid on its
 * slots here: by start, each onto the slot freed last before it (the
 * dispatcher refills a slot in the turn it frees). Exclusive slots never
 * hold two attempts at once, so this packing always fits; the idle total
 * is exact (makespan x slots - busy), its split into start-up, gaps and
 * tail is the packing's. */
#include "report/report_rows.h"

#include <stdlib.h>
#include <string.h>

static int by_start(const void *a, const void *b)
{
    const rspan *x = *(const rspan *const *)a, *y = *(const rspan *const *)b;
    return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

size_t kf_rep_slot_idle(const rep *r, kf_rep_slot *out, size_t max, kf_rep_slot *sum)
{
    memset(sum, 0, sizeof *sum);
    const rschedule *s = &r->sched;
    int gpu = s->gpu_attempts > 0;
    uint64_t t0 = r->sw->created_ns, t1 = r->sw->finished_ns;
    if (!t1 || t1 <= t0)
        return 0;
    const rspan **mine = calloc(s->nspans ? s->nspans : 1, sizeof *mine);
    if (!mine)
        return 0;
    size_t nslots = 0;
    for (size_t k = 0; k < r->nagents; k++) {
        const Kfleet__AgentInfo *a = r->agents[k];
        uint32_t slots = kf_rep_agent_slots(a, gpu);
        if (!slots)
            continue;
        size_t n = 0;
        for (size_t i = 0; i < s->nspans; i++)
            if (s->spans[i].gpu == gpu && strcmp(s->spans[i].agent, a->agent_id) == 0)
                mine[n++] = &s->spans[i];
        qsort(mine, n, sizeof *mine, by_start);
        kf_rep_slot *sl = calloc(slots, sizeof *sl);
        uint64_t *free_at = calloc(slots, sizeof *free_at);
        if (!sl || !free_at) {
            free(sl);
            free(free_at);
            continue;
        }
        for (size_t i = 0; i < n; i++) {
            uint64_t st = mine[i]->start_ns < t0 ? t0 : mine[i]->start_ns;
            uint64_t en = mine[i]->end_ns > t1 ? t1 : mine[i]->end_ns;
            /* The slot freed last before st (the dispatcher refills a slot
             * as it frees), else the earliest to free. */
            uint32_t j = 0;
            int fits = free_at[0] <= st;
            for (uint32_t q = 1; q < slots; q++) {
                int f = free_at[q] <= st;
                if ((f && (!fits || free_at[q] > free_at[j])) ||
                    (!f && !fits && free_at[q] < free_at[j])) {
                    j = q;
                    fits = f;
                }
            }
            if (sl[j].tasks == 0)
                sl[j].startup_s = (double)(st - t0) / 1e9;
            else if (st > free_at[j])
                sl[j].gaps_s += (double)(st - free_at[j]) / 1e9;
            if (en > st)
                sl[j].busy_s += (double)(en - st) / 1e9;
            if (en > free_at[j])
                free_at[j] = en;
            sl[j].tasks++;
        }
        for (uint32_t j = 0; j < slots; j++) {
            sl[j].agent = a->agent_id;
            sl[j].slot = j;
            sl[j].tail_s = sl[j].tasks ? (double)(t1 - free_at[j]) / 1e9 : (double)(t1 - t0) / 1e9;
            sum->tasks += sl[j].tasks;
            sum->busy_s += sl[j].busy_s;
            sum->startup_s += sl[j].startup_s;
            sum->gaps_s += sl[j].gaps_s;
            sum->tail_s += sl[j].tail_s;
            if (nslots < max)
                out[nslots] = sl[j];
            nslots++;
        }
        free(sl);
        free(free_at);
    }
    free(mine);
    return nslots;
}

/* report_rank — ranks rows per configuration and device; see
 * report_rank.h.
 *
 * How: one key per row (its parameters sorted by name, "name=value,...",
 * then its device), an index sorted by (key, ranked first, median, kernel,
 * node); a run of one key where a row has a speedup is sorted again by
 * speedup, its rows without one left unranked; ranks are counted along
 * each run. A sort, not a pairwise walk: a problem with 1,000 candidates
 * over a few configurations is a few thousand rows. */
#include "report/report_rank.h"

#include "common/buf.h"
#include "common/xalloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct rank_item {
    size_t row;
    char *key;
    int ranked;
    double median, speedup;
    uint32_t kernel;
    const char *node;
} rank_item;

static int by_name(const void *a, const void *b)
{
    const Kfleet__Param *x = *(Kfleet__Param *const *)a, *y = *(Kfleet__Param *const *)b;
    return strcmp(kf_rep_nz(x->name), kf_rep_nz(y->name));
}

static char *row_key(const rep *r, const rrow *w)
{
    const Kfleet__Task *t = (w->profile ? w->profile : w->validate)->task;
    Kfleet__Param **ps = kf_xcalloc(t->n_params ? t->n_params : 1, sizeof *ps);
    if (t->n_params)
        memcpy(ps, t->params, t->n_params * sizeof *ps);
    qsort(ps, t->n_params, sizeof *ps, by_name);
    kf_buf b = KF_BUF_INIT;
    for (size_t i = 0; i < t->n_params; i++)
        kf_buf_addf(&b, "%s%s=%lld", i ? "," : "", kf_rep_nz(ps[i]->name), (long long)ps[i]->value);
    kf_buf_addf(&b, "|%s", w->device);
    free(ps);
    return kf_buf_detach(&b);
}

static int is_ranked(const rrow *w)
{
    int valid = !w->validate || kf_rep_state_of(w->validate) == KFLEET__TASK_STATE__SUCCEEDED;
    return valid && w->profile && kf_rep_state_of(w->profile) == KFLEET__TASK_STATE__SUCCEEDED &&
           w->st.n > 0 && isfinite(w->st.median) && !w->impossible_of;
}

static int cmp_items(const void *a, const void *b)
{
    const rank_item *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    if (c)
        return c;
    if (x->ranked != y->ranked)
        return x->ranked ? -1 : 1;
    if (x->ranked && x->median != y->median)
        return x->median < y->median ? -1 : 1;
    if (x->kernel != y->kernel)
        return x->kernel < y->kernel ? -1 : 1;
    return strcmp(x->node, y->node);
}

/* Within one key: ranked first, the highest speedup first, then as
 * cmp_items. */
static int cmp_speedups(const void *a, const void *b)
{
    const rank_item *x = a, *y = b;
    if (x->ranked != y->ranked)
        return x->ranked ? -1 : 1;
    if (x->ranked && x->speedup != y->speedup)
        return x->speedup > y->speedup ? -1 : 1;
    return cmp_items(a, b);
}

/* A configuration whose rows have speedups ranks by them: each against the
 * baseline on its own node (report_speedup.c), where medians of two nodes
 * of one GPU model would also compare the nodes. A row without one there
 * (its node's baseline failed or was not measured) is compared with
 * nothing: unranked, and its no_speedup says why. The run it[0..n) shares
 * a key. */
static void by_speedup(rank_item *it, size_t n)
{
    int any = 0;
    for (size_t i = 0; i < n && !any; i++)
        any = it[i].ranked && isfinite(it[i].speedup);
    if (!any)
        return;
    for (size_t i = 0; i < n; i++)
        it[i].ranked = it[i].ranked && isfinite(it[i].speedup);
    qsort(it, n, sizeof *it, cmp_speedups);
}

void kf_rep_rank(rep *r)
{
    if (r->nrows == 0)
        return;
    rank_item *it = kf_xcalloc(r->nrows, sizeof *it);
    for (size_t i = 0; i < r->nrows; i++) {
        rrow *w = &r->rows[i];
        it[i] = (rank_item){i,          row_key(r, w), is_ranked(w),          w->st.median,
                            w->speedup, w->kernel,     w->node ? w->node : ""};
    }
    qsort(it, r->nrows, sizeof *it, cmp_items);
    for (size_t g = 0, e; g < r->nrows; g = e) {
        for (e = g + 1; e < r->nrows && strcmp(it[e].key, it[g].key) == 0; e++)
            ;
        by_speedup(&it[g], e - g);
    }
    uint32_t rank = 0;
    for (size_t i = 0; i < r->nrows; i++) {
        if (i == 0 || strcmp(it[i].key, it[i - 1].key) != 0)
            rank = 0;
        r->rows[it[i].row].rank = it[i].ranked ? ++rank : 0;
    }
    if (r->group_by == KF_GROUP_CONFIG) {
        rrow *sorted = kf_xcalloc(r->nrows, sizeof *sorted);
        for (size_t i = 0; i < r->nrows; i++)
            sorted[i] = r->rows[it[i].row];
        memcpy(r->rows, sorted, r->nrows * sizeof *sorted);
        free(sorted);
    }
    for (size_t i = 0; i < r->nrows; i++)
        free(it[i].key);
    free(it);
}

void kf_rep_verdict(const rrow *w, char *out, size_t len)
{
    const rtask *both[2] = {w->validate, w->profile};
    for (int i = 0; i < 2; i++) {
        if (!both[i])
            continue;
        int st = kf_rep_state_of(both[i]);
        if (st != KFLEET__TASK_STATE__SUCCEEDED) {
            snprintf(out, len, "%s %s", both[i]->kind->name, kf_rep_state_name(st));
            return;
        }
    }
    snprintf(out, len, "passed");
}

/* report_model — one report, built once; see report_model.h.
 *
 * The build is four steps over the store's records, each in its module:
 * collect the rows (report_rows.c), their speedups (report_speedup.c), the
 * problem's provenance (report_problem.c, which also takes the problem's
 * own rows out), the ranks (report_rank.c). */
#include "report/report_model.h"
#include "common/xalloc.h"
#include "report/report_problem.h"
#include "report/report_rank.h"

#include <stdlib.h>

struct kf_report_model {
    rep rows;
};

int kf_report_model_new(kf_txn *t, uint32_t sweep_id, const kf_report_opts *opts,
                        kf_report_model **out, kf_err *err)
{
    *out = NULL;
    kf_report_model *m = kf_xcalloc(1, sizeof *m);
    int rc = kf_rep_collect(t, sweep_id, opts, &m->rows, err);
    if (rc) {
        free(m);
        return rc;
    }
    kf_rep_speedups(&m->rows);
    rc = kf_rep_problem_collect(&m->rows, err);
    if (rc == KF_OK) {
        if (m->rows.problem.k && !opts->group_set)
            m->rows.group_by = KF_GROUP_CONFIG;
        kf_rep_rank(&m->rows);
    }
    if (rc) {
        kf_report_model_destroy(&m);
        return rc;
    }
    *out = m;
    return KF_OK;
}

void kf_report_model_destroy(kf_report_model **self)
{
    if (!*self)
        return;
    kf_rep_release(&(*self)->rows);
    free(*self);
    *self = NULL;
}

const rep *kf_report_model_rows(const kf_report_model *self)
{
    return &self->rows;
}

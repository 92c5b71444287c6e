/* report_csv — the report as CSV; see report_csv.h.
 *
 * A printer of the model's rows, like the table: one column table (name and
 * cell), each cell read from the typed row, the figures the JSON printer
 * writes taken from the same fields and the same derivations
 * (report_fields.h). A number is written as the JSON's reader would print
 * it: an integer whole, a real to 9 significant digits, nothing where the
 * JSON has null. */
#include "report/report_csv.h"
#include "common/err.h"
#include "common/text.h"
#include "report/report_fields.h"
#include "report/report_rank.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* One field, quoted when it has to be; NULL: empty. */
static void field(kf_buf *out, const char *s, int first)
{
    if (!first)
        kf_buf_addc(out, ',');
    if (!s)
        return;
    if (!strpbrk(s, ",\"\r\n")) {
        kf_buf_adds(out, s);
        return;
    }
    kf_buf_addc(out, '"');
    for (; *s; s++) {
        if (*s == '"')
            kf_buf_addc(out, '"');
        kf_buf_addc(out, *s);
    }
    kf_buf_addc(out, '"');
}

/* Text from a node or a kernel, as valid UTF-8 (its odd bytes as "\xff",
 * as the JSON writes them); NULL or empty: an empty field. */
static void text_at(kf_buf *out, const char *s, int first)
{
    kf_buf t = KF_BUF_INIT;
    if (s)
        kf_text_utf8_n(&t, s, strlen(s));
    field(out, t.len ? t.data : NULL, first);
    kf_buf_release(&t);
}

static void text(kf_buf *out, const char *s)
{
    text_at(out, s, 0);
}

/* A real, empty where it is not a number. */
static void real(kf_buf *out, double v)
{
    char num[64];
    snprintf(num, sizeof num, "%.9g", v);
    field(out, isfinite(v) ? num : NULL, 0);
}

static void integer(kf_buf *out, long long v)
{
    char num[32];
    snprintf(num, sizeof num, "%lld", v);
    field(out, num, 0);
}

/* ---- the columns ---- */

typedef struct cell_ctx {
    const rep *r;
    const rrow *w;
} cell_ctx;

static void c_kernel(kf_buf *o, const cell_ctx *c)
{
    text_at(o, c->w->kernel_name, 1);
}

/* "k=v;k=v" in the sweep's order. */
static void c_params(kf_buf *o, const cell_ctx *c)
{
    const rtask *any = c->w->profile ? c->w->profile : c->w->validate;
    kf_buf s = KF_BUF_INIT;
    for (size_t i = 0; i < any->task->n_params; i++)
        kf_buf_addf(&s, "%s%s=%lld", i ? ";" : "", kf_rep_nz(any->task->params[i]->name),
                    (long long)any->task->params[i]->value);
    field(o, s.data ? s.data : "", 0);
    kf_buf_release(&s);
}

static void c_node(kf_buf *o, const cell_ctx *c)
{
    text(o, c->w->node);
}
static void c_device(kf_buf *o, const cell_ctx *c)
{
    text(o, c->w->device);
}

/* pass, fail, or the task's state where it has no result yet. */
static void c_validation(kf_buf *o, const cell_ctx *c)
{
    const rtask *v = c->w->validate;
    field(o,
          !v                                               ? NULL
          : !v->res                                        ? kf_rep_state_name(kf_rep_state_of(v))
          : v->res->state == KFLEET__TASK_STATE__SUCCEEDED ? "pass"
                                                           : "fail",
          0);
}

static void c_max_abs_err(kf_buf *o, const cell_ctx *c)
{
    real(o, c->w->validate ? kf_rep_max_abs_err(c->w->validate) : NAN);
}

#define PROFILED(c) ((c)->w->profile != NULL)

static void c_samples(kf_buf *o, const cell_ctx *c)
{
    if (PROFILED(c))
        integer(o, (long long)c->w->profile->nsamples);
    else
        field(o, NULL, 0);
}

static double prof(const cell_ctx *c, double v)
{
    return PROFILED(c) ? v : NAN;
}
static void c_median(kf_buf *o, const cell_ctx *c)
{
    real(o, prof(c, c->w->st.median));
}
/* The interval's ends where its low end is a number, as the JSON's array. */
static void c_ci_lo(kf_buf *o, const cell_ctx *c)
{
    real(o, prof(c, c->w->st.ci_lo));
}
static void c_ci_hi(kf_buf *o, const cell_ctx *c)
{
    real(o, isfinite(c->w->st.ci_lo) ? prof(c, c->w->st.ci_hi) : NAN);
}
static void c_min(kf_buf *o, const cell_ctx *c)
{
    real(o, prof(c, c->w->st.min));
}
static void c_max(kf_buf *o, const cell_ctx *c)
{
    real(o, prof(c, c->w->st.max));
}
static void c_noise(kf_buf *o, const cell_ctx *c)
{
    real(o, prof(c, c->w->st.noise_pct));
}
static void c_gbps(kf_buf *o, const cell_ctx *c)
{
    real(o, prof(c, c->w->gbps));
}
static void c_gflops(kf_buf *o, const cell_ctx *c)
{
    real(o, prof(c, c->w->gflops));
}
static void c_pct_bw(kf_buf *o, const cell_ctx *c)
{
    real(o, prof(c, c->w->pct_bw));
}
static void c_pct_mma(kf_buf *o, const cell_ctx *c)
{
    real(o, prof(c, c->w->pct_mma));
}
static void c_speedup(kf_buf *o, const cell_ctx *c)
{
    real(o, c->w->speedup);
}
static void c_speedup_err(kf_buf *o, const cell_ctx *c)
{
    real(o, c->w->speedup_err);
}

static void c_discarded(kf_buf *o, const cell_ctx *c)
{
    if (PROFILED(c))
        integer(o, (long long)c->w->profile->ndiscarded);
    else
        field(o, NULL, 0);
}

static void c_sm_clock(kf_buf *o, const cell_ctx *c)
{
    if (PROFILED(c) && c->w->sm_clock_mhz)
        integer(o, c->w->sm_clock_mhz);
    else
        field(o, NULL, 0);
}

static void c_power(kf_buf *o, const cell_ctx *c)
{
    real(o, PROFILED(c) && c->w->power_mw ? c->w->power_mw / 1e3 : NAN);
}

static void c_flags(kf_buf *o, const cell_ctx *c)
{
    const char *fl[KF_REP_MAX_FLAGS];
    kf_buf s = KF_BUF_INIT;
    for (size_t i = 0, n = kf_rep_row_flags(c->w, fl); i < n; i++)
        kf_buf_addf(&s, "%s%s", i ? ";" : "", fl[i]);
    field(o, s.data ? s.data : "", 0);
    kf_buf_release(&s);
}

static void c_rank(kf_buf *o, const cell_ctx *c)
{
    if (c->w->rank)
        integer(o, c->w->rank);
    else
        field(o, NULL, 0);
}

/* ---- with --provenance ---- */

static const Kfleet__GpuInfo *gpu0(const cell_ctx *c)
{
    return c->w->agent && c->w->agent->n_gpus ? c->w->agent->gpus[0] : NULL;
}

static void c_gpu_uuid(kf_buf *o, const cell_ctx *c)
{
    text(o, gpu0(c) ? gpu0(c)->uuid : NULL);
}
static void c_driver(kf_buf *o, const cell_ctx *c)
{
    text(o, c->w->agent ? c->w->agent->driver_version : NULL);
}
static void c_compiler(kf_buf *o, const cell_ctx *c)
{
    text(o, kf_rep_compiler(c->w));
}
static void c_kernel_hash(kf_buf *o, const cell_ctx *c)
{
    text(o, c->w->kref ? c->w->kref->hash : NULL);
}
static void c_artifact(kf_buf *o, const cell_ctx *c)
{
    text(o, c->w->build ? c->w->build->artifact_hash : NULL);
}
static void c_sass(kf_buf *o, const cell_ctx *c)
{
    text(o, c->w->build ? c->w->build->sass_archs : NULL);
}
static void c_agent_version(kf_buf *o, const cell_ctx *c)
{
    text(o, c->w->agent ? c->w->agent->version : NULL);
}

/* ---- a problem sweep's: the verdict and the reference it was judged by
 * (the same on every line, so a spreadsheet filtered to a row still says
 * it) ---- */

static void c_verdict(kf_buf *o, const cell_ctx *c)
{
    char verdict[64];
    kf_rep_verdict(c->w, verdict, sizeof verdict);
    text(o, verdict);
}

static void c_problem(kf_buf *o, const cell_ctx *c)
{
    text(o, c->r->problem.k->name);
}

static void c_problem_hash(kf_buf *o, const cell_ctx *c)
{
    text(o, c->r->problem.k->hash);
}
static void c_pool(kf_buf *o, const cell_ctx *c)
{
    integer(o, c->r->problem.seed_pool);
}
static void c_renew(kf_buf *o, const cell_ctx *c)
{
    real(o, c->r->problem.seed_renew_s > 0 ? c->r->problem.seed_renew_s : NAN);
}
static void c_generation(kf_buf *o, const cell_ctx *c)
{
    if (c->r->problem.generation)
        integer(o, c->r->problem.generation);
    else
        field(o, NULL, 0);
}

typedef struct column {
    const char *name;
    void (*cell)(kf_buf *out, const cell_ctx *c);
} column;

/* Every line's columns, then --provenance's, then a problem sweep's. */
static const column cols[] = {
    {"kernel", c_kernel},
    {"params", c_params},
    {"node", c_node},
    {"device", c_device},
    {"validation", c_validation},
    {"max_abs_err", c_max_abs_err},
    {"samples", c_samples},
    {"median_s", c_median},
    {"ci95_lo_s", c_ci_lo},
    {"ci95_hi_s", c_ci_hi},
    {"min_s", c_min},
    {"max_s", c_max},
    {"noise_pct", c_noise},
    {"gbps", c_gbps},
    {"gflops", c_gflops},
    {"pct_copy_ceiling", c_pct_bw},
    {"pct_bf16_ceiling", c_pct_mma},
    {"speedup", c_speedup},
    {"speedup_err", c_speedup_err},
    {"discarded_samples", c_discarded},
    {"sm_clock_median_mhz", c_sm_clock},
    {"power_median_w", c_power},
    {"flags", c_flags},
    {"rank", c_rank},
    {NULL, NULL},
};

static const column prov_cols[] = {
    {"gpu_uuid", c_gpu_uuid},           {"driver_version", c_driver},
    {"compiler", c_compiler},           {"kernel_hash", c_kernel_hash},
    {"artifact_hash", c_artifact},      {"sass_archs", c_sass},
    {"agent_version", c_agent_version}, {NULL, NULL},
};

static const column problem_cols[] = {
    {"verdict", c_verdict}, {"problem", c_problem},    {"problem_hash", c_problem_hash},
    {"seed_pool", c_pool},  {"seed_renew_s", c_renew}, {"seed_generation", c_generation},
    {NULL, NULL},
};

int kf_report_csv(const rep *r, int provenance, kf_buf *out)
{
    const column *sets[3] = {cols, provenance ? prov_cols : NULL,
                             r->problem.k ? problem_cols : NULL};
    int first = 1;
    for (int s = 0; s < 3; s++)
        for (const column *c = sets[s]; c && c->name; c++, first = 0)
            field(out, c->name, first);
    kf_buf_adds(out, "\r\n");
    for (size_t i = 0; i < r->nrows; i++) {
        const rrow *w = &r->rows[i];
        cell_ctx cx = {r, w};
        for (int s = 0; s < 3; s++)
            for (const column *c = sets[s]; c && c->name; c++)
                c->cell(out, &cx);
        kf_buf_adds(out, "\r\n");
    }
    return KF_OK;
}

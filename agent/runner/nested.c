/* nested — the kernel run a second time, in a nested runner, under
 * NVIDIA's tools: Nsight Compute (--clock-control none; only the launches
 * between cuProfilerStart/Stop) for the sweep's ncu metrics, and
 * compute-sanitizer (memcheck, then racecheck), whose first error block
 * fails the validation. A sandboxed runner asks its tool host
 * (toolhost.h) to start them; one run by hand starts them itself. */
#include "runner/hctx.h"
#include "runner/harness.h"
#include "common/buf.h"
#include "common/log.h"
#include "common/util.h"
#include "common/xalloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runner/toolhost.h"
#include "runner/tools.h"

#include <limits.h>

/* The nested run a tool watches: set up, then `runs` launches (each
 * synchronised) inside the profiler range, nothing timed or streamed. */
int hctx_nested(hctx *h, const loaded *L, unsigned runs)
{
    void *state = NULL;
    kf_err err;
    int rc = hctx_setup(h, L, 1, &state);
    if (rc == 0)
        rc = hctx_run_once(h, L, state); /* warm-up: module load stays out of the metrics */
    if (rc == 0 && h->cu && kf_cudrv_profiler(h->cu, 1, &err) != KF_OK)
        rc = hctx_fail(h, KFLEET__TASK_STATE__FAILED, "%s", err.msg);
    for (unsigned i = 0; rc == 0 && i < runs; i++)
        rc = hctx_run_once(h, L, state);
    if (h->cu)
        kf_cudrv_profiler(h->cu, 0, &err);
    L->k->teardown(state);
    return rc;
}

/* ncu on the nested run; the metrics go into the Result. */
int hctx_ncu(hctx *h)
{
    char ncu[PATH_MAX], log[PATH_MAX + 64];
    if (!kf_tools_find("ncu", ncu, sizeof ncu))
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED,
                         "the sweep asks for ncu metrics but Nsight Compute (ncu) is not on this "
                         "node; install it with the CUDA toolkit or drop measure.ncu");
    kf_tools_log_path(KF_TOOL_NCU, h->tmpdir, h->ta, log, sizeof log);
    int st = 0;
    kf_err err;
    int rc = kf_toolhost_run(h->toolhost, KF_TOOL_NCU, h->workdir, h->tmpdir, h->ta, &st, &err);
    if (rc != KF_OK)
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "ncu: %s", err.msg);
    kf_buf text = KF_BUF_INIT;
    kf_buf_read_file(&text, log);
    Kfleet__Metric **mv = NULL;
    size_t n = 0;
    rc = st == 0 ? kf_tools_parse_ncu_csv(text.data, KF_TOOLS_NCU_RUNS, &mv, &n, &err) : KF_EIO;
    kf_buf_release(&text);
    if (rc != KF_OK) {
        char tail[1500];
        hctx_tail_lines(log, 8, tail, sizeof tail);
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "ncu (exit %d): %s\n%s", st,
                         st == 0 ? err.msg : "the profiled run failed", tail);
    }
    h->res->ncu = mv;
    h->res->n_ncu = n;
    return 0;
}

/* memcheck, then racecheck, on the nested run; the verdict is stored, and
 * an error either tool finds fails the validation. */
int hctx_sanitize(hctx *h)
{
    static const kf_tool tools[] = {KF_TOOL_MEMCHECK, KF_TOOL_RACECHECK};
    static const char *const names[] = {"memcheck", "racecheck"};
    char cs[PATH_MAX], log[PATH_MAX + 64];
    if (!kf_tools_find("compute-sanitizer", cs, sizeof cs))
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED,
                         "the sweep asks for sanitize but compute-sanitizer is not on this node; "
                         "install it with the CUDA toolkit or drop measure.sanitize");
    kf_buf verdict = KF_BUF_INIT;
    int bad = 0;
    for (size_t t = 0; t < 2; t++) {
        kf_tools_log_path(tools[t], h->tmpdir, h->ta, log, sizeof log);
        int st = 0;
        kf_err err;
        if (kf_toolhost_run(h->toolhost, tools[t], h->workdir, h->tmpdir, h->ta, &st, &err)) {
            kf_buf_release(&verdict);
            return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "compute-sanitizer: %s", err.msg);
        }
        char tail[1200];
        kf_buf text = KF_BUF_INIT;
        kf_buf_read_file(&text, log);
        kf_tools_first_error_block(text.data, tail, sizeof tail);
        kf_buf_release(&text);
        kf_buf_addf(&verdict, "%s%s: %s%s", t ? "\n" : "", names[t],
                    st == 0    ? "clean"
                    : st == 97 ? "ERRORS"
                               : "run failed",
                    st ? "\n" : " — ");
        kf_buf_addf(&verdict, "%s", tail);
        bad |= st != 0;
    }
    snprintf(h->sanitizer, sizeof h->sanitizer, "%s", verdict.data);
    kf_buf_release(&verdict);
    h->res->sanitizer = h->sanitizer;
    if (bad)
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "compute-sanitizer found errors:\n%s",
                         h->sanitizer);
    return 0;
}

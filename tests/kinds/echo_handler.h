/* The runner's handler of the test tree's `echo` kind (echo_kind.h),
 * included by agent/runner/harness.c when built with
 * KF_TASK_HANDLERS_EXTRA. It loads nothing and answers with what it was
 * handed, as a failure: the report shows a failure's kind and message, so
 * the test sees that this handler, in a runner of a real agent, ran. */
#include "echo_kind.h"

static void run_echo(hctx *h, const loaded *L, Kfleet__ProfileStats *ps,
                     Kfleet__TelemetrySummary *tsum)
{
    (void)L;
    (void)ps;
    (void)tsum;
    hctx_fail(h, KFLEET__TASK_STATE__FAILED, "echo from the runner: kernel %s, %zu params",
              h->spec->kernel ? h->spec->kernel : "?", h->spec->n_params);
}

#define KF_TASK_HANDLER_EXTRA_ROWS {(Kfleet__TaskKind)KF_TEST_KIND_ECHO, run_echo, 1},

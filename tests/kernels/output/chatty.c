/* chatty — a right kernel that prints on every run (printf to stdout, a
 * line to stderr at setup), as kernels with debug output do: its text is
 * its own, shown with its task, and never mistaken for the runner's
 * messages (docs/reliability.md). */
#include "output_common.h"

static void on_setup(st_t *s)
{
    fprintf(stderr, "chatty: setup of %zu elements\n", s->n);
}

static int run(void *state, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    st_t *s = state;
    compute(s);
    printf("chatty: run %lu, out[0] = %g\n", s->runs, (double)s->out[0]);
    return 0;
}

OUTPUT_KERNEL("chatty", "prints on every run")

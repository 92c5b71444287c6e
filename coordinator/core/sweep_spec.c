/* sweep_spec — a parsed sweep's life cycle and the queries on it that the
 * parser's files share (its stem-derived name, its baselines): apart from
 * sweep.c, which calls sweep_level.c, so that sweep_level.c can use them
 * without a call cycle between the two. */
#include "common/xalloc.h"
#include "core/sweep_int.h"

#include <stdlib.h>
#include <string.h>

/* The default sweep name: the file's stem ("runs/quick.yaml" → "quick"). */
char *kf_sweep_file_stem(const char *file)
{
    const char *base = kf_sweep_base_name(file);
    const char *dot = strrchr(base, '.');
    size_t n = dot && dot != base ? (size_t)(dot - base) : strlen(base);
    char *stem = kf_xmalloc(n + 1);
    memcpy(stem, base, n);
    stem[n] = '\0';
    return stem;
}

int kf_sweep_is_baseline(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0)
            return 1;
        p = e ? e + 1 : NULL;
    }
    return 0;
}

void kf_sweep_destroy(kf_sweep_spec **self)
{
    if (!self || !*self)
        return;
    kf_sweep_spec *s = *self;
    for (size_t i = 0; i < s->nkernels; i++)
        kf_sweep_kernel_free(&s->kernels[i]);
    free(s->kernels);
    for (size_t i = 0; i < s->nparts; i++)
        kf_sweep_destroy(&s->parts[i]);
    free(s->parts);
    for (size_t i = 0; i < s->nmissing; i++)
        free(s->missing[i]);
    free(s->missing);
    if (s->problem)
        kf_sweep_kernel_free(s->problem);
    free(s->problem);
    free(s->name);
    free(s->file);
    free(s->text);
    free(s->baseline);
    for (size_t i = 0; i < s->measure.nncu; i++)
        free(s->measure.ncu[i]);
    free(s->measure.ncu);
    free(s);
    *self = NULL;
}

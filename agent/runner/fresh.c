/* fresh — a candidate's timed samples on fresh inputs; see fresh.h. */
#include "runner/fresh.h"

#include "common/util.h"

#include <string.h>

enum { FRESH_EARLY = 32 };

void hctx_fresh_start(hctx_fresh *f, size_t nsets)
{
    memset(f, 0, sizeof *f);
    for (size_t i = 0; i < nsets && i < HCTX_MAX_SETS; i++)
        f->dirty[i] = 1;
}

/* One of the pool's seeds, drawn so that the candidate cannot tell which
 * comes next. */
static int any_pool_seed(const hctx *h)
{
    return h->spec->n_seeds ? (int)(kf_unpredictable_u64() % h->spec->n_seeds) : -1;
}

static int renew(hctx *h, hctx_fresh *f, void *state, size_t set, int audit)
{
    int pool = audit ? any_pool_seed(h) : -1;
    if (h->refresh(h, state, pool) != 0)
        return -1;
    f->dirty[set] = pool < 0;
    return 0;
}

int hctx_fresh_before(hctx *h, hctx_fresh *f, void *const *states, size_t nsets, size_t first,
                      size_t count)
{
    if (!h->refresh || nsets == 0)
        return 0;
    uint64_t t0 = kf_mono_ns();
    /* One sample in four is an audit for the first FRESH_EARLY samples, one
     * in sixteen after: a kernel of milliseconds stops after a few dozen
     * samples and still meets ~8 audits, while one of microseconds, which
     * runs thousands, no longer spends a fifth of them outside its
     * statistics. A candidate that counts its samples and cheats only late
     * meets an audit within ~16 samples of cheating, as unpredictably. */
    uint32_t done = f->fresh_samples + f->audits;
    int audit = kf_unpredictable_u64() % (done < FRESH_EARLY ? 4 : 16) == 0;
    f->last_audit = audit;
    size_t n = count < nsets ? count : nsets; /* each set once */
    for (size_t b = 0; b < n; b++) {
        size_t set = (first + b) % nsets;
        if (renew(h, f, states[set], set, audit) != 0)
            return -1;
    }
    f->audits += (uint32_t)audit;
    f->fresh_samples += (uint32_t)!audit;
    f->spent_s += (double)(kf_mono_ns() - t0) / 1e9;
    return 0;
}

int hctx_fresh_audit(hctx *h, hctx_fresh *f, void *const *states, size_t set)
{
    if (!h->refresh || set >= HCTX_MAX_SETS || !f->dirty[set])
        return 0;
    uint64_t t0 = kf_mono_ns();
    int rc = renew(h, f, states[set], set, 1);
    f->spent_s += (double)(kf_mono_ns() - t0) / 1e9;
    return rc;
}

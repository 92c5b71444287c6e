/* problem — a problem's seed pool and references in the store; see
 * problem.h and docs/problems.md.
 *
 * Seeds come from libsodium's randombytes_buf (the system's CSPRNG), never
 * from anything a kernel could reconstruct (a task id, the time). A pool
 * lives until it is older than its renew period; the renewal draws a new
 * generation and deletes the references of the retired seeds, so a stored
 * reference is always for a seed still in the pool, and a kernel that has
 * learned an old seed's inputs learns nothing about the next pool's. */
#include "core/problem.h"

#include "common/err.h"
#include "common/xalloc.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int by_name(const void *a, const void *b)
{
    const Kfleet__Param *x = *(Kfleet__Param *const *)a, *y = *(Kfleet__Param *const *)b;
    return strcmp(x->name ? x->name : "", y->name ? y->name : "");
}

void kf_problem_config_key(Kfleet__Param *const *params, size_t n, uint8_t out[KF_STORE_CONFIG_KEY])
{
    Kfleet__Param **sorted = kf_xcalloc(n ? n : 1, sizeof *sorted);
    if (n)
        memcpy(sorted, params, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, by_name);
    crypto_generichash_state st;
    crypto_generichash_init(&st, NULL, 0, KF_STORE_CONFIG_KEY);
    for (size_t i = 0; i < n; i++) {
        char line[256];
        int len = snprintf(line, sizeof line, "%s=%lld\n", sorted[i]->name ? sorted[i]->name : "",
                           (long long)sorted[i]->value);
        crypto_generichash_update(&st, (const unsigned char *)line,
                                  (size_t)len < sizeof line ? (size_t)len : sizeof line - 1);
    }
    crypto_generichash_final(&st, out, KF_STORE_CONFIG_KEY);
    free(sorted);
}

/* A new pool of `size` seeds, generation `gen`. */
static Kfleet__SeedPool *draw(const char *hash, uint32_t size, uint32_t gen, double renew_s,
                              uint64_t now_ns)
{
    Kfleet__SeedPool *p = kf_xcalloc(1, sizeof *p);
    kfleet__seed_pool__init(p);
    p->problem_hash = kf_xstrdup(hash);
    p->seeds = kf_xcalloc(size, sizeof *p->seeds);
    p->n_seeds = size;
    randombytes_buf(p->seeds, size * sizeof *p->seeds);
    p->generation = gen;
    p->drawn_ns = now_ns;
    p->renew_s = renew_s;
    return p;
}

/* Frees a pool this file built (not one unpacked from the store). */
static void draw_free(Kfleet__SeedPool *p)
{
    free(p->problem_hash);
    free(p->seeds);
    free(p);
}

/* Copies p into an unpacked message the caller frees the usual way. */
static int hand_over(const Kfleet__SeedPool *p, Kfleet__SeedPool **out)
{
    size_t n = kfleet__seed_pool__get_packed_size(p);
    uint8_t *buf = kf_xmalloc(n ? n : 1);
    kfleet__seed_pool__pack(p, buf);
    *out = kfleet__seed_pool__unpack(NULL, n, buf);
    free(buf);
    return *out ? KF_OK : KF_ESTORE;
}

int kf_problem_seed_pool(kf_txn *t, const char *problem_hash, uint32_t size, double renew_s,
                         uint64_t now_ns, Kfleet__SeedPool **out, int *renewed)
{
    *out = NULL;
    *renewed = 0;
    if (size == 0)
        return KF_EINVAL;
    Kfleet__SeedPool *old = NULL;
    int rc = kf_store_get_seedpool(t, problem_hash, &old);
    if (rc != KF_OK && rc != KF_ENOTFOUND)
        return rc;
    double age_s = old && now_ns > old->drawn_ns ? (double)(now_ns - old->drawn_ns) / 1e9 : 0;
    if (old && old->n_seeds == size && age_s <= old->renew_s) {
        *out = old;
        return KF_OK;
    }
    uint32_t gen = old ? old->generation + 1 : 1;
    if (old)
        kfleet__seed_pool__free_unpacked(old, NULL);
    Kfleet__SeedPool *p = draw(problem_hash, size, gen, renew_s, now_ns);
    uint32_t removed = 0;
    rc = kf_store_put_seedpool(t, p);
    if (rc == KF_OK && gen > 1)
        rc = kf_store_retire_references(t, problem_hash, gen, &removed);
    if (rc == KF_OK)
        rc = hand_over(p, out);
    draw_free(p);
    *renewed = rc == KF_OK;
    return rc;
}

int kf_problem_missing_refs(kf_txn *t, const Kfleet__SeedPool *p, const uint8_t *config_key,
                            uint64_t *missing, size_t *nmissing)
{
    *nmissing = 0;
    for (size_t i = 0; i < p->n_seeds; i++) {
        Kfleet__Reference *r = NULL;
        int rc = kf_store_get_reference(t, p->problem_hash, config_key, p->seeds[i], &r);
        if (rc == KF_OK) {
            kfleet__reference__free_unpacked(r, NULL);
            continue;
        }
        if (rc != KF_ENOTFOUND)
            return rc;
        missing[(*nmissing)++] = p->seeds[i];
    }
    return KF_OK;
}

int kf_problem_store_ref(kf_txn *t, const Kfleet__SeedPool *p, Kfleet__Reference *r, int *dup)
{
    *dup = 0;
    size_t i = 0;
    while (i < p->n_seeds && p->seeds[i] != r->seed)
        i++;
    if (i == p->n_seeds || strcmp(r->problem_hash, p->problem_hash) != 0)
        return KF_EINVAL;
    /* The values stay on the agents (issue 41): a digest names them. */
    if (r->count == 0 || !r->digest || strlen(r->digest) != 64 ||
        strspn(r->digest, "0123456789abcdef") != 64)
        return KF_EINVAL;
    r->generation = p->generation;
    return kf_store_put_reference(t, r, dup);
}

int kf_problem_store_result(kf_txn *t, const char *problem_hash, Kfleet__Param *const *params,
                            size_t nparams, const char *agent_id, uint64_t now_ns,
                            Kfleet__Result *r, size_t *stored)
{
    *stored = 0;
    Kfleet__SeedPool *p = NULL;
    int rc = kf_store_get_seedpool(t, problem_hash, &p);
    if (rc)
        return rc;
    uint8_t key[KF_STORE_CONFIG_KEY];
    kf_problem_config_key(params, nparams, key);
    for (size_t i = 0; i < r->n_references && rc == KF_OK; i++) {
        Kfleet__Reference *ref = r->references[i];
        char *saved_hash = ref->problem_hash, *saved_agent = ref->agent_id;
        ProtobufCBinaryData saved_key = ref->config_key;
        Kfleet__Param **saved_params = ref->params;
        size_t saved_np = ref->n_params;
        ref->problem_hash = (char *)problem_hash;
        ref->config_key = (ProtobufCBinaryData){KF_STORE_CONFIG_KEY, key};
        ref->params = (Kfleet__Param **)params;
        ref->n_params = nparams;
        ref->task_id = r->task_id;
        ref->agent_id = (char *)(agent_id ? agent_id : "");
        ref->computed_ns = now_ns;
        int dup = 0;
        int src = kf_problem_store_ref(t, p, ref, &dup);
        if (src == KF_OK && !dup)
            (*stored)++;
        else if (src != KF_OK && src != KF_EINVAL)
            rc = src; /* the store's error; EINVAL: a retired seed, not kept */
        ref->problem_hash = saved_hash;
        ref->agent_id = saved_agent;
        ref->config_key = saved_key;
        ref->params = saved_params;
        ref->n_params = saved_np;
        ref->values.len = 0; /* the Result is stored without the values */
    }
    kfleet__seed_pool__free_unpacked(p, NULL);
    return rc;
}

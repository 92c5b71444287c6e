/* provider — the table of providers (provider.h): the built-in rows, then
 * those registered at run time (a test's, a later plug-in's). */
#include "fleet/provider.h"

#include <pthread.h>
#include <string.h>

#define MAX_PROVIDERS 32

/* The built-in rows, each defined in its provider_NAME.c: the one place
 * outside a provider's files that names it (tests/layout/providers.py). */
extern const kf_provider kf_provider_runpod, kf_provider_brev, kf_provider_shadeform,
    kf_provider_ssh, kf_provider_slurm, kf_provider_local;

/* The order is the one errors list them in. */
static const kf_provider *const builtin[] = {&kf_provider_runpod,    &kf_provider_brev,
                                             &kf_provider_shadeform, &kf_provider_ssh,
                                             &kf_provider_slurm,     &kf_provider_local};
#define NBUILTIN (sizeof builtin / sizeof builtin[0])

/* Written only by kf_provider_register, before the rows are used (at
 * start-up, or a test's set-up); the mutex keeps two registrations apart. */
static pthread_mutex_t table_mu = PTHREAD_MUTEX_INITIALIZER;
static const kf_provider *added[MAX_PROVIDERS - NBUILTIN];
static size_t nadded;
static const char *names[MAX_PROVIDERS + 1];

const kf_provider *kf_provider_at(size_t i)
{
    if (i < NBUILTIN)
        return builtin[i];
    i -= NBUILTIN;
    return i < nadded ? added[i] : NULL;
}

const kf_provider *kf_provider_find(const char *name)
{
    const kf_provider *p;
    for (size_t i = 0; name && (p = kf_provider_at(i)); i++)
        if (strcmp(p->name, name) == 0)
            return p;
    return NULL;
}

const char *const *kf_provider_names(void)
{
    pthread_mutex_lock(&table_mu);
    const kf_provider *p;
    size_t n = 0;
    for (size_t i = 0; (p = kf_provider_at(i)); i++)
        if (!p->internal)
            names[n++] = p->name;
    names[n] = NULL;
    pthread_mutex_unlock(&table_mu);
    return names;
}

int kf_provider_register(const kf_provider *p, kf_err *err)
{
    if (!p || !p->name || !*p->name || !p->launch || !p->teardown)
        return kf_err_set(err, KF_EINVAL, "a provider needs a name, launch and teardown");
    pthread_mutex_lock(&table_mu);
    int rc = KF_OK;
    if (kf_provider_find(p->name))
        rc = kf_err_set(err, KF_EEXIST, "provider %s is registered already", p->name);
    else if (nadded == sizeof added / sizeof added[0])
        rc = kf_err_set(err, KF_EFULL, "the provider table is full (%d rows)", MAX_PROVIDERS);
    else
        added[nadded++] = p;
    pthread_mutex_unlock(&table_mu);
    return rc;
}

/* fleet_slurm — parses an inventory host's `slurm:` block (fleet_slurm.h).
 * Every value ends up on sbatch's command line on the login node, quoted,
 * but is still checked here: a typo in a partition should be a FILE:LINE:COL
 * error before anything is sent, not a job that never starts. */
#include "fleet/fleet_slurm.h"
#include "fleet/provider.h"
#include "fleet/slurm_sbatch.h"
#include "common/err.h"
#include "common/util.h"
#include "common/xalloc.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SBATCH 32
#define DEFAULT_SIGNAL_S 300

long kf_fleet_slurm_seconds(const char *s)
{
    if (strcasecmp(s, "UNLIMITED") == 0 || strcasecmp(s, "infinite") == 0)
        return 0;
    long f[4] = {0};
    int nf = 0, days = -1;
    const char *p = s;
    const char *dash = strchr(s, '-');
    if (dash) {
        char *end;
        long d = strtol(s, &end, 10);
        if (end != dash || end == s || d < 0 || d > 3650)
            return -1;
        days = (int)d;
        p = dash + 1;
    }
    while (*p) {
        if (!isdigit((unsigned char)*p) || nf == 3)
            return -1;
        char *end;
        f[nf++] = strtol(p, &end, 10);
        if (f[nf - 1] > 1000000)
            return -1;
        p = end;
        if (*p == ':' && isdigit((unsigned char)p[1]))
            p++;
        else if (*p)
            return -1;
    }
    if (nf == 0)
        return -1;
    if (days >= 0) /* D-HH, D-HH:MM, D-HH:MM:SS */
        return days * 86400L + f[0] * 3600 + (nf > 1 ? f[1] * 60 : 0) + (nf > 2 ? f[2] : 0);
    if (nf == 1) /* MM */
        return f[0] * 60;
    if (nf == 2) /* MM:SS */
        return f[0] * 60 + f[1];
    return f[0] * 3600 + f[1] * 60 + f[2]; /* HH:MM:SS */
}

static int word(kf_yaml *y, const yaml_node_t *v, const char *what, const char *extra,
                const char *example, char **out)
{
    const char *s;
    int rc = kf_yaml_nonempty_scalar(y, v, what, &s);
    if (rc)
        return rc;
    if (!kf_word_ok(s, extra, 128))
        return kf_yaml_fail(y, v,
                            "%s '%.60s' is not a Slurm %s; write it as sbatch takes it, like %s",
                            what, s, what, example);
    *out = kf_xstrdup(s);
    return KF_OK;
}

static int int_value(kf_yaml *y, const yaml_node_t *v, const char *what, long lo, long hi,
                     const char *fix, long *out)
{
    const char *s;
    int rc = kf_yaml_nonempty_scalar(y, v, what, &s);
    if (rc)
        return rc;
    char *end;
    long n = strtol(s, &end, 10);
    if (*end || end == s || n < lo || n > hi)
        return kf_yaml_fail(y, v, "%s must be a whole number from %ld to %ld, not '%.40s'; %s",
                            what, lo, hi, s, fix);
    *out = n;
    return KF_OK;
}

static int parse_sbatch(kf_yaml *y, const yaml_node_t *v, kf_fleet_slurm *s)
{
    if (v->type != YAML_SEQUENCE_NODE)
        return kf_yaml_fail(y, v,
                            "sbatch must be a list of options, like sbatch: [\"--qos=high\"], "
                            "not %s",
                            kf_yaml_kind(v));
    size_t n = kf_yaml_seq_len(v);
    if (n > MAX_SBATCH)
        return kf_yaml_fail(y, v, "%zu sbatch options is too many (the limit is %d)", n,
                            MAX_SBATCH);
    s->sbatch = kf_xcalloc(n ? n : 1, sizeof *s->sbatch);
    for (size_t i = 0; i < n; i++) {
        yaml_node_t *it = kf_yaml_seq_item(y, v, i);
        const char *o;
        int rc = kf_yaml_nonempty_scalar(y, it, "an sbatch option", &o);
        if (rc)
            return rc;
        if (strlen(o) > 256)
            return kf_yaml_fail(y, it, "sbatch option '%.60s...' is longer than 256 bytes", o);
        for (const char *c = o; *c; c++)
            if ((unsigned char)*c < 0x20 || *c == 0x7f)
                return kf_yaml_fail(y, it, "sbatch option has a control character");
        s->sbatch[i] = kf_xstrdup(o);
        s->nsbatch = i + 1;
    }
    /* Read as sbatch will read them, kfleet's own options before them. */
    size_t bad;
    char why[512];
    if (kf_slurm_sbatch_check((const char *const *)s->sbatch, s->nsbatch, &bad, why, sizeof why))
        return kf_yaml_fail(y, kf_yaml_seq_item(y, v, bad), "%s", why);
    return KF_OK;
}

static int parse_block(kf_yaml *y, const yaml_node_t *n, kf_fleet_slurm *s)
{
    static const char *const keys[] = {"nodes",  "partition",  "gres",          "time", "account",
                                       "sbatch", "relay_host", "signal_before", NULL};
    if (n->type != YAML_MAPPING_NODE)
        return kf_yaml_fail(y, n,
                            "slurm must be a mapping, like slurm: {partition: gpu, gres: "
                            "\"gpu:8\", nodes: 2}, not %s",
                            kf_yaml_kind(n));
    int rc = kf_yaml_check_keys(y, n, "in slurm", keys);
    if (rc)
        return rc;
    yaml_node_t *v;
    long l = 0; /* set by int_value on success; gcc -O3 cannot see that */
    if ((v = kf_yaml_map_get(y, n, "nodes"))) {
        if ((rc = int_value(y, v, "nodes", 1, KF_SLURM_MAX_NODES,
                            "it is how many agents (one job per node) to start", &l)))
            return rc;
        s->nodes = (int)l;
    }
    if ((v = kf_yaml_map_get(y, n, "partition")) &&
        (rc = word(y, v, "partition", "._-", "partition: gpu", &s->partition)))
        return rc;
    if ((v = kf_yaml_map_get(y, n, "gres")) &&
        (rc = word(y, v, "gres", ":._,-", "gres: \"gpu:8\" or \"gpu:h100:4\"", &s->gres)))
        return rc;
    if ((v = kf_yaml_map_get(y, n, "account")) &&
        (rc = word(y, v, "account", "._-", "account: lab42", &s->account)))
        return rc;
    if ((v = kf_yaml_map_get(y, n, "relay_host")) &&
        (rc = word(y, v, "relay_host", ".:_-", "relay_host: login1.cluster", &s->relay_host)))
        return rc;
    if ((v = kf_yaml_map_get(y, n, "time"))) {
        const char *t;
        if ((rc = kf_yaml_nonempty_scalar(y, v, "time", &t)))
            return rc;
        s->time_s = kf_fleet_slurm_seconds(t);
        if (s->time_s < 0)
            return kf_yaml_fail(y, v,
                                "time '%.40s' is not a Slurm time limit; use MM, HH:MM:SS, "
                                "D-HH or D-HH:MM:SS, like time: \"4:00:00\"",
                                t);
        s->time = kf_xstrdup(t);
    }
    if ((v = kf_yaml_map_get(y, n, "signal_before"))) {
        if ((rc = int_value(y, v, "signal_before", 10, 65535,
                            "it is the seconds before the time limit at which agents drain", &l)))
            return rc;
        if (s->time_s > 0 && l >= s->time_s)
            return kf_yaml_fail(y, v,
                                "signal_before %ld s is not shorter than the job's time (%ld s); "
                                "agents would drain as they start",
                                l, s->time_s);
        s->signal_before_s = (int)l;
    } else if (s->time_s > 0 && s->time_s / 4 < DEFAULT_SIGNAL_S) {
        s->signal_before_s = (int)(s->time_s / 4 > 10 ? s->time_s / 4 : 10);
    }
    if ((v = kf_yaml_map_get(y, n, "sbatch")) && (rc = parse_sbatch(y, v, s)))
        return rc;
    return KF_OK;
}

int kf_fleet_slurm_parse(kf_yaml *y, const yaml_node_t *n, kf_fleet_slurm **out)
{
    kf_fleet_slurm *s = kf_xcalloc(1, sizeof *s);
    s->nodes = 1;
    s->signal_before_s = DEFAULT_SIGNAL_S;
    int rc = n ? parse_block(y, n, s) : KF_OK;
    if (rc) {
        kf_fleet_slurm_free(&s);
        return rc;
    }
    *out = s;
    return KF_OK;
}

static char *dup_or_null(const char *s)
{
    return s ? kf_xstrdup(s) : NULL;
}

kf_fleet_slurm *kf_fleet_slurm_dup(const kf_fleet_slurm *s)
{
    if (!s)
        return NULL;
    kf_fleet_slurm *d = kf_xcalloc(1, sizeof *d);
    *d = *s;
    d->partition = dup_or_null(s->partition);
    d->gres = dup_or_null(s->gres);
    d->time = dup_or_null(s->time);
    d->account = dup_or_null(s->account);
    d->relay_host = dup_or_null(s->relay_host);
    d->sbatch = kf_xcalloc(s->nsbatch ? s->nsbatch : 1, sizeof *d->sbatch);
    for (size_t i = 0; i < s->nsbatch; i++)
        d->sbatch[i] = kf_xstrdup(s->sbatch[i]);
    return d;
}

void kf_fleet_slurm_free(kf_fleet_slurm **sp)
{
    if (!sp || !*sp)
        return;
    kf_fleet_slurm *s = *sp;
    free(s->partition);
    free(s->gres);
    free(s->time);
    free(s->account);
    free(s->relay_host);
    for (size_t i = 0; i < s->nsbatch; i++)
        free(s->sbatch[i]);
    free(s->sbatch);
    free(s);
    *sp = NULL;
}

/* By the row's name, not its address: the row (provider_slurm.c) uses this
 * file, not the other way. */
const kf_fleet_slurm *kf_fleet_slurm_of(const kf_fleet_host *h)
{
    return h && h->prov && strcmp(h->prov->name, "slurm") == 0 ? h->block : NULL;
}

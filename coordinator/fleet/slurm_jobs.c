/* slurm_jobs — squeue's output for one inventory host (slurm_jobs.h). */
#include "fleet/slurm_jobs.h"
#include "common/xalloc.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char kf_slurm_squeue_script[] =
    "set -u\n"
    "q=$(squeue -h -u \"$(id -un)\" -t all -o '%j|%i|%T|%r|%N' 2>&1) || "
    "{ echo \"$q\" >&2; exit 5; }\n"
    "printf '%s\\n' \"$q\" | awk -F'|' -v p=\"kfleet-$2-\" 'index($1,p)==1'\n";

static const char *const final_states[] = {
    "COMPLETED",    "CANCELLED", "FAILED",   "TIMEOUT",       "NODE_FAIL",
    "PREEMPTED",    "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY", "COMPLETING",
    "SPECIAL_EXIT", "REVOKED",   NULL};

int kf_slurm_state_final(const char *state)
{
    for (size_t i = 0; final_states[i]; i++)
        if (strcmp(state, final_states[i]) == 0)
            return 1;
    return 0;
}

static int field(const char **p, char *out, size_t n)
{
    const char *e = strchr(*p, '|');
    size_t len = e ? (size_t)(e - *p) : strcspn(*p, "\n");
    if (len >= n)
        return -1;
    memcpy(out, *p, len);
    out[len] = '\0';
    *p += len + (e ? 1 : 0);
    return e ? 1 : 0;
}

int kf_slurm_parse(const char *name, const char *text, kf_slurm_job **jobs, size_t *n, kf_err *err)
{
    *jobs = NULL;
    *n = 0;
    size_t cap = 0;
    char prefix[200];
    snprintf(prefix, sizeof prefix, "kfleet-%s-", name);
    size_t plen = strlen(prefix);
    for (const char *line = text; line && *line;) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        char buf[1024];
        if (len == 0 || len >= sizeof buf) {
            line = nl ? nl + 1 : NULL;
            continue;
        }
        memcpy(buf, line, len);
        buf[len] = '\0';
        line = nl ? nl + 1 : NULL;
        const char *p = buf;
        char jname[200];
        kf_slurm_job j;
        memset(&j, 0, sizeof j);
        if (field(&p, jname, sizeof jname) != 1 || field(&p, j.job_id, sizeof j.job_id) != 1 ||
            field(&p, j.state, sizeof j.state) != 1 || field(&p, j.reason, sizeof j.reason) != 1 ||
            field(&p, j.node, sizeof j.node) < 0) {
            kf_slurm_free(jobs, n);
            return kf_err_set(err, KF_EIO, "squeue printed '%.120s', not JOB|ID|STATE|REASON|NODES",
                              buf);
        }
        if (strncmp(jname, prefix, plen) != 0 || !jname[plen])
            continue;
        const char *idx = jname + plen;
        int digits = 1;
        for (const char *c = idx; *c; c++)
            digits &= isdigit((unsigned char)*c) != 0;
        if (!digits)
            continue;
        if (strcmp(j.node, "(null)") == 0)
            j.node[0] = '\0';
        snprintf(j.agent_id, sizeof j.agent_id, "%s-%s", name, idx);
        if (*n == cap) {
            cap = cap ? cap * 2 : 8;
            *jobs = kf_xrealloc(*jobs, cap * sizeof **jobs);
        }
        (*jobs)[(*n)++] = j;
    }
    return KF_OK;
}

void kf_slurm_free(kf_slurm_job **jobs, size_t *n)
{
    free(*jobs);
    *jobs = NULL;
    *n = 0;
}

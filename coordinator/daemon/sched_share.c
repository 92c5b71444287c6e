/* sched_share — build once per fleet: agents with the same toolchain
 * (sched_toolchain: compilers, GPU, Python and packages) would compile the
 * same machine code (not the same file: it embeds the agent's build
 * directory, so each agent's .so hashes differently), so one compiles, the
 * others install its artifact, and every agent runs that one binary.
 *
 * The coordinator asks the first agent to build a kernel for its toolchain
 * to send the artifact back (TaskSpec.want_artifact), even alone: agents
 * of a fleet register one by one (pods come up minutes apart), and one
 * that comes later installs it. The artifact is stored with that build's
 * result, so the coordinator keeps it as long as the result; agents that
 * need the kernel meanwhile wait, then get a build task that carries it,
 * check its hash and install it (BuildInfo.built_by names the agent that
 * compiled it). A build that is abandoned hands the job to the next agent
 * that needs the kernel; one that fails or sends nothing usable (an
 * artifact over KF_MAX_SHARED_ARTIFACT) releases the waiters: each builds
 * for itself, as before. Only what the coordinator asked for is kept: an
 * agent cannot push bytes onto others unasked.
 *
 * Trust (issue 31): an agent is asked to build for others only when it is
 * on the coordinator's machine (the agent endpoint is ipc://, which only a
 * process there can reach; TCP from 127.0.0.1 may be an SSH tunnel) or on
 * the operator's trust list (STATE/keys/builders.trust: agent ids, one a
 * line, each bound to its key by the allow list). Any other agent builds
 * only for itself, so an allowed agent that reports another's toolchain
 * cannot hand it a poisoned build. An installed build is recorded with its
 * builder (BuildRecord.built_by, built_by_key); with sharing off, or its
 * builder no longer trusted, it does not count (sched_agent_build) and the
 * agent compiles its own (TaskSpec.own_build: the runner takes no
 * installed artifact from its cache). */
#include "daemon/sched_int.h"
#include "common/util.h"
#include "common/log.h"
#include "common/wire.h"
#include "common/buf.h"
#include "common/xalloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static kshare *find(const kf_coord *c, const char *toolchain, const char *hash)
{
    for (size_t i = 0; i < c->nshares; i++)
        if (strcmp(c->shares[i].hash, hash) == 0 && strcmp(c->shares[i].toolchain, toolchain) == 0)
            return &c->shares[i];
    return NULL;
}

static void drop(kf_coord *c, kshare *s)
{
    *s = c->shares[--c->nshares];
    c->dispatch_needed = 1; /* its waiters build for themselves */
}

const kshare *sched_share_find(kf_coord *c, const kagent *a, const char *hash)
{
    kshare *s = a->toolchain[0] ? find(c, a->toolchain, hash) : NULL;
    if (s && !sched_share_trusted_id(c, s->agent->id))
        return NULL; /* sharing off now, or its builder no longer trusted */
    if (!s || s->ready || s->unshareable)
        return s;
    /* However the build ended without a result reaching here (its agent
     * lost, its toolchain changed), nobody waits for it any more. */
    const kagent *b = s->agent;
    for (size_t i = 0; !b->lost && i < b->nbuilds; i++)
        if (b->builds[i].task_id == s->task_id && strcmp(b->builds[i].hash, hash) == 0 &&
            !kf_state_terminal(b->builds[i].state))
            return s;
    drop(c, s);
    return NULL;
}

void sched_share_load_trust(kf_coord *c)
{
    c->trust_loaded = 1;
    if (!c->cfg.trust_file)
        return;
    kf_buf b = KF_BUF_INIT;
    char why[256] = "";
    /* An operator's file, read as one (a FIFO or a huge file is refused). */
    int absent = access(c->cfg.trust_file, F_OK) != 0 && errno == ENOENT;
    if (!absent &&
        kf_buf_read_file_max(&b, c->cfg.trust_file, 1u << 20, why, sizeof why) != KF_OK) {
        kf_warn("build.trust", "file=%s error=\"%s\" why=\"keeping the last list (%zu)\"",
                c->cfg.trust_file, why, c->ntrusted);
        kf_buf_release(&b);
        return;
    }
    for (size_t i = 0; i < c->ntrusted; i++)
        free(c->trusted[i]);
    c->ntrusted = 0;
    for (char *save = NULL, *line = b.data ? strtok_r(b.data, "\n", &save) : NULL; line;
         line = strtok_r(NULL, "\n", &save)) {
        line += strspn(line, " \t");
        line[strcspn(line, " \t\r#")] = '\0';
        if (!*line)
            continue;
        c->trusted = kf_xrealloc(c->trusted, (c->ntrusted + 1) * sizeof *c->trusted);
        c->trusted[c->ntrusted++] = kf_xstrdup(line);
    }
    kf_buf_release(&b);
}

int sched_share_trusted_id(kf_coord *c, const char *id)
{
    if (c->cfg.no_shared_builds)
        return 0;
    if (strncmp(c->agent_endpoint, "ipc://", 6) == 0)
        return 1;
    if (!c->trust_loaded) /* before any agent registered: a restart's reload */
        sched_share_load_trust(c);
    for (size_t i = 0; i < c->ntrusted; i++)
        if (strcmp(c->trusted[i], id) == 0)
            return 1;
    return 0;
}

int sched_share_building(kf_coord *c, const kagent *a, const char *hash, uint64_t task_id)
{
    if (!a->toolchain[0] || !sched_share_trusted_id(c, a->id) || find(c, a->toolchain, hash))
        return 0;
    if (c->nshares == c->capshares) {
        c->capshares = c->capshares ? c->capshares * 2 : 16;
        c->shares = kf_xrealloc(c->shares, c->capshares * sizeof *c->shares);
    }
    kshare *s = &c->shares[c->nshares++];
    memset(s, 0, sizeof *s);
    snprintf(s->toolchain, sizeof s->toolchain, "%s", a->toolchain);
    snprintf(s->hash, sizeof s->hash, "%s", hash);
    s->agent = a;
    s->task_id = task_id;
    return 1;
}

void sched_share_result(kf_coord *c, const kagent *a, const char *hash, Kfleet__Result *r)
{
    kshare *s = a->toolchain[0] ? find(c, a->toolchain, hash) : NULL;
    int asked = s && !s->ready && !s->unshareable && s->agent == a && s->task_id == r->task_id;
    Kfleet__BuildInfo *b = r->build;
    int usable = asked && b && r->state == KFLEET__TASK_STATE__SUCCEEDED && b->artifact.len > 0 &&
                 b->artifact.len <= KF_MAX_SHARED_ARTIFACT && b->artifact_hash;
    if (usable) {
        char got[65];
        kf_hash_part part = {b->artifact.data, b->artifact.len};
        kf_hash_hex(&part, 1, got);
        usable = strcmp(got, b->artifact_hash) == 0;
        if (!usable)
            kf_warn("build.share",
                    "agent=%s task=0x%llx why=\"its artifact does not match its "
                    "hash: not shared\"",
                    a->id, (unsigned long long)r->task_id);
    }
    if (b && !usable)
        b->artifact.len = 0; /* not asked for, or not what it claims: not kept */
    if (usable) {
        s->ready = 1;
    } else if (asked) {
        /* Nothing to wait for: the others compile for themselves, at once
         * and side by side (a compile error fails each the same way). */
        s->unshareable = 1;
        c->dispatch_needed = 1;
    }
}

void sched_share_abandon(kf_coord *c, const kagent *a, const char *hash)
{
    for (size_t i = 0; i < c->nshares;) {
        kshare *s = &c->shares[i];
        if (!s->ready && !s->unshareable && s->agent == a && (!hash || strcmp(s->hash, hash) == 0))
            drop(c, s);
        else
            i++;
    }
}

void sched_share_fill(kf_coord *c, const ktask *t, Kfleet__TaskSpec *spec, Kfleet__Result **hold)
{
    *hold = NULL;
    kf_txn *txn;
    Kfleet__Result *r = NULL;
    if (!t->share_task || coord_txn(c, &txn) != KF_OK ||
        kf_store_get_result(txn, t->share_task, &r) != KF_OK)
        return;
    if (!r->build || r->build->artifact.len == 0 || !r->build->artifact_hash) {
        kfleet__result__free_unpacked(r, NULL);
        return;
    }
    spec->artifact = r->build->artifact;
    spec->artifact_hash = r->build->artifact_hash;
    spec->artifact_built_by = r->agent_id;
    /* What the compiler printed about these bytes goes with them; the
     * bytes themselves once, in spec->artifact. */
    r->build->artifact.len = 0;
    spec->artifact_build = r->build;
    *hold = r;
}

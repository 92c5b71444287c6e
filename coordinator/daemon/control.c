/* control — the coordinator's side of the CLI protocol: submit, status,
 * progress, cancel, shutdown, tunnels, launches. Requests arrive on the control ROUTER socket
 * (ipc, in the 0700 run directory); each gets exactly one reply, sent after
 * the batch commits, so "submitted as sweep 7" means sweep 7 is on disk. */
#include "daemon/coord_int.h"
#include "common/xalloc.h"
#include "core/sweep.h"
#include "fleet/launches.h"
#include "fleet/slurm_watch.h"
#include "common/log.h"
#include "fleet/tunnel.h"
#include "common/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void reply(kf_coord *c, const void *peer, size_t peer_len, Kfleet__ControlReply *rep)
{
    kf_ctl_pack_reply(rep, &c->scratch);
    coord_queue(c, 1, peer, peer_len, &c->scratch);
}

static void reply_error(kf_coord *c, const void *peer, size_t peer_len, int code, const char *msg)
{
    Kfleet__ControlReply rep = KFLEET__CONTROL_REPLY__INIT;
    rep.code = code;
    rep.error = (char *)msg;
    reply(c, peer, peer_len, &rep);
}

static void progress_from_counts(Kfleet__SweepProgress *p, const uint32_t counts[16])
{
    p->pending = counts[KFLEET__TASK_STATE__PENDING];
    p->running = counts[KFLEET__TASK_STATE__ASSIGNED] + counts[KFLEET__TASK_STATE__RUNNING];
    p->succeeded = counts[KFLEET__TASK_STATE__SUCCEEDED];
    p->failed = counts[KFLEET__TASK_STATE__FAILED];
    p->timed_out = counts[KFLEET__TASK_STATE__TIMED_OUT];
    p->cancelled = counts[KFLEET__TASK_STATE__CANCELLED];
    p->skipped = counts[KFLEET__TASK_STATE__SKIPPED];
}

/* counts[0..15] by state, [15] all; counts[16..31] the build tasks'. */
static int count_cb(void *ctx, const Kfleet__Task *t)
{
    uint32_t *counts = ctx;
    counts[t->state & 15]++;
    counts[15]++;
    if (t->kind == KFLEET__TASK_KIND__BUILD) {
        counts[16 + (t->state & 15)]++;
        counts[31]++;
    }
    return 0;
}

static uint32_t ended_of(const uint32_t counts[16])
{
    return counts[KFLEET__TASK_STATE__SUCCEEDED] + counts[KFLEET__TASK_STATE__FAILED] +
           counts[KFLEET__TASK_STATE__TIMED_OUT] + counts[KFLEET__TASK_STATE__CANCELLED] +
           counts[KFLEET__TASK_STATE__SKIPPED];
}

/* Who could take an open sweep's pending tasks, and when nobody can, why:
 * what a follower prints instead of waiting forever. An agent is able when
 * it can run a kernel that still has pending tasks: a CUDA kernel needs a
 * GPU slot, a Python one a Python with what it imports (sched_can_run). */
static void able_agents(kf_coord *c, const ksweep *sw, Kfleet__SweepProgress *p, char *why,
                        size_t why_len)
{
    size_t nk = sw->rec->n_kernels;
    unsigned char *able = kf_xcalloc(nk ? nk : 1, 1); /* kernel k: some agent up can run it */
    size_t known = 0, lost = 0, revoked = 0, stopped = 0;
    const kagent *last_lost = NULL;
    for (size_t i = 0; i < c->nagents; i++) {
        const kagent *a = c->agents[i];
        if (!a->registered)
            continue;
        known++;
        if (a->lost || a->revoked) {
            stopped += a->lost && a->stopped;
            lost += a->lost && !a->stopped;
            revoked += a->revoked;
            if (!last_lost || a->last_seen_mono > last_lost->last_seen_mono)
                last_lost = a;
            continue;
        }
        p->agents_up++;
        int any = 0;
        for (size_t k = 0; k < nk; k++) {
            const Kfleet__KernelRef *kr = sw->rec->kernels[k];
            if ((!kr->cuda || a->gpu_slots > 0) && sched_can_run(a, kr, NULL, 0))
                able[k] = any = 1;
        }
        p->agents_able += any;
    }
    why[0] = '\0';
    if (p->pending == 0) {
        free(able);
        return;
    }
    /* The kernel of the first pending task nobody can run; none when some
     * pending task can be run (the sweep moves). */
    const Kfleet__KernelRef *stuck = NULL;
    int moves = 0;
    for (uint32_t i = sw->cursor; i < sw->ntasks && !moves; i++) {
        const ktask *t = &sw->tasks[i];
        if (t->rec->state != KFLEET__TASK_STATE__PENDING || t->rec->kernel_index >= nk)
            continue;
        moves = able[t->rec->kernel_index];
        if (!stuck)
            stuck = sw->rec->kernels[t->rec->kernel_index];
    }
    free(able);
    if (moves && p->agents_able > 0)
        return;
    p->agents_able = 0;
    if (known == 0 && c->refused_handshakes)
        snprintf(why, why_len,
                 "no agent has registered with this coordinator; it refused %llu handshakes "
                 "(the last: %s) whose key is not in its allow list (`kfleet agent-key add KEY "
                 "NAME` accepts one)",
                 (unsigned long long)c->refused_handshakes, c->last_refused);
    else if (known == 0)
        snprintf(why, why_len,
                 "no agent has registered with this coordinator (none has connected: is one "
                 "running, pointed at %s?)",
                 c->agent_endpoint);
    else if (p->agents_up == 0)
        snprintf(why, why_len,
                 "all %zu agents are gone (%zu lost, %zu revoked, %zu stopped; the last heard "
                 "from: %s, %.0f s ago)",
                 known, lost, revoked, stopped, last_lost ? last_lost->id : "?",
                 last_lost ? (double)(kf_mono_ns() - last_lost->last_seen_mono) / 1e9 : 0.0);
    else if (stuck && (stuck->python || stuck->cuda) &&
             sched_kernel_unrunnable(c, stuck, NULL, 0, why, why_len))
        return;
    else
        snprintf(why, why_len,
                 "the sweep has CUDA kernels%s%s%s and none of the %u agents has a GPU slot; "
                 "launch agents on GPU nodes",
                 stuck ? " (the next: " : "", stuck ? stuck->name : "", stuck ? ")" : "",
                 p->agents_up);
}

/* Progress of any sweep: from memory while open, from the store after. */
static int sweep_progress(kf_coord *c, uint32_t id, Kfleet__SweepProgress *p, char *name,
                          size_t name_len, char *why, size_t why_len)
{
    ksweep *sw = sched_sweep(c, id);
    if (sw) {
        p->sweep_id = id;
        snprintf(name, name_len, "%s", sw->rec->name ? sw->rec->name : "");
        p->total = sw->ntasks;
        p->created_ns = sw->rec->created_ns;
        progress_from_counts(p, sw->counts);
        for (int st = 0; st < 16; st++)
            p->builds_total += sw->bcounts[st];
        p->builds_ended = ended_of(sw->bcounts);
        char none[8];
        able_agents(c, sw, p, why ? why : none, why ? why_len : sizeof none);
        if (why)
            p->stall = why;
        return KF_OK;
    }
    kf_txn *txn;
    int rc = coord_txn(c, &txn);
    if (rc)
        return rc;
    Kfleet__Sweep *rec = NULL;
    if ((rc = kf_store_get_sweep(txn, id, &rec)))
        return rc;
    uint32_t counts[32] = {0};
    rc = kf_store_foreach_task(txn, id, count_cb, counts);
    p->builds_total = counts[31];
    p->builds_ended = ended_of(counts + 16);
    p->sweep_id = id;
    snprintf(name, name_len, "%s", rec->name ? rec->name : "");
    p->total = counts[15];
    p->created_ns = rec->created_ns;
    p->finished_ns = rec->finished_ns;
    progress_from_counts(p, counts);
    kfleet__sweep__free_unpacked(rec, NULL);
    return rc;
}

/* The configurations of a task group (the product of its axes' lengths),
 * or 0 when the group is not one a client makes (why says what). Bounded
 * as the sweep parser bounds a sweep: a request cannot ask the
 * coordinator for more than KF_SWEEP_MAX_CONFIGS configurations. */
static uint64_t group_configs(const Kfleet__TaskGroup *g, size_t nkernels, char *why, size_t len)
{
    if (g->kernel_index >= nkernels) {
        snprintf(why, len, "a task group names kernel %u of %zu", g->kernel_index, nkernels);
        return 0;
    }
    int seen = 0;
    for (size_t i = 0; i < g->n_kinds; i++) {
        int bit = g->kinds[i] == KFLEET__TASK_KIND__VALIDATE  ? 1
                  : g->kinds[i] == KFLEET__TASK_KIND__PROFILE ? 2
                                                              : 0;
        if (!bit || (seen & bit) || (bit == 1 && (seen & 2))) {
            snprintf(why, len, "a task group's kinds are not validate and/or profile, in order");
            return 0;
        }
        seen |= bit;
    }
    if (!seen || g->n_axes > KF_SWEEP_MAX_AXES) {
        snprintf(why, len, "a task group has %zu kinds and %zu axes (1-2, at most %d)", g->n_kinds,
                 g->n_axes, KF_SWEEP_MAX_AXES);
        return 0;
    }
    uint64_t n = 1;
    for (size_t a = 0; a < g->n_axes; a++) {
        const Kfleet__Axis *ax = g->axes[a];
        if (!ax->name || !*ax->name || ax->n_values == 0) {
            snprintf(why, len, "a task group has an unnamed or empty axis");
            return 0;
        }
        for (size_t b = 0; b < a; b++)
            if (strcmp(g->axes[b]->name, ax->name) == 0) {
                snprintf(why, len, "a task group names axis '%.64s' twice", ax->name);
                return 0;
            }
        if (ax->n_values > KF_SWEEP_MAX_CONFIGS || (n *= ax->n_values) > KF_SWEEP_MAX_CONFIGS) {
            snprintf(why, len, "a task group has more than %d configurations",
                     KF_SWEEP_MAX_CONFIGS);
            return 0;
        }
    }
    return n;
}

/* A new pending task of sweep `id`, kept by the scheduler and put in txn. */
static void add_task(kf_coord *c, ksweep *sw, kf_txn *txn, const Kfleet__Sweep *rec, uint32_t *idx,
                     Kfleet__TaskKind kind, uint32_t kernel, uint32_t config,
                     const char *const *names, const int64_t *values, size_t np, const char *pin)
{
    Kfleet__Task *t = kf_xmalloc(sizeof *t);
    kfleet__task__init(t);
    t->task_id = kf_task_id(rec->sweep_id, (*idx)++);
    t->sweep_id = rec->sweep_id;
    t->kind = kind;
    t->kernel_index = kernel;
    t->config_index = config;
    t->n_params = np;
    t->params = kf_xcalloc(np ? np : 1, sizeof *t->params);
    for (size_t p = 0; p < np; p++) {
        Kfleet__Param *pp = kf_xmalloc(sizeof *pp);
        kfleet__param__init(pp);
        pp->name = kf_xstrdup(names[p]);
        pp->value = values[p];
        t->params[p] = pp;
    }
    t->pin_agent = kf_xstrdup(pin);
    t->agent_id = kf_xstrdup("");
    t->error = kf_xstrdup("");
    t->state = KFLEET__TASK_STATE__PENDING;
    t->created_ns = t->updated_ns = rec->created_ns;
    sched_add_task(c, sw, t);
    kf_store_put_task(txn, t);
}

static void handle_submit(kf_coord *c, const void *peer, size_t peer_len,
                          Kfleet__SubmitRequest *req)
{
    Kfleet__Sweep *in = req->sweep;
    if (!in || in->n_kernels == 0 || (req->n_tasks == 0 && req->n_groups == 0)) {
        reply_error(c, peer, peer_len, KF_EINVAL, "submit: the sweep has no kernels or no tasks");
        return;
    }
    for (size_t i = 0; i < req->n_tasks; i++) {
        if (req->tasks[i]->kernel_index >= in->n_kernels) {
            reply_error(c, peer, peer_len, KF_EINVAL, "submit: a task names a kernel out of range");
            return;
        }
    }
    /* Any problem or candidate marks a problem sweep, checked whole. */
    int problem = 0;
    for (size_t i = 0; i < in->n_kernels; i++)
        problem |= in->kernels[i]->problem || in->kernels[i]->candidate;
    const char *wrong = problem ? control_problem_wrong(req) : NULL;
    if (wrong) {
        reply_error(c, peer, peer_len, KF_EINVAL, wrong);
        return;
    }
    uint64_t ntasks = req->n_tasks, nconfigs = 0;
    for (size_t i = 0; i < req->n_groups; i++) {
        char why[160];
        uint64_t n = group_configs(req->groups[i], in->n_kernels, why, sizeof why);
        if (n == 0 || (nconfigs += n) > KF_SWEEP_MAX_CONFIGS) {
            char msg[200];
            snprintf(msg, sizeof msg, "submit: %s",
                     n ? "the sweep has more than 1000000 configurations" : why);
            reply_error(c, peer, peer_len, KF_EINVAL, msg);
            return;
        }
        ntasks += n * req->groups[i]->n_kinds;
    }
    /* nodes: all — every configuration on every agent registered now. */
    kagent **targets = NULL;
    size_t ntargets = 0;
    if (in->nodes_all) {
        targets = kf_xcalloc(c->nagents ? c->nagents : 1, sizeof *targets);
        for (size_t i = 0; i < c->nagents; i++)
            if (c->agents[i]->registered && !c->agents[i]->lost)
                targets[ntargets++] = c->agents[i];
        if (ntargets == 0) {
            free(targets);
            reply_error(c, peer, peer_len, KF_EUNAVAIL,
                        "the sweep asks for `nodes: all` but no agent is registered; start "
                        "agents first (kfleet status lists them)");
            return;
        }
    }
    /* A Python kernel no agent's Python can run (or a CUDA kernel no agent's
     * driver can) is refused now, with what each lacks, rather than left pending (with no agent up,
     * one may come: a follower's stall check says why then). */
    for (size_t k = 0; k < in->n_kernels; k++) {
        char why[1500];
        if (sched_kernel_unrunnable(c, in->kernels[k], in->nodes_all ? targets : NULL, ntargets,
                                    why, sizeof why)) {
            free(targets);
            reply_error(c, peer, peer_len, KF_EUNAVAIL, why);
            return;
        }
    }
    uint64_t expanded = ntasks * (in->nodes_all ? ntargets : 1);
    if (expanded > 0xFFFFFFF0ull) {
        free(targets);
        reply_error(c, peer, peer_len, KF_EINVAL, "submit: too many tasks in one sweep");
        return;
    }
    kf_txn *txn;
    uint32_t id = 0;
    if (coord_txn(c, &txn) != KF_OK || kf_store_next_sweep_id(txn, &id) != KF_OK) {
        free(targets);
        reply_error(c, peer, peer_len, KF_ESTORE, "submit: the store refused the sweep");
        return;
    }
    uint64_t now = kf_now_ns();
    uint32_t *ref_cis = NULL;
    size_t nrefs = 0;
    char why[200];
    if (problem && control_plan_references(txn, in, req->groups[0],
                                           group_configs(req->groups[0], in->n_kernels, NULL, 0),
                                           now, &ref_cis, &nrefs, why, sizeof why) != KF_OK) {
        free(targets);
        reply_error(c, peer, peer_len, KF_ESTORE, why);
        return;
    }
    /* Take ownership of a copy of the sweep record. */
    Kfleet__Sweep *rec = kf_pb_copy(&in->base);
    rec->sweep_id = id;
    rec->created_ns = now;
    rec->finished_ns = 0;
    rec->task_count = (uint32_t)(expanded + nrefs);
    ksweep *sw = sched_add_sweep(c, rec);
    uint32_t idx = 0;
    size_t reps = in->nodes_all ? ntargets : 1;
    /* A problem's reference tasks come first, in configuration order:
     * sched.c's ref_gate_of finds a candidate's there. */
    for (size_t r = 0; r < nrefs; r++) {
        const Kfleet__TaskGroup *g = req->groups[0];
        const char *names[KF_SWEEP_MAX_AXES];
        int64_t values[KF_SWEEP_MAX_AXES];
        uint64_t rest = ref_cis[r];
        for (size_t a = g->n_axes; a-- > 0;) {
            names[a] = g->axes[a]->name;
            values[a] = g->axes[a]->values[rest % g->axes[a]->n_values];
            rest /= g->axes[a]->n_values;
        }
        add_task(c, sw, txn, rec, &idx, KFLEET__TASK_KIND__REFERENCE, (uint32_t)in->n_kernels - 1,
                 ref_cis[r], names, values, g->n_axes, "");
    }
    free(ref_cis);
    for (size_t i = 0; i < req->n_tasks; i++) {
        const Kfleet__Task *src = req->tasks[i];
        const char *names[KF_SWEEP_MAX_AXES];
        int64_t values[KF_SWEEP_MAX_AXES];
        size_t np = src->n_params < KF_SWEEP_MAX_AXES ? src->n_params : KF_SWEEP_MAX_AXES;
        for (size_t p = 0; p < np; p++) {
            names[p] = src->params[p]->name;
            values[p] = src->params[p]->value;
        }
        for (size_t r = 0; r < reps; r++)
            add_task(c, sw, txn, rec, &idx, src->kind, src->kernel_index, src->config_index, names,
                     values, np, in->nodes_all ? targets[r]->id : "");
    }
    for (size_t i = 0; i < req->n_groups; i++) {
        const Kfleet__TaskGroup *g = req->groups[i];
        const char *names[KF_SWEEP_MAX_AXES];
        int64_t values[KF_SWEEP_MAX_AXES];
        uint64_t n = group_configs(g, in->n_kernels, NULL, 0);
        for (size_t a = 0; a < g->n_axes; a++)
            names[a] = g->axes[a]->name;
        for (uint64_t ci = 0; ci < n; ci++) {
            /* Configuration ci in mixed radix, the last axis fastest: the
             * sweep parser's order (kf_sweep_kernel_config). */
            uint64_t rest = ci;
            for (size_t a = g->n_axes; a-- > 0;) {
                values[a] = g->axes[a]->values[rest % g->axes[a]->n_values];
                rest /= g->axes[a]->n_values;
            }
            for (size_t k = 0; k < g->n_kinds; k++)
                for (size_t r = 0; r < reps; r++)
                    add_task(c, sw, txn, rec, &idx, g->kinds[k], g->kernel_index, (uint32_t)ci,
                             names, values, g->n_axes, in->nodes_all ? targets[r]->id : "");
        }
    }
    free(targets);
    kf_store_put_sweep(txn, rec);
    kf_info("sweep.submit", "sweep=%u name=%s tasks=%u kernels=%zu nodes=%s", id,
            rec->name ? rec->name : "", sw->ntasks, rec->n_kernels, rec->nodes_all ? "all" : "any");
    Kfleet__ControlReply rep = KFLEET__CONTROL_REPLY__INIT;
    rep.sweep_id = id;
    reply(c, peer, peer_len, &rep);
    c->dispatch_needed = 1;
}

struct recent {
    uint32_t ids[10];
    size_t n;
};

static int recent_cb(void *ctx, const Kfleet__Sweep *sw)
{
    struct recent *r = ctx;
    /* Keep the last ten by id (the walk is in id order). */
    if (r->n == 10) {
        memmove(r->ids, r->ids + 1, 9 * sizeof *r->ids);
        r->n = 9;
    }
    r->ids[r->n++] = sw->sweep_id;
    return 0;
}

static void handle_status(kf_coord *c, const void *peer, size_t peer_len)
{
    Kfleet__StatusReply st = KFLEET__STATUS_REPLY__INIT;
    st.agent_endpoint = c->agent_endpoint;
    st.heartbeat_timeout_ms = (uint32_t)(c->cfg.heartbeat_timeout_s * 1000);
    st.started_ns = c->started_ns;
    st.version = KF_VERSION;
    st.pid = (uint32_t)getpid();
    Kfleet__AgentInfo **agents = kf_xcalloc(c->nagents ? c->nagents : 1, sizeof *agents);
    uint64_t now_mono = kf_mono_ns(), now = kf_now_ns();
    for (size_t i = 0; i < c->nagents; i++) {
        kagent *a = c->agents[i];
        if (!a->info)
            continue;
        a->info->lost = a->lost;
        a->info->stopped = a->lost && a->stopped;
        a->info->revoked = a->revoked;
        a->info->last_seen_ns = now - (now_mono - a->last_seen_mono);
        agents[st.n_agents++] = a->info;
    }
    st.agents = agents;

    struct recent rs = {{0}, 0};
    kf_txn *txn;
    if (coord_txn(c, &txn) == KF_OK)
        kf_store_foreach_sweep(txn, recent_cb, &rs);
    Kfleet__SweepProgress *progs = kf_xcalloc(rs.n ? rs.n : 1, sizeof *progs);
    Kfleet__SweepProgress **pp = kf_xcalloc(rs.n ? rs.n : 1, sizeof *pp);
    char(*names)[128] = kf_xcalloc(rs.n ? rs.n : 1, sizeof *names);
    for (size_t i = 0; i < rs.n; i++) {
        kfleet__sweep_progress__init(&progs[i]);
        if (sweep_progress(c, rs.ids[i], &progs[i], names[i], sizeof names[i], NULL, 0) == KF_OK) {
            progs[i].name = names[i];
            pp[st.n_sweeps++] = &progs[i];
        }
    }
    st.sweeps = pp;
    if (c->launches)
        kf_launches_slurm_jobs(c->launches, &st.slurm_jobs, &st.n_slurm_jobs);
    Kfleet__ControlReply rep = KFLEET__CONTROL_REPLY__INIT;
    rep.status = &st;
    reply(c, peer, peer_len, &rep);
    if (st.slurm_jobs)
        kf_slurm_watches_free_jobs(st.slurm_jobs, st.n_slurm_jobs);
    free(agents);
    free(progs);
    free(pp);
    free(names);
}

static void handle_progress(kf_coord *c, const void *peer, size_t peer_len, uint32_t id)
{
    Kfleet__SweepProgress p = KFLEET__SWEEP_PROGRESS__INIT;
    char name[128];
    char why[600];
    int rc = sweep_progress(c, id, &p, name, sizeof name, why, sizeof why);
    if (rc) {
        char msg[200];
        snprintf(msg, sizeof msg, "no sweep %u on this coordinator; `kfleet status` lists them",
                 id);
        reply_error(c, peer, peer_len, rc, msg);
        return;
    }
    p.name = name;
    Kfleet__ControlReply rep = KFLEET__CONTROL_REPLY__INIT;
    rep.sweep_id = id;
    rep.progress = &p;
    reply(c, peer, peer_len, &rep);
}

static void handle_cancel(kf_coord *c, const void *peer, size_t peer_len, uint32_t id,
                          const char *reason)
{
    ksweep *sw = sched_sweep(c, id);
    if (!sw) {
        /* Finished (in the store) is not the same mistake as a wrong id. */
        kf_txn *txn;
        Kfleet__Sweep *rec = NULL;
        char msg[160];
        int known = coord_txn(c, &txn) == KF_OK && kf_store_get_sweep(txn, id, &rec) == KF_OK;
        if (rec)
            kfleet__sweep__free_unpacked(rec, NULL);
        snprintf(msg, sizeof msg,
                 known ? "sweep %u has already finished; nothing to cancel"
                       : "no sweep %u on this coordinator; `kfleet status` lists them",
                 id);
        reply_error(c, peer, peer_len, known ? KF_EEXIST : KF_ENOTFOUND, msg);
        return;
    }
    sched_cancel_sweep(c, sw, reason && *reason ? reason : "cancelled by the user");
    Kfleet__SweepProgress p = KFLEET__SWEEP_PROGRESS__INIT;
    char name[128];
    sweep_progress(c, id, &p, name, sizeof name, NULL, 0);
    p.name = name;
    Kfleet__ControlReply rep = KFLEET__CONTROL_REPLY__INIT;
    rep.sweep_id = id;
    rep.progress = &p;
    reply(c, peer, peer_len, &rep);
    /* All tasks are terminal now: this stores it finished and frees it. */
    sched_maybe_finish_sweep(c, sw);
}

/* Tunnels: the SSH sessions of launched agents live in the daemon (so they
 * outlive `kfleet launch`). The manager is made on the first request: a
 * coordinator that never launched over SSH runs no extra thread. KF_COORD_TUNNELS
 * is defined by coord_int.h where struct kf_coord carries the manager. */
#ifdef KF_COORD_TUNNELS
static int tunnels(kf_coord *c, kf_err *err)
{
    if (c->tunnels)
        return KF_OK;
    char host[256];
    int port = 0;
    int rc = kf_tunnels_parse_endpoint(c->agent_endpoint, host, sizeof host, &port, err);
    if (rc == KF_OK)
        rc = kf_tunnels_new(host, port, &c->tunnels, err);
    return rc;
}

static void copy_str(char *dst, size_t n, const char *src)
{
    snprintf(dst, n, "%s", src ? src : "");
}

static void handle_tunnel_open(kf_coord *c, const void *peer, size_t peer_len,
                               const Kfleet__TunnelSpec *ts)
{
    kf_err err;
    kf_err_clear(&err);
    if (!ts || !ts->name || !*ts->name || !ts->host || !*ts->host) {
        reply_error(c, peer, peer_len, KF_EINVAL, "tunnel_open: a name and a host are needed");
        return;
    }
    kf_tunnel_spec spec;
    memset(&spec, 0, sizeof spec);
    copy_str(spec.name, sizeof spec.name, ts->name);
    copy_str(spec.host, sizeof spec.host, ts->host);
    spec.port = ts->port ? (int)ts->port : 22;
    copy_str(spec.user, sizeof spec.user, ts->user);
    copy_str(spec.identity, sizeof spec.identity, ts->identity);
    copy_str(spec.known_hosts, sizeof spec.known_hosts, ts->known_hosts);
    copy_str(spec.agent_sock, sizeof spec.agent_sock, ts->ssh_auth_sock);
    spec.remote_port = (int)ts->remote_port;
    if (tunnels(c, &err) != KF_OK || kf_tunnels_open(c->tunnels, &spec, &err) != KF_OK) {
        reply_error(c, peer, peer_len, err.code ? err.code : KF_EIO, err.msg);
        return;
    }
    Kfleet__ControlReply rep = KFLEET__CONTROL_REPLY__INIT;
    reply(c, peer, peer_len, &rep);
}

static void handle_tunnel_status(kf_coord *c, const void *peer, size_t peer_len, const char *name)
{
    kf_tunnel_info *v = NULL;
    size_t n = 0;
    if (c->tunnels)
        kf_tunnels_list(c->tunnels, name, &v, &n);
    Kfleet__TunnelState *st = kf_xcalloc(n ? n : 1, sizeof *st);
    Kfleet__TunnelState **pp = kf_xcalloc(n ? n : 1, sizeof *pp);
    for (size_t i = 0; i < n; i++) {
        kfleet__tunnel_state__init(&st[i]);
        st[i].name = v[i].name;
        st[i].host = v[i].host;
        st[i].remote_port = (uint32_t)v[i].remote_port;
        st[i].up = v[i].up;
        st[i].reconnects = v[i].reconnects;
        st[i].relays = v[i].relays;
        st[i].error = v[i].error;
        pp[i] = &st[i];
    }
    Kfleet__ControlReply rep = KFLEET__CONTROL_REPLY__INIT;
    rep.n_tunnels = n;
    rep.tunnels = pp;
    reply(c, peer, peer_len, &rep);
    free(st);
    free(pp);
    free(v);
}

static void handle_tunnel_close(kf_coord *c, const void *peer, size_t peer_len, const char *name)
{
    kf_err err;
    kf_err_clear(&err);
    if (!c->tunnels || kf_tunnels_close(c->tunnels, name ? name : "", &err) != KF_OK) {
        char msg[300];
        snprintf(msg, sizeof msg, "no tunnel named %s", name ? name : "");
        reply_error(c, peer, peer_len, KF_ENOTFOUND, msg);
        return;
    }
    Kfleet__ControlReply rep = KFLEET__CONTROL_REPLY__INIT;
    reply(c, peer, peer_len, &rep);
}
#endif

/* Launches: `kfleet launch` hands the daemon the parsed inventory and the
 * bundle; the launch runs on its own threads (launch.h, kf_launches) and
 * this loop only starts it and reports its table, never waiting on SSH. */
static void reply_launch(kf_coord *c, const void *peer, size_t peer_len, uint32_t id, int attached)
{
    kf_err err;
    kf_err_clear(&err);
    Kfleet__LaunchState *st = NULL;
    if (kf_launches_state(c->launches, id, &st, &err) != KF_OK) {
        reply_error(c, peer, peer_len, err.code, err.msg);
        return;
    }
    st->attached = attached;
    Kfleet__ControlReply rep = KFLEET__CONTROL_REPLY__INIT;
    rep.launch = st;
    reply(c, peer, peer_len, &rep);
    kf_launches_free_state(&st);
}

static void handle_launch(kf_coord *c, const void *peer, size_t peer_len,
                          const Kfleet__LaunchRequest *req)
{
    kf_err err;
    kf_err_clear(&err);
    uint32_t id = 0;
    int attached = 0;
    if (!req) {
        reply_error(c, peer, peer_len, KF_EINVAL, "launch: empty request");
        return;
    }
    /* The launch threads reach this loop over the control socket and add
     * keys to the allow list: an embedded coordinator without them (tests,
     * the fuzz fixture) runs no launches. */
    if (!c->cfg.control_endpoint || !*c->cfg.control_endpoint || !c->cfg.allow_file) {
        reply_error(c, peer, peer_len, KF_EUNAVAIL,
                    "this coordinator runs no launches (no control socket or allow list); use "
                    "`kfleet serve`");
        return;
    }
    if (!c->launches && kf_launches_new(c->cfg.control_endpoint, c->cfg.allow_file, c->cfg.pub_file,
                                        &c->launches, &err) != KF_OK) {
        reply_error(c, peer, peer_len, err.code, err.msg);
        return;
    }
    if (kf_launches_start(c->launches, req, &id, &attached, &err) != KF_OK) {
        reply_error(c, peer, peer_len, err.code ? err.code : KF_EIO, err.msg);
        return;
    }
    reply_launch(c, peer, peer_len, id, attached);
}

static void handle_launch_status(kf_coord *c, const void *peer, size_t peer_len, uint32_t id)
{
    if (!c->launches) {
        reply_error(c, peer, peer_len, KF_ENOTFOUND,
                    "no launch has run in this coordinator (did it restart?)");
        return;
    }
    reply_launch(c, peer, peer_len, id, 0);
}

/* What a task costs the store, generously: its record (params included)
 * and, when it ends, its result, with LMDB's copy-on-write pages around
 * them. */
#define TASK_STORE_BYTES 1024

size_t control_write_estimate(kf_coord *c, const void *data, size_t len)
{
    size_t est = 4 * len;
    kf_err err;
    Kfleet__ControlRequest *req = kf_ctl_unpack_request(data, len, &err);
    if (!req)
        return est;
    uint64_t tasks = 0;
    if (req->body_case == KFLEET__CONTROL_REQUEST__BODY_SUBMIT && req->submit) {
        tasks = req->submit->n_tasks;
        for (size_t i = 0; i < req->submit->n_groups; i++) {
            uint64_t n = group_configs(req->submit->groups[i], SIZE_MAX, NULL, 0);
            tasks += n * req->submit->groups[i]->n_kinds;
        }
        if (req->submit->sweep && req->submit->sweep->nodes_all)
            tasks *= c->nagents ? c->nagents : 1;
    } else if (req->body_case == KFLEET__CONTROL_REQUEST__BODY_CANCEL) {
        const ksweep *sw = sched_sweep(c, req->cancel);
        tasks = sw ? sw->ntasks : 0;
    }
    kfleet__control_request__free_unpacked(req, NULL);
    uint64_t bytes = tasks * TASK_STORE_BYTES;
    return bytes > est ? (size_t)bytes : est;
}

void control_handle(kf_coord *c, const void *peer, size_t peer_len, const void *data, size_t len)
{
    kf_err err;
    Kfleet__ControlRequest *req = kf_ctl_unpack_request(data, len, &err);
    if (!req) {
        c->protocol_errors++;
        kf_warn("control.bad_request", "bytes=%zu error=\"%s\"", len, err.msg);
        reply_error(c, peer, peer_len, KF_EPROTO, err.msg);
        return;
    }
    switch (req->body_case) {
    case KFLEET__CONTROL_REQUEST__BODY_SUBMIT:
        handle_submit(c, peer, peer_len, req->submit);
        break;
    case KFLEET__CONTROL_REQUEST__BODY_STATUS:
        handle_status(c, peer, peer_len);
        break;
    case KFLEET__CONTROL_REQUEST__BODY_PROGRESS:
        handle_progress(c, peer, peer_len, req->progress);
        break;
    case KFLEET__CONTROL_REQUEST__BODY_CANCEL:
        handle_cancel(c, peer, peer_len, req->cancel, req->cancel_reason);
        break;
    case KFLEET__CONTROL_REQUEST__BODY_SHUTDOWN: {
        Kfleet__ControlReply rep = KFLEET__CONTROL_REPLY__INIT;
        reply(c, peer, peer_len, &rep);
        c->shutdown = 1;
        break;
    }
#ifdef KF_COORD_TUNNELS
    case KFLEET__CONTROL_REQUEST__BODY_TUNNEL_OPEN:
        handle_tunnel_open(c, peer, peer_len, req->tunnel_open);
        break;
    case KFLEET__CONTROL_REQUEST__BODY_TUNNEL_STATUS:
        handle_tunnel_status(c, peer, peer_len, req->tunnel_status);
        break;
    case KFLEET__CONTROL_REQUEST__BODY_TUNNEL_CLOSE:
        handle_tunnel_close(c, peer, peer_len, req->tunnel_close);
        break;
#else
    case KFLEET__CONTROL_REQUEST__BODY_TUNNEL_OPEN:
    case KFLEET__CONTROL_REQUEST__BODY_TUNNEL_STATUS:
    case KFLEET__CONTROL_REQUEST__BODY_TUNNEL_CLOSE:
        reply_error(c, peer, peer_len, KF_EUNAVAIL,
                    "this coordinator keeps no SSH tunnels (built without them); launch with "
                    "--direct ENDPOINT");
        break;
#endif
    case KFLEET__CONTROL_REQUEST__BODY_LAUNCH:
        handle_launch(c, peer, peer_len, req->launch);
        break;
    case KFLEET__CONTROL_REQUEST__BODY_LAUNCH_STATUS:
        handle_launch_status(c, peer, peer_len, req->launch_status);
        break;
    default:
        reply_error(c, peer, peer_len, KF_EPROTO, "unknown control request");
        break;
    }
    kfleet__control_request__free_unpacked(req, NULL);
}

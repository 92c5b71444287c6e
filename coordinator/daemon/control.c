/* control — the coordinator's side of the CLI protocol: the dispatch of a
 * request to its handler, and the sweep requests (submit, status,
 * progress, cancel, shutdown); control_fleet.c answers the fleet's
 * (tunnels, launches) and sched_expand.c makes a submitted sweep's tasks.
 * Requests arrive on the control ROUTER socket (ipc, in the 0700 run
 * directory); each gets exactly one reply, sent after the batch commits, so
 * "submitted as sweep 7" means sweep 7 is on disk. */
#include "daemon/coord_int.h"
#include "common/xalloc.h"
#include "common/taskkind.h"
#include "core/sweep.h"
#include "fleet/launches.h"
#include "common/log.h"
#include "common/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
    if (kf_task_kind_at(t->kind)->builds) {
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
        uint32_t k = t->rec->kernel_index;
        /* A candidate's task waits for its configuration's reference task:
         * when nobody can run the problem, nobody can run it either. */
        if (t->ref_gate >= 0 && (uint32_t)t->ref_gate < sw->ntasks) {
            const ktask *g = &sw->tasks[t->ref_gate];
            if (!kf_state_terminal(g->rec->state) && g->rec->kernel_index < nk &&
                !able[g->rec->kernel_index])
                k = g->rec->kernel_index;
        }
        moves = able[k];
        if (!stuck)
            stuck = sw->rec->kernels[k];
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

static void handle_submit(kf_coord *c, const void *peer, size_t peer_len,
                          Kfleet__SubmitRequest *req)
{
    Kfleet__Sweep *in = req->sweep;
    if (!in || in->n_kernels == 0 || (req->n_tasks == 0 && req->n_groups == 0)) {
        control_reply_error(c, peer, peer_len, KF_EINVAL,
                            "submit: the sweep has no kernels or no tasks");
        return;
    }
    for (size_t i = 0; i < req->n_tasks; i++) {
        if (req->tasks[i]->kernel_index >= in->n_kernels) {
            control_reply_error(c, peer, peer_len, KF_EINVAL,
                                "submit: a task names a kernel out of range");
            return;
        }
    }
    /* Any problem or candidate marks a problem sweep, checked whole. */
    int problem = 0;
    for (size_t i = 0; i < in->n_kernels; i++)
        problem |= in->kernels[i]->problem || in->kernels[i]->candidate;
    const char *wrong = problem ? control_problem_wrong(req) : NULL;
    if (wrong) {
        control_reply_error(c, peer, peer_len, KF_EINVAL, wrong);
        return;
    }
    char msg[200];
    uint64_t ntasks = sched_expand_count(req, msg, sizeof msg);
    if (ntasks == 0) {
        control_reply_error(c, peer, peer_len, KF_EINVAL, msg);
        return;
    }
    /* nodes: all — every configuration on every agent registered now. */
    kagent **targets = NULL;
    size_t ntargets = 0;
    if (in->nodes_all) {
        targets = sched_all_targets(c, &ntargets);
        if (ntargets == 0) {
            free(targets);
            control_reply_error(c, peer, peer_len, KF_EUNAVAIL,
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
        if ((!in->kernels[k]->refused || !*in->kernels[k]->refused) &&
            sched_kernel_unrunnable(c, in->kernels[k], in->nodes_all ? targets : NULL, ntargets,
                                    why, sizeof why)) {
            free(targets);
            control_reply_error(c, peer, peer_len, KF_EUNAVAIL, why);
            return;
        }
    }
    uint64_t expanded = ntasks * (in->nodes_all ? ntargets : 1);
    if (expanded > 0xFFFFFFF0ull) {
        free(targets);
        control_reply_error(c, peer, peer_len, KF_EINVAL, "submit: too many tasks in one sweep");
        return;
    }
    kf_txn *txn;
    uint32_t id = 0;
    if (coord_txn(c, &txn) != KF_OK || kf_store_next_sweep_id(txn, &id) != KF_OK) {
        free(targets);
        control_reply_error(c, peer, peer_len, KF_ESTORE, "submit: the store refused the sweep");
        return;
    }
    uint64_t now = kf_now_ns();
    uint32_t *ref_cis = NULL;
    size_t nrefs = 0;
    char why[200];
    if (problem &&
        control_plan_references(txn, in, req->groups[0],
                                sched_group_configs(req->groups[0], in->n_kernels, NULL, 0), now,
                                &ref_cis, &nrefs, why, sizeof why) != KF_OK) {
        free(targets);
        control_reply_error(c, peer, peer_len, KF_ESTORE, why);
        return;
    }
    /* The sweep takes the request's record (no copy: a record holds the
     * sweep file and every kernel's sources); the request no longer has it
     * when the caller frees it. */
    Kfleet__Sweep *rec = in;
    rec->sweep_id = id;
    rec->created_ns = now;
    rec->finished_ns = 0;
    rec->task_count = (uint32_t)(expanded + nrefs);
    ksweep *sw = sched_add_sweep(c, rec);
    sched_expand(c, sw, txn, req, targets, ntargets, ref_cis, nrefs);
    req->sweep = NULL;
    sched_fail_refused(c, sw);
    free(ref_cis);
    free(targets);
    kf_store_put_sweep(txn, rec);
    kf_info("sweep.submit", "sweep=%u name=%s tasks=%u kernels=%zu nodes=%s", id,
            rec->name ? rec->name : "", sw->ntasks, rec->n_kernels, rec->nodes_all ? "all" : "any");
    Kfleet__ControlReply rep = KFLEET__CONTROL_REPLY__INIT;
    rep.sweep_id = id;
    control_reply(c, peer, peer_len, &rep);
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

    /* A sweep the store cannot give back is an error said, never a sweep
     * left out: a status of "no sweep yet" over a damaged store hid it
     * (issue 44). */
    struct recent rs = {{0}, 0};
    kf_txn *txn;
    int rc = coord_txn(c, &txn);
    if (rc == KF_OK)
        rc = kf_store_foreach_sweep(txn, recent_cb, &rs);
    Kfleet__SweepProgress *progs = kf_xcalloc(rs.n ? rs.n : 1, sizeof *progs);
    Kfleet__SweepProgress **pp = kf_xcalloc(rs.n ? rs.n : 1, sizeof *pp);
    char(*names)[128] = kf_xcalloc(rs.n ? rs.n : 1, sizeof *names);
    for (size_t i = 0; i < rs.n && rc == KF_OK; i++) {
        kfleet__sweep_progress__init(&progs[i]);
        rc = sweep_progress(c, rs.ids[i], &progs[i], names[i], sizeof names[i], NULL, 0);
        progs[i].name = names[i];
        pp[st.n_sweeps++] = &progs[i];
    }
    st.sweeps = pp;
    if (rc) {
        char msg[4400]; /* the path and the words */
        snprintf(msg, sizeof msg,
                 "cannot read the sweeps in the store %s (%s): it may be damaged; `kfleet verify "
                 "--store` checks it",
                 c->cfg.store_dir, kf_strerror(rc));
        control_reply_error(c, peer, peer_len, rc, msg);
        free(agents);
        free(progs);
        free(pp);
        free(names);
        return;
    }
    if (c->launches)
        kf_launches_status(c->launches, &st);
    Kfleet__ControlReply rep = KFLEET__CONTROL_REPLY__INIT;
    rep.status = &st;
    control_reply(c, peer, peer_len, &rep);
    if (c->launches)
        kf_launches_status_free(c->launches, &st);
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
        if (rc == KF_ENOTFOUND)
            snprintf(msg, sizeof msg, "no sweep %u on this coordinator; `kfleet status` lists them",
                     id);
        else
            snprintf(msg, sizeof msg,
                     "cannot read sweep %u from the store (%s): it may be damaged; `kfleet verify "
                     "--store` checks it",
                     id, kf_strerror(rc));
        control_reply_error(c, peer, peer_len, rc, msg);
        return;
    }
    p.name = name;
    Kfleet__ControlReply rep = KFLEET__CONTROL_REPLY__INIT;
    rep.sweep_id = id;
    rep.progress = &p;
    control_reply(c, peer, peer_len, &rep);
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
        control_reply_error(c, peer, peer_len, known ? KF_EEXIST : KF_ENOTFOUND, msg);
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
    control_reply(c, peer, peer_len, &rep);
    /* All tasks are terminal now: this stores it finished and frees it. */
    sched_maybe_finish_sweep(c, sw);
}

/* What a task costs the store, generously: its record (params included)
 * and, when it ends, its result, with LMDB's copy-on-write pages around
 * them. */
#define TASK_STORE_BYTES 1024

size_t control_write_estimate(kf_coord *c, const Kfleet__ControlRequest *req, size_t len)
{
    size_t est = 4 * len;
    if (!req)
        return est;
    uint64_t tasks = 0;
    if (req->body_case == KFLEET__CONTROL_REQUEST__BODY_SUBMIT && req->submit) {
        tasks = req->submit->n_tasks;
        for (size_t i = 0; i < req->submit->n_groups; i++) {
            uint64_t n = sched_group_configs(req->submit->groups[i], SIZE_MAX, NULL, 0);
            tasks += n * req->submit->groups[i]->n_kinds;
        }
        if (req->submit->sweep && req->submit->sweep->nodes_all)
            tasks *= c->nagents ? c->nagents : 1;
    } else if (req->body_case == KFLEET__CONTROL_REQUEST__BODY_CANCEL) {
        const ksweep *sw = sched_sweep(c, req->cancel);
        tasks = sw ? sw->ntasks : 0;
    }
    uint64_t bytes = tasks * TASK_STORE_BYTES;
    return bytes > est ? (size_t)bytes : est;
}

void control_handle(kf_coord *c, const void *peer, size_t peer_len, const void *data, size_t len)
{
    kf_err err;
    Kfleet__ControlRequest *req = kf_ctl_unpack_request(data, len, &err);
    control_answer(c, peer, peer_len, req, len, &err);
    if (req)
        kfleet__control_request__free_unpacked(req, NULL);
}

void control_answer(kf_coord *c, const void *peer, size_t peer_len, Kfleet__ControlRequest *req,
                    size_t len, const kf_err *err)
{
    if (!req) {
        c->protocol_errors++;
        kf_warn("control.bad_request", "bytes=%zu error=\"%s\"", len, err->msg);
        control_reply_error(c, peer, peer_len, KF_EPROTO, err->msg);
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
        control_reply(c, peer, peer_len, &rep);
        c->shutdown = 1;
        break;
    }
    case KFLEET__CONTROL_REQUEST__BODY_TUNNEL_OPEN:
        control_tunnel_open(c, peer, peer_len, req->tunnel_open);
        break;
    case KFLEET__CONTROL_REQUEST__BODY_TUNNEL_STATUS:
        control_tunnel_status(c, peer, peer_len, req->tunnel_status);
        break;
    case KFLEET__CONTROL_REQUEST__BODY_TUNNEL_CLOSE:
        control_tunnel_close(c, peer, peer_len, req->tunnel_close);
        break;
    case KFLEET__CONTROL_REQUEST__BODY_LAUNCH:
        control_launch(c, peer, peer_len, req->launch);
        break;
    case KFLEET__CONTROL_REQUEST__BODY_LAUNCH_STATUS:
        control_launch_status(c, peer, peer_len, req->launch_status);
        break;
    default:
        control_reply_error(c, peer, peer_len, KF_EPROTO, "unknown control request");
        break;
    }
}

/* run — the one-shot local fleet; see run.h. */
#include "cli/run.h"
#include "cli/cli.h"
#include "cli/client.h"
#include "cli/follow.h"
#include "cli/procview.h"
#include "common/buf.h"
#include "common/text.h"
#include "daemon/coord.h"
#include "fleet/launch.h"
#include "fleet/provider_local.h"
#include "common/inventory.h"
#include "common/log.h"
#include "report/report.h"
#include "core/store.h"
#include "common/util.h"
#include "common/xalloc.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_LOCAL_AGENTS 64

struct coord_thread {
    kf_coord *c;
    volatile sig_atomic_t stop;
    int rc;
    kf_err err;
};

static void *coord_main(void *arg)
{
    struct coord_thread *ct = arg;
    ct->rc = kf_coord_run(ct->c, &ct->stop, &ct->err);
    return NULL;
}

/* The last lines of an agent's log that say what went wrong (warnings and
 * errors), else its last line: what `kfleet run` prints when nothing could
 * run, so nobody has to go and find the log. `b` holds the log as read
 * (`read_rc` its reading's result); its lines are cut in place. */
static void print_agent_tail(const char *path, kf_buf *b, int read_rc)
{
    if (read_rc != KF_OK || !b->len) {
        fprintf(stderr, "  %s: %s\n", path,
                b->len ? "unreadable" : "empty: the agent never started");
        return;
    }
    enum { KEEP = 3 };
    const char *ring[KEEP], *last = NULL;
    size_t have = 0;
    for (char *p = b->data; p && *p;) {
        char *nl = strchr(p, '\n');
        if (nl)
            *nl = '\0';
        if (*p)
            last = p;
        if (strstr(p, " error ") || strstr(p, " warn ") || strstr(p, "cannot "))
            ring[have++ % KEEP] = p;
        p = nl ? nl + 1 : NULL;
    }
    /* An agent's log holds what its kernels said: inert on the terminal. */
    kf_buf line = KF_BUF_INIT;
    fprintf(stderr, "  %s:\n", path);
    for (size_t i = have > KEEP ? have - KEEP : 0; i < have || (!have && last); i++) {
        kf_buf_reset(&line);
        kf_text_inert(&line, have ? ring[i % KEEP] : last, KF_TEXT_LINE);
        fprintf(stderr, "    %s\n", line.data);
        if (!have)
            break;
    }
    kf_buf_release(&line);
}

/* Local agent i's last words (print_agent_tail) and, when it is alive
 * and never registered, what it is running: an agent stuck in its start
 * (a probe that does not return) has nothing in its log to say so. */
static void print_agent(const kf_paths *p, int i)
{
    char lp[PATH_MAX + 32];
    snprintf(lp, sizeof lp, "%s/agent-%d.log", p->run, i);
    kf_buf log = KF_BUF_INIT, view = KF_BUF_INIT;
    int rc = kf_buf_read_file(&log, lp);
    /* Asked before the tail cuts the log's lines in place. */
    int registered = rc == KF_OK && log.len && strstr(log.data, " agent.registered ") != NULL;
    print_agent_tail(lp, &log, rc);
    if (!registered &&
        kf_procview_describe(kf_provider_local_pid(p->agents_dir, i), "    ", &view) == 0)
        fprintf(stderr, "  agent-%d never registered and is still running:\n%s", i, view.data);
    kf_buf_release(&log);
    kf_buf_release(&view);
}

/* Marks a sweep that `kfleet run` leaves unfinished as such in the store:
 * its open tasks end cancelled with `why`, and the sweep is finished, so its
 * report says what happened instead of "finished not yet" forever. */
static void abandon(kf_client *cl, uint32_t sweep_id, const char *why)
{
    kf_err err;
    char reason[600];
    snprintf(reason, sizeof reason, "abandoned by kfleet run: %s", why);
    Kfleet__ControlRequest req = KFLEET__CONTROL_REQUEST__INIT;
    req.body_case = KFLEET__CONTROL_REQUEST__BODY_CANCEL;
    req.cancel = sweep_id;
    req.cancel_reason = reason;
    Kfleet__ControlReply *rep = NULL;
    if (kf_client_call(cl, &req, 10000, &rep, &err) == KF_OK)
        kfleet__control_reply__free_unpacked(rep, NULL);
    else if (err.code != KF_EEXIST)
        fprintf(stderr, "kfleet run: cannot mark sweep %u abandoned: %s\n", sweep_id, err.msg);
}

static int local_gpus(const kf_paths *p)
{
    Kfleet__AgentInfo *info = NULL;
    kf_err err;
    if (kf_inventory_collect("probe", p->state, &info, &err) != KF_OK)
        return 0;
    int n = (int)info->n_gpus;
    kf_inventory_free(&info);
    return n;
}

/* `nodes: all` pins each configuration to the agents registered when the
 * sweep is submitted: wait (up to a minute) until every local agent has.
 * Without it a run whose agents were still starting was refused. */
static int wait_registered(kf_client *cl, int n, kf_err *err)
{
    uint64_t t0 = kf_mono_ns();
    size_t live = 0;
    for (;;) {
        Kfleet__ControlRequest req = KFLEET__CONTROL_REQUEST__INIT;
        req.body_case = KFLEET__CONTROL_REQUEST__BODY_STATUS;
        req.status = 1;
        Kfleet__ControlReply *rep = NULL;
        int rc = kf_client_call(cl, &req, 10000, &rep, err);
        if (rc != KF_OK)
            return rc;
        live = 0;
        for (size_t i = 0; rep->status && i < rep->status->n_agents; i++)
            live += !rep->status->agents[i]->lost;
        kfleet__control_reply__free_unpacked(rep, NULL);
        if (live >= (size_t)n)
            return KF_OK;
        if (kf_mono_ns() - t0 > 60000000000ull)
            return kf_err_set(err, KF_ETIMEOUT,
                              "the sweep asks for `nodes: all`, and after 60 s %zu of the %d local "
                              "agents had registered; their logs say why",
                              live, n);
        struct timespec ts = {0, 100000000};
        nanosleep(&ts, NULL);
    }
}

int kf_run(const kf_paths *p, const kf_sweep_spec *spec, const kf_run_options *o,
           volatile sig_atomic_t *stop)
{
    kf_err err;
    kf_err_clear(&err);
    int lock = kf_lock_file(p->lock, &err);
    if (lock < 0) {
        fprintf(stderr, "kfleet run: %s\n",
                err.code == KF_EBUSY
                    ? "a coordinator (kfleet serve) is running for this home; submit to it "
                      "with `kfleet submit FILE --follow`, or pass --home DIR"
                    : err.msg);
        return 1;
    }
    /* A level (problems:) is one sweep per problem, all on this fleet. */
    size_t nparts = spec->nparts ? spec->nparts : 1, nkernels = 0;
    const kf_sweep_spec *const *parts =
        spec->nparts ? (const kf_sweep_spec *const *)spec->parts : &spec;
    int cuda = 0, nodes_all = 0, python_problem = 0;
    for (size_t pi = 0; pi < nparts; pi++) {
        python_problem |= parts[pi]->problem && parts[pi]->problem->python;
        for (size_t i = 0; i < parts[pi]->nkernels; i++)
            cuda |= parts[pi]->kernels[i].cuda;
        nkernels += parts[pi]->nkernels;
        nodes_all |= parts[pi]->nodes_all;
    }
    if (spec->nparts == 0 && spec->problem == NULL && spec->nkernels == 0) {
        fprintf(stderr,
                "kfleet run: %s: no problem of the level has a candidate; nothing to "
                "run\n",
                spec->file);
        close(lock);
        return 1;
    }
    int gpus = local_gpus(p);
    if (cuda && gpus == 0) {
        fprintf(stderr,
                "kfleet run: %s names CUDA kernels but this machine has no GPU that "
                "libcuda can see; run it on a GPU node or launch agents there\n",
                spec->file);
        close(lock);
        return 1;
    }
    int nagents = o->agents ? o->agents : (gpus ? gpus : 2);
    if (nagents > MAX_LOCAL_AGENTS)
        nagents = MAX_LOCAL_AGENTS;

    /* The embedded coordinator's log, beside the agents': the terminal shows
     * progress, the file has what the coordinator saw. */
    char clog[PATH_MAX + 32];
    snprintf(clog, sizeof clog, "%s/coordinator.log", p->run);
    unlink(clog);
    if (kf_log_to_file(clog, KF_LOG_INFO) != 0)
        fprintf(stderr,
                "kfleet run: cannot write %s: %s (the coordinator logs only warnings, "
                "on the terminal)\n",
                clog, strerror(errno));
    char agent_ep[PATH_MAX + 32];
    snprintf(agent_ep, sizeof agent_ep, "ipc://%s/agents.sock", p->run);
    unlink(agent_ep + 6);
    kf_coord_config cfg = {0};
    cfg.store_dir = p->store;
    cfg.agent_bind = agent_ep;
    cfg.control_endpoint = p->control_endpoint;
    cfg.key_file = p->coord_key;
    cfg.pub_file = p->coord_pub;
    cfg.allow_file = p->allow;
    cfg.heartbeat_interval_s = 0.5;
    cfg.heartbeat_timeout_s = 10.0;
    cfg.no_shared_builds = o->no_shared_builds;
    cfg.trust_file = p->build_trust;
    struct coord_thread ct = {0};
    if (kf_coord_new(&cfg, &ct.c, &err) != KF_OK) {
        fprintf(stderr, "kfleet run: %s\n", err.msg);
        close(lock);
        return 1;
    }
    pthread_t th;
    if (pthread_create(&th, NULL, coord_main, &ct) != 0) {
        fprintf(stderr, "kfleet run: cannot start the coordinator thread\n");
        kf_coord_destroy(&ct.c);
        close(lock);
        return 1;
    }
    /* The agents are the local provider's row (fleet/provider_local.h),
     * run on this thread: they die with it. */
    kf_fleet_host local = {0};
    /* A warm runner started with each agent imports torch while the agent
     * probes it: 3.6 s sooner to a Python problem's first reference on an
     * H200, and 1.2 s later to the registration (the two imports side by
     * side) of a sweep that has no use for it (2026-11-30). */
    kf_provider_local_host(&local, p->agents_dir, nagents, gpus, !python_problem, p->run);
    kf_launch_opts lo = {
        .direct = agent_ep, .server_pub_file = p->coord_pub, .allow_file = p->allow};
    kf_launch_result lr;
    if (kf_launch_here(&local, &lo, 0, &lr) != KF_OK) {
        fprintf(stderr, "kfleet run: %s\n", lr.msg);
        kf_fleet_host_release(&local);
        ct.stop = 1;
        pthread_join(th, NULL);
        kf_coord_destroy(&ct.c);
        close(lock);
        return 1;
    }
    if (spec->nparts)
        fprintf(stderr,
                "kfleet run: %s — %zu problems, %zu candidates, %d local %s agents (logs in %s: "
                "coordinator.log, agent-N.log)\n",
                spec->file, nparts, nkernels, nagents, gpus ? "GPU" : "CPU", p->run);
    else
        fprintf(stderr,
                "kfleet run: %s — %zu %s, %d local %s agents (logs in %s: coordinator.log, "
                "agent-N.log)\n",
                spec->file, spec->nkernels, spec->problem ? "candidates" : "kernels", nagents,
                gpus ? "GPU" : "CPU", p->run);

    int exit_code = 1;
    uint32_t sweep_id = 0, *ids = kf_xcalloc(nparts, sizeof *ids);
    size_t nids = 0;
    kf_client *cl = NULL;
    Kfleet__SubmitRequest **subs = kf_xcalloc(nparts, sizeof *subs);
    Kfleet__ControlReply *rep = NULL;
    if (kf_client_open(p, &cl, &err) != KF_OK) {
        fprintf(stderr, "kfleet run: %s\n", err.msg);
        goto out;
    }
    if (nodes_all && wait_registered(cl, nagents, &err) != KF_OK) {
        fprintf(stderr, "kfleet run: %s\n", err.msg);
        for (int i = 0; i < nagents; i++)
            print_agent(p, i);
        goto out;
    }
    /* Every part is built (its sources read) before any is sent, so a bad
     * source submits nothing, and submitted before any is followed: the
     * scheduler has the whole level at once. */
    for (size_t i = 0; i < nparts; i++)
        if (kf_client_build_submit(parts[i], o->kernels_dir, &subs[i], &err) != KF_OK) {
            fprintf(stderr, "kfleet run: %s\n", err.msg);
            goto out;
        }
    for (size_t i = 0; i < nparts; i++) {
        Kfleet__ControlRequest req = KFLEET__CONTROL_REQUEST__INIT;
        req.body_case = KFLEET__CONTROL_REQUEST__BODY_SUBMIT;
        req.submit = subs[i];
        if (kf_client_call(cl, &req, KF_CLI_SWEEP_REQUEST_MS, &rep, &err) != KF_OK) {
            fprintf(stderr, "kfleet run: %s: %s\n", parts[i]->name, err.msg);
            goto out;
        }
        ids[nids++] = rep->sweep_id;
        kfleet__control_reply__free_unpacked(rep, NULL);
        kf_client_free_submit(&subs[i]);
    }
    int rc = KF_OK, bad = 0;
    for (size_t i = 0; i < nids && rc == KF_OK; i++) {
        sweep_id = ids[i];
        Kfleet__SweepProgress fin = KFLEET__SWEEP_PROGRESS__INIT;
        kf_follow_opts fo = {
            .stall_s = o->stall_s, .agents_started = (uint32_t)nagents, .embedded = 1};
        rc = kf_follow(cl, sweep_id, &fo, (volatile int *)stop, &fin, &err);
        bad |= fin.failed + fin.timed_out + fin.cancelled > 0;
    }
    /* The coordinator stops with this run: the messages below suggest only
     * what works without it (the report reads the store). */
    if (rc == KF_EUNAVAIL) {
        fprintf(stderr, "kfleet run: %s\nwhat the local agents said last:\n", err.msg);
        for (int i = 0; i < nagents; i++)
            print_agent(p, i);
        fprintf(stderr, "the coordinator's log: %s\n", clog);
        for (size_t i = 0; i < nids; i++) /* this one and the level's others after it */
            if (ids[i] >= sweep_id)
                abandon(cl, ids[i], "nothing could run its pending tasks");
        fprintf(stderr,
                "kfleet run: stopped; sweep %u is marked abandoned in the store, with what "
                "ran (kfleet report %u)\n",
                sweep_id, sweep_id);
    } else if (rc == KF_ETIMEOUT && stop && *stop) {
        for (size_t i = 0; i < nids; i++)
            if (ids[i] >= sweep_id)
                abandon(cl, ids[i], "interrupted");
        fprintf(stderr,
                "kfleet run: interrupted; sweep %u is marked abandoned in the store, with what "
                "finished (kfleet report %u)\n",
                sweep_id, sweep_id);
    } else if (rc) {
        fprintf(stderr, "kfleet run: %s\n", err.msg);
    } else {
        /* A problem left without candidates is a row that did not pass. */
        exit_code = bad || spec->nmissing ? 1 : 0;
    }
out:
    for (size_t i = 0; i < nparts; i++)
        kf_client_free_submit(&subs[i]);
    free(subs);
    if (cl) {
        Kfleet__ControlRequest sd = KFLEET__CONTROL_REQUEST__INIT;
        sd.body_case = KFLEET__CONTROL_REQUEST__BODY_SHUTDOWN;
        sd.shutdown = 1;
        /* Agents first, so nothing is assigned to an agent on its way out. */
        kf_launch_here(&local, &lo, 1, &lr);
        Kfleet__ControlReply *r2 = NULL;
        if (kf_client_call(cl, &sd, 5000, &r2, &err) == KF_OK)
            kfleet__control_reply__free_unpacked(r2, NULL);
        kf_client_close(&cl);
    } else {
        kf_launch_here(&local, &lo, 1, &lr);
    }
    kf_fleet_host_release(&local);
    ct.stop = 1;
    pthread_join(th, NULL);
    kf_coord_destroy(&ct.c);
    kf_log_to_file(NULL, KF_LOG_OFF);
    unlink(agent_ep + 6);
    close(lock);
    for (size_t i = 0; i < nids; i++) {
        kf_report_opts ro = {.fmt = (kf_report_format)o->format};
        char file[PATH_MAX + 160];
        const char *to = o->output;
        if (to && spec->nparts) { /* a level: FILE.PROBLEM, a report per problem */
            snprintf(file, sizeof file, "%s.%s", o->output, parts[i]->problem->name);
            to = file;
        }
        if (spec->nparts && !to && i)
            fflush(stdout);
        int rrc = kf_cli_render_report(p->store, ids[i], 1, &ro, to);
        if (rrc && exit_code == 0)
            exit_code = rrc;
        if (to)
            fprintf(stderr, "kfleet run: report of sweep %u written to %s\n", ids[i], to);
    }
    /* The level's problems without a candidate, after the reports: a line
     * each, where the eye ends. */
    for (size_t i = 0; i < spec->nmissing; i++)
        fprintf(stderr, "kfleet run: %s\n", spec->missing[i]);
    free(ids);
    return exit_code;
}

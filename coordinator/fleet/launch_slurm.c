/* launch_slurm — `kfleet launch` and `teardown` of a provider: slurm host.
 *
 * The host is the cluster's login node; its work dir is on the filesystem
 * the compute nodes share. Over one SSH session to the login node: connect,
 * preflight (of the login node: no GPU asked for; sbatch, squeue and scancel
 * must be there), the bundle into the shared work dir (once, by sha256), one
 * key pair per agent (nodes/I/agent.key, allowed as NAME-I), then the way
 * back: the coordinator's tunnel ends on the login node's 127.0.0.1, and
 * `kfleet relay` (from the bundle) listens on the login node's cluster-facing
 * addresses and forwards to it; agents are told tcp://RELAY_HOST:PORT, where
 * RELAY_HOST is the inventory's relay_host or the login node's host name.
 * With --direct the agents connect there instead and no relay runs.
 *
 * Then one sbatch per node index that has no live job yet (job name
 * kfleet-NAME-I, so a second launch does not queue a second agent), each
 * job exec'ing the agent so that `--signal=B:TERM@S` reaches the agent
 * itself: it drains before the time limit. The agents report their job's
 * id when they register (the job script hands it over as $KF_JOB_ID); the
 * launch waits for each NAME-I with its job's id, reading squeue meanwhile:
 * a job that ends before registering fails the host with Slurm's state and
 * the job's output; jobs still pending when the wait is over are reported
 * as pending with Slurm's reason (the launch has done its part: Slurm
 * starts them when it can, and they register then).
 *
 * A launch that fails after it started something stops what it started:
 * the jobs it submitted (scancel) and the relay, when this launch started
 * it (one a live fleet already used is kept).
 *
 * The preflight is of the login node, Python included, and says so; the
 * job agents use the compute nodes' Python (KF_PYTHON through sbatch
 * --export), which each reports when it registers: the launch line names
 * it per agent.
 *
 * Teardown cancels the jobs by name (SIGTERM: the agents drain), waits for
 * them to leave the queue, stops the relay and, with --purge, removes the
 * work dir. */
#include "fleet/fleet_slurm.h"
#include "fleet/launch.h"
#include "fleet/launch_int.h"
#include "fleet/slurm_jobs.h"

#include "common/log.h"
#include "common/util.h"
#include "common/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SQUEUE_EVERY_S 2.0

/* $1 work dir. Fails naming the Slurm command that is missing; prints the
 * login node's host name (what compute nodes reach it at, by default). */
static const char check_script[] =
    "set -u\n"
    "for c in sbatch squeue scancel; do\n"
    "  command -v \"$c\" >/dev/null 2>&1 || { echo \"$c is not on the login node's PATH "
    "($PATH)\" >&2; exit 7; }\n"
    "done\n"
    "hostname -f 2>/dev/null || hostname\n";

/* $1 work dir, $2 the tunnel's port on the login node, $3 the address to
 * listen on (relay_host, or the login node's name: the address compute
 * nodes are told, never every address of the login node). Keeps a relay
 * that already forwards there from there; else (re)starts one, on its
 * former port when it had one, so queued and running agents keep their
 * endpoint. Prints "running PORT" or "started PORT". */
static const char relay_script[] =
    "set -u\ncd \"$1\" || exit 3\nwd=$(pwd)\n"
    "case $3 in *:*) l=\"[$3]\" ;; *) l=$3 ;; esac\n"
    "ralive() { [ -n \"$1\" ] && kill -0 \"$1\" 2>/dev/null && "
    "tr '\\0' ' ' </proc/\"$1\"/cmdline 2>/dev/null | grep -q 'kfleet relay'; }\n"
    "pid=$(cat relay.pid 2>/dev/null || true)\n"
    "if ralive \"$pid\"; then\n"
    "  if [ \"$(cat relay.to 2>/dev/null)\" = \"$3 $2\" ] && [ -s relay.port ]; then\n"
    "    echo running \"$(cat relay.port)\"; exit 0\n"
    "  fi\n"
    "  kill -TERM \"$pid\"; i=0\n"
    "  while ralive \"$pid\" && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done\n"
    "fi\n"
    "old=$(cat relay.port 2>/dev/null || echo 0)\n"
    "for port in \"$old\" 0; do\n"
    "  rm -f relay.port\n"
    "  printf '%s\\n' \"$3 $2\" > relay.to\n"
    "  setsid nohup \"$wd/bundle/kfleet\" relay --listen \"$l:$port\" "
    "--to \"127.0.0.1:$2\" --port-file \"$wd/relay.port\" >>relay.log 2>&1 </dev/null &\n"
    "  echo $! > relay.pid; i=0\n"
    "  while [ ! -s relay.port ] && kill -0 $! 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; "
    "i=$((i+1)); done\n"
    "  [ -s relay.port ] && { echo started \"$(cat relay.port)\"; exit 0; }\n"
    "done\n"
    "tail -n 3 relay.log >&2; exit 4\n";

/* $1 work dir, $2 name, $3 endpoint, $4 server key, $5 signal seconds, $6
 * the seconds the agent stops after ("" without a time limit), $7 the node
 * indexes to submit for (those with no live job), then sbatch's options.
 * Writes the job script; prints "submitted I ID" for each. */
static const char submit_script[] =
    "set -u\ncd \"$1\" || exit 3\n"
    "wd=$(pwd) name=$2 ep=$3 skey=$4 sig=$5 stop=$6 todo=$7\nshift 7\n"
    "cat > kfleet-job.sh.new <<'EOF'\n"
    "#!/bin/sh\n"
    "# A kfleet agent as a Slurm job, written by `kfleet launch`: $1 work dir,\n"
    "# $2 node index, $3 agent name, $4 coordinator endpoint, $5 server key,\n"
    "# $6 the seconds it stops after (the time limit less the signal's lead).\n"
    "# exec: the agent is the batch step, so --signal=B:TERM@S reaches it and it\n"
    "# drains before the time limit; --stop-after, should Slurm's signal be lost\n"
    "# (it is sent by a periodic check, and not to a step not yet running).\n"
    "wd=$1\n"
    "KF_JOB_ID=$SLURM_JOB_ID KF_JOB_PROVIDER=slurm; export KF_JOB_ID KF_JOB_PROVIDER\n"
    "set -- --coordinator \"$4\" --workdir \"$wd/nodes/$2\" --name \"$3\" ${5:+--server-key "
    "\"$5\"} ${6:+--stop-after \"$6\"}\n"
    "exec \"$wd/bundle/kfleet-agent\" \"$@\"\n"
    "EOF\n"
    "chmod 0755 kfleet-job.sh.new && mv kfleet-job.sh.new kfleet-job.sh\n"
    "for i in $todo; do\n"
    "  mkdir -p \"nodes/$i\"\n"
    "  out=$(sbatch --parsable --job-name \"kfleet-$name-$i\" --nodes 1 --output "
    "\"$wd/nodes/$i/slurm-%j.out\" --signal \"B:TERM@$sig\" \"$@\" \"$wd/kfleet-job.sh\" "
    "\"$wd\" \"$i\" \"$name-$i\" \"$ep\" \"$skey\" \"$stop\" 2>sbatch.err) || "
    "{ echo \"sbatch for node $i: $(cat sbatch.err)\" >&2; exit 5; }\n"
    "  echo \"submitted $i $(printf '%s\\n' \"$out\" | tail -n 1 | cut -d';' -f1)\"\n"
    "done\n";

/* $1 work dir, $2 name, $3 "purge" or "". */
static const char teardown_script[] =
    "set -u\n[ -d \"$1\" ] || { echo no-workdir; exit 0; }\ncd \"$1\"\nname=$2\n"
    "jobs() { q=$(squeue -h -u \"$(id -un)\" -o '%j %i' 2>&1) || "
    "{ echo \"squeue failed: $q\" >&2; exit 5; }\n"
    "  printf '%s\\n' \"$q\" | awk -v p=\"kfleet-$name-\" "
    "'index($1,p)==1 && substr($1,length(p)+1) ~ /^[0-9]+$/ {print $2}'; }\n"
    "ids=$(jobs) || exit 5\n"
    "if [ -n \"$ids\" ]; then\n"
    "  scancel $ids; i=0\n"
    "  while [ -n \"$(jobs)\" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done\n"
    "  echo cancelled $ids; left=$(jobs); [ -z \"$left\" ] || echo still ending $left\n"
    "else echo no jobs; fi\n"
    "pid=$(cat relay.pid 2>/dev/null || true)\n"
    "if [ -n \"$pid\" ] && tr '\\0' ' ' </proc/\"$pid\"/cmdline 2>/dev/null | grep -q 'kfleet "
    "relay'; then kill -TERM \"$pid\"; echo relay stopped; fi\n"
    "rm -f relay.pid\n"
    "if [ \"$3\" = purge ]; then cd / && rm -rf \"$1\" && echo purged; fi\n";

/* $1 work dir, $2 "relay" to stop the relay this launch started (else ""),
 * then the ids of the jobs this launch submitted: what a failed launch
 * stops. */
static const char undo_script[] =
    "set -u\ncd \"$1\" || exit 0\nrelay=$2\nshift 2\n"
    "if [ $# -gt 0 ]; then scancel \"$@\" && echo \"cancelled $*\"; fi\n"
    "if [ \"$relay\" = relay ]; then\n"
    "  pid=$(cat relay.pid 2>/dev/null || true)\n"
    "  if [ -n \"$pid\" ] && tr '\\0' ' ' </proc/\"$pid\"/cmdline 2>/dev/null | grep -q "
    "'kfleet relay'; then kill -TERM \"$pid\"; echo relay stopped; fi\n"
    "  rm -f relay.pid\n"
    "fi\n";

static void undo_launch(job *j, kf_ssh *s, int relay, char (*mine)[32], int nmine);

static int nodes_of(const job *j)
{
    const kf_fleet_slurm *sl = kf_fleet_slurm_of(j->h);
    return sl ? sl->nodes : 1;
}

static void agent_name(const job *j, int i, char *out, size_t n)
{
    snprintf(out, n, "%s-%d", j->h->name, i);
}

/* The squeue view of this host's jobs. */
static int poll_jobs(job *j, kf_ssh *s, kf_slurm_job **jobs, size_t *n, kf_err *err)
{
    kf_buf out = KF_BUF_INIT;
    int rc = launch_run_checked(j, s, kf_slurm_squeue_script, (const char *const[]){j->h->name}, 1,
                                &out, "squeue failed", err);
    if (rc == KF_OK)
        rc = kf_slurm_parse(j->h->name, out.data, jobs, n, err);
    kf_buf_release(&out);
    return rc;
}

/* Which of the node indexes' agents have registered with their job's id. */
/* What a registered job agent found of its Python: the Python its Python
 * kernels will run in (the compute node's, or KF_PYTHON's), which the
 * login node's preflight cannot see. */
static void python_of(const Kfleet__PythonFacts *py, char *out, size_t len)
{
    if (!py || !py->version || !py->version[0]) {
        snprintf(out, len, "no Python for Python kernels: %.150s",
                 py && py->error && py->error[0] ? py->error : "none found");
        return;
    }
    const char *name[] = {"numpy", "torch", "triton", "cupy"};
    const char *ver[] = {py->numpy, py->torch, py->triton, py->cupy};
    size_t off = (size_t)snprintf(out, len, "python %s", py->version);
    const char *sep = " (";
    for (size_t i = 0; i < 4 && off < len; i++)
        if (ver[i] && ver[i][0]) {
            off += (size_t)snprintf(out + off, len - off, "%s%s %s", sep, name[i], ver[i]);
            sep = ", ";
        }
    if (off < len)
        snprintf(out + off, len - off, "%s", *sep == ',' ? ")" : "");
}

static int count_registered(job *j, void *cl, char (*ids)[32], int *reg, char (*py)[200],
                            kf_err *err)
{
    Kfleet__ControlReply *rep = NULL;
    int rc = launch_ctl_status(j, cl, &rep, err);
    if (rc)
        return -rc;
    int n = nodes_of(j), k = 0;
    for (int i = 0; i < n; i++) {
        char want[160];
        agent_name(j, i, want, sizeof want);
        reg[i] = 0;
        for (size_t a = 0; rep->status && a < rep->status->n_agents; a++) {
            const Kfleet__AgentInfo *ai = rep->status->agents[a];
            if (strcmp(ai->agent_id, want) == 0 && !ai->lost && ai->job_id &&
                strcmp(ai->job_id, ids[i]) == 0) {
                reg[i] = 1;
                python_of(ai->python, py[i], sizeof py[i]);
            }
        }
        k += reg[i];
    }
    kfleet__control_reply__free_unpacked(rep, NULL);
    return k;
}

static const kf_slurm_job *find_job(const kf_slurm_job *jobs, size_t n, const char *id)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(jobs[i].job_id, id) == 0)
            return &jobs[i];
    return NULL;
}

/* Waits for every node's agent; pending jobs at the end are reported, not
 * failed. Fills msg with one clause per node. */
static int wait_agents(job *j, kf_ssh *s, void *cl, char (*ids)[32], kf_buf *msg, kf_err *err)
{
    const kf_launch_opts *o = j->o;
    int n = nodes_of(j);
    int *reg = kf_xcalloc((size_t)n, sizeof *reg);
    char(*py)[200] = kf_xcalloc((size_t)n, sizeof *py);
    kf_slurm_job *jobs = NULL;
    size_t njobs = 0;
    double limit = o->register_timeout_s > 0 ? o->register_timeout_s : 60;
    uint64_t t0 = kf_mono_ns(), last_poll = 0;
    int rc = KF_OK, k = 0;
    for (;;) {
        if (launch_cancelled(o)) {
            rc = kf_err_set(err, KF_EUNAVAIL, "the coordinator is shutting down");
            break;
        }
        if ((k = count_registered(j, cl, ids, reg, py, err)) < 0) {
            rc = -k;
            break;
        }
        int over = launch_since(t0) >= limit;
        if (k == n)
            break;
        if (over || last_poll == 0 || launch_since(last_poll) >= SQUEUE_EVERY_S) {
            kf_slurm_free(&jobs, &njobs);
            if ((rc = poll_jobs(j, s, &jobs, &njobs, err)))
                break;
            last_poll = kf_mono_ns();
            for (int i = 0; i < n && !rc; i++) {
                const kf_slurm_job *sj = find_job(jobs, njobs, ids[i]);
                if (reg[i] || (sj && !kf_slurm_state_final(sj->state)))
                    continue;
                char name[160], file[64];
                agent_name(j, i, name, sizeof name);
                rc = kf_err_set(err, KF_EIO, "job %s (%s) ended before its agent registered: %s",
                                ids[i], name, sj ? sj->state : "no longer in the queue");
                snprintf(file, sizeof file, "nodes/%d/slurm-%s.out", i, ids[i]);
                launch_tail(j, s, file, err->msg, sizeof err->msg);
            }
            if (rc)
                break;
        }
        if (over)
            break;
        struct timespec ts = {0, 200000000};
        nanosleep(&ts, NULL);
    }
    /* The nodes the registered agents' jobs run on. */
    kf_slurm_free(&jobs, &njobs);
    if (rc == KF_OK)
        rc = poll_jobs(j, s, &jobs, &njobs, err);
    for (int i = 0; rc == KF_OK && i < n; i++) {
        char name[160];
        agent_name(j, i, name, sizeof name);
        const kf_slurm_job *sj = find_job(jobs, njobs, ids[i]);
        if (reg[i]) {
            kf_buf_addf(msg, "%s%s job %s%s%s, %s", i ? ", " : "", name, ids[i],
                        sj && sj->node[0] ? " on " : "", sj && sj->node[0] ? sj->node : "", py[i]);
        } else if (sj && strcmp(sj->state, "PENDING") == 0) {
            kf_buf_addf(msg, "%s%s job %s PENDING (%s)", i ? ", " : "", name, ids[i], sj->reason);
        } else {
            rc = kf_err_set(err, KF_ETIMEOUT,
                            "job %s (%s) is %s but its agent did not register within %.0f s",
                            ids[i], name, sj ? sj->state : "unknown to squeue", limit);
            char file[64];
            snprintf(file, sizeof file, "nodes/%d/slurm-%s.out", i, ids[i]);
            launch_tail(j, s, file, err->msg, sizeof err->msg);
        }
    }
    kf_slurm_free(&jobs, &njobs);
    free(py);
    free(reg);
    return rc;
}

/* The node indexes whose job is still live (pending, running): their ids
 * into ids[]; the others, space-separated, into todo. */
static void live_jobs(job *j, const kf_slurm_job *jobs, size_t njobs, char (*ids)[32], kf_buf *todo)
{
    for (int i = 0; i < nodes_of(j); i++) {
        char name[160];
        agent_name(j, i, name, sizeof name);
        ids[i][0] = '\0';
        for (size_t k = 0; k < njobs; k++)
            if (strcmp(jobs[k].agent_id, name) == 0 && !kf_slurm_state_final(jobs[k].state))
                snprintf(ids[i], 32, "%s", jobs[k].job_id);
        if (!ids[i][0])
            kf_buf_addf(todo, "%s%d", todo->len ? " " : "", i);
    }
}

/* Parses the submit script's "submitted I ID" lines into ids[]; every node
 * index must then have a job. */
static int read_ids(job *j, const char *out, char (*ids)[32], int *submitted, kf_err *err)
{
    int n = nodes_of(j);
    *submitted = 0;
    for (const char *p = out; *p;) {
        char id[32];
        int i;
        if (sscanf(p, "submitted %d %31s", &i, id) == 2 && i >= 0 && i < n) {
            snprintf(ids[i], 32, "%s", id);
            (*submitted)++;
        }
        const char *nl = strchr(p, '\n');
        if (!nl)
            break;
        p = nl + 1;
    }
    for (int i = 0; i < n; i++)
        if (!ids[i][0])
            return kf_err_set(err, KF_EIO, "the submit script named no job for node %d: '%.200s'",
                              i, out);
    return KF_OK;
}

/* The sbatch options of the inventory's slurm: block. */
static size_t sbatch_args(const kf_fleet_slurm *sl, const char **args, size_t max)
{
    size_t n = 0;
    if (sl->partition)
        args[n++] = "--partition", args[n++] = sl->partition;
    if (sl->gres)
        args[n++] = "--gres", args[n++] = sl->gres;
    if (sl->time)
        args[n++] = "--time", args[n++] = sl->time;
    if (sl->account)
        args[n++] = "--account", args[n++] = sl->account;
    for (size_t i = 0; i < sl->nsbatch && n < max; i++)
        args[n++] = sl->sbatch[i];
    return n;
}

void launch_slurm_host(job *j)
{
    const kf_launch_opts *o = j->o;
    kf_launch_result *r = j->r;
    const kf_fleet_slurm *sl = kf_fleet_slurm_of(j->h);
    int n = nodes_of(j);
    kf_ssh *s = NULL;
    void *cl = NULL;
    kf_err err;
    kf_err_clear(&err);
    kf_buf out = KF_BUF_INIT, msg = KF_BUF_INIT;
    char(*ids)[32] = kf_xcalloc((size_t)n, sizeof *ids);
    char login[256] = "", ep[300] = "", via[400] = "";
    int relay_started = 0, submitted = 0, nmine = 0;
    char(*mine)[32] = kf_xcalloc((size_t)n, sizeof *mine); /* jobs this launch submitted */

    int rc = launch_connect_phase(j, &s, &err);
    if (rc)
        goto out;

    /* The login node: room and glibc for the bundle, and Slurm's commands.
     * Its GPUs do not matter; the agents' nodes report their own when they
     * register. */
    uint64_t t = kf_mono_ns();
    rc = launch_preflight(j, s, 0, r->summary, sizeof r->summary, &err);
    if (rc == KF_OK)
        rc = launch_run_checked(j, s, check_script, NULL, 0, &out, "Slurm's commands are missing",
                                &err);
    r->t[KF_PHASE_PREFLIGHT] = launch_since(t);
    if (rc) {
        kf_launch_fail(r, KF_PHASE_PREFLIGHT, rc, err.msg);
        goto out;
    }
    launch_trim(out.data);
    snprintf(login, sizeof login, "%s", sl->relay_host ? sl->relay_host : out.data);
    {
        /* What preflight saw is the login node, its Python too: said so. */
        char pre[sizeof r->summary];
        snprintf(pre, sizeof pre, "login node: %s", r->summary);
        snprintf(r->summary, sizeof r->summary, "%s", pre);
    }

    t = kf_mono_ns();
    rc = launch_upload(j, s, &r->uploaded, &r->used_scp, &err);
    for (int i = 0; rc == KF_OK && i < n; i++) {
        char key[64], name[160];
        snprintf(key, sizeof key, "nodes/%d/agent.key", i);
        agent_name(j, i, name, sizeof name);
        kf_buf mk = KF_BUF_INIT;
        kf_buf_adds(&mk, "mkdir -p ");
        kf_launch_shell_path(&mk, j->h->workdir);
        kf_buf_addf(&mk, "/nodes/%d", i);
        int st = 0;
        rc = kf_ssh_exec(s, mk.data, NULL, 0, NULL, NULL, &st, &err);
        kf_buf_release(&mk);
        if (rc == KF_OK && st != 0)
            rc = kf_err_set(&err, KF_EIO, "cannot make %s/nodes/%d", j->h->workdir, i);
        if (rc == KF_OK)
            rc = launch_install_key(j, s, key, name, &err);
    }
    r->t[KF_PHASE_UPLOAD] = launch_since(t);
    if (rc) {
        kf_launch_fail(r, KF_PHASE_UPLOAD, rc, err.msg);
        goto out;
    }

    if (launch_cancelled(o))
        rc = kf_err_set(&err, KF_EUNAVAIL, "the coordinator is shutting down");
    if (rc || (rc = launch_ctl_open(j, &cl, &err))) {
        kf_launch_fail(r, KF_PHASE_TUNNEL, rc, err.msg);
        goto out;
    }
    if (o->direct) {
        snprintf(ep, sizeof ep, "%s", o->direct);
        snprintf(via, sizeof via, "direct to %s", o->direct);
    } else {
        t = kf_mono_ns();
        rc = launch_ctl_tunnel(j, cl, &r->remote_port, &err);
        char port[16];
        snprintf(port, sizeof port, "%d", r->remote_port);
        kf_buf_reset(&out);
        if (rc == KF_OK)
            rc = launch_run_checked(j, s, relay_script, (const char *const[]){port, login}, 2, &out,
                                    "the relay did not start", &err);
        int rport = 0;
        char word[16] = "";
        if (rc == KF_OK && (sscanf(out.data, "%15s %d", word, &rport) != 2 || rport <= 0))
            rc = kf_err_set(&err, KF_EIO, "unexpected reply from the relay script: '%.100s'",
                            out.data);
        relay_started = rc == KF_OK && strcmp(word, "started") == 0;
        r->t[KF_PHASE_TUNNEL] = launch_since(t);
        if (rc) {
            kf_launch_fail(r, KF_PHASE_TUNNEL, rc, err.msg);
            goto out;
        }
        snprintf(ep, sizeof ep, "tcp://%s:%d", login, rport);
        snprintf(via, sizeof via, "relay %s:%d on the login node (%s) to its tunnel 127.0.0.1:%d",
                 login, rport, word, r->remote_port);
    }

    t = kf_mono_ns();
    {
        kf_slurm_job *jobs = NULL;
        size_t njobs = 0;
        kf_buf todo = KF_BUF_INIT;
        kf_buf_adds(&todo, "");
        rc = poll_jobs(j, s, &jobs, &njobs, &err);
        if (rc == KF_OK)
            live_jobs(j, jobs, njobs, ids, &todo);
        kf_slurm_free(&jobs, &njobs);
        const char *args[4 * 2 + 32 + 6];
        char sig[16], stop[24] = "";
        snprintf(sig, sizeof sig, "%d", sl->signal_before_s);
        if (sl->time_s > sl->signal_before_s)
            snprintf(stop, sizeof stop, "%ld", sl->time_s - sl->signal_before_s);
        size_t na = 0;
        args[na++] = j->h->name;
        args[na++] = ep;
        args[na++] = j->server_key ? j->server_key : "";
        args[na++] = sig;
        args[na++] = stop;
        args[na++] = todo.data;
        na += sbatch_args(sl, args + na, sizeof args / sizeof *args - na);
        kf_buf_reset(&out);
        if (rc == KF_OK)
            rc = launch_run_checked(j, s, submit_script, args, na, &out,
                                    "submitting the jobs failed", &err);
        kf_buf_release(&todo);
    }
    /* Whatever the script's exit, the jobs it did submit are this launch's. */
    for (const char *p = out.data; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        int i;
        if (nmine < n && sscanf(p, "submitted %d %31s", &i, mine[nmine]) == 2)
            nmine++;
    }
    if (rc == KF_OK)
        rc = read_ids(j, out.data, ids, &submitted, &err);
    r->t[KF_PHASE_START] = launch_since(t);
    if (rc) {
        kf_launch_fail(r, KF_PHASE_START, rc, err.msg);
        goto out;
    }
    r->already_running = submitted == 0;

    t = kf_mono_ns();
    rc = wait_agents(j, s, cl, ids, &msg, &err);
    r->t[KF_PHASE_REGISTER] = launch_since(t);
    if (rc) {
        kf_launch_fail(r, KF_PHASE_REGISTER, rc, err.msg);
        goto out;
    }
    snprintf(r->msg, sizeof r->msg,
             "%d job%s submitted, %d already queued: %s; %s, %s — %s (the jobs' Python is "
             "each agent's, above)",
             submitted, submitted == 1 ? "" : "s", n - submitted, msg.data,
             r->uploaded ? (r->used_scp ? "bundle sent (scp)" : "bundle sent (sftp)")
                         : "bundle unchanged",
             via, r->summary);
out:
    if (rc && s && (relay_started || nmine))
        undo_launch(j, s, relay_started, mine, nmine);
    free(mine);
    launch_ctl_close(&cl);
    kf_ssh_close(&s);
    kf_buf_release(&out);
    kf_buf_release(&msg);
    free(ids);
}

/* A failed launch stops the jobs it submitted and the relay it started,
 * and says so in the host's message. */
static void undo_launch(job *j, kf_ssh *s, int relay, char (*mine)[32], int nmine)
{
    const char **args = kf_xcalloc((size_t)nmine + 2, sizeof *args);
    size_t na = 0;
    args[na++] = relay ? "relay" : "";
    for (int i = 0; i < nmine; i++)
        args[na++] = mine[i];
    kf_buf out = KF_BUF_INIT;
    kf_err err;
    int rc =
        launch_run_checked(j, s, undo_script, args, na, &out, "undoing the launch failed", &err);
    launch_trim(out.data);
    size_t l = strlen(j->r->msg);
    snprintf(j->r->msg + l, sizeof j->r->msg - l, "; %s%s",
             rc == KF_OK ? "what this launch started is stopped: " : "",
             rc == KF_OK ? (out.len ? out.data : "nothing") : err.msg);
    for (char *p = j->r->msg + l; *p; p++)
        if (*p == '\n')
            *p = ',';
    kf_buf_release(&out);
    free(args);
}

void launch_slurm_teardown(job *j)
{
    kf_ssh *s = NULL;
    kf_err err;
    if (launch_connect_phase(j, &s, &err) == KF_OK) {
        const char *args[] = {j->h->name, j->o->purge ? "purge" : ""};
        launch_stop_phase(j, s, teardown_script, args, 2);
    }
    kf_ssh_close(&s);
}

void kf_launch_slurm_watch(const kf_fleet_host *h, const kf_launch_opts *o, double period_s,
                           void (*cb)(void *ctx, const kf_slurm_job *jobs, size_t n,
                                      const char *error),
                           void *ctx)
{
    kf_launch_result r;
    memset(&r, 0, sizeof r);
    job j = {.h = h, .o = o, .r = &r};
    kf_ssh *s = NULL;
    while (!launch_cancelled(o)) {
        kf_err err;
        kf_err_clear(&err);
        int rc = s ? KF_OK : launch_connect(&j, &s, &r.tries, &err);
        kf_slurm_job *jobs = NULL;
        size_t n = 0;
        if (rc == KF_OK)
            rc = poll_jobs(&j, s, &jobs, &n, &err);
        if (rc != KF_OK) {
            kf_ssh_close(&s);
            cb(ctx, NULL, 0, err.msg);
        } else {
            cb(ctx, jobs, n, NULL);
        }
        kf_slurm_free(&jobs, &n);
        uint64_t t0 = kf_mono_ns();
        while (!launch_cancelled(o) && launch_since(t0) < period_s) {
            struct timespec ts = {0, 100000000};
            nanosleep(&ts, NULL);
        }
    }
    kf_ssh_close(&s);
}

/* cmd_status — `kfleet status`: the running coordinator's agents and
 * sweeps, as a table or as JSON (schema kfleet.status/2), from one status
 * control request. */
#include "cli/cli.h"
#include "common/json.h"
#include "cli/options.h"
#include "common/text.h"
#include "common/util.h"

#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void fmt_ago(char *out, size_t len, uint64_t then_ns)
{
    uint64_t now = kf_now_ns();
    double s = then_ns && now > then_ns ? (double)(now - then_ns) / 1e9 : 0;
    if (s < 120)
        snprintf(out, len, "%.0fs ago", s);
    else if (s < 7200)
        snprintf(out, len, "%.0fm ago", s / 60);
    else
        snprintf(out, len, "%.1fh ago", s / 3600);
}

/* Why an agent is gone, if it is: it said goodbye (stopped), its key left
 * the allow list (revoked), or it went silent (lost). Upper case in the
 * table for the two nobody asked for. */
static const char *agent_state(const Kfleet__AgentInfo *a, int upper)
{
    if (a->lost && a->stopped)
        return "stopped";
    if (a->revoked)
        return upper ? "REVOKED" : "revoked";
    if (a->lost)
        return upper ? "LOST" : "lost";
    return "ok";
}

/* The watched job that carries agent a: its job id, of its provider. */
static const Kfleet__ProviderJob *provider_job(const Kfleet__StatusReply *st,
                                               const Kfleet__AgentInfo *a)
{
    const char *prov = a->job_provider && a->job_provider[0] ? a->job_provider : NULL;
    for (size_t i = 0; a->job_id && a->job_id[0] && i < st->n_provider_jobs; i++)
        if (strcmp(st->provider_jobs[i]->job_id, a->job_id) == 0 &&
            (!prov || strcmp(st->provider_jobs[i]->provider, prov) == 0))
            return st->provider_jobs[i];
    return NULL;
}

/* Whose job carries agent a: what it said, or, for a record from before
 * agents said it (job_id alone: one provider had jobs then), the provider
 * of the watched job with its id; "" when neither tells. */
static const char *job_provider(const Kfleet__StatusReply *st, const Kfleet__AgentInfo *a)
{
    if (a->job_provider && a->job_provider[0])
        return a->job_provider;
    const Kfleet__ProviderJob *j = provider_job(st, a);
    return j ? j->provider : "";
}

static json_t *agent_json(const Kfleet__StatusReply *st, const Kfleet__AgentInfo *a)
{
    json_t *ja = json_object();
    json_object_set_new(ja, "agent_id", kf_json_str(a->agent_id));
    json_object_set_new(ja, "hostname", kf_json_str(a->hostname));
    json_object_set_new(ja, "state", kf_json_str(agent_state(a, 0)));
    json_object_set_new(ja, "last_seen_ns", json_integer((json_int_t)a->last_seen_ns));
    json_object_set_new(ja, "cpu_slots", json_integer(a->cpu_slots));
    json_object_set_new(ja, "gpu_slots", json_integer(a->gpu_slots));
    json_object_set_new(ja, "cpu_model", kf_json_str(a->cpu_model));
    json_object_set_new(ja, "driver_version", kf_json_str(a->driver_version));
    json_object_set_new(ja, "cuda_driver_version", json_integer(a->cuda_driver_version));
    json_object_set_new(ja, "nvcc_version", kf_json_str(a->nvcc_version));
    json_object_set_new(ja, "workdir_free_bytes", json_integer((json_int_t)a->workdir_free_bytes));
    if (a->python) {
        const Kfleet__PythonFacts *py = a->python;
        json_t *jp = json_object();
        json_object_set_new(jp, "version", kf_json_str(py->version));
        json_object_set_new(jp, "executable", kf_json_str(py->executable));
        json_object_set_new(jp, "numpy", kf_json_str(py->numpy));
        json_object_set_new(jp, "torch", kf_json_str(py->torch));
        json_object_set_new(jp, "torch_cuda", kf_json_str(py->torch_cuda));
        json_object_set_new(jp, "triton", kf_json_str(py->triton));
        json_object_set_new(jp, "cupy", kf_json_str(py->cupy));
        json_object_set_new(jp, "error", kf_json_str(py->error));
        json_object_set_new(jp, "torch_gpus", json_integer(py->torch_gpus));
        json_object_set_new(jp, "torch_note", kf_json_str(py->torch_note ? py->torch_note : ""));
        json_object_set_new(ja, "python", jp);
    }
    json_object_set_new(ja, "cuda_compat", kf_json_str(a->cuda_compat ? a->cuda_compat : ""));
    json_object_set_new(ja, "cuda_compat_error",
                        kf_json_str(a->cuda_compat_error ? a->cuda_compat_error : ""));
    json_t *gpus = json_array();
    for (size_t g = 0; g < a->n_gpus; g++) {
        json_t *jg = json_object();
        json_object_set_new(jg, "index", json_integer(a->gpus[g]->index));
        json_object_set_new(jg, "name", kf_json_str(a->gpus[g]->name));
        json_object_set_new(jg, "uuid", kf_json_str(a->gpus[g]->uuid));
        json_object_set_new(jg, "memory_bytes", json_integer((json_int_t)a->gpus[g]->memory_bytes));
        char cc[16];
        snprintf(cc, sizeof cc, "%u.%u", a->gpus[g]->cc_major, a->gpus[g]->cc_minor);
        json_object_set_new(jg, "compute_capability", kf_json_str(cc));
        json_array_append_new(gpus, jg);
    }
    json_object_set_new(ja, "gpus", gpus);
    json_object_set_new(ja, "job_id", kf_json_str(a->job_id ? a->job_id : ""));
    json_object_set_new(ja, "job_provider", kf_json_str(job_provider(st, a)));
    json_object_set_new(ja, "sandbox_missing",
                        kf_json_str(a->sandbox_missing ? a->sandbox_missing : ""));
    return ja;
}

static json_t *sweep_json(const Kfleet__SweepProgress *s)
{
    json_t *js = json_object();
    json_object_set_new(js, "sweep_id", json_integer(s->sweep_id));
    json_object_set_new(js, "name", kf_json_str(s->name));
    json_object_set_new(js, "total", json_integer(s->total));
    json_object_set_new(js, "pending", json_integer(s->pending));
    json_object_set_new(js, "running", json_integer(s->running));
    json_object_set_new(js, "succeeded", json_integer(s->succeeded));
    json_object_set_new(js, "failed", json_integer(s->failed));
    json_object_set_new(js, "timed_out", json_integer(s->timed_out));
    json_object_set_new(js, "cancelled", json_integer(s->cancelled));
    json_object_set_new(js, "skipped", json_integer(s->skipped));
    /* Build tasks, made per agent as kernels reach it, are in total too. */
    json_object_set_new(js, "builds_total", json_integer(s->builds_total));
    json_object_set_new(js, "builds_ended", json_integer(s->builds_ended));
    json_object_set_new(
        js, "finished",
        json_boolean(s->succeeded + s->failed + s->timed_out + s->cancelled + s->skipped ==
                     s->total));
    return js;
}

/* The status as JSON (kfleet.status/2). 0 or 1. */
static int print_json(const Kfleet__StatusReply *st)
{
    json_t *root = json_object();
    json_object_set_new(root, "schema", json_string("kfleet.status/2"));
    json_object_set_new(root, "version", kf_json_str(st->version));
    json_object_set_new(root, "pid", json_integer(st->pid));
    json_object_set_new(root, "agent_endpoint", kf_json_str(st->agent_endpoint));
    json_object_set_new(root, "heartbeat_timeout_s", json_real(st->heartbeat_timeout_ms / 1000.0));
    json_t *agents = json_array();
    for (size_t i = 0; i < st->n_agents; i++)
        json_array_append_new(agents, agent_json(st, st->agents[i]));
    json_object_set_new(root, "agents", agents);
    json_t *sweeps = json_array();
    for (size_t i = 0; i < st->n_sweeps; i++)
        json_array_append_new(sweeps, sweep_json(st->sweeps[i]));
    json_object_set_new(root, "sweeps", sweeps);
    json_t *jobs = json_array();
    for (size_t i = 0; i < st->n_provider_jobs; i++) {
        const Kfleet__ProviderJob *j = st->provider_jobs[i];
        json_t *jj = json_object();
        json_object_set_new(jj, "provider", kf_json_str(j->provider));
        json_object_set_new(jj, "host", kf_json_str(j->host));
        json_object_set_new(jj, "agent_id", kf_json_str(j->agent_id));
        json_object_set_new(jj, "job_id", kf_json_str(j->job_id));
        json_object_set_new(jj, "state", kf_json_str(j->state));
        json_object_set_new(jj, "reason", kf_json_str(j->reason));
        json_object_set_new(jj, "seen_ns", json_integer((json_int_t)j->seen_ns));
        json_array_append_new(jobs, jj);
    }
    json_object_set_new(root, "provider_jobs", jobs);
    return kf_cli_print_json(root, JSON_INDENT(2));
}

/* The agent's Python, as Python kernels are matched on it: one line under
 * its row. */
static void python_line(FILE *o, const Kfleet__PythonFacts *py)
{
    if (!py)
        return;
    if (!py->version || !py->version[0]) {
        fprintf(o, "%-24s python: none (%s)\n", "", py->error && py->error[0] ? py->error : "?");
        return;
    }
    const char *name[] = {"numpy", "torch", "triton", "cupy"};
    const char *ver[] = {py->numpy, py->torch, py->triton, py->cupy};
    fprintf(o, "%-24s python %s:", "", py->version);
    for (size_t i = 0; i < 4; i++)
        fprintf(o, " %s %s%s%s%s", name[i], ver[i] && ver[i][0] ? ver[i] : "-",
                i == 1 && py->torch_cuda && py->torch_cuda[0] ? " (CUDA " : "",
                i == 1 && py->torch_cuda && py->torch_cuda[0] ? py->torch_cuda : "",
                i == 1 && py->torch_cuda && py->torch_cuda[0] ? ")" : "");
    if (py->torch && py->torch[0] && py->torch_gpus > 0)
        fprintf(o, "; torch sees %d GPU%s", py->torch_gpus, py->torch_gpus == 1 ? "" : "s");
    fprintf(o, "\n");
    if (py->torch_note && py->torch_note[0])
        fprintf(o, "%-24s torch: %s\n", "", py->torch_note);
}

/* The provider jobs that have no registered agent: pending ones with the
 * provider's reason, ended ones with how they ended; a header per
 * provider, its name in capitals ("NAME JOB (no agent)"), as the rows come
 * grouped by it. */
static void job_lines(FILE *o, const Kfleet__StatusReply *st)
{
    const char *header = NULL;
    for (size_t i = 0; i < st->n_provider_jobs; i++) {
        const Kfleet__ProviderJob *j = st->provider_jobs[i];
        int has_agent = 0;
        for (size_t a = 0; a < st->n_agents; a++)
            if (st->agents[a]->job_id && strcmp(st->agents[a]->job_id, j->job_id) == 0 &&
                strcmp(job_provider(st, st->agents[a]), j->provider) == 0)
                has_agent = !st->agents[a]->lost;
        if (has_agent)
            continue;
        if (!header || strcmp(header, j->provider) != 0) {
            char title[64];
            size_t k = 0;
            for (; j->provider[k] && k < 40; k++)
                title[k] = (char)toupper((unsigned char)j->provider[k]);
            snprintf(title + k, sizeof title - k, "%sJOB (no agent)", k ? " " : "");
            fprintf(o, "\n%-24s %-10s %-10s %-12s %s\n", title, "JOB", "STATE", "HOST", "REASON");
            header = j->provider;
        }
        char ago[32];
        fmt_ago(ago, sizeof ago, j->seen_ns);
        fprintf(o, "%-24s %-10s %-10s %-12s %s (seen %s)\n", j->agent_id, j->job_id, j->state,
                j->host, j->reason, ago);
    }
}

static void print_table(FILE *o, const Kfleet__StatusReply *st)
{
    fprintf(o, "coordinator %s, pid %u, agents connect to %s (lost after %.1fs of silence)\n\n",
            st->version, st->pid, st->agent_endpoint, st->heartbeat_timeout_ms / 1000.0);
    fprintf(o, "%-24s %-16s %-7s %-10s %-5s %-5s %s\n", "AGENT", "HOST", "STATE", "SEEN", "CPU",
            "GPU", "DEVICES");
    for (size_t i = 0; i < st->n_agents; i++) {
        const Kfleet__AgentInfo *a = st->agents[i];
        char ago[32], dev[256];
        fmt_ago(ago, sizeof ago, a->last_seen_ns);
        if (a->n_gpus)
            snprintf(dev, sizeof dev, "%zux %s, driver %s", a->n_gpus, a->gpus[0]->name,
                     a->driver_version);
        else
            snprintf(dev, sizeof dev, "cpu: %s", a->cpu_model);
        fprintf(o, "%-24s %-16s %-7s %-10s %-5u %-5u %s\n", a->agent_id, a->hostname,
                agent_state(a, 1), ago, a->cpu_slots, a->gpu_slots, dev);
        if (a->job_id && a->job_id[0]) {
            const char *prov = job_provider(st, a);
            const Kfleet__ProviderJob *j = provider_job(st, a);
            fprintf(o, "%-24s %s%sjob %s%s%s\n", "", prov, prov[0] ? " " : "", a->job_id,
                    j ? " " : "", j ? j->state : "");
        }
        python_line(o, a->python);
        if (a->cuda_compat && a->cuda_compat[0])
            fprintf(o, "%-24s forward compat: %s\n", "", a->cuda_compat);
        else if (a->cuda_compat_error && a->cuda_compat_error[0])
            fprintf(o, "%-24s CUDA: %s\n", "", a->cuda_compat_error);
        if (a->sandbox_missing && a->sandbox_missing[0])
            fprintf(o, "%-24s sandbox: %s\n", "", a->sandbox_missing);
    }
    if (st->n_agents == 0)
        fprintf(o, "(no agent registered: start one with kfleet-agent --coordinator %s)\n",
                st->agent_endpoint);
    job_lines(o, st);
    fprintf(o, "\n%-6s %-20s %-9s %-7s %-7s %-7s %-7s\n", "SWEEP", "NAME", "DONE", "FAILED",
            "RUNNING", "PENDING", "STATE");
    for (size_t i = 0; i < st->n_sweeps; i++) {
        const Kfleet__SweepProgress *s = st->sweeps[i];
        uint32_t done = s->succeeded + s->failed + s->timed_out + s->cancelled + s->skipped;
        char frac[32];
        snprintf(frac, sizeof frac, "%u/%u", done, s->total);
        fprintf(o, "%-6u %-20s %-9s %-7u %-7u %-7u %-7s\n", s->sweep_id, s->name, frac,
                s->failed + s->timed_out, s->running, s->pending,
                done == s->total ? "done" : "running");
    }
    if (st->n_sweeps == 0)
        fprintf(o, "(no sweep yet: kfleet submit FILE)\n");
}

static int cmd_status(int argc, char **argv, const char *home)
{
    const kf_cmd_entry *self = &kf_cmd_status;
    int json = 0;
    const kf_option opts[] = {
        KF_OPT_CHOICE("format", &json, ((const char *const[]){"table", "json", NULL})),
        KF_OPT_END,
    };
    int rc = kf_opt_parse(self, argc, argv, opts);
    if (rc != KF_OPT_GO || (rc = kf_opt_no_args(self, argc, argv)) != KF_OPT_GO)
        return rc;
    Kfleet__ControlRequest req = KFLEET__CONTROL_REQUEST__INIT;
    req.body_case = KFLEET__CONTROL_REQUEST__BODY_STATUS;
    req.status = 1;
    Kfleet__ControlReply *rep = NULL;
    if ((rc = kf_cli_call("status", home, &req, 10000, &rep)))
        return rc;
    rc = 0;
    if (json)
        rc = print_json(rep->status);
    else {
        /* Agents' names, hosts and Python errors are theirs to write: the
         * table goes out inert (common/text.h). */
        char *text = NULL;
        size_t tlen = 0;
        FILE *mem = open_memstream(&text, &tlen);
        if (!mem) {
            fprintf(stderr, "kfleet status: out of memory\n");
            rc = 1;
        } else {
            print_table(mem, rep->status);
            fclose(mem);
            kf_buf b = KF_BUF_INIT;
            kf_text_inert_n(&b, text, tlen, KF_TEXT_BLOCK);
            fwrite(b.data, 1, b.len, stdout);
            kf_buf_release(&b);
            free(text);
        }
    }
    kfleet__control_reply__free_unpacked(rep, NULL);
    return rc;
}

const kf_cmd_entry kf_cmd_status = {
    "status",
    cmd_status,
    "Lists the coordinator's agents and sweeps.",
    "status [--format table|json]",
    "Lists the coordinator's agents (state, last heartbeat, slots, devices) and recent sweeps.\n\n"
    "  --format FMT   table or json",
};

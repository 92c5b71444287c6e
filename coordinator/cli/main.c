/* kfleet — the command line: the coordinator daemon (serve), the client
 * commands (submit, status, report, cancel, stop) and the one-shot local
 * fleet (run).
 *
 * Exit codes: 0 success; 1 the work failed (a task failed, a coordinator is
 * missing); 2 bad usage or bad input (an unknown flag, a sweep file error). */
#include "cli/client.h"
#include "cli/cmds.h"
#include "common/keys.h"
#include "report/compare.h"
#include "daemon/coord.h"
#include "fleet/launch.h"
#include "common/log.h"
#include "common/paths.h"
#include "report/report.h"
#include "cli/run.h"
#include "core/store.h"
#include "core/sweep.h"
#include "common/util.h"
#include "report/verify.h"

#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
    (void)sig;
    g_stop = 1;
}

static void install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

typedef struct cmd {
    const char *name;
    int (*fn)(int argc, char **argv, const char *home);
    const char *summary;
    const char *usage;
} cmd;

static const cmd *find_cmd(const char *name);

static void print_cmd_help(FILE *f, const cmd *c)
{
    fprintf(f, "usage: kfleet %s\n\n%s\n", c->usage, c->summary);
}

static int usage_error(const char *cmdname, const char *fmt, const char *arg)
{
    fprintf(stderr, "kfleet %s: ", cmdname);
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    const cmd *c = find_cmd(cmdname);
    if (c)
        fprintf(stderr, "usage: kfleet %s\n", c->usage);
    return 2;
}

/* getopt_long over a subcommand's argv; returns 2 on a bad flag (usage
 * printed), -1 when all flags are parsed. */
static int next_opt(const char *cmdname, int argc, char **argv, const struct option *opts, int *ch)
{
    opterr = 0;
    *ch = getopt_long(argc, argv, "ho:", opts, NULL);
    if (*ch == '?' || *ch == ':') {
        const char *bad = argv[optind - 1];
        usage_error(cmdname,
                    optopt ? "option '-%s' is unknown or lacks its value" : "unknown option '%s'",
                    optopt ? (char[]){(char)optopt, 0} : bad);
        return 2;
    }
    return 0;
}

static int resolve(const char *home, int create, kf_paths *p)
{
    kf_err err;
    if (kf_paths_resolve(p, home, create, &err) != KF_OK) {
        fprintf(stderr, "kfleet: %s\n", err.msg);
        return 1;
    }
    return 0;
}

/* ---- launch, teardown, bundle (cmd_launch.c) ---- */
static int cmd_launch(int argc, char **argv, const char *home)
{
    kf_paths p;
    return resolve(home, 1, &p) ? 1 : kf_cmd_launch(argc, argv, &p);
}
static int cmd_teardown(int argc, char **argv, const char *home)
{
    kf_paths p;
    return resolve(home, 1, &p) ? 1 : kf_cmd_teardown(argc, argv, &p);
}
static int cmd_bundle(int argc, char **argv, const char *home)
{
    kf_paths p;
    return resolve(home, 0, &p) ? 1 : kf_cmd_bundle(argc, argv, &p);
}

/* ---- serve ---- */

static int cmd_serve(int argc, char **argv, const char *home)
{
    const char *bind = "tcp://127.0.0.1:*";
    double hb_timeout = 10.0, hb_interval = 1.0;
    static const struct option opts[] = {{"bind", required_argument, 0, 'b'},
                                         {"heartbeat-timeout", required_argument, 0, 't'},
                                         {"heartbeat-interval", required_argument, 0, 'i'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int ch;
    for (;;) {
        if (next_opt("serve", argc, argv, opts, &ch))
            return 2;
        if (ch == -1)
            break;
        switch (ch) {
        case 'b':
            bind = optarg;
            break;
        case 't':
            if (kf_parse_duration(optarg, &hb_timeout) || hb_timeout <= 0)
                return usage_error("serve",
                                   "--heartbeat-timeout wants a duration like 10s, got "
                                   "'%s'",
                                   optarg);
            break;
        case 'i':
            if (kf_parse_duration(optarg, &hb_interval) || hb_interval <= 0)
                return usage_error("serve",
                                   "--heartbeat-interval wants a duration like 1s, "
                                   "got '%s'",
                                   optarg);
            break;
        case 'h':
            print_cmd_help(stdout, find_cmd("serve"));
            return 0;
        default:
            return usage_error("serve", "unexpected option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return usage_error("serve", "unexpected argument '%s'", argv[optind]);
    if (hb_timeout < 2 * hb_interval)
        return usage_error("serve",
                           "--heartbeat-timeout must be at least twice the interval "
                           "(%s)",
                           "agents would be declared lost between two heartbeats");
    kf_paths p;
    if (resolve(home, 1, &p))
        return 1;
    kf_err err;
    int lock = kf_lock_file(p.lock, &err);
    if (lock < 0) {
        fprintf(stderr, "kfleet serve: %s\n",
                err.code == KF_EBUSY ? "a coordinator is already running for this home; "
                                       "`kfleet status` talks to it, or pass --home DIR"
                                     : err.msg);
        return 1;
    }
    install_signals();
    kf_coord_config cfg = {0};
    cfg.store_dir = p.store;
    cfg.agent_bind = bind;
    cfg.control_endpoint = p.control_endpoint;
    cfg.endpoint_file = p.agent_endpoint_file;
    cfg.key_file = p.coord_key;
    cfg.pub_file = p.coord_pub;
    cfg.allow_file = p.allow;
    cfg.heartbeat_interval_s = hb_interval;
    cfg.heartbeat_timeout_s = hb_timeout;
    kf_coord *c = NULL;
    if (kf_coord_new(&cfg, &c, &err) != KF_OK) {
        fprintf(stderr, "kfleet serve: %s\n", err.msg);
        close(lock);
        return 1;
    }
    char pub[64] = "";
    kf_keys_read_public(p.coord_pub, pub, &err);
    printf("kfleet coordinator %s (pid %d)\n  agents connect to: %s\n  its public key:    %s\n"
           "  start one: kfleet-agent --coordinator %s --server-key %s\n"
           "  (an agent elsewhere: accept its key with `kfleet agent-key add KEY NAME`)\n"
           "  store: %s\n",
           KF_VERSION, (int)getpid(), kf_coord_agent_endpoint(c), pub, kf_coord_agent_endpoint(c),
           pub, p.store);
    fflush(stdout);
    int rc = kf_coord_run(c, &g_stop, &err);
    if (rc)
        fprintf(stderr, "kfleet serve: %s\n", err.msg);
    kf_coord_destroy(&c);
    close(lock);
    return rc ? 1 : 0;
}

/* ---- submit ---- */

static int parse_sweep(const char *cmdname, const char *file, kf_sweep_spec **spec, char *kdir,
                       size_t kdir_len)
{
    kf_err err;
    if (kf_client_kernels_dir(kdir, kdir_len, &err) != KF_OK) {
        fprintf(stderr, "kfleet %s: %s\n", cmdname, err.msg);
        return 1;
    }
    if (kf_sweep_parse_file(file, kdir, spec, &err) != KF_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 2;
    }
    return 0;
}

static int cmd_submit(int argc, char **argv, const char *home)
{
    int follow = 0, json = 0;
    static const struct option opts[] = {{"follow", no_argument, 0, 'f'},
                                         {"format", required_argument, 0, 'F'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int ch;
    for (;;) {
        if (next_opt("submit", argc, argv, opts, &ch))
            return 2;
        if (ch == -1)
            break;
        switch (ch) {
        case 'f':
            follow = 1;
            break;
        case 'F':
            if (strcmp(optarg, "json") == 0)
                json = 1;
            else if (strcmp(optarg, "table") != 0)
                return usage_error("submit", "--format wants table or json, got '%s'", optarg);
            break;
        case 'h':
            print_cmd_help(stdout, find_cmd("submit"));
            return 0;
        default:
            return usage_error("submit", "unexpected option '%s'", argv[optind - 1]);
        }
    }
    if (optind != argc - 1)
        return usage_error("submit", "wants exactly one sweep file%s", "");
    kf_sweep_spec *spec = NULL;
    char kdir[PATH_MAX];
    int rc = parse_sweep("submit", argv[optind], &spec, kdir, sizeof kdir);
    if (rc)
        return rc;
    kf_paths p;
    if (resolve(home, 0, &p)) {
        kf_sweep_destroy(&spec);
        return 1;
    }
    kf_err err;
    kf_client *c = NULL;
    Kfleet__SubmitRequest *sub = NULL;
    if ((rc = kf_client_build_submit(spec, kdir, &sub, &err)) ||
        (rc = kf_client_open(&p, &c, &err))) {
        fprintf(stderr, "kfleet submit: %s\n", err.msg);
        kf_client_free_submit(&sub);
        kf_sweep_destroy(&spec);
        return rc == KF_EINVAL ? 2 : 1;
    }
    Kfleet__ControlRequest req = KFLEET__CONTROL_REQUEST__INIT;
    req.body_case = KFLEET__CONTROL_REQUEST__BODY_SUBMIT;
    req.submit = sub;
    Kfleet__ControlReply *rep = NULL;
    rc = kf_client_call(c, &req, 30000, &rep, &err);
    kf_client_free_submit(&sub);
    size_t ntasks = 0;
    for (size_t i = 0; i < spec->nkernels; i++)
        ntasks += kf_sweep_kernel_configs(&spec->kernels[i]);
    if (rc) {
        fprintf(stderr, "kfleet submit: %s\n", err.msg);
        kf_client_close(&c);
        kf_sweep_destroy(&spec);
        return 1;
    }
    uint32_t id = rep->sweep_id;
    kfleet__control_reply__free_unpacked(rep, NULL);
    if (json)
        printf("{\"sweep_id\": %u, \"name\": \"%s\", \"configurations\": %zu}\n", id, spec->name,
               ntasks);
    else
        printf("submitted sweep %u (%s): %zu configurations; `kfleet report %u` when done\n", id,
               spec->name, ntasks, id);
    fflush(stdout);
    int exit_code = 0;
    if (follow) {
        install_signals();
        Kfleet__SweepProgress fin = KFLEET__SWEEP_PROGRESS__INIT;
        rc = kf_client_follow(c, id, (volatile int *)&g_stop, &fin, &err);
        if (rc == KF_ETIMEOUT && g_stop)
            exit_code = 0;
        else if (rc) {
            fprintf(stderr, "kfleet submit: %s\n", err.msg);
            exit_code = 1;
        } else if (fin.failed + fin.timed_out > 0) {
            exit_code = 1;
        }
    }
    kf_client_close(&c);
    kf_sweep_destroy(&spec);
    return exit_code;
}

/* ---- status ---- */

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

static int cmd_status(int argc, char **argv, const char *home)
{
    int json = 0;
    static const struct option opts[] = {
        {"format", required_argument, 0, 'F'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int ch;
    for (;;) {
        if (next_opt("status", argc, argv, opts, &ch))
            return 2;
        if (ch == -1)
            break;
        switch (ch) {
        case 'F':
            if (strcmp(optarg, "json") == 0)
                json = 1;
            else if (strcmp(optarg, "table") != 0)
                return usage_error("status", "--format wants table or json, got '%s'", optarg);
            break;
        case 'h':
            print_cmd_help(stdout, find_cmd("status"));
            return 0;
        default:
            return usage_error("status", "unexpected option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return usage_error("status", "unexpected argument '%s'", argv[optind]);
    kf_paths p;
    if (resolve(home, 0, &p))
        return 1;
    kf_err err;
    kf_client *c = NULL;
    if (kf_client_open(&p, &c, &err) != KF_OK) {
        fprintf(stderr, "kfleet status: %s\n", err.msg);
        return 1;
    }
    Kfleet__ControlRequest req = KFLEET__CONTROL_REQUEST__INIT;
    req.body_case = KFLEET__CONTROL_REQUEST__BODY_STATUS;
    req.status = 1;
    Kfleet__ControlReply *rep = NULL;
    int rc = kf_client_call(c, &req, 10000, &rep, &err);
    kf_client_close(&c);
    if (rc) {
        fprintf(stderr, "kfleet status: %s\n", err.msg);
        return 1;
    }
    const Kfleet__StatusReply *st = rep->status;
    if (json) {
        json_t *root = json_object();
        json_object_set_new(root, "schema", json_string("kfleet.status/1"));
        json_object_set_new(root, "version", json_string(st->version));
        json_object_set_new(root, "pid", json_integer(st->pid));
        json_object_set_new(root, "agent_endpoint", json_string(st->agent_endpoint));
        json_object_set_new(root, "heartbeat_timeout_s",
                            json_real(st->heartbeat_timeout_ms / 1000.0));
        json_t *agents = json_array();
        for (size_t i = 0; i < st->n_agents; i++) {
            const Kfleet__AgentInfo *a = st->agents[i];
            json_t *ja = json_object();
            json_object_set_new(ja, "agent_id", json_string(a->agent_id));
            json_object_set_new(ja, "hostname", json_string(a->hostname));
            json_object_set_new(ja, "state", json_string(a->lost ? "lost" : "ok"));
            json_object_set_new(ja, "last_seen_ns", json_integer((json_int_t)a->last_seen_ns));
            json_object_set_new(ja, "cpu_slots", json_integer(a->cpu_slots));
            json_object_set_new(ja, "gpu_slots", json_integer(a->gpu_slots));
            json_object_set_new(ja, "cpu_model", json_string(a->cpu_model));
            json_object_set_new(ja, "driver_version", json_string(a->driver_version));
            json_object_set_new(ja, "cuda_driver_version", json_integer(a->cuda_driver_version));
            json_object_set_new(ja, "nvcc_version", json_string(a->nvcc_version));
            json_object_set_new(ja, "workdir_free_bytes",
                                json_integer((json_int_t)a->workdir_free_bytes));
            json_t *gpus = json_array();
            for (size_t g = 0; g < a->n_gpus; g++) {
                json_t *jg = json_object();
                json_object_set_new(jg, "index", json_integer(a->gpus[g]->index));
                json_object_set_new(jg, "name", json_string(a->gpus[g]->name));
                json_object_set_new(jg, "uuid", json_string(a->gpus[g]->uuid));
                json_object_set_new(jg, "memory_bytes",
                                    json_integer((json_int_t)a->gpus[g]->memory_bytes));
                char cc[16];
                snprintf(cc, sizeof cc, "%u.%u", a->gpus[g]->cc_major, a->gpus[g]->cc_minor);
                json_object_set_new(jg, "compute_capability", json_string(cc));
                json_array_append_new(gpus, jg);
            }
            json_object_set_new(ja, "gpus", gpus);
            json_array_append_new(agents, ja);
        }
        json_object_set_new(root, "agents", agents);
        json_t *sweeps = json_array();
        for (size_t i = 0; i < st->n_sweeps; i++) {
            const Kfleet__SweepProgress *s = st->sweeps[i];
            json_t *js = json_object();
            json_object_set_new(js, "sweep_id", json_integer(s->sweep_id));
            json_object_set_new(js, "name", json_string(s->name));
            json_object_set_new(js, "total", json_integer(s->total));
            json_object_set_new(js, "pending", json_integer(s->pending));
            json_object_set_new(js, "running", json_integer(s->running));
            json_object_set_new(js, "succeeded", json_integer(s->succeeded));
            json_object_set_new(js, "failed", json_integer(s->failed));
            json_object_set_new(js, "timed_out", json_integer(s->timed_out));
            json_object_set_new(js, "cancelled", json_integer(s->cancelled));
            json_object_set_new(
                js, "finished",
                json_boolean(s->succeeded + s->failed + s->timed_out + s->cancelled == s->total));
            json_array_append_new(sweeps, js);
        }
        json_object_set_new(root, "sweeps", sweeps);
        char *s = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        printf("%s\n", s);
        free(s);
        json_decref(root);
    } else {
        printf("coordinator %s, pid %u, agents connect to %s (lost after %.1fs of silence)\n\n",
               st->version, st->pid, st->agent_endpoint, st->heartbeat_timeout_ms / 1000.0);
        printf("%-24s %-16s %-6s %-10s %-5s %-5s %s\n", "AGENT", "HOST", "STATE", "SEEN", "CPU",
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
            printf("%-24s %-16s %-6s %-10s %-5u %-5u %s\n", a->agent_id, a->hostname,
                   a->lost ? "LOST" : "ok", ago, a->cpu_slots, a->gpu_slots, dev);
        }
        if (st->n_agents == 0)
            printf("(no agent registered: start one with kfleet-agent --coordinator %s)\n",
                   st->agent_endpoint);
        printf("\n%-6s %-20s %-9s %-7s %-7s %-7s %-7s\n", "SWEEP", "NAME", "DONE", "FAILED",
               "RUNNING", "PENDING", "STATE");
        for (size_t i = 0; i < st->n_sweeps; i++) {
            const Kfleet__SweepProgress *s = st->sweeps[i];
            uint32_t done = s->succeeded + s->failed + s->timed_out + s->cancelled;
            char frac[32];
            snprintf(frac, sizeof frac, "%u/%u", done, s->total);
            printf("%-6u %-20s %-9s %-7u %-7u %-7u %-7s\n", s->sweep_id, s->name, frac,
                   s->failed + s->timed_out, s->running, s->pending,
                   done == s->total ? "done" : "running");
        }
        if (st->n_sweeps == 0)
            printf("(no sweep yet: kfleet submit FILE)\n");
    }
    kfleet__control_reply__free_unpacked(rep, NULL);
    return 0;
}

/* ---- report ---- */

static int parse_sweep_id(const char *s, uint32_t *id)
{
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    if (*s == '\0' || *end || v == 0 || v > UINT32_MAX)
        return -1;
    *id = (uint32_t)v;
    return 0;
}

static int cmd_report(int argc, char **argv, const char *home)
{
    kf_report_opts ro = {.fmt = KF_REPORT_TABLE};
    int fmt = KF_REPORT_TABLE, group;
    const char *out = NULL;
    static const struct option opts[] = {{"format", required_argument, 0, 'F'},
                                         {"output", required_argument, 0, 'o'},
                                         {"baseline", required_argument, 0, 'b'},
                                         {"group-by", required_argument, 0, 'g'},
                                         {"provenance", no_argument, 0, 'P'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int ch;
    for (;;) {
        if (next_opt("report", argc, argv, opts, &ch))
            return 2;
        if (ch == -1)
            break;
        switch (ch) {
        case 'F':
            if ((fmt = kf_report_parse_format(optarg)) < 0)
                return usage_error("report",
                                   "--format wants table, md, json, html or csv, got '%s'", optarg);
            break;
        case 'o':
            out = optarg;
            break;
        case 'b':
            ro.baseline = optarg;
            break;
        case 'g':
            if ((group = kf_report_parse_group(optarg)) < 0)
                return usage_error("report", "--group-by wants gpu, node or kernel, got '%s'",
                                   optarg);
            ro.group_by = (kf_report_group)group;
            break;
        case 'P':
            ro.provenance = 1;
            break;
        case 'h':
            print_cmd_help(stdout, find_cmd("report"));
            return 0;
        default:
            return usage_error("report", "unexpected option '%s'", argv[optind - 1]);
        }
    }
    uint32_t id = 0;
    int have_id = 0;
    if (optind < argc) {
        if (parse_sweep_id(argv[optind], &id))
            return usage_error("report", "a sweep id is a positive number, got '%s'", argv[optind]);
        have_id = 1;
        if (optind + 1 < argc)
            return usage_error("report", "unexpected argument '%s'", argv[optind + 1]);
    }
    kf_paths p;
    if (resolve(home, 0, &p))
        return 1;
    ro.fmt = (kf_report_format)fmt;
    return kf_cli_render_report(p.store, id, have_id, &ro, out);
}

/* ---- compare ---- */

static int cmd_compare(int argc, char **argv, const char *home)
{
    int json = 0;
    double threshold = 5;
    static const struct option opts[] = {{"format", required_argument, 0, 'F'},
                                         {"threshold", required_argument, 0, 't'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int ch;
    for (;;) {
        if (next_opt("compare", argc, argv, opts, &ch))
            return 2;
        if (ch == -1)
            break;
        char *end;
        switch (ch) {
        case 'F':
            if (strcmp(optarg, "table") != 0 && strcmp(optarg, "json") != 0)
                return usage_error("compare", "--format wants table or json, got '%s'", optarg);
            json = strcmp(optarg, "json") == 0;
            break;
        case 't':
            threshold = strtod(optarg, &end);
            if (end == optarg || (*end && strcmp(end, "%") != 0) || !(threshold >= 0) ||
                threshold > 1000)
                return usage_error("compare", "--threshold wants a percentage >= 0, got '%s'",
                                   optarg);
            break;
        case 'h':
            print_cmd_help(stdout, find_cmd("compare"));
            return 0;
        default:
            return usage_error("compare", "unexpected option '%s'", argv[optind - 1]);
        }
    }
    uint32_t ids[2];
    if (argc - optind != 2)
        return usage_error("compare", "wants two sweep ids, A (the reference) and B%s", "");
    for (int i = 0; i < 2; i++)
        if (parse_sweep_id(argv[optind + i], &ids[i]))
            return usage_error("compare", "a sweep id is a positive number, got '%s'",
                               argv[optind + i]);
    kf_paths p;
    if (resolve(home, 0, &p))
        return 1;
    kf_err err;
    kf_store *s = NULL;
    kf_txn *t = NULL;
    if (access(p.store, F_OK) != 0) {
        fprintf(stderr, "kfleet compare: no store at %s: nothing has run with this home yet\n",
                p.store);
        return 1;
    }
    if (kf_store_open(p.store, 1, &s, &err) != KF_OK || kf_store_begin(s, 1, &t, &err) != KF_OK) {
        fprintf(stderr, "kfleet compare: %s\n", err.msg);
        kf_store_close(&s);
        return 1;
    }
    kf_buf out = KF_BUF_INIT;
    kf_compare_result res;
    int rc = kf_compare_render(t, ids[0], ids[1], threshold, json, &out, &res, &err);
    kf_store_abort(&t);
    kf_store_close(&s);
    if (rc != KF_OK) {
        fprintf(stderr, "kfleet compare: %s\n", err.msg);
        kf_buf_release(&out);
        return rc == KF_ENOTFOUND ? 2 : 1;
    }
    fwrite(out.data, 1, out.len, stdout);
    kf_buf_release(&out);
    /* The gate: a regression beyond the threshold and the noise fails. */
    return res.regressions ? 1 : 0;
}

/* ---- cancel / stop ---- */

static int simple_call(const char *cmdname, const char *home, Kfleet__ControlRequest *req,
                       Kfleet__ControlReply **rep)
{
    kf_paths p;
    if (resolve(home, 0, &p))
        return 1;
    kf_err err;
    kf_client *c = NULL;
    if (kf_client_open(&p, &c, &err) != KF_OK) {
        fprintf(stderr, "kfleet %s: %s\n", cmdname, err.msg);
        return 1;
    }
    int rc = kf_client_call(c, req, 10000, rep, &err);
    kf_client_close(&c);
    if (rc) {
        fprintf(stderr, "kfleet %s: %s\n", cmdname, err.msg);
        return 1;
    }
    return 0;
}

static int no_args(const char *cmdname, int argc, char **argv, int want)
{
    static const struct option opts[] = {{"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int ch;
    for (;;) {
        if (next_opt(cmdname, argc, argv, opts, &ch))
            return 2;
        if (ch == -1)
            break;
        if (ch == 'h') {
            print_cmd_help(stdout, find_cmd(cmdname));
            return -1;
        }
        return usage_error(cmdname, "unexpected option '%s'", argv[optind - 1]);
    }
    if (argc - optind != want)
        return usage_error(cmdname, want ? "wants a sweep id%s" : "takes no argument%s", "");
    return 0;
}

static int cmd_cancel(int argc, char **argv, const char *home)
{
    int rc = no_args("cancel", argc, argv, 1);
    if (rc)
        return rc < 0 ? 0 : rc;
    uint32_t id;
    if (parse_sweep_id(argv[optind], &id))
        return usage_error("cancel", "a sweep id is a positive number, got '%s'", argv[optind]);
    Kfleet__ControlRequest req = KFLEET__CONTROL_REQUEST__INIT;
    req.body_case = KFLEET__CONTROL_REQUEST__BODY_CANCEL;
    req.cancel = id;
    Kfleet__ControlReply *rep = NULL;
    if ((rc = simple_call("cancel", home, &req, &rep)))
        return rc;
    printf("sweep %u cancelled: %u tasks had ended, the rest are cancelled\n", id,
           rep->progress
               ? rep->progress->succeeded + rep->progress->failed + rep->progress->timed_out
               : 0);
    kfleet__control_reply__free_unpacked(rep, NULL);
    return 0;
}

static int cmd_stop(int argc, char **argv, const char *home)
{
    int rc = no_args("stop", argc, argv, 0);
    if (rc)
        return rc < 0 ? 0 : rc;
    Kfleet__ControlRequest req = KFLEET__CONTROL_REQUEST__INIT;
    req.body_case = KFLEET__CONTROL_REQUEST__BODY_SHUTDOWN;
    req.shutdown = 1;
    Kfleet__ControlReply *rep = NULL;
    if ((rc = simple_call("stop", home, &req, &rep)))
        return rc;
    kfleet__control_reply__free_unpacked(rep, NULL);
    printf("coordinator stopping\n");
    return 0;
}

static int cmd_version(int argc, char **argv, const char *home)
{
    (void)home;
    int rc = no_args("version", argc, argv, 0);
    if (rc)
        return rc < 0 ? 0 : rc;
    printf("kfleet %s (protocol %d, store schema %d)\n", KF_VERSION, 1, KF_STORE_SCHEMA);
    return 0;
}

static int cmd_verify(int argc, char **argv, const char *home)
{
    int json = 0;
    static const struct option opts[] = {
        {"format", required_argument, 0, 'F'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int ch;
    for (;;) {
        if (next_opt("verify", argc, argv, opts, &ch))
            return 2;
        if (ch == -1)
            break;
        switch (ch) {
        case 'F':
            if (strcmp(optarg, "json") == 0)
                json = 1;
            else if (strcmp(optarg, "table") != 0)
                return usage_error("verify", "--format wants table or json, got '%s'", optarg);
            break;
        case 'h':
            print_cmd_help(stdout, find_cmd("verify"));
            return 0;
        default:
            return usage_error("verify", "unexpected option '%s'", argv[optind - 1]);
        }
    }
    uint32_t id = 0;
    int have_id = 0;
    if (optind < argc) {
        if (parse_sweep_id(argv[optind], &id))
            return usage_error("verify", "a sweep id is a positive number, got '%s'", argv[optind]);
        have_id = 1;
    }
    kf_paths p;
    if (resolve(home, 0, &p))
        return 1;
    kf_err err;
    kf_store *s = NULL;
    if (access(p.store, F_OK) != 0 || kf_store_open(p.store, 1, &s, &err) != KF_OK) {
        fprintf(stderr, "kfleet verify: no readable store at %s\n", p.store);
        return 1;
    }
    kf_txn *t = NULL;
    int rc = kf_store_begin(s, 1, &t, &err);
    if (rc == KF_OK && !have_id)
        rc = kf_store_latest_sweep_id(t, &id);
    kf_verify_summary sum;
    kf_buf problems = KF_BUF_INIT;
    if (rc == KF_OK)
        rc = kf_verify_sweep(t, id, &sum, &problems);
    kf_store_abort(&t);
    kf_store_close(&s);
    if (rc) {
        fprintf(stderr, "kfleet verify: cannot read sweep %u: %s\n", id, kf_strerror(rc));
        kf_buf_release(&problems);
        return 1;
    }
    if (json) {
        printf("{\"schema\": \"kfleet.verify/1\", \"sweep_id\": %u, \"tasks\": %u, "
               "\"terminal\": %u, \"terminal_records\": %u, \"succeeded\": %u, \"failed\": %u, "
               "\"timed_out\": %u, \"cancelled\": %u, \"profiles\": %u, \"samples\": %u, "
               "\"attempts\": %u, \"requeued\": %u, \"late_results\": %u, \"violations\": %u}\n",
               id, sum.tasks, sum.terminal, sum.results, sum.succeeded, sum.failed, sum.timed_out,
               sum.cancelled, sum.profiles, sum.samples, sum.attempts, sum.requeued, sum.late,
               sum.violations);
    } else {
        printf("sweep %u: %u tasks, %u ended, %u terminal records (%u succeeded, %u failed, %u "
               "timed out, %u cancelled)\n"
               "  %u successful profiles with %u samples; %u attempts, %u requeued, %u late "
               "results kept\n"
               "  violations: %u\n",
               id, sum.tasks, sum.terminal, sum.results, sum.succeeded, sum.failed, sum.timed_out,
               sum.cancelled, sum.profiles, sum.samples, sum.attempts, sum.requeued, sum.late,
               sum.violations);
    }
    if (problems.len)
        fputs(problems.data, stderr);
    kf_buf_release(&problems);
    return sum.violations ? 1 : 0;
}

static int cmd_run(int argc, char **argv, const char *home)
{
    kf_run_options o = {0};
    int fmt = KF_REPORT_TABLE;
    static const struct option opts[] = {{"agents", required_argument, 0, 'a'},
                                         {"format", required_argument, 0, 'F'},
                                         {"output", required_argument, 0, 'o'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int ch;
    for (;;) {
        if (next_opt("run", argc, argv, opts, &ch))
            return 2;
        if (ch == -1)
            break;
        switch (ch) {
        case 'a': {
            char *end;
            long n = strtol(optarg, &end, 10);
            if (*end || n < 1 || n > 64)
                return usage_error("run", "--agents wants a number from 1 to 64, got '%s'", optarg);
            o.agents = (int)n;
            break;
        }
        case 'F':
            if ((fmt = kf_report_parse_format(optarg)) < 0)
                return usage_error("run", "--format wants table, md, json, html or csv, got '%s'",
                                   optarg);
            break;
        case 'o':
            o.output = optarg;
            break;
        case 'h':
            print_cmd_help(stdout, find_cmd("run"));
            return 0;
        default:
            return usage_error("run", "unexpected option '%s'", argv[optind - 1]);
        }
    }
    if (optind != argc - 1)
        return usage_error("run", "wants exactly one sweep file%s", "");
    o.format = fmt;
    kf_sweep_spec *spec = NULL;
    char kdir[PATH_MAX];
    int rc = parse_sweep("run", argv[optind], &spec, kdir, sizeof kdir);
    if (rc)
        return rc;
    kf_paths p;
    if (resolve(home, 1, &p)) {
        kf_sweep_destroy(&spec);
        return 1;
    }
    install_signals();
    o.kernels_dir = kdir;
    rc = kf_run(&p, spec, &o, &g_stop);
    kf_sweep_destroy(&spec);
    return rc;
}

static const cmd cmds[] = {
    {"run", cmd_run,
     "Runs a sweep on this machine, start to end: an embedded coordinator and local agents\n"
     "(one per GPU, or CPU agents where there is none), progress while it runs, then the\n"
     "report. Nothing is left running. Exit 1 if any task failed.\n\n"
     "  --agents N        local agents to start (default: one per GPU, else 2)\n"
     "  --format FMT      report format: table, md, json, html or csv (default table)\n"
     "  -o, --output FILE write the report to FILE instead of stdout",
     "run SWEEP.yaml [--agents N] [--format table|md|json|html|csv] [-o FILE]"},
    {"serve", cmd_serve,
     "Runs the coordinator daemon: agents connect to its ROUTER socket, the CLI to its\n"
     "control socket under the home's run directory. Stops on SIGINT/SIGTERM or `kfleet stop`.\n\n"
     "  --bind ENDPOINT           where agents connect (default tcp://127.0.0.1:*, a free port;\n"
     "                            the chosen endpoint is printed and kept in RUN/agent-endpoint)\n"
     "  --heartbeat-interval DUR  how often agents heartbeat (default 1s)\n"
     "  --heartbeat-timeout DUR   silence after which an agent is lost and its tasks\n"
     "                            requeued (default 10s)",
     "serve [--bind ENDPOINT] [--heartbeat-interval DUR] [--heartbeat-timeout DUR]"},
    {"submit", cmd_submit,
     "Submits a sweep file to the running coordinator and prints its id. A sweep file error\n"
     "is reported as FILE:LINE:COL and nothing is submitted.\n\n"
     "  --follow       show progress until the sweep ends (Ctrl-C detaches; the sweep goes on);\n"
     "                 exit 1 if any task failed\n"
     "  --format FMT   table or json (the submission receipt)",
     "submit SWEEP.yaml [--follow] [--format table|json]"},
    {"status", cmd_status,
     "Lists the coordinator's agents (state, last heartbeat, slots, devices) and recent sweeps.\n\n"
     "  --format FMT   table or json",
     "status [--format table|json]"},
    {"report", cmd_report,
     "Prints the report of a sweep (the latest when no id is given), read from the store:\n"
     "works whether or not a coordinator is running.\n\n"
     "  --format FMT       table, md, json (schema in docs/report-json.md), html (one\n"
     "                     self-contained page with charts) or csv\n"
     "  -o, --output FILE  write to FILE instead of stdout\n"
     "  --baseline KERNEL  compare against this kernel of the sweep instead of its own\n"
     "                     baseline (speedup per matching configuration and node)\n"
     "  --group-by KEY     order rows by gpu, node or kernel (the default)\n"
     "  --provenance       table, md, csv: each row's node, GPU UUID, driver, clocks seen,\n"
     "                     compiler, source and binary hashes (JSON always has them)",
     "report [SWEEP_ID] [--format table|md|json|html|csv] [-o FILE] [--baseline KERNEL]\n"
     "       [--group-by gpu|node|kernel] [--provenance]"},
    {"compare", cmd_compare,
     "Compares sweep B with sweep A (the reference), configuration by configuration (same\n"
     "kernel and parameters; same node, else same device): the change of the median and\n"
     "whether it exceeds the two profiles' combined noise. Exit 1 when a configuration got\n"
     "slower beyond the noise and the threshold, so it gates CI; exit 0 otherwise.\n\n"
     "  --threshold PCT  a slowdown must exceed this to count as a regression (default 5)\n"
     "  --format FMT     table or json (schema kfleet.compare/1)",
     "compare SWEEP_A SWEEP_B [--threshold PCT] [--format table|json]"},
    {"cancel", cmd_cancel,
     "Cancels a running sweep: pending tasks end as cancelled, running ones are stopped.",
     "cancel SWEEP_ID"},
    {"stop", cmd_stop, "Stops the running coordinator (its agents keep their outboxes).", "stop"},
    {"verify", cmd_verify,
     "Checks a sweep's records in the store (the latest when no id is given): every task\n"
     "ended in exactly one terminal record, every successful profile has all its samples\n"
     "stored once with contiguous sequence numbers. Exit 1 on any violation.\n\n"
     "  --format FMT   table or json",
     "verify [SWEEP_ID] [--format table|json]"},
    {"init", kf_cmd_init,
     "Makes the home and the coordinator's Curve key pair (kept when they exist) and prints\n"
     "the public key agents connect with (kfleet-agent --server-key KEY). `kfleet serve`\n"
     "and `kfleet run` do this on their first start too.",
     "init"},
    {"agent-key", kf_cmd_agent_key,
     "The agent keys the coordinator accepts. The agent link is CurveZMQ: an agent whose key\n"
     "is not listed is refused at the handshake and logged with its key and address.\n\n"
     "  add KEY NAME   accept KEY (Z85, or a file holding it) under NAME\n"
     "  list           the accepted keys (--format json)\n"
     "  revoke WHICH   remove by name or key; a running coordinator drops the agent's\n"
     "                 messages at once and requeues its tasks",
     "agent-key add KEY NAME | list [--format table|json] | revoke NAME|KEY"},
    {"launch", cmd_launch, kf_cmd_launch_summary, kf_cmd_launch_usage},
    {"teardown", cmd_teardown, kf_cmd_teardown_summary, kf_cmd_teardown_usage},
    {"bundle", cmd_bundle, kf_cmd_bundle_summary, kf_cmd_bundle_usage},
    {"version", cmd_version, "Prints kfleet's version.", "version"},
};

static const cmd *find_cmd(const char *name)
{
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++)
        if (strcmp(cmds[i].name, name) == 0)
            return &cmds[i];
    return NULL;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: kfleet [--home DIR] [--log-level LEVEL] COMMAND [ARGS]\n\n"
               "kfleet builds, validates and profiles kernels on a fleet of agents.\n\n"
               "commands:\n");
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++)
        fprintf(f, "  %-40s\n", cmds[i].usage);
    fprintf(f, "\nglobal options:\n"
               "  --home DIR         keep config, state and sockets under DIR (also KFLEET_HOME);\n"
               "                     default ~/.config/kfleet, ~/.local/share/kfleet, "
               "$XDG_RUNTIME_DIR/kfleet\n"
               "  --log-level LEVEL  debug|info|warn|error (default info; logs go to stderr)\n"
               "  -h, --help         this help; `kfleet COMMAND --help` for a command's\n");
}

int main(int argc, char **argv)
{
    const char *home = NULL, *level = NULL;
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--home") == 0 && i + 1 < argc) {
            home = argv[++i];
        } else if (strncmp(argv[i], "--home=", 7) == 0) {
            home = argv[i] + 7;
        } else if (strcmp(argv[i], "--log-level") == 0 && i + 1 < argc) {
            level = argv[++i];
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--version") == 0) {
            printf("kfleet %s\n", KF_VERSION);
            return 0;
        } else {
            fprintf(stderr, "kfleet: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    /* `kfleet run` prints progress and a report: the embedded coordinator's
     * routine events would drown them, so it logs warnings only unless asked. */
    int quiet = i < argc && strcmp(argv[i], "run") == 0;
    int lv = kf_log_parse_level(level ? level : quiet ? "warn" : "info");
    if (lv < 0) {
        fprintf(stderr, "kfleet: unknown --log-level '%s' (debug|info|warn|error)\n", level);
        return 2;
    }
    kf_log_setup("kfleet", (kf_log_level)lv);
    if (i >= argc) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[i], "help") == 0) {
        if (i + 1 < argc) {
            const cmd *c = find_cmd(argv[i + 1]);
            if (!c) {
                fprintf(stderr, "kfleet: unknown command '%s'\n", argv[i + 1]);
                return 2;
            }
            print_cmd_help(stdout, c);
            return 0;
        }
        usage(stdout);
        return 0;
    }
    const cmd *c = find_cmd(argv[i]);
    if (!c) {
        fprintf(stderr, "kfleet: unknown command '%s'\n", argv[i]);
        usage(stderr);
        return 2;
    }
    /* The command sees argv from its own name on. */
    optind = 1;
    return c->fn(argc - i, argv + i, home);
}

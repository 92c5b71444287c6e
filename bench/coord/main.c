/* kfbench — the coordinator benchmarks' one program; bench/coord/run.sh
 * starts the servers it measures and calls it once per figure.
 *
 *   kfbench dispatch  --home H [--agents N] [--tasks T] [--runs R] [--slots S]
 *   kfbench latency   --home H [--iterations K]
 *   kfbench ingest    --home H [--agents N] [--samples S] [--batch B] [--window W]
 *   kfbench scale     --home H [--agents N] [--tasks T] [--task-ms MS] [--idle S]
 *   kfbench zmq       [--seconds S]
 *   kfbench lmdb      --dir D [--batch B] [--seconds S]
 *   kfbench open      --home H [--runs R]
 *   kfbench beanstalk --port P [--tasks T] [--workers W] [--runs R] [--label L]
 *   kfbench gearman   --port P [--tasks T] [--workers W] [--runs R] [--label L] */
#include "coordbench.h"
#include "common/log.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    int (*fn)(const kfb_opts *, kf_err *);
} cmds[] = {
    {"dispatch", kfb_dispatch},   {"latency", kfb_latency}, {"ingest", kfb_ingest},
    {"scale", kfb_scale},         {"zmq", kfb_zmq},         {"lmdb", kfb_lmdb},
    {"beanstalk", kfb_beanstalk}, {"gearman", kfb_gearman}, {"open", kfb_open},
};

static int usage(FILE *f)
{
    fprintf(f, "usage: kfbench dispatch|latency|ingest|scale|zmq|lmdb|open|beanstalk|gearman "
               "[options]\n"
               "  --home DIR      the `kfleet serve --home DIR` under test\n"
               "  --agents N      emulated agents (dispatch 8, ingest 4, scale 1000)\n"
               "  --slots N       CPU slots each agent announces (1)\n"
               "  --tasks N       tasks of a sweep, or jobs of a peer run (10000)\n"
               "  --runs N        runs whose median is reported (5); open: opens timed\n"
               "  --iterations N  latency: tasks one at a time (1000)\n"
               "  --samples N     ingest: samples in all (2000000)\n"
               "  --batch N       ingest: samples a batch; lmdb: puts a transaction (1000)\n"
               "  --window N      ingest: batches unacked per agent (8)\n"
               "  --task-ms N     scale: how long each task runs (250)\n"
               "  --idle S        scale: seconds of heartbeats only (10)\n"
               "  --workers N     peers: worker connections (8)\n"
               "  --port N        peers: the server's port\n"
               "  --label L       peers: the name of the setting in the table\n"
               "  --dir D         lmdb: a scratch directory\n"
               "  --seconds S     zmq, lmdb: how long to measure (2)\n");
    return 2;
}

static int number(const char *opt, const char *s, unsigned long long *out)
{
    char *end;
    *out = strtoull(s, &end, 10);
    if (*s == '\0' || *end != '\0') {
        fprintf(stderr, "kfbench: %s wants a whole number, got '%s'\n", opt, s);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0)
        return usage(argc < 2 ? stderr : stdout);
    int (*fn)(const kfb_opts *, kf_err *) = NULL;
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++)
        if (strcmp(argv[1], cmds[i].name) == 0)
            fn = cmds[i].fn;
    if (!fn) {
        fprintf(stderr, "kfbench: unknown benchmark '%s'\n", argv[1]);
        return usage(stderr);
    }
    kfb_opts o = {0};
    o.agents = strcmp(argv[1], "scale") == 0 ? 1000 : strcmp(argv[1], "ingest") == 0 ? 4 : 8;
    o.tasks = 10000;
    o.runs = 5;
    o.iterations = 1000;
    o.samples = 2000000;
    o.batch = 1000;
    o.window = 8;
    o.task_ms = 250;
    o.idle_s = 10;
    o.workers = 8;
    o.seconds = 2;
    static const struct option opts[] = {
        {"home", required_argument, 0, 'H'},    {"agents", required_argument, 0, 'a'},
        {"slots", required_argument, 0, 's'},   {"tasks", required_argument, 0, 't'},
        {"runs", required_argument, 0, 'r'},    {"iterations", required_argument, 0, 'i'},
        {"samples", required_argument, 0, 'S'}, {"batch", required_argument, 0, 'b'},
        {"window", required_argument, 0, 'w'},  {"task-ms", required_argument, 0, 'm'},
        {"idle", required_argument, 0, 'I'},    {"workers", required_argument, 0, 'W'},
        {"port", required_argument, 0, 'p'},    {"label", required_argument, 0, 'l'},
        {"dir", required_argument, 0, 'd'},     {"seconds", required_argument, 0, 'x'},
        {"help", no_argument, 0, 'h'},          {0, 0, 0, 0}};
    int ch;
    optind = 2;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        unsigned long long v = 0;
        if (ch != 'H' && ch != 'l' && ch != 'd' && ch != 'h' && ch != '?' &&
            number(argv[optind - 1], optarg, &v))
            return 2;
        switch (ch) {
        case 'H':
            o.home = optarg;
            break;
        case 'a':
            o.agents = (unsigned)v;
            break;
        case 's':
            o.slots = (unsigned)v;
            break;
        case 't':
            o.tasks = (unsigned)v;
            break;
        case 'r':
            o.runs = (unsigned)v;
            break;
        case 'i':
            o.iterations = (unsigned)v;
            break;
        case 'S':
            o.samples = v;
            break;
        case 'b':
            o.batch = (unsigned)v;
            break;
        case 'w':
            o.window = (unsigned)v;
            break;
        case 'm':
            o.task_ms = (unsigned)v;
            break;
        case 'I':
            o.idle_s = (double)v;
            break;
        case 'W':
            o.workers = (unsigned)v;
            break;
        case 'p':
            o.port = (int)v;
            break;
        case 'l':
            o.label = optarg;
            break;
        case 'd':
            o.dir = optarg;
            break;
        case 'x':
            o.seconds = (double)v;
            break;
        case 'h':
            return usage(stdout) == 2 ? 0 : 0;
        default:
            return usage(stderr);
        }
    }
    if (optind < argc) {
        fprintf(stderr, "kfbench: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (!o.agents || !o.tasks || !o.runs || !o.iterations || !o.batch || !o.workers) {
        fprintf(stderr, "kfbench: counts must be at least 1\n");
        return 2;
    }
    kf_log_setup("kfbench", KF_LOG_WARN);
    kf_err err;
    kf_err_clear(&err);
    int rc = fn(&o, &err);
    if (rc) {
        fprintf(stderr, "kfbench %s: %s\n", argv[1], err.msg[0] ? err.msg : kf_strerror(rc));
        return 1;
    }
    return 0;
}

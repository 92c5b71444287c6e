/* test_fleet_slurm — the `slurm:` block of an inventory host: every key
 * read into the job's shape, the defaults (one node, SIGTERM 300 s before
 * the limit, or a quarter of a short limit), Slurm's time formats, sbatch
 * options that would take kfleet's own refused in every spelling sbatch's
 * getopt_long accepts (abbreviated, grouped, attached or separate value),
 * items sbatch would read as something else refused, and each
 * bad value a KF_EINVAL located at "f.yaml:LINE:COL: ". The seed files
 * (tests/data/fleets/good_slurm.yaml, bad_slurm_*.yaml) are checked by
 * test_fleet. */
#include "fleet/fleet.h"
#include "fleet/fleet_pb.h"
#include "fleet/fleet_slurm.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const kf_fleet_opts opts = {.ssh_config = "/nonexistent", .home = "/home/u"};

static kf_fleet *parse_ok(const char *yaml)
{
    kf_fleet *fl = NULL;
    kf_err err = {0};
    if (kf_fleet_parse_opts("f.yaml", yaml, strlen(yaml), &opts, &fl, &err))
        fail_msg("unexpected error: %s\n--- input:\n%s", err.msg, yaml);
    return fl;
}

static void parse_bad(const char *slurm_block, const char *lc, const char *has)
{
    char yaml[2048];
    snprintf(yaml, sizeof yaml, "hosts:\n  - name: lab\n    provider: slurm\n    host: login\n%s",
             slurm_block);
    kf_fleet *fl = NULL;
    kf_err err = {0};
    int rc = kf_fleet_parse_opts("f.yaml", yaml, strlen(yaml), &opts, &fl, &err);
    char want[64];
    snprintf(want, sizeof want, "f.yaml:%s: ", lc);
    if (rc != KF_EINVAL || strncmp(err.msg, want, strlen(want)) != 0 || !strstr(err.msg, has))
        fail_msg("want KF_EINVAL '%s...%s', got %d '%s'\n--- input:\n%s", want, has, rc, err.msg,
                 yaml);
    assert_null(fl);
}

/* A host with every key of the block. */
static const char every_key[] = "hosts:\n"
                                "  - name: lab\n"
                                "    provider: slurm\n"
                                "    host: login.example\n"
                                "    workdir: /shared/me/kf\n"
                                "    slurm:\n"
                                "      nodes: 16\n"
                                "      partition: gpu-h100\n"
                                "      gres: \"gpu:h100:8\"\n"
                                "      time: \"2-12:30:00\"\n"
                                "      account: lab_42\n"
                                "      sbatch: [\"--qos=high\", \"-Cnvlink\", \"--exclusive\"]\n"
                                "      relay_host: login1-ib.example\n"
                                "      signal_before: 900\n";

static void test_every_key(void **state)
{
    (void)state;
    kf_fleet *fl = parse_ok(every_key);
    const kf_fleet_host *h = kf_fleet_find(fl, "lab");
    assert_non_null(h);
    assert_non_null(kf_fleet_slurm_of(h));
    const kf_fleet_slurm *s = kf_fleet_slurm_of(h);
    assert_int_equal(s->nodes, 16);
    assert_string_equal(s->partition, "gpu-h100");
    assert_string_equal(s->gres, "gpu:h100:8");
    assert_string_equal(s->time, "2-12:30:00");
    assert_int_equal(s->time_s, 2 * 86400 + 12 * 3600 + 30 * 60);
    assert_string_equal(s->account, "lab_42");
    assert_int_equal(s->nsbatch, 3);
    assert_string_equal(s->sbatch[0], "--qos=high");
    assert_string_equal(s->sbatch[1], "-Cnvlink");
    assert_string_equal(s->sbatch[2], "--exclusive");
    assert_string_equal(s->relay_host, "login1-ib.example");
    assert_int_equal(s->signal_before_s, 900);

    /* A deep copy outlives its fleet (the daemon's watch keeps one). */
    kf_fleet_host copy;
    kf_fleet_host_copy(&copy, h);

    kf_fleet_slurm *d = kf_fleet_slurm_dup(s);
    assert_ptr_not_equal(d->partition, s->partition);
    assert_string_equal(d->sbatch[2], "--exclusive");
    assert_int_equal(d->time_s, s->time_s);
    kf_fleet_slurm_free(&d);
    assert_null(d);
    kf_fleet_slurm_free(&d);
    kf_fleet_destroy(&fl);
    assert_string_equal(copy.name, "lab");
    assert_string_equal(copy.workdir, "/shared/me/kf");
    assert_string_equal(kf_fleet_slurm_of(&copy)->gres, "gpu:h100:8");
    assert_string_equal(kf_fleet_slurm_of(&copy)->sbatch[2], "--exclusive");
    kf_fleet_host_release(&copy);
}

/* The block crosses to the daemon (a launch request) as LaunchHost.block,
 * bytes only the row reads: every key comes back as it went; bytes that
 * do not decode and a shape out of range are refused, not guessed. */
static void test_to_the_daemon(void **state)
{
    (void)state;
    kf_fleet *fl = parse_ok(every_key);
    Kfleet__LaunchHost x;
    kf_fleet_host_to_pb(kf_fleet_find(fl, "lab"), &x);
    assert_true(x.block.len > 0);
    /* Through the wire, as the daemon gets it. */
    size_t n = kfleet__launch_host__get_packed_size(&x);
    uint8_t *wire = malloc(n);
    kfleet__launch_host__pack(&x, wire);
    Kfleet__LaunchHost *y = kfleet__launch_host__unpack(NULL, n, wire);
    assert_non_null(y);
    kf_fleet_host back;
    memset(&back, 0, sizeof back);
    kf_err err = {0};
    assert_int_equal(kf_fleet_host_from_pb(y, &back, &err), KF_OK);
    const kf_fleet_slurm *s = kf_fleet_slurm_of(&back);
    assert_non_null(s);
    assert_int_equal(s->nodes, 16);
    assert_string_equal(s->partition, "gpu-h100");
    assert_string_equal(s->gres, "gpu:h100:8");
    assert_string_equal(s->time, "2-12:30:00");
    assert_string_equal(s->account, "lab_42");
    assert_int_equal(s->nsbatch, 3);
    assert_string_equal(s->sbatch[2], "--exclusive");
    assert_string_equal(s->relay_host, "login1-ib.example");
    assert_int_equal(s->signal_before_s, 900);
    kf_fleet_host_release(&back);

    /* Bytes that are not the row's message. */
    ProtobufCBinaryData kept = y->block;
    y->block.data = (uint8_t *)"\xff\xff";
    y->block.len = 2;
    memset(&back, 0, sizeof back);
    assert_int_equal(kf_fleet_host_from_pb(y, &back, &err), KF_EINVAL);
    assert_non_null(strstr(err.msg, "does not decode"));
    kf_fleet_host_release(&back);
    /* A shape out of range: field 1 (nodes) 0x7fffffff. */
    y->block.data = (uint8_t *)"\x08\xff\xff\xff\xff\x07";
    y->block.len = 6;
    memset(&back, 0, sizeof back);
    assert_int_equal(kf_fleet_host_from_pb(y, &back, &err), KF_EINVAL);
    assert_non_null(strstr(err.msg, "out of range"));
    kf_fleet_host_release(&back);
    y->block = kept;

    kfleet__launch_host__free_unpacked(y, NULL);
    free(wire);
    kf_fleet_host_pb_release(&x);
    kf_fleet_destroy(&fl);
}

static void test_defaults(void **state)
{
    (void)state;
    kf_fleet *fl = parse_ok("hosts:\n"
                            "  - name: plain\n    provider: slurm\n    host: login\n"
                            "  - name: short\n    provider: slurm\n    host: login\n"
                            "    slurm: {time: \"8:00\"}\n"
                            "  - name: tiny\n    provider: slurm\n    host: login\n"
                            "    slurm: {time: \"0:30\"}\n"
                            "  - name: pod\n    host: 203.0.113.9\n");
    const kf_fleet_slurm *s = kf_fleet_slurm_of(kf_fleet_find(fl, "plain"));
    assert_non_null(s); /* provider: slurm without a block: one node, the cluster's defaults */
    assert_int_equal(s->nodes, 1);
    assert_null(s->partition);
    assert_null(s->gres);
    assert_null(s->time);
    assert_int_equal(s->time_s, 0);
    assert_null(s->relay_host);
    assert_int_equal(s->nsbatch, 0);
    assert_int_equal(s->signal_before_s, 300);
    /* 8 minutes: drain at a quarter of the limit, not 5 of its 8 minutes. */
    assert_int_equal(kf_fleet_slurm_of(kf_fleet_find(fl, "short"))->signal_before_s, 120);
    /* 30 s: never less than 10 s of warning. */
    assert_int_equal(kf_fleet_slurm_of(kf_fleet_find(fl, "tiny"))->signal_before_s, 10);
    assert_null(kf_fleet_slurm_of(kf_fleet_find(fl, "pod")));
    kf_fleet_destroy(&fl);
}

static void test_seconds(void **state)
{
    (void)state;
    assert_int_equal(kf_fleet_slurm_seconds("30"), 30 * 60);
    assert_int_equal(kf_fleet_slurm_seconds("30:15"), 30 * 60 + 15);
    assert_int_equal(kf_fleet_slurm_seconds("4:00:00"), 4 * 3600);
    assert_int_equal(kf_fleet_slurm_seconds("1-0"), 86400);
    assert_int_equal(kf_fleet_slurm_seconds("2-3:04"), 2 * 86400 + 3 * 3600 + 4 * 60);
    assert_int_equal(kf_fleet_slurm_seconds("2-3:04:05"), 2 * 86400 + 3 * 3600 + 4 * 60 + 5);
    assert_int_equal(kf_fleet_slurm_seconds("UNLIMITED"), 0);
    assert_int_equal(kf_fleet_slurm_seconds("infinite"), 0);
    const char *bad[] = {"",    "4h",  "1:2:3:4", "-5",       "1-",  "x-1",
                         ":30", "30:", "1--2",    "99999999", "1 0", NULL};
    for (size_t i = 0; bad[i]; i++)
        if (kf_fleet_slurm_seconds(bad[i]) != -1)
            fail_msg("'%s' read as %ld s, want -1", bad[i], kf_fleet_slurm_seconds(bad[i]));
}

static void test_errors(void **state)
{
    (void)state;
    parse_bad("    slurm: [gpu]\n", "5:12", "slurm must be a mapping");
    parse_bad("    slurm:\n      nodse: 2\n", "6:7", "nodse");
    parse_bad("    slurm:\n      nodes: 1025\n", "6:14", "from 1 to 1024");
    parse_bad("    slurm:\n      nodes: two\n", "6:14", "whole number");
    parse_bad("    slurm:\n      partition: \"gpu q\"\n", "6:18", "is not a Slurm partition");
    parse_bad("    slurm:\n      partition: --all\n", "6:18", "is not a Slurm partition");
    parse_bad("    slurm:\n      gres: \"gpu:8;reboot\"\n", "6:13", "is not a Slurm gres");
    parse_bad("    slurm:\n      account: \"$(id)\"\n", "6:16", "is not a Slurm account");
    parse_bad("    slurm:\n      time: \"4h\"\n", "6:13", "is not a Slurm time limit");
    parse_bad("    slurm:\n      time: \"10\"\n      signal_before: 600\n", "7:22",
              "not shorter than the job's time");
    parse_bad("    slurm:\n      signal_before: 5\n", "6:22", "from 10 to 65535");
    parse_bad("    slurm:\n      sbatch: \"--qos=high\"\n", "6:15", "must be a list");
    parse_bad("    slurm:\n      sbatch: [qos=high]\n", "6:16", "does not start with '-'");
    /* A bare word is only ever the value of the option before it. */
    parse_bad("    slurm:\n      sbatch: [\"-v\", nvlink]\n", "6:22", "does not start with '-'");
    /* Options that would replace kfleet's own: its job names, outputs, signal. */
    const char *owned[] = {"-J",
                           "--job-name=x",
                           "-ox.out",
                           "--output=x",
                           "--error",
                           "-N2",
                           "--nodes=2",
                           "--signal=B:USR1@60",
                           "--parsable",
                           "-pgpu",
                           "--partition=gpu",
                           "--gres=gpu:1",
                           "-t10",
                           "--time=10",
                           "-Alab",
                           "--account=lab",
                           "-a1-4",
                           "--array=1-4",
                           "--wrap=ls",
                           "-D/tmp",
                           "--chdir=/tmp",
                           NULL};
    for (size_t i = 0; owned[i]; i++) {
        char block[256];
        snprintf(block, sizeof block, "    slurm:\n      sbatch: [\"%s\"]\n", owned[i]);
        parse_bad(block, "6:16", "is one kfleet sets itself");
    }
    /* Near misses of owned options are the user's to give. */
    kf_fleet *fl =
        parse_ok("hosts:\n  - name: lab\n    provider: slurm\n    host: login\n"
                 "    slurm:\n      sbatch: [\"--exclusive\", \"--nodelist=c1\", "
                 "\"--time-min=10\", \"--export=ALL\", \"--gres-flags=enforce-binding\"]\n");
    assert_int_equal(kf_fleet_slurm_of(kf_fleet_find(fl, "lab"))->nsbatch, 5);
    kf_fleet_destroy(&fl);
}

/* The sbatch list of a host, as an inventory: `items` is the YAML list. */
static void sbatch_bad(const char *items, const char *col, const char *has)
{
    char block[512], lc[16];
    snprintf(block, sizeof block, "    slurm:\n      sbatch: %s\n", items);
    snprintf(lc, sizeof lc, "6:%s", col);
    parse_bad(block, lc, has);
}

/* Every option kfleet owns, refused in every spelling sbatch's getopt_long
 * accepts, naming the option: the long name and every abbreviation from
 * the shortest that sbatch reads as it (shorter ones are ambiguous, or
 * another owned option: refused as well), with '=' or a separate value;
 * the short letter alone, with an attached value, grouped after other
 * letters, with the value attached or as the next item. */
static void test_owned_every_spelling(void **state)
{
    (void)state;
    static const struct {
        const char *name, *unique; /* the shortest prefix sbatch reads as it */
        char letter;
        int takes_value;
    } owned[] = {
        {"account", "acc", 'A', 1},
        {"array", "ar", 'a', 1},
        {"chdir", "ch", 'D', 1},
        {"cluster", "cluster", 0, 1},
        {"clusters", "clusters", 'M', 1},
        {"error", "er", 'e', 1},
        {"gres", "gres", 0, 1},
        {"job-name", "j", 'J', 1},
        {"nodes", "nodes", 'N', 1},
        {"output", "ou", 'o', 1},
        {"parsable", "pars", 0, 0},
        {"partition", "part", 'p', 1},
        {"signal", "si", 0, 1},
        {"time", "time", 't', 1},
        {"wrap", "wr", 0, 1},
    };
    size_t tried = 0;
    for (size_t k = 0; k < sizeof owned / sizeof *owned; k++) {
        const char *nm = owned[k].name;
        char full[64], items[256];
        if (owned[k].letter)
            snprintf(full, sizeof full, "is --%s (-%c), which", nm, owned[k].letter);
        else
            snprintf(full, sizeof full, "is --%s, which", nm);
        for (size_t len = 1; len <= strlen(nm); len++) {
            const char *has = len >= strlen(owned[k].unique) ? full : "kfleet sets itself";
            if (owned[k].takes_value) {
                snprintf(items, sizeof items, "[\"--%.*s=X\"]", (int)len, nm);
                sbatch_bad(items, "16", has);
                snprintf(items, sizeof items, "[\"--qos=a\", \"--%.*s\", \"X\"]", (int)len, nm);
                sbatch_bad(items, "27", has);
            } else {
                snprintf(items, sizeof items, "[\"--%.*s\"]", (int)len, nm);
                sbatch_bad(items, "16", has);
            }
            tried += 2;
        }
        if (!owned[k].letter)
            continue;
        char c = owned[k].letter;
        const char *spellings[] = {"[\"-%c\", \"X\"]", "[\"-%cX\"]", "[\"-v%cX\"]",
                                   "[\"-vQ%c\", \"X\"]", "[\"-Qv%c=X\"]"};
        for (size_t i = 0; i < sizeof spellings / sizeof *spellings; i++) {
            snprintf(items, sizeof items, spellings[i], c);
            sbatch_bad(items, "16", full);
            tried++;
        }
    }
    /* The issue's spellings, one by one. */
    const char *issue[][2] = {
        {"--jo=X", "--job-name"},  {"--out=x", "--output"},        {"--arr=1-4", "--array"},
        {"--chd=/tmp", "--chdir"}, {"--sig=B:USR1@9", "--signal"}, {"--part=gpu", "--partition"},
        {"--ti=10", "--time"},     {"--nod=2", "--node"},          {"--acc=lab", "--account"},
        {"--gre=gpu:1", "--gres"}, {"-vJX", "--job-name"}};
    for (size_t i = 0; i < sizeof issue / sizeof *issue; i++) {
        char items[128];
        snprintf(items, sizeof items, "[\"%s\"]", issue[i][0]);
        sbatch_bad(items, "16", issue[i][1]);
    }
    sbatch_bad("[\"-vJ\", \"X\"]", "16", "--job-name (-J)");
    print_message("owned sbatch options refused in %zu spellings\n", tried + 12);
}

/* What sbatch would read as something else, or refuse, is refused here. */
static void test_sbatch_reading(void **state)
{
    (void)state;
    sbatch_bad("[\"-\"]", "16", "would end sbatch's options");
    sbatch_bad("[\"--qos=a\", \"--\", \"-x\"]", "27", "would end sbatch's options");
    sbatch_bad("[\"--qos\"]", "16", "needs a value and is the last item");
    sbatch_bad("[\"-vq\"]", "16", "needs a value and is the last item");
    sbatch_bad("[\"--hold=1\"]", "16", "--hold (-H) takes no value");
    sbatch_bad("[\"--mem-per=4G\"]", "16", "is ambiguous (--mem-per-cpu, --mem-per-gpu)");
    sbatch_bad("[\"-vy\"]", "16", "sbatch has no option -y");
    sbatch_bad("[\"--container-image\", nvcr]", "37", "write its value with '='");
    /* Read as sbatch reads them, these are the user's: a value that looks
     * like an owned option, a letter whose value is "J", full names of
     * options an owned one is a prefix of, a plugin's option with '='. */
    kf_fleet *fl = parse_ok("hosts:\n  - name: lab\n    provider: slurm\n    host: login\n"
                            "    slurm:\n      sbatch: [\"--comment\", \"--job-name=x\", "
                            "\"-qJ\", \"-C\", nvlink, \"--time-min=5\", \"--gres-flags=x\", "
                            "\"--clusters-x=1\", \"-vvH\", \"--ntasks-per-n=1\", "
                            "\"--exclusive\", \"--container-image=nvcr\", \"-k\"]\n");
    assert_int_equal(kf_fleet_slurm_of(kf_fleet_find(fl, "lab"))->nsbatch, 13);
    kf_fleet_destroy(&fl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_key),      cmocka_unit_test(test_to_the_daemon),
        cmocka_unit_test(test_defaults),       cmocka_unit_test(test_seconds),
        cmocka_unit_test(test_errors),         cmocka_unit_test(test_owned_every_spelling),
        cmocka_unit_test(test_sbatch_reading),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

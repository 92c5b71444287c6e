/* provider: a provider is one row. The row "tiny" below lives only in this
 * test: its agents are local processes (sleep), its inventory block says
 * how many. Registered in the table, it is parsed, launched, torn down and
 * sent over the wire by the same code as ssh and slurm, which name no
 * provider (tests/layout/check_layout.py checks that). */
#include "common/keys.h"
#include "fleet/fleet.h"
#include "fleet/fleet_pb.h"
#include "fleet/jobs.h"
#include "fleet/launch.h"
#include "fleet/launch_int.h"
#include "fleet/provider.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#define TINY_MAX 8

typedef struct tiny_block {
    int agents;
} tiny_block;

static int tiny_parse(kf_yaml *y, const yaml_node_t *n, void **block)
{
    static const char *const keys[] = {"agents", NULL};
    tiny_block *b = calloc(1, sizeof *b);
    *block = b;
    b->agents = 1;
    if (!n)
        return KF_OK;
    int rc = kf_yaml_check_keys(y, n, "in tiny:", keys);
    const yaml_node_t *v = rc ? NULL : kf_yaml_map_get(y, n, "agents");
    const char *s;
    if (v && !(rc = kf_yaml_nonempty_scalar(y, v, "agents", &s))) {
        b->agents = atoi(s);
        if (b->agents < 1 || b->agents > TINY_MAX)
            rc = kf_yaml_fail(y, v, "agents wants 1..%d", TINY_MAX);
    }
    return rc;
}

static void *tiny_dup(const void *block)
{
    tiny_block *b = malloc(sizeof *b);
    memcpy(b, block, sizeof *b);
    return b;
}

static void tiny_free(void **block)
{
    free(*block);
    *block = NULL;
}

static int tiny_nagents(const kf_fleet_host *h)
{
    return ((const tiny_block *)h->block)->agents;
}

static void pidfile(const job *j, char *out, size_t n)
{
    snprintf(out, n, "%s/tiny.pids", j->h->workdir);
}

/* One `sleep` per agent; their pids in WORKDIR/tiny.pids. */
static void tiny_launch(struct job *j)
{
    char path[PATH_MAX];
    pidfile(j, path, sizeof path);
    FILE *f = fopen(path, "w");
    if (!f) {
        kf_launch_fail(j->r, KF_PHASE_START, KF_EIO, "cannot write the pid file");
        return;
    }
    int n = tiny_nagents(j->h);
    for (int i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            execl("/bin/sleep", "sleep", "120", (char *)NULL);
            _exit(127);
        }
        fprintf(f, "%ld\n", (long)pid);
        if (i == 0)
            j->r->pid = pid;
    }
    fclose(f);
    snprintf(j->r->msg, sizeof j->r->msg, "%d local agents", n);
}

static void tiny_teardown(struct job *j)
{
    char path[PATH_MAX];
    pidfile(j, path, sizeof path);
    FILE *f = fopen(path, "r");
    if (!f) {
        kf_launch_fail(j->r, KF_PHASE_STOP, KF_EIO, "no pid file");
        return;
    }
    long pid;
    int n = 0;
    while (fscanf(f, "%ld", &pid) == 1) {
        kill((pid_t)pid, SIGTERM);
        waitpid((pid_t)pid, NULL, 0);
        n++;
    }
    fclose(f);
    unlink(path);
    snprintf(j->r->msg, sizeof j->r->msg, "stopped %d", n);
}

static const kf_provider tiny = {
    .name = "tiny",
    .what = "a test's own machine",
    .default_workdir = "/nonexistent/tiny",
    .block_key = "tiny",
    .parse = tiny_parse,
    .dup = tiny_dup,
    .free = tiny_free,
    .nagents = tiny_nagents,
    .launch = tiny_launch,
    .teardown = tiny_teardown,
};

static char workdir[] = "/tmp/kf-test-provider.XXXXXX";

static kf_fleet *parse(const char *text, kf_err *err)
{
    kf_fleet *f = NULL;
    kf_fleet_parse("inv.yaml", text, strlen(text), &f, err);
    return f;
}

static void test_unknown_until_registered(void **state)
{
    (void)state;
    kf_err err;
    assert_null(kf_provider_find("tiny"));
    assert_null(parse("hosts: [{host: a, provider: tiny}]\n", &err));
    assert_non_null(strstr(err.msg, "unknown provider 'tiny'"));
    /* The list of known ones comes from the table. */
    assert_non_null(strstr(err.msg, "ssh or slurm"));

    assert_int_equal(kf_provider_register(&tiny, &err), KF_OK);
    assert_ptr_equal(kf_provider_find("tiny"), &tiny);
    assert_int_equal(kf_provider_register(&tiny, &err), KF_EEXIST);
    /* kfleet run's row is in the table but no inventory may name it. */
    assert_non_null(kf_provider_find("local"));
    assert_true(kf_provider_find("local")->internal);
    assert_null(parse("hosts: [{host: a, provider: local}]\n", &err));
    assert_non_null(strstr(err.msg, "unknown provider 'local'"));
    kf_provider bad = {.name = "nolaunch"};
    assert_int_equal(kf_provider_register(&bad, &err), KF_EINVAL);
}

static void test_parse_through_the_row(void **state)
{
    (void)state;
    kf_err err;
    char text[512];
    snprintf(text, sizeof text,
             "hosts:\n"
             "  - {name: here, provider: tiny, host: localhost, workdir: %s, tiny: {agents: 3}}\n"
             "  - {name: bare, provider: tiny, host: localhost}\n",
             workdir);
    kf_fleet *f = parse(text, &err);
    assert_non_null(f);
    const kf_fleet_host *h = kf_fleet_find(f, "here");
    assert_ptr_equal(h->prov, &tiny);
    assert_int_equal(((const tiny_block *)h->block)->agents, 3);
    /* No block: the row's defaults, and its work dir. */
    h = kf_fleet_find(f, "bare");
    assert_int_equal(((const tiny_block *)h->block)->agents, 1);
    assert_string_equal(h->workdir, "/nonexistent/tiny");
    /* A copy's block is the row's copy. */
    kf_fleet_host c;
    kf_fleet_host_copy(&c, kf_fleet_find(f, "here"));
    assert_ptr_not_equal(c.block, kf_fleet_find(f, "here")->block);
    assert_int_equal(((const tiny_block *)c.block)->agents, 3);
    kf_fleet_host_release(&c);
    kf_fleet_destroy(&f);

    /* The row's own errors, located in the inventory. */
    assert_null(parse("hosts: [{host: a, provider: tiny, tiny: {agents: 99}}]\n", &err));
    assert_non_null(strstr(err.msg, "agents wants 1..8"));
    /* Its block on another provider's host. */
    assert_null(parse("hosts: [{host: a, tiny: {agents: 2}}]\n", &err));
    assert_non_null(strstr(err.msg, "tiny: is for a test's own machine; add provider: tiny"));
}

static void test_wire_names_the_row(void **state)
{
    (void)state;
    kf_err err;
    kf_fleet *f =
        parse("hosts: [{name: w, provider: tiny, host: h, port: 2222, price: 2.49}]\n", &err);
    assert_non_null(f);
    Kfleet__LaunchHost x;
    kf_fleet_host_to_pb(&f->hosts[0], &x);
    assert_string_equal(x.provider, "tiny");
    kf_fleet_host back;
    memset(&back, 0, sizeof back);
    assert_int_equal(kf_fleet_host_from_pb(&x, &back, &err), KF_OK);
    assert_ptr_equal(back.prov, &tiny);
    assert_string_equal(back.name, "w");
    assert_int_equal(back.port, 2222);
    /* The price crosses too: an agent the daemon launches is given --price. */
    assert_true(back.price == 2.49);
    kf_fleet_host_release(&back);
    /* A provider the daemon does not know is refused, not guessed. */
    free(x.provider);
    x.provider = strdup("nosuch");
    memset(&back, 0, sizeof back);
    assert_int_equal(kf_fleet_host_from_pb(&x, &back, &err), KF_EINVAL);
    assert_non_null(strstr(err.msg, "nosuch"));
    kf_fleet_host_release(&back);
    kf_fleet_host_pb_release(&x);
    kf_fleet_destroy(&f);
}

/* Two rows' status hooks append to one reply, each job under its
 * provider's name; the reply crosses the wire as it is, and one free takes
 * every row's jobs (ASan's leak check fails this test otherwise). */
static void test_jobs_of_two_rows(void **state)
{
    (void)state;
    Kfleet__StatusReply st = KFLEET__STATUS_REPLY__INIT;
    kf_jobs_add(&st, &(kf_jobs_row){.provider = "tiny",
                                    .host = "h",
                                    .agent_id = "h-0",
                                    .job_id = "7",
                                    .state = "PENDING",
                                    .reason = "Resources",
                                    .seen_ns = 5});
    kf_jobs_add(&st, &(kf_jobs_row){.provider = "other", .job_id = "7"});
    assert_int_equal(st.n_provider_jobs, 2);
    size_t n = kfleet__status_reply__get_packed_size(&st);
    uint8_t *buf = malloc(n);
    assert_non_null(buf);
    kfleet__status_reply__pack(&st, buf);
    kf_jobs_free(&st);
    assert_null(st.provider_jobs);
    assert_int_equal(st.n_provider_jobs, 0);
    Kfleet__StatusReply *back = kfleet__status_reply__unpack(NULL, n, buf);
    free(buf);
    assert_non_null(back);
    assert_int_equal(back->n_provider_jobs, 2);
    assert_string_equal(back->provider_jobs[0]->provider, "tiny");
    assert_string_equal(back->provider_jobs[0]->agent_id, "h-0");
    assert_string_equal(back->provider_jobs[0]->state, "PENDING");
    assert_string_equal(back->provider_jobs[0]->reason, "Resources");
    assert_int_equal(back->provider_jobs[0]->seen_ns, 5);
    assert_string_equal(back->provider_jobs[1]->provider, "other");
    assert_string_equal(back->provider_jobs[1]->host, "");
    kfleet__status_reply__free_unpacked(back, NULL);
}

static int alive(long pid)
{
    return kill((pid_t)pid, 0) == 0;
}

static void test_launch_and_teardown_through_the_row(void **state)
{
    (void)state;
    kf_err err;
    char text[512], bundle[PATH_MAX + 16];
    snprintf(text, sizeof text,
             "hosts: [{name: here, provider: tiny, host: localhost, workdir: %s, "
             "tiny: {agents: 2}}]\n",
             workdir);
    kf_fleet *f = parse(text, &err);
    assert_non_null(f);
    snprintf(bundle, sizeof bundle, "%s/bundle.tar.gz", workdir);
    FILE *b = fopen(bundle, "w");
    assert_non_null(b);
    fputs("not a real bundle: the tiny row never reads it\n", b);
    fclose(b);

    kf_launch_opts o;
    memset(&o, 0, sizeof o);
    o.bundle_tar = bundle;
    o.control_endpoint = "ipc:///nonexistent/control.sock";
    kf_launch_result *r = NULL;
    assert_int_equal(kf_launch_run(f, &o, &r, &err), KF_OK);
    assert_int_equal(r[0].rc, KF_OK);
    assert_string_equal(r[0].msg, "2 local agents");
    long pids[2] = {0, 0};
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/tiny.pids", workdir);
    FILE *pf = fopen(path, "r");
    assert_non_null(pf);
    assert_int_equal(fscanf(pf, "%ld %ld", &pids[0], &pids[1]), 2);
    fclose(pf);
    assert_true(alive(pids[0]) && alive(pids[1]));
    free(r);

    /* --purge takes the keys of the row's agents (nagents: here-0,
     * here-1) off the allow list, and no other. */
    char allow[PATH_MAX + 16];
    snprintf(allow, sizeof allow, "%s/agents.allow", workdir);
    const char *names[] = {"here-0", "here-1", "other"};
    for (int i = 0; i < 3; i++) {
        char kp_path[PATH_MAX + 32];
        kf_keypair kp;
        snprintf(kp_path, sizeof kp_path, "%s/%s.key", workdir, names[i]);
        assert_int_equal(kf_keys_load(kp_path, 1, &kp, &err), KF_OK);
        assert_int_equal(kf_allow_add(allow, kp.pub, names[i], &err), KF_OK);
        unlink(kp_path);
    }
    r = NULL;
    o.control_endpoint = NULL; /* no daemon: no tunnel to close */
    o.allow_file = allow;
    o.purge = 1;
    assert_int_equal(kf_launch_teardown(f, &o, &r, &err), KF_OK);
    assert_int_equal(r[0].rc, KF_OK);
    assert_string_equal(r[0].msg, "stopped 2");
    assert_false(alive(pids[0]) || alive(pids[1]));
    free(r);
    kf_allow al = {0};
    assert_int_equal(kf_allow_load(allow, &al, &err), KF_OK);
    assert_int_equal(al.n, 1);
    assert_string_equal(al.e[0].name, "other");
    kf_allow_free(&al);
    unlink(allow);
    strcat(allow, ".lock");
    unlink(allow);
    unlink(bundle);
    kf_fleet_destroy(&f);
}

int main(void)
{
    if (!mkdtemp(workdir))
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unknown_until_registered),
        cmocka_unit_test(test_parse_through_the_row),
        cmocka_unit_test(test_wire_names_the_row),
        cmocka_unit_test(test_launch_and_teardown_through_the_row),
        cmocka_unit_test(test_jobs_of_two_rows),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    rmdir(workdir);
    return rc;
}

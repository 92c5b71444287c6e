/* test_fleet — the inventory parser: every field read, the defaults and their
 * order (entry > ssh_alias > defaults: > built-ins), ~ and relative identity
 * paths, the ssh_config reader behind ssh_alias (patterns, negation, first
 * match wins, Include, %-tokens, ProxyJump refused), and for bad input
 * KF_EINVAL with a message that starts with the exact "file:line:col: ".
 *
 * The seed files under tests/data/fleets/ are parsed from disk: good_*.yaml
 * must load, bad_*.yaml carry their expected "# expect: L:C: text" in their
 * first line. They are also cut and mutated byte by byte: whatever happens
 * must be a clean success or a located error. */
#include "fleet/fleet.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SEEDS KF_SOURCE_DIR "/tests/data/fleets"

typedef struct fixture {
    char dir[PATH_MAX];    /* temp: the ssh config and its includes */
    char config[PATH_MAX]; /* dir/ssh_config */
    char alt[PATH_MAX];    /* another config, for the error cases */
    kf_fleet_opts opts;
} fixture;

static void write_file(const char *dir, const char *name, const char *content)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(content, f);
    fclose(f);
}

static const char ssh_config[] = "# a test ssh config\n"
                                 "Host gpu1\n"
                                 "    HostName 203.0.113.10\n"
                                 "    Port 2201\n"
                                 "    User ubuntu\n"
                                 "    IdentityFile ~/.ssh/gpu1_key\n"
                                 "\n"
                                 "Host gpu?\n"
                                 "    HostName %h.example.com\n"
                                 "    Port=2222\n"
                                 "    IdentityFile \"~/.ssh/key with space\"\n"
                                 "Host tok\n"
                                 "    IdentityFile %d/.ssh/%r@%h\n"
                                 "Host badtok\n"
                                 "    IdentityFile ~/.ssh/%C\n"
                                 "Host badport\n"
                                 "    Port twenty\n"
                                 "Host lab-* !lab-bad\n"
                                 "\tUser = lab\n"
                                 "Host jump\n"
                                 "    ProxyJump bastion\n"
                                 "Host *\n"
                                 "    User fallback\n"
                                 "    IdentityFile ~/.ssh/id_default\n"
                                 "    Port 22\n"
                                 "Match host foo\n"
                                 "    User matchuser\n"
                                 "Match all\n"
                                 "Include conf.d/*.conf\n";

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    strcpy(f->dir, "/tmp/kf-fleet-XXXXXX");
    if (!mkdtemp(f->dir)) {
        free(f);
        return -1;
    }
    snprintf(f->config, sizeof f->config, "%s/ssh_config", f->dir);
    char sub[PATH_MAX];
    snprintf(sub, sizeof sub, "%s/conf.d", f->dir);
    if (mkdir(sub, 0700) != 0)
        return -1;
    write_file(f->dir, "ssh_config", ssh_config);
    write_file(f->dir, "conf.d/extra.conf", "Host inc1\n  HostName 198.51.100.1\n");
    f->opts.ssh_config = f->config;
    f->opts.home = "/home/u";
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    if (system(cmd) != 0)
        return -1;
    free(f);
    return 0;
}

static kf_fleet *parse_ok(fixture *f, const char *yaml)
{
    kf_fleet *fl = NULL;
    kf_err err = {0};
    int rc = kf_fleet_parse_opts("f.yaml", yaml, strlen(yaml), &f->opts, &fl, &err);
    if (rc)
        fail_msg("unexpected error %d: %s\n--- input:\n%s", rc, err.msg, yaml);
    assert_non_null(fl);
    return fl;
}

/* Fails the parse and checks the message starts with "f.yaml:LC" and holds `has`. */
static void parse_bad(fixture *f, const char *yaml, const char *lc, const char *has)
{
    kf_fleet *fl = (kf_fleet *)0x1;
    kf_err err = {0};
    int rc = kf_fleet_parse_opts("f.yaml", yaml, strlen(yaml), &f->opts, &fl, &err);
    char want[64];
    snprintf(want, sizeof want, "f.yaml:%s: ", lc);
    if (rc != KF_EINVAL || strncmp(err.msg, want, strlen(want)) != 0 || !strstr(err.msg, has))
        fail_msg("want KF_EINVAL '%s...%s', got %d '%s'\n--- input:\n%s", want, has, rc, err.msg,
                 yaml);
    assert_ptr_equal(fl, (kf_fleet *)0x1); /* untouched */
}

static void test_seed_providers(void **state)
{
    fixture *f = *state;
    kf_fleet *fl = NULL;
    kf_err err = {0};
    int rc = kf_fleet_load_opts(SEEDS "/good_providers.yaml", &f->opts, &fl, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(fl->nhosts, 5);

    const kf_fleet_host *h = kf_fleet_find(fl, "runpod-h100");
    assert_non_null(h);
    assert_string_equal(h->provider, "runpod");
    assert_string_equal(h->host, "203.0.113.7");
    assert_int_equal(h->port, 22017);
    assert_string_equal(h->user, "root");
    assert_string_equal(h->identity, "/home/u/.ssh/kfleet_ed25519"); /* defaults:, ~ expanded */
    assert_string_equal(h->workdir, "/workspace/kfleet");
    assert_int_equal(h->nlabels, 2);
    assert_string_equal(h->labels[0], "h100");
    assert_string_equal(h->labels[1], "spot");
    assert_null(h->ssh_alias);
    assert_int_equal(h->line, 5);
    assert_int_equal(h->col, 5);

    h = kf_fleet_find(fl, "brev-a100");
    assert_non_null(h);
    assert_string_equal(h->provider, "brev");
    assert_string_equal(h->user, "ubuntu");
    assert_int_equal(h->port, 22);
    assert_string_equal(h->workdir, "~/kfleet");

    h = kf_fleet_find(fl, "shade-h200");
    assert_string_equal(h->provider, "shadeform");
    assert_string_equal(h->workdir, "/home/shadeform/kfleet");
    assert_string_equal(h->labels[1], "region=us-east");

    h = kf_fleet_find(fl, "lab-box");
    assert_string_equal(h->provider, "ssh");
    assert_string_equal(h->host, "gpu1.lab.example.com");
    assert_int_equal(h->port, 2222);
    assert_string_equal(h->identity, SEEDS "/keys/lab_key"); /* relative to the file */
    assert_int_equal(h->nlabels, 0);
    assert_null(h->labels);

    h = kf_fleet_find(fl, "gpu1"); /* named after its alias */
    assert_non_null(h);
    assert_string_equal(h->ssh_alias, "gpu1");
    assert_string_equal(h->host, "203.0.113.10");
    assert_int_equal(h->port, 2201);
    assert_string_equal(h->user, "ubuntu");
    assert_string_equal(h->identity, "/home/u/.ssh/gpu1_key"); /* the alias beats defaults: */
    assert_null(kf_fleet_find(fl, "nope"));
    kf_fleet_destroy(&fl);
    assert_null(fl);
    kf_fleet_destroy(&fl); /* twice is fine */
}

static void test_defaults(void **state)
{
    fixture *f = *state;
    kf_fleet *fl = parse_ok(f, "hosts:\n  - host: 203.0.113.9\n  - host: h2\n    provider: "
                               "runpod\n    workdir: /data/kf\n");
    const kf_fleet_host *h = &fl->hosts[0];
    assert_string_equal(h->name, "203.0.113.9");
    assert_string_equal(h->provider, "ssh");
    assert_int_equal(h->port, 22);
    assert_string_equal(h->user, "root");
    assert_null(h->identity);
    assert_string_equal(h->workdir, "~/kfleet");
    assert_string_equal(fl->hosts[1].workdir, "/data/kf"); /* explicit beats the runpod default */
    kf_fleet_destroy(&fl);

    fl = parse_ok(f, "defaults: {user: ubuntu, port: 2200, workdir: /scratch/kf, provider: brev, "
                     "identity: /keys/k}\nhosts:\n  - host: a\n  - host: b\n    user: me\n    "
                     "port: 22\n    identity: ~/.ssh/b\n    provider: ssh\n    workdir: ~/b\n");
    h = &fl->hosts[0];
    assert_string_equal(h->user, "ubuntu");
    assert_int_equal(h->port, 2200);
    assert_string_equal(h->workdir, "/scratch/kf");
    assert_string_equal(h->provider, "brev");
    assert_string_equal(h->identity, "/keys/k");
    h = &fl->hosts[1];
    assert_string_equal(h->user, "me");
    assert_int_equal(h->port, 22);
    assert_string_equal(h->workdir, "~/b");
    assert_string_equal(h->provider, "ssh");
    assert_string_equal(h->identity, "/home/u/.ssh/b");
    kf_fleet_destroy(&fl);

    /* Without base_dir a relative identity is kept as written. */
    fl = parse_ok(f, "hosts: [{host: a, identity: keys/k}]\n");
    assert_string_equal(fl->hosts[0].identity, "keys/k");
    kf_fleet_destroy(&fl);

    /* A workdir is kept normalised: what was checked is what teardown removes. */
    fl = parse_ok(f, "hosts: [{host: a, workdir: \"/srv//kf/./x/../run/\"}, "
                     "{host: b, workdir: ~/./kf//}]\n");
    assert_string_equal(fl->hosts[0].workdir, "/srv/kf/run");
    assert_string_equal(fl->hosts[1].workdir, "~/kf");
    kf_fleet_destroy(&fl);
}

static void test_alias(void **state)
{
    fixture *f = *state;
    kf_fleet *fl = parse_ok(f, "hosts:\n"
                               "  - ssh_alias: gpu2\n"
                               "  - {ssh_alias: gpu1, name: one, port: 3000, user: root, "
                               "identity: /k/one}\n"
                               "  - ssh_alias: lab-7\n"
                               "  - ssh_alias: inc1\n"
                               "  - ssh_alias: tok\n"
                               "  - {ssh_alias: GPU1, host: 192.0.2.1}\n");
    const kf_fleet_host *h = kf_fleet_find(fl, "gpu2");
    assert_string_equal(h->host, "gpu2.example.com"); /* %h */
    assert_int_equal(h->port, 2222);                  /* "Port=2222" */
    assert_string_equal(h->user, "fallback");         /* from Host * */
    assert_string_equal(h->identity, "/home/u/.ssh/key with space");

    h = kf_fleet_find(fl, "one"); /* the entry's own fields beat the alias */
    assert_string_equal(h->host, "203.0.113.10");
    assert_int_equal(h->port, 3000);
    assert_string_equal(h->user, "root");
    assert_string_equal(h->identity, "/k/one");

    h = kf_fleet_find(fl, "lab-7");
    assert_string_equal(h->host, "lab-7"); /* no HostName: the alias itself */
    assert_string_equal(h->user, "lab");   /* "User = lab", first match wins over Host * */
    assert_int_equal(h->port, 22);
    assert_string_equal(h->identity, "/home/u/.ssh/id_default");

    h = kf_fleet_find(fl, "inc1"); /* from conf.d/extra.conf, after Match all */
    assert_string_equal(h->host, "198.51.100.1");
    assert_string_equal(h->user, "fallback");

    h = kf_fleet_find(fl, "tok");
    assert_string_equal(h->identity, "/home/u/.ssh/fallback@tok"); /* %d %r %h */

    h = kf_fleet_find(fl, "GPU1"); /* Host patterns match case-insensitively */
    assert_string_equal(h->host, "192.0.2.1");
    assert_int_equal(h->port, 2201);
    kf_fleet_destroy(&fl);
}

static void test_alias_errors(void **state)
{
    fixture *f = *state;
    char want[PATH_MAX + 64];
    parse_bad(f, "hosts:\n  - ssh_alias: lab-bad\n", "2:16", "matches no Host in");
    parse_bad(f, "hosts:\n  - ssh_alias: nosuch\n", "2:16", "add a 'Host nosuch' block");
    snprintf(want, sizeof want, "uses ProxyJump (%s:21)", f->config);
    parse_bad(f, "hosts:\n  - ssh_alias: jump\n", "2:16", want);
    snprintf(want, sizeof want, "Port 'twenty' (%s:17) is not a number", f->config);
    parse_bad(f, "hosts:\n  - ssh_alias: badport\n", "2:16", want);
    /* An explicit port never reads the bad one. */
    kf_fleet *fl = parse_ok(f, "hosts:\n  - {ssh_alias: badport, port: 22}\n");
    kf_fleet_destroy(&fl);
    snprintf(want, sizeof want, "%s:15: the token %%C", f->config);
    parse_bad(f, "hosts:\n  - ssh_alias: badtok\n", "2:16", want);
    parse_bad(f, "hosts:\n  - ssh_alias: 'a b'\n", "2:16", "is not a Host name");

    write_file(f->dir, "loop", "Include loop\n");
    write_file(f->dir, "quote", "Host q\n  HostName \"open\n");
    char *path = f->alt; /* outlives a failed assertion: the next test gets a fresh fixture */
    snprintf(path, sizeof f->alt, "%s/loop", f->dir);
    f->opts.ssh_config = path;
    parse_bad(f, "hosts: [{ssh_alias: x}]\n", "1:21", "Include nested more than 16 deep");
    snprintf(path, sizeof f->alt, "%s/quote", f->dir);
    parse_bad(f, "hosts: [{ssh_alias: q}]\n", "1:21", "quote:2: a quote is not closed");
    snprintf(path, sizeof f->alt, "%s/missing", f->dir);
    parse_bad(f, "hosts: [{ssh_alias: q}]\n", "1:21", "cannot read the ssh config");
    /* Hosts without ssh_alias never read the config. */
    fl = parse_ok(f, "hosts: [{host: a}]\n");
    kf_fleet_destroy(&fl);

    /* KFLEET_SSH_CONFIG when opts name none. */
    f->opts.ssh_config = NULL;
    assert_int_equal(setenv("KFLEET_SSH_CONFIG", f->config, 1), 0);
    fl = parse_ok(f, "hosts: [{ssh_alias: gpu1}]\n");
    assert_int_equal(fl->hosts[0].port, 2201);
    kf_fleet_destroy(&fl);
    assert_int_equal(setenv("KFLEET_SSH_CONFIG", path, 1), 0);
    parse_bad(f, "hosts: [{ssh_alias: gpu1}]\n", "1:21", "missing");
    unsetenv("KFLEET_SSH_CONFIG");
}

static void test_errors(void **state)
{
    fixture *f = *state;
    parse_bad(f, "", "1:1", "the file is empty");
    parse_bad(f, "- a\n", "1:1", "the top level must be a mapping");
    parse_bad(f, "defaults: {}\n", "1:1", "missing hosts:");
    parse_bad(f, "hosts: []\n", "1:8", "hosts is empty");
    parse_bad(f, "hosts: {a: 1}\n", "1:8", "hosts must be a list");
    parse_bad(f, "hosts: [a]\n", "1:9", "a host must be a mapping");
    parse_bad(f, "host: [a]\n", "1:1", "did you mean 'hosts'?");
    parse_bad(f, "hosts: [{host: a}]\nhosts: [{host: b}]\n", "2:1", "appears twice");
    parse_bad(f, "hosts: [{host: a, port: 0}]\n", "1:25", "from 1 to 65535, not '0'");
    parse_bad(f, "hosts: [{host: a, port: 22x}]\n", "1:25", "not '22x'");
    parse_bad(f, "hosts: [{host: a, port: [22]}]\n", "1:25", "port must be a single value");
    parse_bad(f, "hosts: [{host: a, provider: aws}]\n", "1:29", "use runpod, brev, shadeform");
    parse_bad(f, "hosts: [{host: -oProxyCommand=x}]\n", "1:16", "is not a host name");
    parse_bad(f, "hosts: [{host: 'a b'}]\n", "1:16", "is not a host name");
    parse_bad(f, "hosts: [{host: a, user: -x}]\n", "1:25", "is not a login name");
    parse_bad(f, "hosts: [{host: a, name: 'x/y'}]\n", "1:25", "is not a valid host name");
    /* price (issue 32): one GPU-hour of the node, for the report's cost;
     * kept on the host, and refused unless a number above 0. */
    {
        const char *y = "hosts: [{host: a, price: 2.49}, {host: b}]\n";
        kf_fleet *pf = NULL;
        kf_err perr = {0};
        assert_int_equal(kf_fleet_parse_opts("f.yaml", y, strlen(y), &f->opts, &pf, &perr), 0);
        assert_true(kf_fleet_find(pf, "a")->price == 2.49);
        assert_true(kf_fleet_find(pf, "b")->price == 0);
        kf_fleet_destroy(&pf);
    }
    parse_bad(f, "hosts: [{host: a, price: 0}]\n", "1:26", "price must be what one GPU-hour");
    parse_bad(f, "hosts: [{host: a, price: cheap}]\n", "1:26", "not 'cheap'");
    parse_bad(f, "hosts: [{host: a, name: ''}]\n", "1:25", "name is empty");
    parse_bad(f, "hosts: [{host: a, workdir: rel/dir}]\n", "1:28", "is relative");
    parse_bad(f, "hosts: [{host: a, workdir: /}]\n", "1:28", "teardown --purge");
    /* Refused once normalised: what teardown --purge would remove is "/" or
     * the home itself, or above it. */
    parse_bad(f, "hosts: [{host: a, workdir: \"/tmp/../\"}]\n", "1:28", "teardown --purge");
    parse_bad(f, "hosts: [{host: a, workdir: /a/./b/../../}]\n", "1:28", "teardown --purge");
    parse_bad(f, "hosts: [{host: a, workdir: //}]\n", "1:28", "teardown --purge");
    parse_bad(f, "hosts: [{host: a, workdir: ~/x/..}]\n", "1:28", "teardown --purge");
    parse_bad(f, "hosts: [{host: a, workdir: ~/../x}]\n", "1:28", "above the home");
    parse_bad(f, "hosts: [{host: a, workdir: ~bob/x}]\n", "1:28", "uses ~user");
    parse_bad(f, "hosts: [{host: a, identity: ~bob/k}]\n", "1:29", "uses ~user");
    parse_bad(f, "hosts: [{host: a, labels: [x, x]}]\n", "1:31", "listed twice");
    parse_bad(f, "hosts: [{host: a, labels: ['a b']}]\n", "1:28", "label 'a b'");
    parse_bad(f, "hosts: [{host: a}, {host: a}]\n", "1:20", "already used by the host at 1:9");
    parse_bad(f, "defaults: {port: 99999}\nhosts: [{host: a}]\n", "1:18", "65535");
    parse_bad(f, "defaults: {labels: [x]}\nhosts: [{host: a}]\n", "1:12", "in defaults");
    parse_bad(f, "hosts: [{host: a}]\n---\nhosts: []\n", "3:1", "a second YAML document");
    parse_bad(f, "hosts: [{host: a}]\nx: \"\\0\"\n", "2:1", "unknown key 'x'");
    parse_bad(f, "hosts: [{host: \"a\\0b\"}]\n", "1:16", "NUL character");
    parse_bad(f, "hosts: *nope\n", "1:8", "YAML syntax error");
    parse_bad(f, "hosts: [{host: \xff}]\n", "1:16", "not valid UTF-8");

    kf_err err = {0};
    kf_fleet *fl = NULL;
    assert_int_equal(kf_fleet_load("/nonexistent/fleet.yaml", &fl, &err), KF_EIO);
    assert_non_null(strstr(err.msg, "/nonexistent/fleet.yaml: cannot read the inventory"));
    assert_null(fl);
    /* The bounded read (kf_yaml_read_file, shared with sweep files): a
     * directory is no inventory. */
    assert_int_equal(kf_fleet_load("/tmp", &fl, &err), KF_EINVAL);
    assert_non_null(strstr(err.msg, "/tmp: the inventory "));
    assert_non_null(strstr(err.msg, "; an inventory is a regular file of at most 4 MiB"));
    assert_null(fl);
}

/* "# expect: L:C: text" from a bad seed's first line. */
static void check_seed(fixture *f, const char *name)
{
    char path[PATH_MAX];
    snprintf(path, sizeof f->alt, "%s/%s", SEEDS, name);
    kf_fleet *fl = NULL;
    kf_err err = {0};
    int rc = kf_fleet_load_opts(path, &f->opts, &fl, &err);
    if (strncmp(name, "good_", 5) == 0) {
        if (rc)
            fail_msg("%s: %s", name, err.msg);
        kf_fleet_destroy(&fl);
        return;
    }
    FILE *in = fopen(path, "r");
    assert_non_null(in);
    char line[256] = "";
    assert_non_null(fgets(line, sizeof line, in));
    fclose(in);
    line[strcspn(line, "\n")] = '\0';
    assert_memory_equal(line, "# expect: ", 10);
    char *lc = line + 10, *text = strstr(lc, ": ");
    assert_non_null(text);
    *text = '\0';
    text += 2;
    char want[PATH_MAX + 32];
    snprintf(want, sizeof want, "%s:%s: %s", path, lc, text);
    if (rc != KF_EINVAL || strncmp(err.msg, want, strlen(want)) != 0)
        fail_msg("%s: want '%s', got %d '%s'", name, want, rc, err.msg);
    assert_null(fl);
}

static void test_seed_files(void **state)
{
    DIR *d = opendir(SEEDS);
    assert_non_null(d);
    int good = 0, bad = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 5, ".yaml") != 0)
            continue;
        check_seed(*state, e->d_name);
        good += strncmp(e->d_name, "good_", 5) == 0;
        bad += strncmp(e->d_name, "bad_", 4) == 0;
    }
    closedir(d);
    assert_true(good >= 2);
    assert_true(bad >= 9);
}

/* Every prefix and many one-byte changes of the full seed: a fleet or a
 * located error, never a crash (ASan watches), never an unlocated message. */
static void test_mutations(void **state)
{
    fixture *f = *state;
    FILE *in = fopen(SEEDS "/good_providers.yaml", "r");
    assert_non_null(in);
    char text[8192];
    size_t len = fread(text, 1, sizeof text, in);
    fclose(in);
    static const char bytes[] = {'\0', ':', '-', '[', '{', '\n', ' ', '"', '*', '&', 'x', '9'};
    for (size_t cut = 0; cut <= len; cut++) {
        for (size_t m = 0; m <= sizeof bytes; m++) {
            char buf[8192];
            memcpy(buf, text, len);
            size_t n = len;
            if (m == 0)
                n = cut; /* a prefix */
            else if (cut < len)
                buf[cut] = bytes[m - 1];
            else
                continue;
            kf_fleet *fl = NULL;
            kf_err err = {0};
            int rc = kf_fleet_parse_opts("m.yaml", buf, n, &f->opts, &fl, &err);
            if (rc == KF_OK) {
                assert_non_null(fl);
                kf_fleet_destroy(&fl);
            } else if (rc != KF_EINVAL || strncmp(err.msg, "m.yaml:", 7) != 0) {
                fail_msg("cut %zu byte %zu: %d '%s'", cut, m, rc, err.msg);
            }
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_seed_providers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_defaults, setup, teardown),
        cmocka_unit_test_setup_teardown(test_alias, setup, teardown),
        cmocka_unit_test_setup_teardown(test_alias_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_seed_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mutations, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

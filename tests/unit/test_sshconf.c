/* test_sshconf — the OpenSSH client config reader on its own: Host patterns
 * (* ? !negation, case-insensitive), first value wins, "Host *" alone does
 * not count as a match, Match blocks skipped except `Match all`, Include
 * (relative to the top config, ~, globs that match nothing, nesting limit),
 * the "Key=value" forms and quotes, the %-tokens and ~ of kf_sshconf_expand,
 * and for broken files KF_EINVAL with "FILE:LINE: ..." and nothing handed
 * out. How fleet.c uses the values (precedence, refusals) is in test_fleet. */
#include "fleet/sshconf.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct fixture {
    char dir[PATH_MAX];
    char config[PATH_MAX]; /* dir/config */
    char path[PATH_MAX];   /* scratch for other files */
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

static const char config[] = "# global options apply to every host\n"
                             "User global\n"
                             "Host gpu1 GPU9\n"
                             "    HostName 203.0.113.10\n"
                             "    Port=2201\n"
                             "Host gpu?\n"
                             "    HostName second.example\n" /* gpu1 keeps the first value */
                             "    IdentityFile \"~/.ssh/key with space\"\n"
                             "Host lab-* !lab-bad\n"
                             "\tPort = 2300\n"
                             "Host tok\n"
                             "    IdentityFile %d/.ssh/%r@%h%%\n"
                             "    HostName %h.example\n"
                             "Host badtok\n"
                             "    IdentityFile ~/.ssh/%C\n"
                             "Host jump\n"
                             "    ProxyJump bastion\n"
                             "    ProxyCommand none\n"
                             "Match host foo\n"
                             "    Port 1111\n"
                             "Match all\n"
                             "Include conf.d/*.conf nomatch/*.conf\n"
                             "Host *\n"
                             "    Port 22\n";

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    strcpy(f->dir, "/tmp/kf-sshconf-XXXXXX");
    if (!mkdtemp(f->dir)) {
        free(f);
        return -1;
    }
    snprintf(f->config, sizeof f->config, "%s/config", f->dir);
    snprintf(f->path, sizeof f->path, "%s/conf.d", f->dir);
    if (mkdir(f->path, 0700) != 0)
        return -1;
    write_file(f->dir, "config", config);
    write_file(f->dir, "conf.d/extra.conf", "Host inc1\n  HostName 198.51.100.1\n");
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

static kf_sshconf *read_ok(const char *path, const char *alias, const char *home)
{
    kf_sshconf *sc = NULL;
    kf_err err = {0};
    int rc = kf_sshconf_read(path, alias, home, &sc, &err);
    if (rc)
        fail_msg("reading %s for %s: %d %s", path, alias, rc, err.msg);
    assert_non_null(sc);
    return sc;
}

/* The read fails with KF_EINVAL, a message that starts with `start` and
 * holds `has`, and *out untouched. */
static void read_bad(const char *path, const char *alias, const char *start, const char *has)
{
    kf_sshconf *sc = (kf_sshconf *)0x1;
    kf_err err = {0};
    int rc = kf_sshconf_read(path, alias, "/home/u", &sc, &err);
    if (rc != KF_EINVAL || strncmp(err.msg, start, strlen(start)) != 0 || !strstr(err.msg, has))
        fail_msg("want KF_EINVAL '%s...%s', got %d '%s'", start, has, rc, err.msg);
    assert_ptr_equal(sc, (kf_sshconf *)0x1);
}

static void test_patterns(void **state)
{
    fixture *f = *state;
    char where[PATH_MAX + 16];

    kf_sshconf *sc = read_ok(f->config, "gpu1", "/home/u");
    assert_true(kf_sshconf_matched(sc));
    assert_string_equal(kf_sshconf_value(sc, KF_SSHCONF_HOSTNAME), "203.0.113.10");
    snprintf(where, sizeof where, "%s:4", f->config);
    assert_string_equal(kf_sshconf_where(sc, KF_SSHCONF_HOSTNAME), where);
    assert_string_equal(kf_sshconf_value(sc, KF_SSHCONF_PORT), "2201");   /* Port=2201 */
    assert_string_equal(kf_sshconf_value(sc, KF_SSHCONF_USER), "global"); /* before any Host */
    assert_string_equal(kf_sshconf_value(sc, KF_SSHCONF_IDENTITYFILE), "~/.ssh/key with space");
    assert_null(kf_sshconf_value(sc, KF_SSHCONF_PROXYJUMP));
    assert_null(kf_sshconf_value(sc, KF_SSHCONF_NKEYS)); /* out of range */
    assert_string_equal(kf_sshconf_where(sc, KF_SSHCONF_PROXYJUMP), "");
    kf_sshconf_destroy(&sc);
    assert_null(sc);

    sc = read_ok(f->config, "gpu9", NULL); /* case-insensitive, as OpenSSH */
    assert_string_equal(kf_sshconf_value(sc, KF_SSHCONF_HOSTNAME), "203.0.113.10");
    kf_sshconf_destroy(&sc);

    sc = read_ok(f->config, "lab-7", NULL);
    assert_true(kf_sshconf_matched(sc));
    assert_string_equal(kf_sshconf_value(sc, KF_SSHCONF_PORT), "2300"); /* "Port = 2300" */
    kf_sshconf_destroy(&sc);

    sc = read_ok(f->config, "lab", NULL); /* Host * after Match all; Match host is skipped */
    assert_string_equal(kf_sshconf_value(sc, KF_SSHCONF_PORT), "22");
    kf_sshconf_destroy(&sc);

    sc = read_ok(f->config, "lab-bad", NULL); /* the negation rules the line out */
    assert_false(kf_sshconf_matched(sc));
    assert_string_equal(kf_sshconf_value(sc, KF_SSHCONF_PORT), "22");
    kf_sshconf_destroy(&sc);

    sc = read_ok(f->config, "nosuch", NULL); /* only Host *: not a match */
    assert_false(kf_sshconf_matched(sc));
    kf_sshconf_destroy(&sc);

    sc = read_ok(f->config, "inc1", NULL); /* from conf.d/, relative to the config */
    assert_true(kf_sshconf_matched(sc));
    assert_string_equal(kf_sshconf_value(sc, KF_SSHCONF_HOSTNAME), "198.51.100.1");
    snprintf(where, sizeof where, "%s/conf.d/extra.conf:2", f->dir);
    assert_string_equal(kf_sshconf_where(sc, KF_SSHCONF_HOSTNAME), where);
    kf_sshconf_destroy(&sc);

    sc = read_ok(f->config, "jump", NULL);
    assert_string_equal(kf_sshconf_value(sc, KF_SSHCONF_PROXYJUMP), "bastion");
    assert_string_equal(kf_sshconf_value(sc, KF_SSHCONF_PROXYCOMMAND), "none");
    kf_sshconf_destroy(&sc);
    kf_sshconf_destroy(&sc); /* NULL is fine */
    kf_sshconf_destroy(NULL);
}

static void test_expand(void **state)
{
    fixture *f = *state;
    kf_err err = {0};
    char *out = NULL;

    kf_sshconf *sc = read_ok(f->config, "tok", "/home/u");
    assert_int_equal(kf_sshconf_expand(sc, KF_SSHCONF_IDENTITYFILE, "h1", "bob", &out, &err),
                     KF_OK);
    assert_string_equal(out, "/home/u/.ssh/bob@h1%");
    free(out);
    out = NULL;
    assert_int_equal(kf_sshconf_expand(sc, KF_SSHCONF_HOSTNAME, "tok", NULL, &out, &err), KF_OK);
    assert_string_equal(out, "tok.example");
    free(out);
    out = NULL;
    /* No user to give: %r is refused, at the line of the value. */
    assert_int_equal(kf_sshconf_expand(sc, KF_SSHCONF_IDENTITYFILE, "h1", NULL, &out, &err),
                     KF_EINVAL);
    assert_null(out);
    char want[PATH_MAX + 64];
    snprintf(want, sizeof want, "%s:12: the token %%r in '%%d/.ssh/%%r@%%h%%%%'", f->config);
    assert_memory_equal(err.msg, want, strlen(want));
    kf_sshconf_destroy(&sc);

    /* Without a home, %d is refused and ~ is kept. */
    sc = read_ok(f->config, "tok", NULL);
    assert_int_equal(kf_sshconf_expand(sc, KF_SSHCONF_IDENTITYFILE, "h1", "bob", &out, &err),
                     KF_EINVAL);
    assert_non_null(strstr(err.msg, "the token %d"));
    kf_sshconf_destroy(&sc);
    sc = read_ok(f->config, "gpu1", NULL);
    assert_int_equal(kf_sshconf_expand(sc, KF_SSHCONF_IDENTITYFILE, "h", "u", &out, &err), KF_OK);
    assert_string_equal(out, "~/.ssh/key with space");
    free(out);
    out = NULL;
    kf_sshconf_destroy(&sc);

    sc = read_ok(f->config, "badtok", "/home/u");
    assert_int_equal(kf_sshconf_expand(sc, KF_SSHCONF_IDENTITYFILE, "h", "u", &out, &err),
                     KF_EINVAL);
    snprintf(want, sizeof want, "%s:15: the token %%C in '~/.ssh/%%C' is not supported by kfleet",
             f->config);
    assert_memory_equal(err.msg, want, strlen(want));
    assert_non_null(strstr(err.msg, "; write the value out or set it in the inventory"));
    kf_sshconf_destroy(&sc);
}

static void test_errors(void **state)
{
    fixture *f = *state;
    char start[PATH_MAX + 16];

    write_file(f->dir, "loop", "Include loop\n");
    snprintf(f->path, sizeof f->path, "%s/loop", f->dir);
    snprintf(start, sizeof start, "%s:1: ", f->path);
    read_bad(f->path, "x", start, "Include nested more than 16 deep; look for an Include loop");

    write_file(f->dir, "quote", "Host q\n  HostName \"open\n");
    snprintf(f->path, sizeof f->path, "%s/quote", f->dir);
    snprintf(start, sizeof start, "%s:2: ", f->path);
    read_bad(f->path, "q", start, "a quote is not closed; close it");

    write_file(f->dir, "novalue", "Host q\n  Port\n");
    snprintf(f->path, sizeof f->path, "%s/novalue", f->dir);
    snprintf(start, sizeof start, "%s:2: ", f->path);
    read_bad(f->path, "q", start, "Port has no value; give one or remove the line");

    snprintf(f->path, sizeof f->path, "%s/missing", f->dir);
    snprintf(start, sizeof start, "cannot read the ssh config %s: ", f->path);
    read_bad(f->path, "q", start, "; create it, or point KFLEET_SSH_CONFIG at the right file");

    /* As OpenSSH, an Include that matches nothing is skipped. */
    write_file(f->dir, "inc_abs", "Include /nonexistent-kf-dir/nothing\nHost a\n  Port 1\n");
    snprintf(f->path, sizeof f->path, "%s/inc_abs", f->dir);
    kf_sshconf *sc = read_ok(f->path, "a", NULL);
    assert_string_equal(kf_sshconf_value(sc, KF_SSHCONF_PORT), "1");
    kf_sshconf_destroy(&sc);

    /* ~ in Include is the given home. */
    write_file(f->dir, "inc_home", "Include ~/conf.d/extra.conf\n");
    snprintf(f->path, sizeof f->path, "%s/inc_home", f->dir);
    sc = read_ok(f->path, "inc1", f->dir);
    assert_string_equal(kf_sshconf_value(sc, KF_SSHCONF_HOSTNAME), "198.51.100.1");
    kf_sshconf_destroy(&sc);

    /* Messages stay under 700 bytes however long the path, so fleet.c can
     * wrap them whole. */
    char deep[PATH_MAX];
    int n = snprintf(deep, sizeof deep, "%s/", f->dir);
    memset(deep + n, 'd', 250);
    deep[n + 250] = '\0';
    assert_int_equal(mkdir(deep, 0700), 0);
    strcat(deep, "/");
    size_t len = strlen(deep);
    memset(deep + len, 'e', 250);
    deep[len + 250] = '\0';
    assert_int_equal(mkdir(deep, 0700), 0);
    strcat(deep, "/");
    len = strlen(deep);
    memset(deep + len, 'f', 250);
    deep[len + 250] = '\0';
    assert_int_equal(mkdir(deep, 0700), 0);
    strcat(deep, "/config");
    FILE *fp = fopen(deep, "w");
    assert_non_null(fp);
    fputs("Host q\n  Port\n", fp);
    fclose(fp);
    kf_err err = {0};
    assert_int_equal(kf_sshconf_read(deep, "q", NULL, &sc, &err), KF_EINVAL);
    assert_true(strlen(deep) > 700);
    assert_int_equal(strlen(err.msg), 699);
    assert_memory_equal(err.msg, deep, 300);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_patterns, setup, teardown),
        cmocka_unit_test_setup_teardown(test_expand, setup, teardown),
        cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

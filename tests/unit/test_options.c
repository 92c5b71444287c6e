/* Tests for coordinator/cli/options.c (and the sweep ids of cli.c): each
 * kind of row puts its value where it points, in any spelling getopt
 * takes; a bad value, an unknown flag, a missing or unwanted value end in
 * exit 2 with one line naming the flag and the usage; --help prints the
 * help and ends in 0; a process may parse more than one argv. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "cli/cli.h"
#include "cli/options.h"
#include "common/buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const kf_cmd_entry cmd = {"frob", NULL, "Frobs.", "frob [--x] FILE", "Frobs FILE."};

/* What kf_opt_parse printed on one stream (1 or 2) while parsing argv. */
typedef struct parsed {
    int rc;
    char text[1024];
} parsed;

static parsed parse(int fd, const kf_option *opts, int argc, char **argv)
{
    parsed p = {0};
    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    fflush(fd == 1 ? stdout : stderr);
    int saved = dup(fd);
    dup2(fileno(tmp), fd);
    p.rc = kf_opt_parse(&cmd, argc, argv, opts);
    fflush(fd == 1 ? stdout : stderr);
    dup2(saved, fd);
    close(saved);
    rewind(tmp);
    size_t n = fread(p.text, 1, sizeof p.text - 1, tmp);
    p.text[n] = '\0';
    fclose(tmp);
    return p;
}

#define ARGV(...)                                                                                  \
    (char *[])                                                                                     \
    {                                                                                              \
        "frob", __VA_ARGS__, NULL                                                                  \
    }
#define ARGC(...) ((int)(sizeof((char *[]){"frob", __VA_ARGS__}) / sizeof(char *)))
#define PARSE(fd, opts, ...) parse(fd, opts, ARGC(__VA_ARGS__), ARGV(__VA_ARGS__))

static int even(void *value, const char *arg)
{
    int n = atoi(arg);
    if (n % 2)
        return -1;
    *(int *)value = n;
    return 0;
}

typedef struct vals {
    int flag, choice, n, cb;
    const char *str, *out;
    double num, dur;
    uint64_t size;
} vals;

#define ROWS(v)                                                                                    \
    const kf_option opts[] = {                                                                     \
        KF_OPT_FLAG("flag", &(v).flag),                                                            \
        KF_OPT_STRING(0, "str", &(v).str),                                                         \
        KF_OPT_STRING('o', "output", &(v).out),                                                    \
        KF_OPT_CHOICE("format", &(v).choice,                                                       \
                      ((const char *const[]){"table", "md|markdown", "json", NULL})),              \
        KF_OPT_INT("count", &(v).n, 1, 64, "a number from 1 to 64"),                               \
        KF_OPT_NUMBER("price", &(v).num, 0, KF_OPT_ANY, KF_OPT_ABOVE_MIN, "a number above 0"),     \
        KF_OPT_DURATION("wait", &(v).dur, 0.5, 600, 0, "a duration from 0.5s to 10m"),             \
        KF_OPT_SIZE("min-free", &(v).size, "a size like 2G"),                                      \
        KF_OPT_CALLBACK("even", &(v).cb, even, "an even number"),                                  \
        KF_OPT_END,                                                                                \
    }

static void test_values(void **state)
{
    (void)state;
    vals v = {0};
    ROWS(v);
    parsed p = PARSE(2, opts, "a.yaml", "--flag", "--str", "s", "-oout.txt", "--format=markdown",
                     "--count", "64", "b.yaml", "--price", "2.49", "--wait", "5m", "--min-free",
                     "2G", "--even", "8");
    assert_int_equal(p.rc, KF_OPT_GO);
    assert_string_equal(p.text, "");
    assert_int_equal(v.flag, 1);
    assert_string_equal(v.str, "s");
    assert_string_equal(v.out, "out.txt");
    assert_int_equal(v.choice, 1);
    assert_int_equal(v.n, 64);
    assert_true(v.num == 2.49);
    assert_true(v.dur == 300);
    assert_int_equal(v.size, 2ull << 30);
    assert_int_equal(v.cb, 8);
    /* Arguments between flags end up after them, in their order. */
    char **argv = ARGV("a.yaml", "--flag", "b.yaml", "--count", "2", "--", "--c");
    int argc = ARGC("a.yaml", "--flag", "b.yaml", "--count", "2", "--", "--c");
    assert_int_equal(kf_opt_parse(&cmd, argc, argv, opts), KF_OPT_GO);
    assert_int_equal(argc - optind, 3);
    assert_string_equal(argv[optind], "a.yaml");
    assert_string_equal(argv[optind + 1], "b.yaml");
    assert_string_equal(argv[optind + 2], "--c");
    /* A unique prefix is the flag. */
    assert_int_equal(PARSE(2, opts, "--form", "json").rc, KF_OPT_GO);
    assert_int_equal(v.choice, 2);
}

/* Each bad value: exit 2, the flag, what it wants and what it got, the
 * usage; the value's place keeps what it had. */
static void test_bad_values(void **state)
{
    (void)state;
    vals v = {.n = 7, .num = 1, .dur = 1, .choice = 0};
    ROWS(v);
    const struct {
        char *flag, *value, *line;
    } bad[] = {
        {"--format", "xml", "kfleet frob: --format wants table, md or json, got 'xml'\n"},
        {"--count", "0", "kfleet frob: --count wants a number from 1 to 64, got '0'\n"},
        {"--count", "65", "kfleet frob: --count wants a number from 1 to 64, got '65'\n"},
        {"--count", "5x", "kfleet frob: --count wants a number from 1 to 64, got '5x'\n"},
        {"--count", "", "kfleet frob: --count wants a number from 1 to 64, got ''\n"},
        {"--count", "99999999999999999999", "--count wants a number from 1 to 64"},
        {"--price", "0", "kfleet frob: --price wants a number above 0, got '0'\n"},
        {"--price", "inf", "--price wants a number above 0, got 'inf'"},
        {"--price", "1e999", "--price wants a number above 0, got '1e999'"},
        {"--wait", "0.4s", "kfleet frob: --wait wants a duration from 0.5s to 10m, got '0.4s'\n"},
        {"--wait", "soon", "--wait wants a duration from 0.5s to 10m, got 'soon'"},
        {"--min-free", "lots", "kfleet frob: --min-free wants a size like 2G, got 'lots'\n"},
        {"--even", "3", "kfleet frob: --even wants an even number, got '3'\n"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        parsed p = PARSE(2, opts, bad[i].flag, bad[i].value);
        assert_int_equal(p.rc, 2);
        if (!strstr(p.text, bad[i].line))
            fail_msg("%s %s: %s", bad[i].flag, bad[i].value, p.text);
        assert_non_null(strstr(p.text, "\nusage: kfleet frob [--x] FILE\n"));
    }
    assert_int_equal(v.n, 7);
    assert_true(v.num == 1 && v.dur == 1);
    assert_int_equal(v.choice, 0);
    /* The ends of a range are in it, but for a row that must be above. */
    assert_int_equal(PARSE(2, opts, "--count", "1", "--wait", "0.5", "--wait", "10m").rc,
                     KF_OPT_GO);
    assert_true(v.n == 1 && v.dur == 600);
}

static void test_bad_flags(void **state)
{
    (void)state;
    vals v = {0};
    ROWS(v);
    const struct {
        char *arg, *line;
    } bad[] = {
        {"--bogus", "kfleet frob: unknown option '--bogus'\n"},
        {"--bogus=1", "kfleet frob: unknown option '--bogus=1'\n"},
        {"-z", "kfleet frob: unknown option '-z'\n"},
        {"--str", "kfleet frob: option '--str' lacks its value\n"},
        {"-o", "kfleet frob: option '--output' lacks its value\n"},
        {"--flag=1", "kfleet frob: option '--flag' takes no value\n"},
        {"--help=1", "kfleet frob: option '--help' takes no value\n"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        parsed p = PARSE(2, opts, bad[i].arg);
        assert_int_equal(p.rc, 2);
        if (strncmp(p.text, bad[i].line, strlen(bad[i].line)) != 0)
            fail_msg("%s: %s", bad[i].arg, p.text);
        assert_non_null(strstr(p.text, "\nusage: kfleet frob [--x] FILE\n"));
    }
    /* -o is a short name only where a row has it. */
    static const kf_option none[] = {KF_OPT_END};
    parsed p = PARSE(2, none, "-o", "x");
    assert_int_equal(p.rc, 2);
    assert_non_null(strstr(p.text, "unknown option '-o'"));
}

static void test_help(void **state)
{
    (void)state;
    vals v = {0};
    ROWS(v);
    parsed p = PARSE(1, opts, "--count", "3", "-h", "--bogus");
    assert_int_equal(p.rc, 0);
    assert_string_equal(p.text, "usage: kfleet frob [--x] FILE\n\nFrobs FILE.\n");
    assert_int_equal(PARSE(1, opts, "x", "--help").rc, 0);
    assert_int_equal(PARSE(1, NULL, "--help").rc, 0);
}

static void test_args(void **state)
{
    (void)state;
    parsed p = PARSE(2, NULL, "x");
    assert_int_equal(p.rc, KF_OPT_GO);
    assert_int_equal(kf_opt_no_args(&cmd, 2, ARGV("x")), 2);
    assert_int_equal(kf_opt_args(&cmd, 1, ARGV(NULL), NULL), KF_OPT_GO);
    assert_int_equal(kf_opt_args(&cmd, 2, ARGV("7"), "a sweep id"), KF_OPT_GO);
    assert_string_equal(ARGV("7")[optind], "7");

    uint32_t ids[2] = {0, 0};
    char **argv = ARGV("3", "4294967295");
    optind = 1;
    assert_int_equal(kf_cli_sweep_ids(&cmd, 3, argv, ids, 2), KF_OPT_GO);
    assert_true(ids[0] == 3 && ids[1] == 4294967295u);
    uint32_t id = 0;
    argv = ARGV("3", "4");
    optind = 1;
    assert_int_equal(kf_cli_sweep_ids(&cmd, 3, argv, &id, 1), 2); /* one too many */
    char *notids[] = {"0", "-1", "4294967296", "x", "", "3x"};
    for (size_t i = 0; i < sizeof notids / sizeof *notids; i++) {
        argv = ARGV(notids[i]);
        optind = 1;
        if (kf_cli_sweep_ids(&cmd, 2, argv, &id, 1) != 2)
            fail_msg("'%s' taken as a sweep id", notids[i]);
    }
    argv = ARGV(NULL);
    optind = 1;
    id = 9;
    assert_int_equal(kf_cli_sweep_ids(&cmd, 1, argv, &id, 1), KF_OPT_GO);
    assert_int_equal(id, 9); /* none given: left as it was */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values),    cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_bad_flags), cmocka_unit_test(test_help),
        cmocka_unit_test(test_args),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

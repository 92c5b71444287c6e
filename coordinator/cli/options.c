/* options — the option tables' one parser, --help and usage errors for
 * every `kfleet` command; see options.h. getopt_long does the reading
 * (permuted arguments, --name=value, unique prefixes), so a table is
 * turned into getopt's rows once per call. */
#include "cli/options.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/util.h"
#include "common/xalloc.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void kf_opt_help(FILE *f, const kf_cmd_entry *c)
{
    fprintf(f, "usage: kfleet %s\n", c->usage);
    if (c->help)
        fprintf(f, "\n%s\n", c->help);
}

int kf_opt_error(const kf_cmd_entry *c, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "kfleet %s: ", c->name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nusage: kfleet %s\n", c->usage);
    return 2;
}

/* Whether arg is one of the '|'-separated alternatives of name. */
static int names_match(const char *name, const char *arg)
{
    size_t n = strlen(arg);
    for (const char *p = name; *p;) {
        size_t len = strcspn(p, "|");
        if (len == n && strncmp(p, arg, n) == 0)
            return 1;
        p += len + (p[len] == '|');
    }
    return 0;
}

/* A choice's names for a person: "table, md or json" (an alternative's
 * first spelling only). */
static void add_choices(kf_buf *want, const char *const *names)
{
    size_t n = 0;
    while (names[n])
        n++;
    for (size_t i = 0; i < n; i++)
        kf_buf_addf(want, "%s%.*s",
                    i == 0       ? ""
                    : i + 1 == n ? " or "
                                 : ", ",
                    (int)strcspn(names[i], "|"), names[i]);
}

static int in_range(const kf_option *o, double v)
{
    return (o->flags & KF_OPT_ABOVE_MIN ? v > o->min : v >= o->min) && v <= o->max;
}

/* 0 and the row's value parsed into its place, or -1 for a bad value. */
static int parse_value(const kf_option *o, const char *arg)
{
    char *end;
    double v;
    switch (o->type) {
    case KF_OPTION_FLAG:
        *(int *)o->value = 1;
        return 0;
    case KF_OPTION_STRING:
        *(const char **)o->value = arg;
        return 0;
    case KF_OPTION_CHOICE:
        for (int i = 0; o->names[i]; i++)
            if (names_match(o->names[i], arg)) {
                *(int *)o->value = i;
                return 0;
            }
        return -1;
    case KF_OPTION_INT: {
        errno = 0;
        long n = strtol(arg, &end, 10);
        if (errno || end == arg || *end || !in_range(o, (double)n))
            return -1;
        *(int *)o->value = (int)n;
        return 0;
    }
    case KF_OPTION_NUMBER:
        /* errno aside: an underflow to a tiny number is still in range. */
        v = strtod(arg, &end);
        if (end == arg || *end || !isfinite(v) || !in_range(o, v))
            return -1;
        *(double *)o->value = v;
        return 0;
    case KF_OPTION_DURATION:
        if (kf_parse_duration(arg, &v) != KF_OK || !in_range(o, v))
            return -1;
        *(double *)o->value = v;
        return 0;
    case KF_OPTION_SIZE:
        return kf_opt_parse_size(arg, o->value) == KF_OK ? 0 : -1;
    case KF_OPTION_CALLBACK:
        return o->parse(o->value, arg) == 0 ? 0 : -1;
    case KF_OPTION_END:
        break;
    }
    abort(); /* a row past the table's end: getopt_rows gave no such val */
}

/* The value of row o, arg, into its place: KF_OPT_GO, or 2 after saying
 * what the flag wants. */
static int take(const kf_cmd_entry *c, const kf_option *o, const char *arg)
{
    if (parse_value(o, arg) == 0)
        return KF_OPT_GO;
    kf_buf want = KF_BUF_INIT;
    if (o->type == KF_OPTION_CHOICE)
        add_choices(&want, o->names);
    else
        kf_buf_adds(&want, o->want ? o->want : "another value");
    int rc = kf_opt_error(c, "--%s wants %s, got '%s'", o->long_name, want.data, arg);
    kf_buf_release(&want);
    return rc;
}

/* The getopt_long rows of opts: each row's long name, whether it takes a
 * value, and as its val the short name, else 256 + its index (so a val
 * names its row either way); then --help, val 'h'. */
static struct option *getopt_rows(const kf_option *opts, size_t n, char *shortopts)
{
    struct option *lo = kf_xcalloc(n + 2, sizeof *lo);
    char *p = shortopts;
    *p++ = 'h';
    for (size_t i = 0; i < n; i++) {
        int has_value = opts[i].type != KF_OPTION_FLAG;
        lo[i] = (struct option){opts[i].long_name, has_value ? required_argument : no_argument, 0,
                                opts[i].short_name ? opts[i].short_name : 256 + (int)i};
        if (opts[i].short_name) {
            *p++ = (char)opts[i].short_name;
            if (has_value)
                *p++ = ':';
        }
    }
    *p = '\0';
    lo[n] = (struct option){"help", no_argument, 0, 'h'};
    return lo;
}

/* getopt_long's '?': an unknown flag, a missing value or an unwanted one.
 * Says which, as kf_opt_error, and returns 2. */
static int bad_flag(const kf_cmd_entry *c, char **argv, const struct option *lo)
{
    for (const struct option *o = lo; optopt && o->name; o++)
        if (o->val == optopt)
            return kf_opt_error(
                c, o->has_arg ? "option '--%s' lacks its value" : "option '--%s' takes no value",
                o->name);
    if (optopt > 0 && optopt < 128 && isgraph(optopt))
        return kf_opt_error(c, "unknown option '-%c'", optopt);
    return kf_opt_error(c, "unknown option '%s'", argv[optind - 1]);
}

int kf_opt_parse(const kf_cmd_entry *c, int argc, char **argv, const kf_option *opts)
{
    size_t n = 0;
    while (opts && opts[n].type != KF_OPTION_END)
        n++;
    char *shortopts = kf_xmalloc(2 * n + 2);
    struct option *lo = getopt_rows(opts, n, shortopts);
    /* optind 0 starts getopt afresh (glibc, musl): a process may parse
     * more than one argv (agent-key's subcommand, the tests). */
    optind = 0;
    opterr = 0;
    int rc = KF_OPT_GO, ch;
    while (rc == KF_OPT_GO && (ch = getopt_long(argc, argv, shortopts, lo, NULL)) != -1) {
        if (ch == 'h') {
            kf_opt_help(stdout, c);
            rc = 0;
        } else if (ch == '?') {
            rc = bad_flag(c, argv, lo);
        } else {
            size_t i = 0;
            while (i < n && (ch >= 256 ? (size_t)(ch - 256) != i : opts[i].short_name != ch))
                i++;
            rc = take(c, &opts[i], optarg);
        }
    }
    free(lo);
    free(shortopts);
    return rc;
}

int kf_opt_no_args(const kf_cmd_entry *c, int argc, char **argv)
{
    if (optind < argc)
        return kf_opt_error(c, "unexpected argument '%s'", argv[optind]);
    return KF_OPT_GO;
}

int kf_opt_args(const kf_cmd_entry *c, int argc, char **argv, const char *what)
{
    static const kf_option none[] = {KF_OPT_END};
    int rc = kf_opt_parse(c, argc, argv, none);
    if (rc != KF_OPT_GO)
        return rc;
    if (!what)
        return kf_opt_no_args(c, argc, argv);
    if (argc - optind != 1)
        return kf_opt_error(c, "wants %s", what);
    return KF_OPT_GO;
}

int kf_opt_parse_size(const char *s, uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || v < 0 || !isfinite(v))
        return KF_EINVAL;
    double mul = 1;
    switch (*end) {
    case 'k':
    case 'K':
        mul = 1024.0;
        end++;
        break;
    case 'm':
    case 'M':
        mul = 1024.0 * 1024;
        end++;
        break;
    case 'g':
    case 'G':
        mul = 1024.0 * 1024 * 1024;
        end++;
        break;
    case 't':
    case 'T':
        mul = 1024.0 * 1024 * 1024 * 1024;
        end++;
        break;
    default:
        break;
    }
    if (mul > 1 && (strcmp(end, "iB") == 0 || strcmp(end, "B") == 0))
        end += strlen(end);
    if (*end || v * mul > 1.8e19)
        return KF_EINVAL;
    *out = (uint64_t)(v * mul);
    return KF_OK;
}

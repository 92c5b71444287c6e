/* options — getopt_long, --help and usage errors for every `kfleet`
 * command; see options.h. */
#include "cli/options.h"
#include "common/buf.h"
#include "common/err.h"

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

int kf_opt_next(const kf_cmd_entry *c, int argc, char **argv, const struct option *opts,
                int *exit_code)
{
    const char *shortopts = "h";
    for (const struct option *o = opts; o->name; o++)
        if (o->val == 'o' && o->has_arg == required_argument)
            shortopts = "ho:";
    opterr = 0;
    int ch = getopt_long(argc, argv, shortopts, opts, NULL);
    if (ch == 'h') {
        kf_opt_help(stdout, c);
        *exit_code = 0;
        return KF_OPT_EXIT;
    }
    if (ch == '?' || ch == ':') {
        const char *bad = argv[optind - 1];
        const struct option *o = opts;
        while (optopt && o->name && o->val != optopt)
            o++;
        if (optopt && o->name)
            *exit_code = kf_opt_error(c, "option '--%s' lacks its value", o->name);
        else if (optopt > 0 && optopt < 128 && isgraph(optopt))
            *exit_code = kf_opt_error(c, "unknown option '-%c'", optopt);
        else
            *exit_code = kf_opt_error(c, "unknown option '%s'", bad);
        return KF_OPT_EXIT;
    }
    return ch;
}

int kf_opt_args(const kf_cmd_entry *c, int argc, char **argv, const char *what, int *exit_code)
{
    static const struct option opts[] = {{"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int ch = kf_opt_next(c, argc, argv, opts, exit_code);
    if (ch == KF_OPT_EXIT)
        return ch;
    if (ch != KF_OPT_END) {
        *exit_code = kf_opt_error(c, "unexpected option '%s'", argv[optind - 1]);
        return KF_OPT_EXIT;
    }
    if (argc - optind != (what ? 1 : 0)) {
        *exit_code =
            what ? kf_opt_error(c, "wants %s", what) : kf_opt_error(c, "takes no argument");
        return KF_OPT_EXIT;
    }
    return KF_OPT_END;
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

int kf_opt_format(const kf_cmd_entry *c, const char *arg, const char *const *names, int *fmt)
{
    size_t n = 0;
    for (; names[n]; n++)
        if (names_match(names[n], arg)) {
            *fmt = (int)n;
            return 0;
        }
    kf_buf want = KF_BUF_INIT;
    for (size_t i = 0; i < n; i++)
        kf_buf_addf(&want, "%s%.*s",
                    i == 0       ? ""
                    : i + 1 == n ? " or "
                                 : ", ",
                    (int)strcspn(names[i], "|"), names[i]);
    int rc = kf_opt_error(c, "--format wants %s, got '%s'", want.data ? want.data : "", arg);
    kf_buf_release(&want);
    return rc;
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

/* options — the one option parser of the `kfleet` commands, after git's
 * parse-options: a command declares its flags once, as a table of rows
 * that say each flag's name, its kind of value and where the value goes,
 * and kf_opt_parse reads argv by the table. So every command takes its
 * flags, answers --help and answers a bad flag or value the same way: one
 * line saying what is wrong, the command's usage, exit status 2.
 *
 *     const char *out = NULL;
 *     int fmt = 0, quiet = 0;
 *     const kf_option opts[] = {
 *         KF_OPT_CHOICE("format", &fmt, names),
 *         KF_OPT_STRING('o', "output", &out),
 *         KF_OPT_FLAG("quiet", &quiet),
 *         KF_OPT_END,
 *     };
 *     int rc = kf_opt_parse(&kf_cmd_x, argc, argv, opts);
 *     if (rc != KF_OPT_GO)
 *         return rc;   (--help printed: 0; a bad flag or value: 2)
 *     (argv[optind] is the first argument)
 *
 * A bad value is answered "kfleet CMD: --NAME wants WANT, got 'VALUE'",
 * WANT from the row (for a choice, its names: "table, md or json"). What
 * the flags mean together (one needs another, a bound between two) and
 * the arguments after them are the command's to check. */
#ifndef KF_OPTIONS_H
#define KF_OPTIONS_H

#include "cli/commands.h"

#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>

/* The kinds of value; a table ends with a row of KF_OPTION_END. */
typedef enum kf_option_type {
    KF_OPTION_END = 0,
    KF_OPTION_FLAG,     /* no value: *(int *)value = 1 */
    KF_OPTION_STRING,   /* *(const char **)value = the value, as given */
    KF_OPTION_CHOICE,   /* one of names: *(int *)value = its index */
    KF_OPTION_INT,      /* a whole number in [min, max]: *(int *)value */
    KF_OPTION_NUMBER,   /* a finite number in [min, max]: *(double *)value */
    KF_OPTION_DURATION, /* "90s", "5m" (kf_parse_duration) in [min, max]: *(double *)value, s */
    KF_OPTION_SIZE,     /* "512M", "2G" (kf_opt_parse_size): *(uint64_t *)value, bytes */
    KF_OPTION_CALLBACK, /* parse(value, the value): 0, or -1 when it is not a good one */
} kf_option_type;

/* flags of a row */
enum { KF_OPT_ABOVE_MIN = 1 }; /* the value must be greater than min, not equal to it */

typedef struct kf_option {
    kf_option_type type;
    int short_name;           /* 'o' for -o, or 0: a long name only */
    const char *long_name;    /* "output" for --output */
    void *value;              /* where the value goes, as the type says */
    const char *want;         /* what a bad value is told the flag wants */
    double min, max;          /* INT, NUMBER, DURATION: the range */
    unsigned flags;           /* KF_OPT_ABOVE_MIN */
    const char *const *names; /* CHOICE: NULL-ended; "md|markdown" takes either, names the first */
    int (*parse)(void *value, const char *arg); /* CALLBACK */
} kf_option;

/* The rows. Each checks its value pointer's type at compile time (the
 * conditional's two pointers must agree), as git's OPT_* macros cannot. */
#define KF_OPT_TO_(v, type) ((void *)(1 ? (v) : (type *)0))
#define KF_OPT_FLAG(l, v)                                                                          \
    {                                                                                              \
        .type = KF_OPTION_FLAG, .long_name = (l), .value = KF_OPT_TO_(v, int)                      \
    }
#define KF_OPT_STRING(s, l, v)                                                                     \
    {                                                                                              \
        .type = KF_OPTION_STRING, .short_name = (s), .long_name = (l),                             \
        .value = KF_OPT_TO_(v, const char *)                                                       \
    }
#define KF_OPT_CHOICE(l, v, choices)                                                               \
    {                                                                                              \
        .type = KF_OPTION_CHOICE, .long_name = (l), .value = KF_OPT_TO_(v, int),                   \
        .names = (choices)                                                                         \
    }
#define KF_OPT_INT(l, v, lo, hi, w)                                                                \
    {                                                                                              \
        .type = KF_OPTION_INT, .long_name = (l), .value = KF_OPT_TO_(v, int), .want = (w),         \
        .min = (lo), .max = (hi)                                                                   \
    }
#define KF_OPT_NUMBER(l, v, lo, hi, f, w)                                                          \
    {                                                                                              \
        .type = KF_OPTION_NUMBER, .long_name = (l), .value = KF_OPT_TO_(v, double), .want = (w),   \
        .min = (lo), .max = (hi), .flags = (f)                                                     \
    }
#define KF_OPT_DURATION(l, v, lo, hi, f, w)                                                        \
    {                                                                                              \
        .type = KF_OPTION_DURATION, .long_name = (l), .value = KF_OPT_TO_(v, double), .want = (w), \
        .min = (lo), .max = (hi), .flags = (f)                                                     \
    }
#define KF_OPT_SIZE(l, v, w)                                                                       \
    {                                                                                              \
        .type = KF_OPTION_SIZE, .long_name = (l), .value = KF_OPT_TO_(v, uint64_t), .want = (w)    \
    }
#define KF_OPT_CALLBACK(l, v, fn, w)                                                               \
    {                                                                                              \
        .type = KF_OPTION_CALLBACK, .long_name = (l), .value = (v), .parse = (fn), .want = (w)     \
    }
#define KF_OPT_END                                                                                 \
    {                                                                                              \
        .type = KF_OPTION_END                                                                      \
    }

/* A duration or number with no upper bound. */
#define KF_OPT_ANY HUGE_VAL

enum { KF_OPT_GO = -1 };

/* Reads the flags of a command's argv (from argv[1]; flags and arguments
 * may mix, as getopt_long permutes them) by opts, storing each value
 * where its row says. Every command also takes -h and --help. Returns
 * KF_OPT_GO when the command goes on, its arguments then at
 * argv[optind..argc-1]; else the exit status: 0 after printing the help
 * on stdout, 2 after saying on stderr what is wrong (an unknown flag, a
 * missing or unwanted value, a bad value) with the command's usage. */
int kf_opt_parse(const kf_cmd_entry *c, int argc, char **argv, const kf_option *opts);

/* For a command that takes no flag but --help and either no argument
 * (what = NULL) or one (what names it: "a sweep id"). KF_OPT_GO when the
 * command may go on (argv[optind] is the argument), else the exit status
 * as kf_opt_parse returns it. */
int kf_opt_args(const kf_cmd_entry *c, int argc, char **argv, const char *what);

/* After kf_opt_parse, for a command that takes no argument: KF_OPT_GO when
 * there is none, else "unexpected argument 'X'" as kf_opt_error, and 2. */
int kf_opt_no_args(const kf_cmd_entry *c, int argc, char **argv);

/* Prints "kfleet NAME: MESSAGE" and the command's usage on stderr, and
 * returns 2 (bad usage). */
int kf_opt_error(const kf_cmd_entry *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The command's help: its usage, then what it does and every flag. */
void kf_opt_help(FILE *f, const kf_cmd_entry *c);

/* Parses a size flag's value: "512M", "2G", "1.5GiB", "4096" (bytes).
 * KF_OK, or KF_EINVAL for anything else. */
int kf_opt_parse_size(const char *s, uint64_t *out);

#endif

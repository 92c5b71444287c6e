/* options — the one option parser of the `kfleet` commands: getopt_long
 * over a command's argv, its --help, and its usage errors, so that every
 * command answers a bad flag the same way: one line saying what is wrong,
 * the command's usage, exit status 2.
 *
 * A command's loop:
 *
 *     int ch, rc;
 *     while ((ch = kf_opt_next(&kf_cmd_x, argc, argv, opts, &rc)) != KF_OPT_END) {
 *         switch (ch) {
 *         case KF_OPT_EXIT:
 *             return rc;   (--help printed: 0; a bad flag: 2)
 *         case 'F': ...
 *         }
 *     }
 *     (argv[optind] is the first argument) */
#ifndef KF_OPTIONS_H
#define KF_OPTIONS_H

#include "cli/commands.h"

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>

enum { KF_OPT_END = -1, KF_OPT_EXIT = -2 };

/* The next flag of a command's argv: its val from opts; KF_OPT_END after
 * the last flag (optind is then the first argument); or KF_OPT_EXIT with
 * *exit_code set, 0 after printing the help for -h/--help, 2 after an
 * unknown flag or a missing value (the message and the usage on stderr).
 * The short forms are -h, and -o when opts has an entry whose val is 'o'. */
int kf_opt_next(const kf_cmd_entry *c, int argc, char **argv, const struct option *opts,
                int *exit_code);

/* For a command that takes no flag but --help and either no argument
 * (what = NULL) or one (what names it: "a sweep id"). KF_OPT_END when the
 * command may go on (argv[optind] is the argument), else KF_OPT_EXIT with
 * *exit_code as kf_opt_next sets it. */
int kf_opt_args(const kf_cmd_entry *c, int argc, char **argv, const char *what, int *exit_code);

/* Prints "kfleet NAME: MESSAGE" and the command's usage on stderr, and
 * returns 2 (bad usage). */
int kf_opt_error(const kf_cmd_entry *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The value of a command's --format: the index in names (NULL-ended; an
 * entry "md|markdown" accepts either, and the first is the one named) of
 * arg into *fmt, and 0. Anything else: "--format wants table, md or json,
 * got 'x'" with the usage, as kf_opt_error, and 2. Every command's
 * --format goes through here, so each answers a bad one the same way. */
int kf_opt_format(const kf_cmd_entry *c, const char *arg, const char *const *names, int *fmt);

/* The command's help: its usage, then what it does and every flag. */
void kf_opt_help(FILE *f, const kf_cmd_entry *c);

/* Parses a size flag's value: "512M", "2G", "1.5GiB", "4096" (bytes).
 * KF_OK, or KF_EINVAL for anything else. */
int kf_opt_parse_size(const char *s, uint64_t *out);

#endif

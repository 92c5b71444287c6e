/* kfleet — the command line: the global options, then one command of the
 * table in commands.c (serve, submit, status, report, run, launch, ...),
 * each in its own cmd_*.c.
 *
 * Exit codes: the table usage() prints (and README): 0 success; 1 the work
 * failed or could not be done; 2 bad usage or input (kf_cli_status). */
#include "cli/commands.h"
#include "cli/options.h"
#include "common/log.h"

#include <stdio.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: kfleet [--home DIR] [--log-level LEVEL] COMMAND [ARGS]\n\n"
               "kfleet builds, validates and profiles kernels on a fleet of agents, and judges\n"
               "candidates against problems: a problem owns the inputs, the reference, the\n"
               "tolerances and the secret seeds, candidates bring only the computation\n"
               "(problem:/candidates: in a sweep, docs/problems.md; a directory of problems with\n"
               "candidates matched by name: problems:, docs/sweep-format.md).\n\n"
               "commands:\n");
    for (size_t i = 0; kf_commands[i]; i++)
        fprintf(f, "  %-10s %s\n", kf_commands[i]->name, kf_commands[i]->summary);
    fprintf(f, "\nglobal options:\n"
               "  --home DIR         keep config, state and sockets under DIR (also KFLEET_HOME);\n"
               "                     default ~/.config/kfleet, ~/.local/share/kfleet, "
               "$XDG_RUNTIME_DIR/kfleet\n"
               "  --log-level LEVEL  debug|info|warn|error (default info; logs go to stderr)\n"
               "  -h, --help         this help; `kfleet COMMAND --help` or `kfleet help COMMAND`\n"
               "                     for a command's usage and flags\n"
               "\nexit status, for every command:\n"
               "  0 success\n"
               "  1 the work failed or could not be done: a task failed, compare found a\n"
               "    regression, no coordinator is running, a store or I/O error\n"
               "  2 bad usage or input: an unknown command or flag, a bad value, a file that\n"
               "    cannot be read or parsed (FILE:LINE:COL), a sweep, kernel or key that does\n"
               "    not exist\n");
}

int main(int argc, char **argv)
{
    const char *home = NULL, *level = NULL;
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--home") == 0 && i + 1 < argc) {
            home = argv[++i];
        } else if (strncmp(argv[i], "--home=", 7) == 0) {
            home = argv[i] + 7;
        } else if (strcmp(argv[i], "--log-level") == 0 && i + 1 < argc) {
            level = argv[++i];
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--version") == 0) {
            printf("kfleet %s\n", KF_VERSION);
            return 0;
        } else {
            fprintf(stderr, "kfleet: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    /* `kfleet run` prints progress and a report: the embedded coordinator's
     * routine events would drown them, so it logs warnings only unless asked. */
    int quiet = i < argc && strcmp(argv[i], "run") == 0;
    int lv = kf_log_parse_level(level ? level : quiet ? "warn" : "info");
    if (lv < 0) {
        fprintf(stderr, "kfleet: unknown --log-level '%s' (debug|info|warn|error)\n", level);
        return 2;
    }
    kf_log_setup("kfleet", (kf_log_level)lv);
    if (i >= argc) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[i], "help") == 0) {
        if (i + 1 < argc) {
            const kf_cmd_entry *c = kf_cmd_find(argv[i + 1]);
            if (!c) {
                fprintf(stderr, "kfleet: unknown command '%s'\n", argv[i + 1]);
                return 2;
            }
            kf_opt_help(stdout, c);
            return 0;
        }
        usage(stdout);
        return 0;
    }
    const kf_cmd_entry *c = kf_cmd_find(argv[i]);
    if (!c) {
        fprintf(stderr, "kfleet: unknown command '%s'\n", argv[i]);
        usage(stderr);
        return 2;
    }
    /* The command sees argv from its own name on (its flags from argv[1]:
     * kf_opt_parse). */
    return c->fn(argc - i, argv + i, home);
}

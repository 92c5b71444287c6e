/* commands — the table of `kfleet` commands, which main.c walks to
 * dispatch a command and to print the help; as git's builtin table and
 * tmux's cmd_entry.
 *
 * Each command lives in its own file (cmd_NAME.c) and defines its entry:
 * the name, the function, a one-line summary, the synopsis and the help
 * text with every flag. A new command is a new file, a declaration here and
 * a row in commands.c. */
#ifndef KF_COMMANDS_H
#define KF_COMMANDS_H

#include <stddef.h>

typedef struct kf_cmd_entry {
    const char *name; /* as typed: `kfleet NAME` */
    /* Runs the command on argv from its own name on (getopt's optind is 1),
     * with --home's value or NULL; returns the exit status: 0 done, 1 the
     * work failed, 2 bad usage or bad input. */
    int (*fn)(int argc, char **argv, const char *home);
    const char *summary; /* one line, for the command list of `kfleet --help` */
    const char *usage;   /* the synopsis, every flag, after "usage: kfleet " */
    const char *help;    /* what it does and what each flag means */
} kf_cmd_entry;

/* The entries, each defined in its command's file. */
extern const kf_cmd_entry kf_cmd_run, kf_cmd_serve, kf_cmd_submit, kf_cmd_status, kf_cmd_report,
    kf_cmd_compare, kf_cmd_cancel, kf_cmd_stop, kf_cmd_verify, kf_cmd_init, kf_cmd_agent_key,
    kf_cmd_launch, kf_cmd_teardown, kf_cmd_bundle, kf_cmd_relay, kf_cmd_version;

/* Every command, in the order the help lists them; NULL-terminated. */
extern const kf_cmd_entry *const kf_commands[];

/* The command called name, or NULL. */
const kf_cmd_entry *kf_cmd_find(const char *name);

#endif

/* cmds — `kfleet` subcommands that live outside main.c; each takes argv
 * from its own name on and the --home given (or NULL), and returns the exit
 * status: 0, 1 (failed), 2 (bad usage or input). */
#ifndef KF_CMDS_H
#define KF_CMDS_H

int kf_cmd_init(int argc, char **argv, const char *home);
int kf_cmd_agent_key(int argc, char **argv, const char *home);

#endif

/* cli — what the `kfleet` commands share beyond their options: the home's
 * paths, sweep ids, the sweep file, and the flag SIGINT/SIGTERM set. Each
 * prints its own one-line error, so a command only returns the status. */
#ifndef KF_CLI_H
#define KF_CLI_H

#include "cli/commands.h"
#include "common/paths.h"
#include "core/sweep.h"
#include "proto/control.pb-c.h"
#include "report/report.h"

#include <jansson.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

/* Resolves the home's paths (making its directories when create is set).
 * 0, or 1 after printing why not. */
int kf_cli_paths(const char *home, int create, kf_paths *p);

/* How long a submit or a cancel waits for the coordinator's answer. Both
 * write every task of the sweep before answering: for the largest sweep
 * (1,000,000 tasks) about 2 s on a release build, but 16.6 s (submit) and
 * over 30 s (cancel) in one sanitizer build on a loaded 2-core CI machine.
 * A coordinator at work is not stuck; one that is stuck is still reported. */
#define KF_CLI_SWEEP_REQUEST_MS 120000

/* The exit status for a failure that returned kf code rc: 2 when what the
 * user named does not exist or is not valid (KF_EINVAL, KF_ENOTFOUND: a
 * sweep id, a kernel, a file), else 1 (the work failed). The one table:
 * 0 success; 1 the work failed or kfleet could not do it (a task failed, a
 * regression, no coordinator, a store or I/O error); 2 bad usage or input
 * (a flag, a value, a file, a name that does not exist). */
int kf_cli_status(int rc);

/* The sweep ids after command c's flags (argv[optind] on), each a positive
 * number that fits 32 bits, into ids (at most max; slots past the
 * arguments given are left as they are). KF_OPT_GO, or 2 after
 * kf_opt_error: "a sweep id is a positive number, got 'X'", or an
 * argument past max. Too few is the caller's to say. */
int kf_cli_sweep_ids(const kf_cmd_entry *c, int argc, char **argv, uint32_t *ids, int max);

/* Sends req to the home's coordinator and waits up to timeout_ms for its
 * reply (*rep, the caller's to free with kfleet__control_reply__free_unpacked).
 * 0, or the exit status after saying why not on one line "kfleet CMDNAME: ...":
 * 1 when no coordinator runs or it does not answer, kf_cli_status of the
 * failure otherwise. */
int kf_cli_call(const char *cmdname, const char *home, Kfleet__ControlRequest *req, int timeout_ms,
                Kfleet__ControlReply **rep);

/* Parses a sweep file against the kernels directory (written to kdir).
 * 0; 1 when there is no kernels directory; 2 for an error in the file
 * (printed as FILE:LINE:COL: what; every refused candidate on a line of
 * its own, then how many). keep_going keeps refused candidates as failed
 * rows (--keep-going, the sweep's `refused: fail`). A level's problems
 * left without candidates are printed too, one line each (not an error).
 * *spec is the caller's to destroy. */
int kf_cli_parse_sweep(const char *cmdname, const char *file, int keep_going, kf_sweep_spec **spec,
                       char *kdir, size_t kdir_len);

/* Renders a sweep's report from the store at store_dir (the latest sweep
 * when !have_id) to out_file or stdout. Returns an exit code. */
int kf_cli_render_report(const char *store_dir, uint32_t sweep_id, int have_id,
                         const kf_report_opts *opts, const char *out_file);

/* Prints o as JSON on stdout (json_dumps flags: JSON_INDENT(2) for a
 * document, 0 for one line) and drops the caller's reference. 0, or 1
 * after saying so when o is NULL or cannot be written (out of memory). */
int kf_cli_print_json(json_t *o, size_t flags);

/* From now on SIGINT and SIGTERM set the returned flag instead of ending
 * the process, and SIGPIPE is ignored. */
volatile sig_atomic_t *kf_cli_catch_signals(void);

#endif

/* cmd_cancel — `kfleet cancel SWEEP_ID` and `kfleet stop`: the two
 * commands that are one control request to the running coordinator and
 * one line of answer. */
#include "cli/cli.h"
#include "cli/client.h"
#include "cli/options.h"

#include <stdio.h>

/* Sends req to the home's coordinator; *rep is the caller's to free. 0, or
 * 1 after saying why not. */
static int simple_call(const char *cmdname, const char *home, Kfleet__ControlRequest *req,
                       Kfleet__ControlReply **rep)
{
    kf_paths p;
    if (kf_cli_paths(home, 0, &p))
        return 1;
    kf_err err;
    kf_client *c = NULL;
    if (kf_client_open(&p, &c, &err) != KF_OK) {
        fprintf(stderr, "kfleet %s: %s\n", cmdname, err.msg);
        return 1;
    }
    int rc = kf_client_call(c, req, KF_CLI_SWEEP_REQUEST_MS, rep, &err);
    kf_client_close(&c);
    if (rc) {
        fprintf(stderr, "kfleet %s: %s\n", cmdname, err.msg);
        return kf_cli_status(rc);
    }
    return 0;
}

static int cmd_cancel(int argc, char **argv, const char *home)
{
    int rc;
    if (kf_opt_args(&kf_cmd_cancel, argc, argv, "a sweep id", &rc) == KF_OPT_EXIT)
        return rc;
    uint32_t id;
    if (kf_cli_sweep_id(argv[optind], &id))
        return kf_opt_error(&kf_cmd_cancel, "a sweep id is a positive number, got '%s'",
                            argv[optind]);
    Kfleet__ControlRequest req = KFLEET__CONTROL_REQUEST__INIT;
    req.body_case = KFLEET__CONTROL_REQUEST__BODY_CANCEL;
    req.cancel = id;
    Kfleet__ControlReply *rep = NULL;
    if ((rc = simple_call("cancel", home, &req, &rep)))
        return rc;
    printf("sweep %u cancelled: %u tasks had ended, the rest are cancelled\n", id,
           rep->progress
               ? rep->progress->succeeded + rep->progress->failed + rep->progress->timed_out
               : 0);
    kfleet__control_reply__free_unpacked(rep, NULL);
    return 0;
}

static int cmd_stop(int argc, char **argv, const char *home)
{
    int rc;
    if (kf_opt_args(&kf_cmd_stop, argc, argv, NULL, &rc) == KF_OPT_EXIT)
        return rc;
    Kfleet__ControlRequest req = KFLEET__CONTROL_REQUEST__INIT;
    req.body_case = KFLEET__CONTROL_REQUEST__BODY_SHUTDOWN;
    req.shutdown = 1;
    Kfleet__ControlReply *rep = NULL;
    if ((rc = simple_call("stop", home, &req, &rep)))
        return rc;
    kfleet__control_reply__free_unpacked(rep, NULL);
    printf("coordinator stopping\n");
    return 0;
}

const kf_cmd_entry kf_cmd_cancel = {
    "cancel",
    cmd_cancel,
    "Cancels a running sweep.",
    "cancel SWEEP_ID",
    "Cancels a running sweep: pending tasks end as cancelled, running ones are stopped.",
};

const kf_cmd_entry kf_cmd_stop = {
    "stop",
    cmd_stop,
    "Stops the running coordinator.",
    "stop",
    "Stops the running coordinator (its agents keep their outboxes).",
};

/* cmd_cancel — `kfleet cancel SWEEP_ID` and `kfleet stop`: the two
 * commands that are one control request to the running coordinator and
 * one line of answer. */
#include "cli/cli.h"
#include "cli/options.h"

#include <stdio.h>

static int cmd_cancel(int argc, char **argv, const char *home)
{
    int rc = kf_opt_args(&kf_cmd_cancel, argc, argv, "a sweep id");
    if (rc != KF_OPT_GO)
        return rc;
    uint32_t id;
    if ((rc = kf_cli_sweep_ids(&kf_cmd_cancel, argc, argv, &id, 1)) != KF_OPT_GO)
        return rc;
    Kfleet__ControlRequest req = KFLEET__CONTROL_REQUEST__INIT;
    req.body_case = KFLEET__CONTROL_REQUEST__BODY_CANCEL;
    req.cancel = id;
    Kfleet__ControlReply *rep = NULL;
    if ((rc = kf_cli_call("cancel", home, &req, KF_CLI_SWEEP_REQUEST_MS, &rep)))
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
    int rc = kf_opt_args(&kf_cmd_stop, argc, argv, NULL);
    if (rc != KF_OPT_GO)
        return rc;
    Kfleet__ControlRequest req = KFLEET__CONTROL_REQUEST__INIT;
    req.body_case = KFLEET__CONTROL_REQUEST__BODY_SHUTDOWN;
    req.shutdown = 1;
    Kfleet__ControlReply *rep = NULL;
    if ((rc = kf_cli_call("stop", home, &req, KF_CLI_SWEEP_REQUEST_MS, &rep)))
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

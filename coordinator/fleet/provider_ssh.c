/* provider_ssh — the rows of provider.h's table for a node reached over
 * SSH that runs one agent (launch.c's plain flow): ssh, and the names of
 * the clouds whose pods are such nodes, which differ only in where the
 * work dir goes by default. */
#include "fleet/provider.h"
#include "fleet/launch_int.h"

#define SSH_ROW(nm, wd)                                                                            \
    {                                                                                              \
        .name = nm, .what = "a node reached over SSH", .default_workdir = wd,                      \
        .launch = launch_plain_host, .teardown = launch_plain_teardown,                            \
    }

const kf_provider kf_provider_ssh = SSH_ROW("ssh", NULL);
/* A RunPod pod keeps only /workspace across restarts. */
const kf_provider kf_provider_runpod = SSH_ROW("runpod", "/workspace/kfleet");
const kf_provider kf_provider_brev = SSH_ROW("brev", NULL);
const kf_provider kf_provider_shadeform = SSH_ROW("shadeform", NULL);

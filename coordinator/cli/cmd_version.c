/* cmd_version — `kfleet version`: this build's version, and the protocol
 * and store schema it speaks. */
#include "cli/options.h"
#include "core/store.h"

#include <stdio.h>

static int cmd_version(int argc, char **argv, const char *home)
{
    (void)home;
    int rc = kf_opt_args(&kf_cmd_version, argc, argv, NULL);
    if (rc != KF_OPT_GO)
        return rc;
    printf("kfleet %s (protocol %d, store schema %d)\n", KF_VERSION, 1, KF_STORE_SCHEMA);
    return 0;
}

const kf_cmd_entry kf_cmd_version = {
    "version", cmd_version, "Prints kfleet's version.", "version", "Prints kfleet's version.",
};

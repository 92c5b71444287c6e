/* commands — the table of `kfleet` commands; see commands.h. */
#include "cli/commands.h"

#include <string.h>

const kf_cmd_entry *const kf_commands[] = {
    /* clang-format off */
    &kf_cmd_run,
    &kf_cmd_serve,
    &kf_cmd_submit,
    &kf_cmd_status,
    &kf_cmd_report,
    &kf_cmd_compare,
    &kf_cmd_cancel,
    &kf_cmd_stop,
    &kf_cmd_verify,
    &kf_cmd_init,
    &kf_cmd_agent_key,
    &kf_cmd_launch,
    &kf_cmd_teardown,
    &kf_cmd_bundle,
    &kf_cmd_relay,
    &kf_cmd_version,
    NULL,
    /* clang-format on */
};

const kf_cmd_entry *kf_cmd_find(const char *name)
{
    for (size_t i = 0; kf_commands[i]; i++)
        if (strcmp(kf_commands[i]->name, name) == 0)
            return kf_commands[i];
    return NULL;
}

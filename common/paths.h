/* paths — where kfleet keeps config, state and sockets.
 *
 * With a home (--home DIR or KFLEET_HOME=DIR) everything lives under it:
 * DIR/config, DIR/state, DIR/run — so two fleets never collide. Without one,
 * the XDG places: ~/.config/kfleet, ~/.local/share/kfleet and
 * $XDG_RUNTIME_DIR/kfleet (or /tmp/kfleet-UID). Directories are made 0700. */
#ifndef KF_PATHS_H
#define KF_PATHS_H

#include "common/err.h"

#include <limits.h>

typedef struct kf_paths {
    char config[PATH_MAX];
    char state[PATH_MAX];
    char run[PATH_MAX];
    char store[PATH_MAX];               /* state/store: the coordinator's LMDB */
    char lock[PATH_MAX];                /* state/coordinator.lock */
    char control_endpoint[PATH_MAX];    /* ipc://run/control.sock */
    char agent_endpoint_file[PATH_MAX]; /* run/agent-endpoint: where agents connect */
    char agents_dir[PATH_MAX];          /* state/agents: local agents' work dirs */
    char keys[PATH_MAX];                /* state/keys: the Curve keys of the agent link */
    char coord_key[PATH_MAX];           /* state/keys/coordinator.key (0600) */
    char coord_pub[PATH_MAX];           /* state/keys/coordinator.pub: its public half */
    char allow[PATH_MAX];               /* state/keys/agents.allow: accepted agent keys */
    char build_trust[PATH_MAX]; /* keys/builders.trust: agents trusted to build for others */
} kf_paths;

/* home: the --home flag or NULL (then KFLEET_HOME, then XDG). Creates the
 * directories when `create` is set. */
int kf_paths_resolve(kf_paths *p, const char *home, int create, kf_err *err);

#endif

/* paths — config/state/run directories; see paths.h. */
#include "common/paths.h"
#include "common/util.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((format(printf, 4, 0))) static int fit(char *dst, size_t len, kf_err *err,
                                                     const char *fmt, const char *a, const char *b)
{
    int n = snprintf(dst, len, fmt, a, b);
    if (n < 0 || (size_t)n >= len)
        return kf_err_set(err, KF_EINVAL, "path too long under %s", a);
    return KF_OK;
}

int kf_paths_resolve(kf_paths *p, const char *home, int create, kf_err *err)
{
    memset(p, 0, sizeof *p);
    if (!home || !*home)
        home = getenv("KFLEET_HOME");
    int rc = KF_OK;
    if (home && *home) {
        char abs[PATH_MAX];
        if (home[0] != '/') {
            char cwd[PATH_MAX];
            if (!getcwd(cwd, sizeof cwd))
                return kf_err_set(err, KF_EIO, "cannot read the current directory");
            if ((rc = fit(abs, sizeof abs, err, "%s/%s", cwd, home)))
                return rc;
        } else {
            snprintf(abs, sizeof abs, "%s", home);
        }
        if ((rc = fit(p->config, sizeof p->config, err, "%s/%s", abs, "config")) ||
            (rc = fit(p->state, sizeof p->state, err, "%s/%s", abs, "state")) ||
            (rc = fit(p->run, sizeof p->run, err, "%s/%s", abs, "run")))
            return rc;
    } else {
        const char *h = getenv("HOME");
        if (!h || !*h)
            return kf_err_set(err, KF_EINVAL,
                              "HOME is not set; pass --home DIR or set KFLEET_HOME");
        const char *xc = getenv("XDG_CONFIG_HOME"), *xd = getenv("XDG_DATA_HOME");
        const char *xr = getenv("XDG_RUNTIME_DIR");
        if (xc && *xc)
            rc = fit(p->config, sizeof p->config, err, "%s/%s", xc, "kfleet");
        else
            rc = fit(p->config, sizeof p->config, err, "%s/%s", h, ".config/kfleet");
        if (!rc && xd && *xd)
            rc = fit(p->state, sizeof p->state, err, "%s/%s", xd, "kfleet");
        else if (!rc)
            rc = fit(p->state, sizeof p->state, err, "%s/%s", h, ".local/share/kfleet");
        if (!rc && xr && *xr) {
            rc = fit(p->run, sizeof p->run, err, "%s/%s", xr, "kfleet");
        } else if (!rc) {
            char uid[32];
            snprintf(uid, sizeof uid, "%u", (unsigned)getuid());
            rc = fit(p->run, sizeof p->run, err, "%s/kfleet-%s", "/tmp", uid);
        }
        if (rc)
            return rc;
    }
    if ((rc = fit(p->store, sizeof p->store, err, "%s/%s", p->state, "store")) ||
        (rc = fit(p->lock, sizeof p->lock, err, "%s/%s", p->state, "coordinator.lock")) ||
        (rc = fit(p->control_endpoint, sizeof p->control_endpoint, err, "ipc://%s/%s", p->run,
                  "control.sock")) ||
        (rc = fit(p->agent_endpoint_file, sizeof p->agent_endpoint_file, err, "%s/%s", p->run,
                  "agent-endpoint")) ||
        (rc = fit(p->agents_dir, sizeof p->agents_dir, err, "%s/%s", p->state, "agents")) ||
        (rc = fit(p->keys, sizeof p->keys, err, "%s/%s", p->state, "keys")) ||
        (rc = fit(p->coord_key, sizeof p->coord_key, err, "%s/%s", p->keys, "coordinator.key")) ||
        (rc = fit(p->coord_pub, sizeof p->coord_pub, err, "%s/%s", p->keys, "coordinator.pub")) ||
        (rc = fit(p->allow, sizeof p->allow, err, "%s/%s", p->keys, "agents.allow")) ||
        (rc = fit(p->build_trust, sizeof p->build_trust, err, "%s/%s", p->keys, "builders.trust")))
        return rc;
    /* ZeroMQ's ipc transport is bound by sun_path (108 bytes). */
    if (strlen(p->control_endpoint) - strlen("ipc://") >= 107)
        return kf_err_set(err, KF_EINVAL,
                          "control socket path %s is longer than 107 bytes; use a shorter --home",
                          p->control_endpoint + 6);
    /* kfleet's own directories hold keys, the store and the control socket:
     * each must be this user's and writable by nobody else (a second local
     * user could have made /tmp/kfleet-UID, 0777, with symlinks inside).
     * Their parents are made as needed and not judged: /tmp is everyone's. */
    const char *own[] = {p->config, p->state, p->run, p->store, p->keys};
    for (size_t i = 0; i < sizeof own / sizeof *own; i++) {
        if (create) {
            char parent[PATH_MAX];
            snprintf(parent, sizeof parent, "%s", own[i]);
            char *slash = strrchr(parent, '/');
            if (slash && slash != parent) {
                *slash = '\0';
                if ((rc = kf_mkdirs(parent, 0700, err)))
                    return rc;
            }
            if ((rc = kf_private_dir(own[i], err)))
                return rc;
        } else if ((rc = kf_check_private_dir(own[i], err)) && rc != KF_ENOTFOUND) {
            /* Nothing is made by a command that only reads; what exists must
             * still be ours before a socket in it is trusted. */
            return rc;
        }
    }
    return KF_OK;
}

/* provider — the plug for the kinds of node a fleet is made of, after
 * SQLite's sqlite3_vfs: a provider is one row of function pointers,
 * registered by name, and the rest of the fleet code calls through the row
 * of a host (kf_fleet_host.prov) without ever asking which one it has.
 *
 * The built-in rows are provider.c's table: runpod, brev, shadeform and
 * ssh (provider_ssh.c: a node reached over SSH that runs one agent; they
 * differ only in the default work dir), a cluster's login node whose
 * agents are the cluster's batch jobs, one per node (its own
 * provider_NAME.c and files), and local (provider_local.c: the agents of
 * `kfleet run`, child processes on this machine). Adding a provider
 * (Kubernetes, a cloud API) is a provider_NAME.c with its row and its own
 * files, and one line in provider.c's table; tests/layout/check_layout.py
 * refuses its name anywhere else.
 *
 * Only the inventory parser (fleet.c) and the daemon's request decoder
 * (fleet_pb.c) look a row up by name; everything else follows h->prov. */
#ifndef KF_PROVIDER_H
#define KF_PROVIDER_H

#include "common/err.h"
#include "core/yamldoc.h"
#include "proto/control.pb-c.h"
#include "proto/kfleet.pb-c.h"

#include <stddef.h>
#include <yaml.h>

struct job; /* one host's launch (fleet/launch_int.h) */
struct kf_fleet_host;
struct kf_launch_opts;

typedef struct kf_provider {
    const char *name; /* the inventory's `provider:` value */
    const char *what; /* what a host of it is, for messages: "a cluster's login node" */
    /* The host's work dir when neither it nor `defaults:` gives one. */
    const char *default_workdir;
    /* Not for inventories or launch requests: a row the code drives
     * itself (kfleet run's local agents, provider_local.h). */
    int internal;
    /* The key of the provider's own block in a host entry (its name), or
     * NULL when it has none. parse turns the block (NULL when the host
     * has none) into a new *block, or fails with y's located error; dup
     * and free copy and free a host's block (NULL: it has none). */
    const char *block_key;
    int (*parse)(kf_yaml *y, const yaml_node_t *n, void **block);
    void *(*dup)(const void *block);
    void (*free)(void **block);

    /* The provider's part of a LaunchHost (the daemon's request): its
     * block, as x->block, bytes in a message of the provider's own that
     * nothing else reads. to_pb packs h's block into x->block (x owns
     * them; free_pb frees them); from_pb unpacks x->block, checks it and
     * fills h->block, KF_EINVAL in err when it does not decode or is out of
     * range. NULL: the provider sends nothing beyond the common fields. */
    void (*to_pb)(const struct kf_fleet_host *h, Kfleet__LaunchHost *x);
    void (*free_pb)(Kfleet__LaunchHost *x);
    int (*from_pb)(const Kfleet__LaunchHost *x, struct kf_fleet_host *h, kf_err *err);

    /* How many agents the host runs, named NAME-0 .. NAME-(n-1); NULL: one
     * agent named as the host. */
    int (*nagents)(const struct kf_fleet_host *h);

    /* Brings the host's agents up, or stops them, on the job's thread;
     * the outcome goes into j->r (launch.h's kf_launch_result). */
    void (*launch)(struct job *j);
    void (*teardown)(struct job *j);

    /* The daemon's watch of launched hosts, for `kfleet status` (NULL:
     * none): watch_new makes the provider's watch state; watch_start
     * follows h (launched with o) until watch_stop of its name; status
     * appends the jobs the watch saw to the StatusReply's provider_jobs
     * (fleet/jobs.h's kf_jobs_add), which kf_jobs_free takes out again
     * after the reply is sent. */
    void *(*watch_new)(void);
    void (*watch_destroy)(void **w);
    void (*watch_start)(void *w, const struct kf_fleet_host *h, const struct kf_launch_opts *o);
    void (*watch_stop)(void *w, const char *name);
    void (*status)(void *w, Kfleet__StatusReply *st);
} kf_provider;

/* The row named name, or NULL. */
const kf_provider *kf_provider_find(const char *name);
/* The i-th row (built-ins first, then the registered ones, in order), or
 * NULL past the last. */
const kf_provider *kf_provider_at(size_t i);
/* The names of the rows an inventory may name (not the internal ones),
 * NULL-terminated, in kf_provider_at's order (for "did you mean" and the
 * error that lists them). */
const char *const *kf_provider_names(void);

/* Adds a row (like sqlite3_vfs_register): p must outlive its use and its
 * name be new. The table is process-wide, the one place a process keeps
 * its providers, and is written before it is read (at start-up, in a
 * test's set-up): KF_EEXIST for a taken name, KF_EFULL when it is full,
 * KF_EINVAL for a row without name, launch or teardown. */
int kf_provider_register(const kf_provider *p, kf_err *err);

#endif

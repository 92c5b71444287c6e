/* fleet — the inventory file (YAML): which nodes `kfleet launch` brings up
 * and how to reach each over SSH. docs/inventory.md is the user reference.
 *
 *   defaults: {user: ubuntu, identity: ~/.ssh/id_ed25519}   # optional
 *   hosts:
 *     - name: pod1
 *       provider: ssh               # a row of provider.h's table; ssh by default
 *       host: 203.0.113.7
 *       port: 22017
 *       user: root
 *       identity: ~/.ssh/pod1       # key file; absent: ssh-agent
 *       workdir: /workspace/kfleet
 *       labels: [h100, spot]        # a list of strings
 *     - ssh_alias: lambda1          # a Host of ~/.ssh/config
 *
 * A value comes from, first to last: the host entry, its ssh_alias (HostName,
 * Port, User, IdentityFile of the first matching Host blocks, as OpenSSH
 * reads them), `defaults:`, the built-in defaults (port 22, user root,
 * provider ssh, the provider's default workdir, else ~/kfleet). A host's
 * provider may add a block of its own (provider.h's block_key).
 *
 * A workdir that starts with "~" is kept as written: the remote shell (and
 * the preflight script) expands it on the node. A local `identity` starting
 * with "~/" is expanded here with the local home; a relative one is resolved
 * against the inventory file's directory (kf_fleet_load) or opts->base_dir.
 *
 * The ssh config read for ssh_alias is opts->ssh_config, else
 * $KFLEET_SSH_CONFIG, else ~/.ssh/config; it is read only when some host
 * names an ssh_alias. Every error is KF_EINVAL with "FILE:LINE:COL: what;
 * what to do" in err, and *out is left untouched. */
#ifndef KF_FLEET_H
#define KF_FLEET_H

#include "common/err.h"

#include <stddef.h>

#define KF_FLEET_MAX_HOSTS 4096

typedef struct kf_fleet_host {
    char *name;     /* unique in the fleet; [A-Za-z0-9._-], defaults to ssh_alias or host */
    char *provider; /* the name of its row in provider.h's table */
    char *host;     /* hostname or IP address to connect to */
    int port;
    char *user;
    char *identity; /* key file path, NULL = ssh-agent */
    char *workdir;  /* absolute, or "~"-relative for the remote shell to expand */
    char **labels;
    size_t nlabels;
    /* `price`: what one GPU of the node costs per hour, for the sweep's
     * cost in reports (the agent is started with --price); 0: none. */
    double price;
    /* Added beyond the launcher's needs: where the entry came from. */
    char *ssh_alias; /* NULL when none */
    int line, col;   /* 1-based position of the host entry in the inventory */
    /* Its provider's row, and what the row parsed from the host's own
     * block (NULL when the provider has none). */
    const struct kf_provider *prov;
    void *block;
} kf_fleet_host;

typedef struct kf_fleet {
    kf_fleet_host *hosts;
    size_t nhosts;
} kf_fleet;

typedef struct kf_fleet_opts {
    const char *ssh_config; /* NULL: $KFLEET_SSH_CONFIG, else HOME/.ssh/config */
    const char *home;       /* local home for "~" and %d; NULL: $HOME, else the passwd entry */
    const char *base_dir;   /* resolves relative identity paths; NULL: kept as written */
} kf_fleet_opts;

/* Reads and parses the inventory at path (relative identities resolve against
 * its directory). KF_EIO when the file cannot be read, KF_EINVAL on bad
 * content. On success *out is the caller's, freed with kf_fleet_destroy. */
int kf_fleet_load(const char *path, kf_fleet **out, kf_err *err);
/* Same with options (opts may be NULL; its base_dir is ignored: the file's
 * directory is used). */
int kf_fleet_load_opts(const char *path, const kf_fleet_opts *opts, kf_fleet **out, kf_err *err);

/* Parses an inventory from memory; path only names the source in errors. Also
 * the fuzz entry point: any bytes give KF_OK or a located KF_EINVAL. */
int kf_fleet_parse(const char *path, const char *text, size_t len, kf_fleet **out, kf_err *err);
int kf_fleet_parse_opts(const char *path, const char *text, size_t len, const kf_fleet_opts *opts,
                        kf_fleet **out, kf_err *err);

/* A deep copy of src into *dst (the caller's, freed with
 * kf_fleet_host_release), for what outlives the fleet it came from. */
void kf_fleet_host_copy(kf_fleet_host *dst, const kf_fleet_host *src);
/* Frees what a host owns (not the struct itself). */
void kf_fleet_host_release(kf_fleet_host *h);

/* The host named name, or NULL. */
const kf_fleet_host *kf_fleet_find(const kf_fleet *f, const char *name);

/* Frees the fleet and sets *f to NULL; NULL and *f == NULL are fine. */
void kf_fleet_destroy(kf_fleet **f);

#endif

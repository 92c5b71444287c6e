/* cmd_keys — `kfleet init` and `kfleet agent-key add|list|revoke`: the
 * coordinator's Curve key pair and the list of agent keys it accepts.
 *
 * These edit files, not the daemon: a running coordinator re-reads the
 * allow list when it changes (within its 200 ms check), so a revocation
 * needs no control request and works whether or not it is running. */
#include "cli/cmds.h"
#include "common/keys.h"
#include "common/paths.h"

#include <jansson.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

static int resolve_paths(const char *cmdname, const char *home, kf_paths *p)
{
    kf_err err;
    if (kf_paths_resolve(p, home, 1, &err) != KF_OK) {
        fprintf(stderr, "kfleet %s: %s\n", cmdname, err.msg);
        return 1;
    }
    return 0;
}

int kf_cmd_init(int argc, char **argv, const char *home)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            printf("usage: kfleet init\n\nMakes the home's directories and the coordinator's "
                   "Curve key pair (kept if they exist)\nand prints the public key agents "
                   "need (kfleet-agent --server-key KEY).\n");
            return 0;
        }
        fprintf(stderr, "kfleet init: takes no argument, got '%s'\n", argv[i]);
        return 2;
    }
    kf_paths p;
    if (resolve_paths("init", home, &p))
        return 1;
    kf_err err;
    kf_keypair kp;
    if (kf_keys_coordinator(p.coord_key, p.coord_pub, &kp, &err) != KF_OK) {
        fprintf(stderr, "kfleet init: %s\n", err.msg);
        return 1;
    }
    kf_allow a = {0};
    if (kf_allow_load(p.allow, &a, &err) != KF_OK) {
        fprintf(stderr, "kfleet init: %s\n", err.msg);
        return 1;
    }
    printf("coordinator key: %s\n  key pair:    %s (0600)\n  public key:  %s\n  allow list:  "
           "%s (%zu agent keys)\n  store:       %s\n"
           "agents connect with: kfleet-agent --coordinator tcp://HOST:PORT --server-key %s\n",
           kp.pub, p.coord_key, p.coord_pub, p.allow, a.n, p.store, kp.pub);
    kf_allow_free(&a);
    memset(&kp, 0, sizeof kp);
    return 0;
}

static int key_usage(FILE *f)
{
    fprintf(f, "usage: kfleet agent-key add KEY NAME | list [--format table|json] | revoke "
               "NAME|KEY\n\n"
               "The agent keys the coordinator accepts (STATE/keys/agents.allow).\n"
               "  add KEY NAME    accept KEY (Z85, or a file holding it: an agent's agent.key\n"
               "                  or `kfleet-agent --show-key` output) under NAME\n"
               "  list            the accepted keys\n"
               "  revoke WHICH    remove the key(s) named WHICH (a name or a key); a running\n"
               "                  coordinator cuts the agent off at its next check (200 ms)\n");
    return f == stdout ? 0 : 2;
}

int kf_cmd_agent_key(int argc, char **argv, const char *home)
{
    if (argc < 2)
        return key_usage(stderr);
    const char *sub = argv[1];
    if (strcmp(sub, "-h") == 0 || strcmp(sub, "--help") == 0)
        return key_usage(stdout);
    kf_paths p;
    kf_err err;
    if (strcmp(sub, "add") == 0) {
        if (argc != 4) {
            fprintf(stderr, "kfleet agent-key add: wants KEY and NAME\n");
            return key_usage(stderr);
        }
        char pub[KF_KEY_Z85 + 1];
        if (kf_keys_resolve_public(argv[2], pub, &err) != KF_OK) {
            fprintf(stderr, "kfleet agent-key add: %s\n", err.msg);
            return 2;
        }
        if (resolve_paths("agent-key", home, &p))
            return 1;
        int rc = kf_allow_add(p.allow, pub, argv[3], &err);
        if (rc) {
            fprintf(stderr, "kfleet agent-key add: %s\n", err.msg);
            return rc == KF_EINVAL || rc == KF_EEXIST ? 2 : 1;
        }
        printf("accepted %s as %s\n", pub, argv[3]);
        return 0;
    }
    if (strcmp(sub, "list") == 0) {
        int json = 0;
        for (int i = 2; i < argc; i++) {
            if (strcmp(argv[i], "--format") == 0 && i + 1 < argc &&
                (strcmp(argv[i + 1], "json") == 0 || strcmp(argv[i + 1], "table") == 0)) {
                json = strcmp(argv[++i], "json") == 0;
            } else {
                fprintf(stderr, "kfleet agent-key list: unexpected '%s'\n", argv[i]);
                return key_usage(stderr);
            }
        }
        if (resolve_paths("agent-key", home, &p))
            return 1;
        kf_allow a = {0};
        if (kf_allow_load(p.allow, &a, &err) != KF_OK) {
            fprintf(stderr, "kfleet agent-key list: %s\n", err.msg);
            return 1;
        }
        if (json) {
            json_t *arr = json_array();
            for (size_t i = 0; i < a.n; i++)
                json_array_append_new(
                    arr, json_pack("{s:s,s:s}", "name", a.e[i].name, "key", a.e[i].pub));
            char *s = json_dumps(arr, JSON_INDENT(2));
            printf("%s\n", s ? s : "[]");
            free(s);
            json_decref(arr);
        } else if (a.n == 0) {
            printf("no agent keys accepted yet (%s)\n", p.allow);
        } else {
            printf("%-24s %s\n", "name", "key");
            for (size_t i = 0; i < a.n; i++)
                printf("%-24s %s\n", a.e[i].name, a.e[i].pub);
        }
        kf_allow_free(&a);
        return 0;
    }
    if (strcmp(sub, "revoke") == 0) {
        if (argc != 3) {
            fprintf(stderr, "kfleet agent-key revoke: wants a NAME or a KEY\n");
            return key_usage(stderr);
        }
        if (resolve_paths("agent-key", home, &p))
            return 1;
        size_t removed = 0;
        if (kf_allow_remove(p.allow, argv[2], &removed, &err) != KF_OK) {
            fprintf(stderr, "kfleet agent-key revoke: %s\n", err.msg);
            return 1;
        }
        if (removed == 0) {
            fprintf(stderr,
                    "kfleet agent-key revoke: no accepted key is named or equal to '%s' "
                    "(`kfleet agent-key list` shows them)\n",
                    argv[2]);
            return 1;
        }
        printf("revoked %zu key%s matching %s\n", removed, removed == 1 ? "" : "s", argv[2]);
        return 0;
    }
    fprintf(stderr, "kfleet agent-key: unknown subcommand '%s'\n", sub);
    return key_usage(stderr);
}

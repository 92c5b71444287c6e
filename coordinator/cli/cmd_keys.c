/* cmd_keys — `kfleet init` and `kfleet agent-key add|list|revoke`: the
 * coordinator's Curve key pair and the list of agent keys it accepts.
 *
 * These edit files, not the daemon: a running coordinator re-reads the
 * allow list when it changes (within its 200 ms check), so a revocation
 * needs no control request and works whether or not it is running. */
#include "cli/cli.h"
#include "common/json.h"
#include "common/buf.h"
#include "cli/options.h"
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

static int cmd_init(int argc, char **argv, const char *home)
{
    int rc = kf_opt_args(&kf_cmd_init, argc, argv, NULL);
    if (rc != KF_OPT_GO)
        return rc;
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
    kf_buf key = KF_BUF_INIT;
    kf_buf_add_shell_word(&key, kp.pub);
    printf("coordinator key: %s\n  key pair:    %s (0600)\n  public key:  %s\n  allow list:  "
           "%s (%zu agent keys)\n  store:       %s\n"
           "agents connect with: kfleet-agent --coordinator tcp://HOST:PORT --server-key %s\n",
           kp.pub, p.coord_key, p.coord_pub, p.allow, a.n, p.store, key.data);
    kf_buf_release(&key);
    kf_allow_free(&a);
    memset(&kp, 0, sizeof kp);
    return 0;
}

/* The subcommands, for their usage errors. */
static const kf_cmd_entry key_add = {"agent-key add", NULL, NULL, "agent-key add KEY NAME", NULL};
static const kf_cmd_entry key_list = {"agent-key list", NULL, NULL,
                                      "agent-key list [--format table|json]", NULL};
static const kf_cmd_entry key_revoke = {"agent-key revoke", NULL, NULL, "agent-key revoke NAME|KEY",
                                        NULL};

/* `agent-key list [--format table|json]`, argv from "list" on. */
static int key_list_cmd(int argc, char **argv, const char *home)
{
    int json = 0;
    const kf_option opts[] = {
        KF_OPT_CHOICE("format", &json, ((const char *const[]){"table", "json", NULL})),
        KF_OPT_END,
    };
    int rc = kf_opt_parse(&key_list, argc, argv, opts);
    if (rc != KF_OPT_GO || (rc = kf_opt_no_args(&key_list, argc, argv)) != KF_OPT_GO)
        return rc;
    kf_paths p;
    if (resolve_paths("agent-key", home, &p))
        return 1;
    kf_err err;
    kf_allow a = {0};
    if (kf_allow_load(p.allow, &a, &err) != KF_OK) {
        fprintf(stderr, "kfleet agent-key list: %s\n", err.msg);
        return 1;
    }
    rc = 0;
    if (json) {
        json_t *arr = json_array();
        for (size_t i = 0; i < a.n; i++)
            json_array_append_new(
                arr, json_pack("{s:o,s:s}", "name", kf_json_str(a.e[i].name), "key", a.e[i].pub));
        rc = kf_cli_print_json(arr, JSON_INDENT(2));
    } else if (a.n == 0) {
        printf("no agent keys accepted yet (%s)\n", p.allow);
    } else {
        printf("%-24s %s\n", "name", "key");
        for (size_t i = 0; i < a.n; i++)
            printf("%-24s %s\n", a.e[i].name, a.e[i].pub);
    }
    kf_allow_free(&a);
    return rc;
}

static int cmd_agent_key(int argc, char **argv, const char *home)
{
    if (argc < 2)
        return kf_opt_error(&kf_cmd_agent_key, "wants add, list or revoke");
    const char *sub = argv[1];
    if (strcmp(sub, "-h") == 0 || strcmp(sub, "--help") == 0) {
        kf_opt_help(stdout, &kf_cmd_agent_key);
        return 0;
    }
    kf_paths p;
    kf_err err;
    if (strcmp(sub, "add") == 0) {
        if (argc != 4)
            return kf_opt_error(&key_add, "wants KEY and NAME");
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
    if (strcmp(sub, "list") == 0)
        return key_list_cmd(argc - 1, argv + 1, home);
    if (strcmp(sub, "revoke") == 0) {
        if (argc != 3)
            return kf_opt_error(&key_revoke, "wants a NAME or a KEY");
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
            return 2;
        }
        printf("revoked %zu key%s matching %s\n", removed, removed == 1 ? "" : "s", argv[2]);
        return 0;
    }
    return kf_opt_error(&kf_cmd_agent_key, "unknown subcommand '%s'", sub);
}

const kf_cmd_entry kf_cmd_init = {
    "init",
    cmd_init,
    "Makes the home and the coordinator's key pair.",
    "init",
    "Makes the home and the coordinator's Curve key pair (kept when they exist) and prints\n"
    "the public key agents connect with (kfleet-agent --server-key KEY). `kfleet serve`\n"
    "and `kfleet run` do this on their first start too.",
};

const kf_cmd_entry kf_cmd_agent_key = {
    "agent-key",
    cmd_agent_key,
    "Adds, lists or revokes the agent keys the coordinator accepts.",
    "agent-key add KEY NAME | list [--format table|json] | revoke NAME|KEY",
    "The agent keys the coordinator accepts (STATE/keys/agents.allow). The agent link is\n"
    "CurveZMQ: an agent whose key is not listed is refused at the handshake and logged\n"
    "with its key and address.\n\n"
    "  add KEY NAME   accept KEY (Z85, or a file holding it: an agent's agent.key or\n"
    "                 `kfleet-agent --show-key` output) under NAME\n"
    "  list           the accepted keys (--format json)\n"
    "  revoke WHICH   remove the key(s) named WHICH (a name or a key); a running\n"
    "                 coordinator drops the agent's messages at once (its next check,\n"
    "                 200 ms) and requeues its tasks",
};

/* cmd_serve — `kfleet serve`: the coordinator daemon, in the foreground
 * until SIGINT, SIGTERM or `kfleet stop`. One per home: the home's lock
 * file says whether one runs. */
#include "cli/cli.h"
#include "common/buf.h"
#include "cli/options.h"
#include "common/keys.h"
#include "common/util.h"
#include "daemon/coord.h"

#include <stdio.h>
#include <unistd.h>

static int cmd_serve(int argc, char **argv, const char *home)
{
    const kf_cmd_entry *self = &kf_cmd_serve;
    const char *bind = "tcp://127.0.0.1:*";
    double hb_timeout = 10.0, hb_interval = 1.0;
    int no_share = 0;
    const kf_option opts[] = {
        KF_OPT_STRING(0, "bind", &bind),
        KF_OPT_DURATION("heartbeat-timeout", &hb_timeout, 0, KF_OPT_ANY, KF_OPT_ABOVE_MIN,
                        "a duration like 10s"),
        KF_OPT_DURATION("heartbeat-interval", &hb_interval, 0, KF_OPT_ANY, KF_OPT_ABOVE_MIN,
                        "a duration like 1s"),
        KF_OPT_FLAG("no-shared-builds", &no_share),
        KF_OPT_END,
    };
    int rc = kf_opt_parse(self, argc, argv, opts);
    if (rc != KF_OPT_GO || (rc = kf_opt_no_args(self, argc, argv)) != KF_OPT_GO)
        return rc;
    if (hb_timeout < 2 * hb_interval)
        return kf_opt_error(self, "--heartbeat-timeout must be at least twice the interval (agents "
                                  "would be declared lost between two heartbeats)");
    kf_paths p;
    if (kf_cli_paths(home, 1, &p))
        return 1;
    kf_err err;
    int lock = kf_lock_file(p.lock, &err);
    if (lock < 0) {
        fprintf(stderr, "kfleet serve: %s\n",
                err.code == KF_EBUSY ? "a coordinator is already running for this home; "
                                       "`kfleet status` talks to it, or pass --home DIR"
                                     : err.msg);
        return 1;
    }
    volatile sig_atomic_t *stop = kf_cli_catch_signals();
    kf_coord_config cfg = {0};
    cfg.store_dir = p.store;
    cfg.agent_bind = bind;
    cfg.control_endpoint = p.control_endpoint;
    cfg.endpoint_file = p.agent_endpoint_file;
    cfg.key_file = p.coord_key;
    cfg.pub_file = p.coord_pub;
    cfg.allow_file = p.allow;
    cfg.heartbeat_interval_s = hb_interval;
    cfg.heartbeat_timeout_s = hb_timeout;
    cfg.no_shared_builds = no_share;
    cfg.trust_file = p.build_trust;
    kf_coord *c = NULL;
    if (kf_coord_new(&cfg, &c, &err) != KF_OK) {
        fprintf(stderr, "kfleet serve: %s\n", err.msg);
        close(lock);
        return 1;
    }
    char pub[64] = "";
    kf_keys_read_public(p.coord_pub, pub, &err);
    /* The commands to paste, quoted word by word: a Z85 key holds $ { ( ) &
     * and the like. An agent here shares this home: it finds the key and
     * enrolls its own; an agent elsewhere is given the key and accepted by
     * hand. */
    kf_buf here = KF_BUF_INIT, there = KF_BUF_INIT;
    kf_buf_adds(&here, "kfleet-agent --coordinator ");
    kf_buf_add_shell_word(&here, kf_coord_agent_endpoint(c));
    kf_buf_adds(&there, "kfleet-agent --coordinator ");
    kf_buf_add_shell_word(&there, kf_coord_agent_endpoint(c));
    kf_buf_adds(&there, " --server-key ");
    kf_buf_add_shell_word(&there, pub);
    printf("kfleet coordinator %s (pid %d)\n  agents connect to: %s\n  its public key:    %s\n"
           "  start one: %s\n"
           "  elsewhere: %s\n"
           "             (then accept that agent's key here: kfleet agent-key add KEY NAME)\n"
           "  store: %s\n",
           KF_VERSION, (int)getpid(), kf_coord_agent_endpoint(c), pub, here.data, there.data,
           p.store);
    kf_buf_release(&here);
    kf_buf_release(&there);
    fflush(stdout);
    rc = kf_coord_run(c, stop, &err);
    if (rc)
        fprintf(stderr, "kfleet serve: %s\n", err.msg);
    kf_coord_destroy(&c);
    close(lock);
    return rc ? 1 : 0;
}

const kf_cmd_entry kf_cmd_serve = {
    "serve",
    cmd_serve,
    "Runs the coordinator daemon.",
    "serve [--bind ENDPOINT] [--heartbeat-interval DUR] [--heartbeat-timeout DUR] "
    "[--no-shared-builds]",
    "Runs the coordinator daemon: agents connect to its ROUTER socket, the CLI to its\n"
    "control socket under the home's run directory. Stops on SIGINT/SIGTERM or `kfleet stop`.\n\n"
    "  --bind ENDPOINT           where agents connect (default tcp://127.0.0.1:*, a free port;\n"
    "                            the chosen endpoint is printed and kept in RUN/agent-endpoint)\n"
    "  --heartbeat-interval DUR  how often agents heartbeat (default 1s)\n"
    "  --heartbeat-timeout DUR   silence after which an agent is lost and its tasks\n"
    "                            requeued (default 10s)\n"
    "  --no-shared-builds        every agent compiles its own kernels, instead of installing\n"
    "                            the artifact of one with the same toolchain (for agents\n"
    "                            that must not run each other's binaries)",
};

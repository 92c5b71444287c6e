/* fuzz_fleet — the fleet inventory (hosts YAML, coordinator/fleet/fleet.c) and the
 * OpenSSH config it reads for ssh_alias entries.
 *
 * The input is an inventory, optionally followed by a line "#ssh_config"
 * and the text of an ssh config; without one, a fixed config with a few
 * Host blocks is used. The inventory is parsed from memory as "fuzz.yaml"
 * with a private home directory. Checked on top of "no crash, no leak, no
 * UB": a refused file gets KF_EINVAL with "fuzz.yaml:LINE:COL: ", and an
 * accepted one has hosts with every required field set, unique names and
 * a port in 1..65535. */
#include "fleet/fleet.h"

#include "fuzz_walk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char home[4200], fixed_config[4300], input_config[4300];
static volatile uint64_t sink;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void write_text(const char *path, const void *text, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(text, 1, len, f) != len || fclose(f) != 0)
        abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    snprintf(home, sizeof home, "%s", kf_fuzz_tmpdir());
    snprintf(fixed_config, sizeof fixed_config, "%s/ssh_config", home);
    snprintf(input_config, sizeof input_config, "%s/ssh_config_input", home);
    static const char cfg[] = "Host lambda1\n  HostName 192.0.2.10\n  Port 2222\n"
                              "  User ubuntu\n  IdentityFile ~/.ssh/lambda\n"
                              "Host pod-* gpu?\n  User root\n  Port 22017\n"
                              "Host *\n  IdentityFile %d/.ssh/id_ed25519\n";
    write_text(fixed_config, cfg, sizeof cfg - 1);
    return 0;
}

static int has_position(const char *msg)
{
    static const char prefix[] = "fuzz.yaml:";
    if (strncmp(msg, prefix, sizeof prefix - 1) != 0)
        return 0;
    const char *p = msg + sizeof prefix - 1;
    for (int part = 0; part < 2; part++) {
        if (*p < '1' || *p > '9')
            return 0;
        while (*p >= '0' && *p <= '9')
            p++;
        if (*p++ != ':')
            return 0;
    }
    return *p == ' ' && p[1] != '\0';
}

static void check_fleet(const kf_fleet *f)
{
    if (f->nhosts > KF_FLEET_MAX_HOSTS || (f->nhosts && !f->hosts))
        abort();
    for (size_t i = 0; i < f->nhosts; i++) {
        const kf_fleet_host *h = &f->hosts[i];
        if (!h->name || !h->provider || !h->host || !h->user || !h->workdir)
            abort();
        if (h->port < 1 || h->port > 65535 || h->line < 1 || h->col < 1)
            abort();
        sink ^= strlen(h->name) + strlen(h->provider) + strlen(h->host) + strlen(h->user) +
                strlen(h->workdir) + (h->identity ? strlen(h->identity) : 0) +
                (h->ssh_alias ? strlen(h->ssh_alias) : 0);
        for (size_t l = 0; l < h->nlabels; l++)
            sink ^= strlen(h->labels[l]);
        if (kf_fleet_find(f, h->name) != h)
            abort(); /* names are unique: the first with this name is this one */
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char marker[] = "\n#ssh_config\n";
    const char *config = fixed_config;
    size_t inv_len = size;
    const uint8_t *m = memmem(data, size, marker, sizeof marker - 1);
    if (m) {
        inv_len = (size_t)(m - data) + 1;
        size_t off = inv_len + sizeof marker - 2;
        write_text(input_config, data + off, size - off);
        config = input_config;
    }
    kf_fleet_opts opts = {config, home, home};
    kf_fleet *f = NULL;
    kf_err err;
    kf_err_clear(&err);
    int rc = kf_fleet_parse_opts("fuzz.yaml", (const char *)data, inv_len, &opts, &f, &err);
    if (rc == KF_OK) {
        if (!f)
            abort();
        check_fleet(f);
        kf_fleet_destroy(&f);
        if (f)
            abort();
    } else {
        if (f)
            abort(); /* *out untouched on error */
        if (rc != KF_EINVAL || !has_position(err.msg)) {
            fprintf(stderr, "fleet error %d without file:line:column: \"%s\"\n", rc, err.msg);
            abort();
        }
    }
    return 0;
}

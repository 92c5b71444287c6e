/* build_sass — see build_sass.h. */
#include "runner/build_sass.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void kf_build_parse_cuobjdump(const char *text, char *archs, size_t len, int *has_ptx)
{
    archs[0] = '\0';
    *has_ptx = 0;
    size_t used = 0;
    for (const char *p = text; p && *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        /* "ELF file    1: kernel.1.sm_90a.cubin", "PTX file    1: kernel.1.sm_90a.ptx" */
        if (n > 9 && strncmp(p, "PTX file", 8) == 0)
            *has_ptx = 1;
        const char *sm = n > 9 && strncmp(p, "ELF file", 8) == 0 ? strstr(p, ".sm_") : NULL;
        if (sm && sm < p + n) {
            size_t an = strspn(sm + 1, "sm_0123456789abcdefghijklmnopqrstuvwxyz");
            char arch[32];
            snprintf(arch, sizeof arch, "%.*s", (int)(an < 31 ? an : 31), sm + 1);
            if (strlen(arch) > 6 && strcmp(arch + strlen(arch) - 6, ".cubin") == 0)
                arch[strlen(arch) - 6] = '\0';
            if (!strstr(archs, arch) && used + strlen(arch) + 2 < len)
                used += (size_t)snprintf(archs + used, len - used, "%s%s", used ? "," : "", arch);
        }
        p = nl ? nl + 1 : NULL;
    }
}

int kf_build_sass_runs_on(const char *sass, int major, int minor)
{
    if (strncmp(sass, "sm_", 3) != 0)
        return 0;
    int v = atoi(sass + 3);
    int smaj = v / 10, smin = v % 10;
    size_t n = strlen(sass);
    int specific = n > 0 && (sass[n - 1] == 'a' || sass[n - 1] == 'f');
    if (specific)
        return smaj == major && smin == minor;
    return smaj == major && smin <= minor;
}

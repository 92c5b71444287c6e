/* procview — see procview.h. */
#include "cli/procview.h"

#include "common/text.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PROCVIEW_MAX 16
#define CMDLINE_MAX 160

typedef struct {
    char state;
    double age_s; /* since it started; < 0 when unknown */
    char wchan[64];
} pinfo;

static int read_small(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, len - 1, f);
    fclose(f);
    buf[n] = '\0';
    return (int)n;
}

/* /proc/PID/stat's state and start (field 22, clock ticks after boot):
 * the fields after the last ')' (the name may hold any byte). */
static int info_of(pid_t pid, pinfo *pi)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    if (read_small(path, buf, sizeof buf) <= 0)
        return -1;
    const char *p = strrchr(buf, ')');
    if (!p)
        return -1;
    unsigned long long start = 0;
    char st = '?';
    /* state is field 3, starttime field 22: 18 fields between them. */
    if (sscanf(p + 1,
               " %c %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s "
               "%*s %*s %llu",
               &st, &start) != 2)
        return -1;
    pi->state = st;
    pi->age_s = -1;
    char up[128];
    long hz = sysconf(_SC_CLK_TCK);
    if (hz > 0 && read_small("/proc/uptime", up, sizeof up) > 0)
        pi->age_s = atof(up) - (double)start / (double)hz;
    snprintf(path, sizeof path, "/proc/%ld/wchan", (long)pid);
    if (read_small(path, pi->wchan, sizeof pi->wchan) <= 0 || strcmp(pi->wchan, "0") == 0)
        pi->wchan[0] = '\0';
    return 0;
}

/* Its command line, arguments joined by spaces, up to the first newline
 * (a `python3 -c` source), inert. */
static void cmdline_of(pid_t pid, kf_buf *out)
{
    char path[64], buf[CMDLINE_MAX + 1];
    snprintf(path, sizeof path, "/proc/%ld/cmdline", (long)pid);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, CMDLINE_MAX, f) : 0;
    if (f)
        fclose(f);
    for (size_t i = 0; i < n; i++)
        if (buf[i] == '\0')
            buf[i] = ' ';
        else if (buf[i] == '\n')
            n = i;
    while (n > 0 && buf[n - 1] == ' ')
        n--;
    buf[n] = '\0';
    kf_text_inert(out, n ? buf : "(no command line)", KF_TEXT_LINE);
    if (n == CMDLINE_MAX)
        kf_buf_adds(out, " ...");
}

/* pid's children, from every one of its threads' lists. */
static size_t children_of(pid_t pid, pid_t *kids, size_t max)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/task", (long)pid);
    DIR *d = opendir(path);
    size_t n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) && n < max) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        char cp[96], buf[1024];
        snprintf(cp, sizeof cp, "/proc/%ld/task/%s/children", (long)pid, e->d_name);
        if (read_small(cp, buf, sizeof buf) <= 0)
            continue;
        for (char *s = buf, *end; n < max; s = end) {
            long v = strtol(s, &end, 10);
            if (end == s)
                break;
            kids[n++] = (pid_t)v;
        }
    }
    if (d)
        closedir(d);
    return n;
}

static void line_of(pid_t pid, const pinfo *pi, const char *indent, int depth, kf_buf *out)
{
    if (pi->state == 'Z') {
        kf_buf_addf(out, "%s%*spid %ld, exited, not reaped yet\n", indent, 2 * depth, "",
                    (long)pid);
        return;
    }
    kf_buf_addf(out, "%s%*spid %ld, state %c", indent, 2 * depth, "", (long)pid, pi->state);
    if (pi->age_s >= 0)
        kf_buf_addf(out, ", started %.0f s ago", pi->age_s);
    if (pi->wchan[0]) {
        kf_buf_adds(out, ", waiting in ");
        kf_text_inert(out, pi->wchan, KF_TEXT_LINE);
    }
    kf_buf_adds(out, ": ");
    cmdline_of(pid, out);
    kf_buf_addc(out, '\n');
}

int kf_procview_describe(pid_t pid, const char *indent, kf_buf *out)
{
    pinfo pi;
    if (pid <= 0 || info_of(pid, &pi) != 0 || pi.state == 'Z')
        return -1;
    line_of(pid, &pi, indent, 0, out);
    size_t shown = 1;
    pid_t kids[PROCVIEW_MAX];
    size_t nk = children_of(pid, kids, PROCVIEW_MAX);
    for (size_t i = 0; i < nk && shown < PROCVIEW_MAX; i++) {
        if (info_of(kids[i], &pi) != 0)
            continue;
        line_of(kids[i], &pi, indent, 1, out);
        shown++;
        pid_t grand[PROCVIEW_MAX];
        size_t ng = children_of(kids[i], grand, PROCVIEW_MAX);
        for (size_t g = 0; g < ng && shown < PROCVIEW_MAX; g++)
            if (info_of(grand[g], &pi) == 0) {
                line_of(grand[g], &pi, indent, 2, out);
                shown++;
            }
    }
    return 0;
}

/* ending — why a runner ended without its Result; see ending.h. */
#include "agent/ending.h"

#include "common/buf.h"

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

uint64_t ending_oom_kills(void)
{
    kf_buf b = KF_BUF_INIT;
    uint64_t n = UINT64_MAX;
    if (kf_buf_read_file(&b, "/proc/vmstat") == KF_OK) {
        const char *p = strstr(b.data, "\noom_kill ");
        if (p)
            n = strtoull(p + 10, NULL, 10);
    }
    kf_buf_release(&b);
    return n;
}

static double node_memory_gib(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    return pages > 0 && size > 0 ? (double)pages * (double)size / (1u << 30) : 0;
}

/* What the runner's group's limits did, when they did anything, appended
 * to why: the reader of a timeout or a crash learns that forks were
 * refused or a child was killed for memory meanwhile. */
static void limits_note(const krunner *r, int oom_said, char *why, size_t len)
{
    size_t n = strlen(why);
    if (r->cg_pids_refused && n < len)
        n += (size_t)snprintf(why + n, len - n,
                              "; its processes reached the runner's limit of %llu processes and "
                              "threads (forks refused %llu times)",
                              (unsigned long long)r->cg_pids_max,
                              (unsigned long long)r->cg_pids_refused);
    if (r->cg_oom_kills && !oom_said && n < len)
        snprintf(why + n, len - n,
                 "; the out-of-memory killer killed %llu process%s in the runner's group at its "
                 "memory limit of %.2f GiB",
                 (unsigned long long)r->cg_oom_kills, r->cg_oom_kills == 1 ? "" : "es",
                 (double)r->cg_memory_max / (1u << 30));
}

void ending_explain(const krunner *r, uint64_t oom_kills_now, const char *log_tail, char *why,
                    size_t len, int *state, int *infra)
{
    const char *nl = log_tail && *log_tail ? "\n" : "", *tail = log_tail ? log_tail : "";
    int sig = WIFSIGNALED(r->status) ? WTERMSIG(r->status) : 0;
    /* Its own group's OOM kill (or, on a v1 kernel that does not count
     * them per group, its group at its limit while the node counted one):
     * the limit is the kernel's verdict, not the node's. */
    int own_oom =
        sig == SIGKILL && r->cg_memory_max &&
        (r->cg_oom_kills || (r->cg_memory_hits && r->oom_kills0 != UINT64_MAX &&
                             oom_kills_now != UINT64_MAX && oom_kills_now > r->oom_kills0));
    *state = KFLEET__TASK_STATE__FAILED;
    *infra = 0;
    if (r->killed_why[0]) {
        snprintf(why, len, "%s", r->killed_why);
        *infra = r->infra_kill;
    } else if (r->timed_out) {
        *state = KFLEET__TASK_STATE__TIMED_OUT;
        snprintf(why, len,
                 "timed out: kfleet killed the runner at the task's limit of %.1f s (the sweep's "
                 "time_limit sets it)",
                 r->limit_s);
    } else if (r->cancelled) {
        *state = KFLEET__TASK_STATE__CANCELLED;
        snprintf(why, len, "cancelled by the coordinator");
    } else if (own_oom) {
        snprintf(why, len,
                 "the kernel used more than %.2f GiB, its runner's memory limit (the sweep's "
                 "memory_limit, else the agent's KF_RUNNER_MEMORY or default): the out-of-memory "
                 "killer ended the runner inside its own control group; not tried again, it "
                 "would be killed again",
                 (double)r->cg_memory_max / (1u << 30));
    } else if (sig == SIGKILL && r->oom_kills0 != UINT64_MAX && oom_kills_now != UINT64_MAX &&
               oom_kills_now > r->oom_kills0) {
        snprintf(why, len,
                 "the runner was killed by the out-of-memory killer (the node's OOM kill count "
                 "rose from %llu to %llu while it ran): the kernel or its problem needed more "
                 "memory than the node could give (the runner's peak: %.2f GiB; the node has "
                 "%.1f GiB in all); not tried again, it would be killed again",
                 (unsigned long long)r->oom_kills0, (unsigned long long)oom_kills_now,
                 (double)r->maxrss_kb / (1u << 20), node_memory_gib());
    } else if (sig == SIGKILL || sig == SIGTERM || sig == SIGHUP || sig == SIGINT) {
        /* Not a signal a kernel raises on itself, not kfleet's (said
         * above), and not the OOM killer's (no kill counted): the sender is
         * someone else on the node. */
        *infra = 1;
        snprintf(why, len,
                 "the runner was killed by signal %d (%s) from outside kfleet: not its time "
                 "limit, a cancel or a bad message (kfleet says those), and the node counted no "
                 "out-of-memory kill while it ran; tried again while attempts remain%s%s",
                 sig, strsignal(sig), nl, tail);
    } else if (sig) {
        snprintf(why, len,
                 "the kernel crashed: runner killed by signal %d (%s); its output says more", sig,
                 strsignal(sig));
    } else if (WIFEXITED(r->status) && WEXITSTATUS(r->status) == 127) {
        *infra = 1; /* exec failed: the node, not the kernel */
        snprintf(why, len, "the runner could not start (exit 127)%s%s", nl, tail);
    } else {
        snprintf(why, len, "runner exited with status %d without a result%s%s",
                 WIFEXITED(r->status) ? WEXITSTATUS(r->status) : -1, nl, tail);
    }
    if (!r->killed_why[0] && !r->cancelled)
        limits_note(r, own_oom, why, len);
}

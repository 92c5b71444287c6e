/* follow — a sweep's progress on the terminal; see follow.h. */
#include "cli/follow.h"
#include "common/text.h"
#include "common/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#define RATE_WINDOW_S 60.0
#define RATE_SAMPLES 300 /* 5 Hz over the window */

static uint32_t ended(const Kfleet__SweepProgress *p)
{
    return p->succeeded + p->failed + p->timed_out + p->cancelled + p->skipped;
}

static int term_columns(const kf_follow_opts *o)
{
    if (o && o->columns > 0)
        return o->columns;
    struct winsize ws;
    if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    const char *c = getenv("COLUMNS");
    int n = c ? atoi(c) : 0;
    return n > 0 ? n : 80;
}

static void fmt_secs(char *out, size_t len, double s)
{
    if (s < 60)
        snprintf(out, len, "%.0fs", s);
    else if (s < 3600)
        snprintf(out, len, "%dm%02ds", (int)s / 60, (int)s % 60);
    else
        snprintf(out, len, "%dh%02dm", (int)s / 3600, (int)s % 3600 / 60);
}

void kf_follow_line(char *out, size_t len, int width, const Kfleet__SweepProgress *p, double rate,
                    double eta_s, double quiet_s)
{
    uint32_t done = ended(p), bad = p->failed + p->timed_out;
    uint32_t bt = p->builds_total <= p->total ? p->builds_total : 0;
    uint32_t total = p->total - bt, cdone = done - (p->builds_ended <= done ? p->builds_ended : 0);
    char tail[96] = "", builds[48] = "", when[32];
    if (bt)
        snprintf(builds, sizeof builds, " (builds %u/%u)", p->builds_ended, bt);
    if (quiet_s >= 10 && done < p->total) {
        fmt_secs(when, sizeof when, quiet_s);
        snprintf(tail, sizeof tail, ", none ended for %s", when);
    } else if (eta_s >= 0) {
        fmt_secs(when, sizeof when, eta_s);
        snprintf(tail, sizeof tail, ", %.1f/s, ETA %s", rate, when);
    }
    char words[256];
    snprintf(words, sizeof words, " %u/%u done%s, %u failed, %u running%s", cdone, total, builds,
             bad, p->running, tail);
    /* The bar takes what the words leave, 10 to 30 columns; a narrow terminal
     * drops the bar, then cuts the words: one line, never a wrapped one. */
    char head[32];
    int hn = snprintf(head, sizeof head, "sweep %u", p->sweep_id);
    int room = width - 1 - hn - (int)strlen(words) - 3;
    int barw = room > 30 ? 30 : room;
    char bar[40] = "";
    if (barw >= 10) {
        int fill = total ? (int)((uint64_t)barw * cdone / total) : 0;
        bar[0] = ' ';
        bar[1] = '[';
        for (int i = 0; i < barw; i++)
            bar[2 + i] = i < fill ? '#' : '.';
        bar[2 + barw] = ']';
        bar[3 + barw] = '\0';
    }
    snprintf(out, len, "%s%s%s", head, bar, words);
    if (width > 1 && strlen(out) >= (size_t)width)
        out[width - 1] = '\0';
}

int kf_follow(kf_client *c, uint32_t sweep_id, const kf_follow_opts *opts,
              volatile int *interrupted, Kfleet__SweepProgress *final, kf_err *err)
{
    int tty = isatty(STDERR_FILENO);
    uint64_t start = kf_mono_ns(), last_line = 0, last_change = start, stall_since = 0;
    uint32_t last_done = UINT32_MAX, last_failed = UINT32_MAX, last_running = UINT32_MAX;
    struct sample {
        uint64_t t;
        uint32_t done;
    } hist[RATE_SAMPLES];
    size_t nh = 0, head = 0;
    char stall[600] = "";
    int rc = KF_OK;
    for (;;) {
        Kfleet__ControlRequest req = KFLEET__CONTROL_REQUEST__INIT;
        req.body_case = KFLEET__CONTROL_REQUEST__BODY_PROGRESS;
        req.progress = sweep_id;
        Kfleet__ControlReply *rep = NULL;
        if ((rc = kf_client_call(c, &req, 10000, &rep, err)))
            break;
        Kfleet__SweepProgress p = *rep->progress;
        /* The reason is what agents said (their Python, a kernel's
         * error): inert on the terminal. */
        kf_buf sb = KF_BUF_INIT;
        kf_text_inert(&sb, p.stall ? p.stall : "", KF_TEXT_LINE);
        snprintf(stall, sizeof stall, "%s", sb.data);
        kf_buf_release(&sb);
        p.name = NULL;
        p.stall = NULL;
        kfleet__control_reply__free_unpacked(rep, NULL);
        *final = p;
        uint32_t done = ended(&p), bad = p.failed + p.timed_out;
        uint64_t now = kf_mono_ns();
        if (done != last_done)
            last_change = now;
        /* The rate over the last minute: (now, done) against the oldest
         * sample kept. No ETA until something ended in that window. */
        hist[head] = (struct sample){now, done};
        head = (head + 1) % RATE_SAMPLES;
        if (nh < RATE_SAMPLES)
            nh++;
        size_t oldest = (head + RATE_SAMPLES - nh) % RATE_SAMPLES;
        while (nh > 1 && (double)(now - hist[oldest].t) / 1e9 > RATE_WINDOW_S) {
            oldest = (oldest + 1) % RATE_SAMPLES;
            nh--;
        }
        double span = (double)(now - hist[oldest].t) / 1e9;
        double rate = span >= 2 ? (done - hist[oldest].done) / span : 0;
        double eta = rate > 0 ? (p.total - done) / rate : -1;
        double quiet = (double)(now - last_change) / 1e9;
        int finished = p.total > 0 && done == p.total;
        if (tty) {
            char line[512];
            kf_follow_line(line, sizeof line, term_columns(opts), &p, rate, eta, quiet);
            fprintf(stderr, "\r\033[K%s", line);
            if (finished)
                fputc('\n', stderr);
        } else if (finished ||
                   ((done != last_done || bad != last_failed || p.running != last_running) &&
                    now - last_line >= 1000000000ull)) {
            fprintf(stderr, "sweep %u: %u/%u done, %u failed, %u running, %u pending (%.1fs)\n",
                    sweep_id, done, p.total, bad, p.running, p.pending,
                    (double)(now - start) / 1e9);
            last_line = now;
            last_failed = bad;
            last_running = p.running;
        }
        last_done = done;
        fflush(stderr);
        if (finished)
            break;
        /* Nothing can run: pending work, none of it running, no agent able
         * to take it (the coordinator says why). Bounded, then said. */
        if (p.pending > 0 && p.running == 0 && p.agents_able == 0) {
            if (!stall_since)
                stall_since = now;
            double waited = (double)(now - stall_since) / 1e9;
            int all_said = opts && opts->agents_started && p.agents_up >= opts->agents_started;
            if (all_said || (opts && opts->stall_s > 0 && waited >= opts->stall_s)) {
                if (tty)
                    fputc('\n', stderr);
                char when[64];
                if (all_said)
                    snprintf(when, sizeof when, "all %u agents are up and none can", p.agents_up);
                else
                    snprintf(when, sizeof when, "waited %.0f s", waited);
                if (opts->embedded)
                    return kf_err_set(err, KF_EUNAVAIL,
                                      "nothing can run the %u pending tasks of sweep %u (%s): %s",
                                      p.pending, sweep_id, when,
                                      stall[0] ? stall : "no agent is able to take them");
                return kf_err_set(err, KF_EUNAVAIL,
                                  "nothing can run the %u pending tasks of sweep %u (%s): %s. The "
                                  "sweep stays queued: `kfleet status`, `kfleet cancel %u`",
                                  p.pending, sweep_id, when,
                                  stall[0] ? stall : "no agent is able to take them", sweep_id);
            }
        } else {
            stall_since = 0;
        }
        if (interrupted && *interrupted) {
            if (opts && opts->embedded)
                return KF_ETIMEOUT; /* the caller says what becomes of the sweep */
            fprintf(stderr,
                    "\ndetached: sweep %u goes on (`kfleet status`, `kfleet report %u`; "
                    "`kfleet cancel %u` stops it)\n",
                    sweep_id, sweep_id, sweep_id);
            return KF_ETIMEOUT;
        }
        struct timespec ts = {0, 200000000};
        nanosleep(&ts, NULL);
    }
    return rc;
}

/* verdict — see verdict.h. The lines are runner/checker.h's:
 *   verified DIGEST | damaged DIGEST WHY | error WHY
 *   check SEQ ref I pass P nonfinite N max_abs X rel Y not_close K at A out O
 *     ref R close_ratio Q close_at B close_out P close_ref S
 *   check SEQ ref I bad
 *   why SEQ SENTENCE
 *   spot SEQ ref I fail SENTENCE
 *   done checks N failed F spots S spot_failed G */
#include "agent/verdict.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define VERDICT_MAX (1u << 20)

/* Everything on fd (non-blocking, already written), NUL-terminated; NULL
 * out of memory. */
static char *read_all(int fd)
{
    size_t cap = 4096, len = 0;
    char *text = malloc(cap + 1);
    while (text) {
        if (len == cap) {
            char *more = cap < VERDICT_MAX ? realloc(text, 2 * cap + 1) : NULL;
            if (!more)
                break;
            text = more;
            cap *= 2;
        }
        ssize_t n = read(fd, text + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    if (text)
        text[len] = '\0';
    return text;
}

/* A digest token into dst (64 hex digits at most). */
static void digest_of(const char *s, char dst[65])
{
    size_t n = strcspn(s, " \n");
    snprintf(dst, 65, "%.*s", (int)(n < 64 ? n : 64), s);
}

int kf_verdict_apply(int fd, uint32_t want, Kfleet__Result *res, char *why, size_t whylen,
                     kf_verdict_refs *refs)
{
    char *text = read_all(fd);
    unsigned long long checks = 0, failed = 0, done_checks = 0, done_failed = 0, spots = 0,
                       spot_failed = 0, done_spots = 0, done_spot_failed = 0;
    int done = 0;
    unsigned long long bad_seq = ~0ull; /* the first failed check's */
    unsigned bad_ref = 0;
    char first_bad[600] = "", error[400] = "";
    for (char *line = text, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        unsigned long long seq = 0, nonfinite = 0, not_close = 0;
        unsigned ref = 0;
        int pass = 0, used = 0;
        double max_abs = 0, rel = 0;
        if (sscanf(line, "done checks %llu failed %llu spots %llu spot_failed %llu", &done_checks,
                   &done_failed, &done_spots, &done_spot_failed) == 4) {
            done = 1;
        } else if (strncmp(line, "verified ", 9) == 0) {
            if (refs && refs->nverified < 64)
                digest_of(line + 9, refs->verified[refs->nverified++]);
        } else if (strncmp(line, "damaged ", 8) == 0) {
            if (refs && refs->ndamaged < 64)
                digest_of(line + 8, refs->damaged[refs->ndamaged++]);
            snprintf(error, sizeof error, "a reference file on this agent is damaged (%.300s)",
                     line + 8);
        } else if (strncmp(line, "error ", 6) == 0) {
            if (refs)
                refs->error = 1;
            snprintf(error, sizeof error, "%.390s", line + 6);
        } else if (sscanf(line, "why %llu %n", &seq, &used) == 1 && used > 0) {
            /* The bound the first failed output broke, with its element. */
            if (seq == bad_seq)
                snprintf(first_bad, sizeof first_bad, "output %llu (pool seed %u): %.500s", seq,
                         bad_ref, line + used);
        } else if (sscanf(line, "spot %llu ref %u fail %n", &seq, &ref, &used) == 2 && used > 0) {
            spots++;
            if (spot_failed++ == 0 && failed == 0)
                snprintf(first_bad, sizeof first_bad,
                         "the spot check after timed sample set %llu (pool seed %u) failed: "
                         "%.450s",
                         seq, ref, line + used);
        } else if (sscanf(line,
                          "check %llu ref %u pass %d nonfinite %llu max_abs %lg rel %lg not_close "
                          "%llu%n",
                          &seq, &ref, &pass, &nonfinite, &max_abs, &rel, &not_close, &used) == 7) {
            if (res->trials && seq < res->n_trials) {
                Kfleet__ValidateTrial *t = res->trials[seq];
                t->passed = pass;
                t->max_abs_err = max_abs;
                t->rel_err = rel;
                t->nonfinite = nonfinite;
                t->not_close = not_close;
                unsigned long long at = 0, cat = 0;
                double o = 0, r = 0, q = 0, co = 0, cr = 0;
                if (sscanf(line + used,
                           " at %llu out %lg ref %lg close_ratio %lg close_at %llu close_out %lg "
                           "close_ref %lg",
                           &at, &o, &r, &q, &cat, &co, &cr) == 7) {
                    t->located = 1;
                    t->max_abs_at = at;
                    t->max_abs_out = o;
                    t->max_abs_ref = r;
                    t->close_ratio = q;
                    t->close_at = cat;
                    t->close_out = co;
                    t->close_ref = cr;
                }
            }
            checks++;
            if (!pass && failed++ == 0 && spot_failed == 0 && (bad_seq = seq, bad_ref = ref, 1))
                snprintf(first_bad, sizeof first_bad,
                         "output %llu (pool seed %u): %llu non-finite or unwritten elements, "
                         "%llu outside atol + rtol |ref|, max abs error %.3g, relative error "
                         "%.3g",
                         seq, ref, nonfinite, not_close, max_abs, rel);
        } else {
            checks++;
            if (failed++ == 0 && spot_failed == 0)
                snprintf(first_bad, sizeof first_bad,
                         "output %llu was not the problem's output (%.80s)", checks - 1, line);
        }
    }
    free(text);
    int ok = done && done_failed == 0 && failed == 0 && done_checks == checks &&
             done_spot_failed == 0 && spot_failed == 0 && checks >= want && !error[0];
    if (ok)
        return 1;
    if (error[0])
        snprintf(why, whylen, "the checker could not judge the candidate: %s", error);
    else if (failed || done_failed || spot_failed || done_spot_failed)
        snprintf(why, whylen, "the checker failed the candidate: %s",
                 first_bad[0] ? first_bad : "an output it did not pass");
    else if (!done)
        snprintf(why, whylen,
                 "the checker did not finish (%llu verdicts read): the candidate's outputs "
                 "were not judged, so it does not pass",
                 checks);
    else
        snprintf(why, whylen,
                 "the checker judged %llu outputs of the %u the task must send: the "
                 "candidate does not pass unjudged",
                 checks, want);
    (void)spots;
    /* The checker's reason is the cause where it failed an output or could
     * not judge, whatever the runner said; otherwise a runner's own
     * failure (a crash, its time limit) keeps its reason. */
    if (res->state == KFLEET__TASK_STATE__SUCCEEDED || error[0] || failed || spot_failed) {
        res->state = KFLEET__TASK_STATE__FAILED;
        res->error = why;
    }
    return 0;
}

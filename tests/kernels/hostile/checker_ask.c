/* A candidate of test_problems' scale-c problem that asks its judge
 * (issue 43 item 1: the checker as an oracle): on every SOCK_SEQPACKET
 * socket it holds (the runner's to the checker), a spot check in the
 * checker's own format (runner/checker.c: a header, then positions and
 * values) guessing element 0 is 0.0, as a search for a reference value
 * would begin; then it computes the right answer. The checker answers
 * PASS or FAIL only, and a failed spot check fails the task: the guess
 * costs the candidate its verdict, right answer or not. */
#define _GNU_SOURCE
#include "kf_kernel.h"
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

static int asked;

static void ask(void)
{
    for (int fd = 0; fd < 1024; fd++) {
        struct stat st;
        int type = 0;
        socklen_t len = sizeof type;
        if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode) ||
            getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_SEQPACKET)
            continue;
        struct {
            uint32_t type, ref, dtype, n;
            uint64_t count, offset;
            uint64_t at;
            double value;
        } q = {3 /* a spot check */, 0, 0, 1, 0, 0, 0, 0.0};
        int32_t ans[2] = {-1, -1};
        if (send(fd, &q, sizeof q, MSG_NOSIGNAL) == (ssize_t)sizeof q &&
            recv(fd, ans, sizeof ans, 0) == (ssize_t)sizeof ans) {
            asked++;
            printf("checker_ask: socket %d answered passed=%d bad=%d\n", fd, ans[0], ans[1]);
        }
    }
    fflush(stdout);
}

static int prepare(void **sc, const kf_params *p, const kf_view *in, size_t nin, const kf_view *out,
                   char *err, size_t errlen)
{
    (void)p, (void)in, (void)nin, (void)out, (void)err, (void)errlen;
    if (!asked)
        ask();
    *sc = NULL;
    return 0;
}

static int run(void *sc, const kf_view *in, size_t nin, const kf_view *out, char *err,
               size_t errlen)
{
    (void)sc, (void)nin, (void)err, (void)errlen;
    const float *x = in[0].data, *w = in[1].data;
    float *y = out->data;
    for (size_t i = 0; i < out->count; i++)
        y[i] = 2.0f * x[i] + w[i];
    return 0;
}

static void release(void *sc)
{
    (void)sc;
}
static const kf_candidate c = {KF_KERNEL_ABI_VERSION, "checker_ask", "", prepare, run, release};
const kf_candidate *kf_candidate_get(void)
{
    return &c;
}

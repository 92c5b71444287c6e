/* signals — see signals.h. */
#include "common/signals.h"

#include <string.h>

void kf_signals_catch(void (*handler)(int), int pipe, kf_sigsave *old)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, old ? &old->intr : NULL);
    sigaction(SIGTERM, &sa, old ? &old->term : NULL);
    if (pipe == KF_SIGNALS_IGNORE_PIPE)
        signal(SIGPIPE, SIG_IGN);
}

void kf_signals_restore(const kf_sigsave *old)
{
    sigaction(SIGINT, &old->intr, NULL);
    sigaction(SIGTERM, &old->term, NULL);
}

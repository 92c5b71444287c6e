/* signals — the one way kfleet's programs catch SIGINT and SIGTERM: the
 * handler (which only sets a volatile sig_atomic_t flag, the one kind of
 * global the style allows) runs for both, and what it replaced can be put
 * back (`kfleet launch` follows a launch, then leaves the terminal's ^C as
 * it found it). */
#ifndef KF_SIGNALS_H
#define KF_SIGNALS_H

#include <signal.h>

/* The SIGINT and SIGTERM actions kf_signals_catch replaced. */
typedef struct kf_sigsave {
    struct sigaction intr, term;
} kf_sigsave;

enum { KF_SIGNALS_KEEP_PIPE = 0, KF_SIGNALS_IGNORE_PIPE = 1 };

/* SIGINT and SIGTERM call handler from now on (the previous actions into
 * *old when old is not NULL); with KF_SIGNALS_IGNORE_PIPE a write to a
 * closed pipe or socket returns EPIPE instead of killing the process. */
void kf_signals_catch(void (*handler)(int), int pipe, kf_sigsave *old);
/* Puts back the actions kf_signals_catch saved in *old. */
void kf_signals_restore(const kf_sigsave *old);

#endif

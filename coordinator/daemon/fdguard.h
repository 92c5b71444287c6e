/* fdguard — keeps the coordinator alive when descriptors run out.
 *
 * libzmq (4.3.4, what Debian 12 and Ubuntu 24.04 ship) accepts connections
 * itself, as many as arrive: 400 idle TCP connections to the agent port of
 * a coordinator under `ulimit -n 256` take every descriptor, and the next
 * `kfleet status` makes its ipc listener's accept() fail with EMFILE,
 * which it asserts against (src/ipc_listener.cpp:325): SIGABRT. It has no
 * option to cap connections or a hook around accept, so this module
 * provides accept() and accept4() for the process (the executable's
 * definitions come before libc's for libzmq too) and, once armed:
 *   - a TCP connection accepted into one of the last `reserve` descriptors
 *     is closed at once and accept reports EAGAIN, which libzmq takes as
 *     "nothing to accept": the flood is refused, the rest of the process
 *     (the control socket, the store, the allow list) keeps descriptors;
 *   - an accept that meets EMFILE anyway (the rest of the process took the
 *     reserve) gives up one descriptor kept open for the purpose: an ipc
 *     (control socket) client is served with it, a TCP one is taken and
 *     closed (else it would wait in the backlog, the listener readable,
 *     libzmq's loop spinning); accept then says EAGAIN, never EMFILE.
 * Not armed (unit tests, other commands), accept is libc's. */
#ifndef KF_FDGUARD_H
#define KF_FDGUARD_H

#include <stdint.h>

/* Raises the soft descriptor limit to the hard one and arms the guard
 * with a reserve fitted to the limit; returns the limit. */
long kf_fdguard_arm(void);
/* The reserve: descriptors TCP accepts leave free. */
long kf_fdguard_reserve(void);
/* TCP connections closed for want of descriptors, and accepts that met
 * EMFILE, since the last call (the counts go back to 0). */
void kf_fdguard_take(uint64_t *shed, uint64_t *emfile);

#endif

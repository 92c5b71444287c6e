/* fdguard — see fdguard.h for why it exists. accept() and accept4() are
 * libc's (found with dlsym(RTLD_NEXT), which under ASan is its
 * interceptor) plus a check of the descriptor they returned: descriptors
 * are handed out lowest first, so a new one numbered at or above
 * limit - reserve means fewer than `reserve` are left. The state is a few
 * atomics at file scope: an interposed libc function gets no context
 * pointer, and libzmq calls it from its own I/O thread. */
#include "daemon/fdguard.h"
#include "common/fdlimit.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <unistd.h>

typedef int (*accept4_fn)(int, struct sockaddr *, socklen_t *, int);

/* glibc declares accept's address as a transparent union in GNU C. */
#if defined __cplusplus || !__GNUC_PREREQ(2, 7) || !defined __USE_GNU
#define SA_PTR(a) (a)
#else
#define SA_PTR(a) ((a).__sockaddr__)
#endif

static atomic_long g_limit; /* 0: not armed */
static atomic_long g_reserve;
static atomic_int g_spare = -1; /* a descriptor kept for the control socket */
static atomic_ullong g_shed, g_emfile;

static accept4_fn real_accept4(void)
{
    static _Atomic(accept4_fn) fn;
    accept4_fn f = atomic_load(&fn);
    if (!f) {
        f = (accept4_fn)dlsym(RTLD_NEXT, "accept4");
        atomic_store(&fn, f);
    }
    return f;
}

static int is_unix(int fd)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    return getsockname(fd, (struct sockaddr *)&ss, &sl) == 0 && ss.ss_family == AF_UNIX;
}

static int guarded(int lfd, struct sockaddr *addr, socklen_t *len, int flags)
{
    accept4_fn acc = real_accept4();
    if (!acc) {
        errno = ENOSYS;
        return -1;
    }
    int fd = acc(lfd, addr, len, flags);
    long limit = atomic_load(&g_limit);
    if (!limit)
        return fd;
    if (fd < 0) {
        if (errno != EMFILE && errno != ENFILE)
            return fd;
        int spare = atomic_exchange(&g_spare, -1);
        if (spare >= 0 && is_unix(lfd)) { /* the control socket: serve it */
            close(spare);
            atomic_fetch_add(&g_emfile, 1);
            return acc(lfd, addr, len, flags);
        }
        if (spare >= 0) { /* TCP: take the connection and let it go, or it waits forever */
            close(spare);
            int c = acc(lfd, NULL, NULL, SOCK_CLOEXEC);
            if (c >= 0) {
                close(c);
                atomic_fetch_add(&g_shed, 1);
            }
            int s = open("/dev/null", O_RDONLY | O_CLOEXEC), none = -1;
            if (s >= 0 && !atomic_compare_exchange_strong(&g_spare, &none, s))
                close(s);
        }
        atomic_fetch_add(&g_emfile, 1);
        errno = EAGAIN;
        return -1;
    }
    if (fd >= limit - atomic_load(&g_reserve) && !is_unix(lfd)) {
        close(fd);
        atomic_fetch_add(&g_shed, 1);
        errno = EAGAIN;
        return -1;
    }
    if (atomic_load(&g_spare) < 0) { /* given away earlier: take one back */
        int s = open("/dev/null", O_RDONLY | O_CLOEXEC);
        int none = -1;
        if (s >= 0 && !atomic_compare_exchange_strong(&g_spare, &none, s))
            close(s);
    }
    return fd;
}

int accept4(int fd, __SOCKADDR_ARG addr, socklen_t *__restrict len, int flags)
{
    return guarded(fd, SA_PTR(addr), len, flags);
}

int accept(int fd, __SOCKADDR_ARG addr, socklen_t *__restrict len)
{
    return guarded(fd, SA_PTR(addr), len, 0);
}

long kf_fdguard_arm(void)
{
    long limit = kf_fdlimit_raise();
    long reserve = limit / 8 > 32 ? limit / 8 : 32;
    if (reserve > 1024)
        reserve = 1024;
    if (reserve > limit / 2)
        reserve = limit / 2;
    atomic_store(&g_reserve, reserve);
    int s = open("/dev/null", O_RDONLY | O_CLOEXEC);
    int none = -1;
    if (s >= 0 && !atomic_compare_exchange_strong(&g_spare, &none, s))
        close(s);
    atomic_store(&g_limit, limit);
    return limit;
}

long kf_fdguard_reserve(void)
{
    return atomic_load(&g_reserve);
}

void kf_fdguard_take(uint64_t *shed, uint64_t *emfile)
{
    *shed = atomic_exchange(&g_shed, 0);
    *emfile = atomic_exchange(&g_emfile, 0);
}

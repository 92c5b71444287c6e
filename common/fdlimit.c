/* fdlimit — see fdlimit.h. */
#include "common/fdlimit.h"

#include <sys/resource.h>

#define FD_CAP (1L << 20)

long kf_fdlimit_raise(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return 1024;
    rlim_t want = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > FD_CAP ? FD_CAP : rl.rlim_max;
    if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur < want) {
        struct rlimit n = {want, rl.rlim_max};
        if (setrlimit(RLIMIT_NOFILE, &n) == 0)
            rl.rlim_cur = want;
    }
    return rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > FD_CAP ? FD_CAP : (long)rl.rlim_cur;
}

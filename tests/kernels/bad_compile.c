/* bad_compile — a kernel with a syntax error, for kfleet's failure tests. */
#include "kf_kernel.h"

const kf_kernel *kf_kernel_get(void)
{
    return this is not C;
}

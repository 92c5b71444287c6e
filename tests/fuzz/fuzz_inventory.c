/* fuzz_inventory — the text the agent reads about its node and the
 * durations every file and flag carries.
 *
 * kf_inventory_parse_nvcc reads `nvcc --version` output, which comes from
 * whatever nvcc is first on a node's PATH; kf_parse_duration reads every
 * duration of a sweep file and of the daemons' flags. The input is split
 * at its first NUL: the text before goes to the duration parser, the whole
 * input (NUL-terminated copy, embedded NULs end it early as they would in
 * the agent) to the nvcc parser with an output size taken from the last
 * byte. Checked: no crash, the output is a terminated string inside its
 * buffer with no line break, and an accepted duration is a finite number
 * of seconds >= 0. */
#include "common/inventory.h"
#include "common/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        abort();
    memcpy(text, data, size);
    text[size] = '\0';

    double secs = -1;
    if (kf_parse_duration(text, &secs) == KF_OK && (!isfinite(secs) || secs < 0))
        abort();

    size_t len = 1 + (size ? data[size - 1] % 72 : 16);
    /* Exactly len bytes on the heap, so a write past them is an ASan report. */
    char *out = malloc(len ? len : 1);
    if (!out)
        abort();
    int rc = kf_inventory_parse_nvcc(text, out, len);
    if (len > 0) {
        size_t n = strnlen(out, len);
        if (n == len || memchr(out, '\n', n) || memchr(out, '\r', n))
            abort();
        if ((rc == KF_OK) != (n > 0))
            abort();
    } else if (rc == KF_OK) {
        abort();
    }
    free(out);
    free(text);
    return 0;
}

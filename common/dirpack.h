/* dirpack — a directory of a Python kernel's own files (`files = ["mylib/"]`)
 * as one byte string, so that it travels as one source beside the kernel
 * and enters its hash, and is unpacked on the node.
 *
 * Why our own format: the bytes must be the same for the same tree on
 * every machine (they are hashed), hold only regular files, and unpack
 * safely where a kernel's sender is not trusted; a tar library would bring
 * owners, modes, times, links and device files to refuse. The format:
 * "kfdir1\n", then per file, in byte order of the relative paths,
 * "PATHLEN DATALEN\n" PATH DATA. */
#ifndef KF_DIRPACK_H
#define KF_DIRPACK_H

#include "common/buf.h"
#include "common/err.h"

#include <stddef.h>

/* Appends the regular files under dir (recursively; names starting with
 * '.' and __pycache__ directories are left out) to out, at most max bytes
 * of content in all. 0, or -1 with why: a symbolic link, a special file,
 * a name with a newline, a file that cannot be read, more than max. */
int kf_dirpack_pack(const char *dir, kf_buf *out, size_t max, char *why, size_t wlen);

/* Writes the files of a packed directory under dest (created 0700, with
 * its subdirectories). Refuses (KF_EINVAL) a malformed pack and any path
 * that is absolute, empty, has an empty, "." or ".." component, or a name
 * starting with '.', before writing anything under it; KF_EIO with the
 * system's reason. */
int kf_dirpack_unpack(const void *data, size_t len, const char *dest, kf_err *err);

#endif

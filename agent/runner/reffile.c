/* reffile — a reference as a file, named by its digest; see reffile.h.
 * Written and hashed in chunks, so a 12 GB reference needs no second
 * copy in memory. */
#include "runner/reffile.h"

#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static const unsigned char MAGIC[8] = {'K', 'F', 'R', 'E', 'F', 0, 1, 0};
#define CHUNK (1u << 20) /* elements per write */

void kf_reffile_scratch_path(char *out, size_t len, const char *dir, uint64_t task,
                             uint32_t attempt, size_t i)
{
    snprintf(out, len, "%s/ref-0x%llx-%u-%zu.ref", dir, (unsigned long long)task, attempt, i);
}

kf_dtype kf_reffile_dtype(kf_dtype out, size_t count)
{
    return out == KF_DTYPE_F64 || count <= KF_REFFILE_F64_MAX / sizeof(double) ? KF_DTYPE_F64
                                                                               : KF_DTYPE_F32;
}

static void header(unsigned char h[KF_REFFILE_HEADER], kf_dtype dtype, uint64_t count)
{
    uint32_t dt = (uint32_t)dtype, zero = 0;
    memcpy(h, MAGIC, 8);
    memcpy(h + 8, &dt, 4);
    memcpy(h + 12, &zero, 4);
    memcpy(h + 16, &count, 8);
}

int kf_reffile_write(const char *path, const double *ref, size_t n, kf_dtype dtype,
                     char digest[KF_REFFILE_DIGEST_HEX], kf_err *err)
{
    if (dtype != KF_DTYPE_F64 && dtype != KF_DTYPE_F32)
        return kf_err_set(err, KF_EINVAL, "a reference is kept as f64 or f32, not dtype %d",
                          (int)dtype);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return kf_err_set(err, KF_EIO, "cannot create the reference file %s: %s", path,
                          strerror(errno));
    crypto_generichash_state st;
    crypto_generichash_init(&st, NULL, 0, 32);
    unsigned char h[KF_REFFILE_HEADER];
    header(h, dtype, n);
    crypto_generichash_update(&st, h, sizeof h);
    int rc = kf_write_all(fd, h, sizeof h);
    float *f = dtype == KF_DTYPE_F32 ? malloc(CHUNK * sizeof *f) : NULL;
    if (dtype == KF_DTYPE_F32 && !f)
        rc = -1;
    for (size_t off = 0; rc == 0 && off < n; off += CHUNK) {
        size_t m = n - off < CHUNK ? n - off : CHUNK;
        const void *p = ref + off;
        size_t bytes = m * sizeof(double);
        if (f) {
            for (size_t i = 0; i < m; i++)
                f[i] = (float)ref[off + i];
            p = f;
            bytes = m * sizeof(float);
        }
        crypto_generichash_update(&st, p, bytes);
        rc = kf_write_all(fd, p, bytes);
    }
    free(f);
    int saved = errno;
    if (close(fd) != 0 && rc == 0)
        rc = -1, saved = errno;
    if (rc != 0) {
        unlink(path);
        return kf_err_set(err, KF_EIO,
                          "cannot write the reference file %s (%zu elements): %s; the node's "
                          "disk must hold the problem's references",
                          path, n, strerror(saved ? saved : ENOMEM));
    }
    unsigned char d[32];
    crypto_generichash_final(&st, d, sizeof d);
    sodium_bin2hex(digest, KF_REFFILE_DIGEST_HEX, d, sizeof d);
    return KF_OK;
}

int kf_reffile_map(int fd, uint64_t count, const char *digest, int verify, kf_reffile *out,
                   kf_err *err)
{
    memset(out, 0, sizeof *out);
    struct stat sb;
    if (fstat(fd, &sb) != 0)
        return kf_err_set(err, KF_EIO, "reference file: fstat: %s", strerror(errno));
    unsigned char h[KF_REFFILE_HEADER];
    if (pread(fd, h, sizeof h, 0) != (ssize_t)sizeof h || memcmp(h, MAGIC, 8) != 0)
        return kf_err_set(err, KF_EINVAL, "the reference file %s has no reference header", digest);
    uint32_t dt;
    uint64_t n;
    memcpy(&dt, h + 8, 4);
    memcpy(&n, h + 16, 8);
    size_t esz = dt == KF_DTYPE_F64 ? 8 : dt == KF_DTYPE_F32 ? 4 : 0;
    if (!esz || n != count || n > (UINT64_MAX - KF_REFFILE_HEADER) / esz ||
        (uint64_t)sb.st_size != KF_REFFILE_HEADER + n * esz)
        return kf_err_set(err, KF_EINVAL,
                          "the reference file %s holds %llu elements of dtype %u in %lld bytes; "
                          "the task needs %llu",
                          digest, (unsigned long long)n, dt, (long long)sb.st_size,
                          (unsigned long long)count);
    void *m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED)
        return kf_err_set(err, KF_EIO, "cannot map the reference file %s (%lld bytes): %s", digest,
                          (long long)sb.st_size, strerror(errno));
    if (verify) {
        unsigned char d[32];
        char hex[KF_REFFILE_DIGEST_HEX];
        madvise(m, (size_t)sb.st_size, MADV_SEQUENTIAL);
        crypto_generichash(d, sizeof d, m, (unsigned long long)sb.st_size, NULL, 0);
        sodium_bin2hex(hex, sizeof hex, d, sizeof d);
        if (strcmp(hex, digest) != 0) {
            munmap(m, (size_t)sb.st_size);
            return kf_err_set(err, KF_EINVAL,
                              "the reference file %s is damaged: its content hashes to %.16s...",
                              digest, hex);
        }
    }
    *out = (kf_reffile){m, (size_t)sb.st_size, (kf_dtype)dt, n,
                        (const unsigned char *)m + KF_REFFILE_HEADER};
    return KF_OK;
}

void kf_reffile_unmap(kf_reffile *r)
{
    if (r->map)
        munmap(r->map, r->maplen);
    memset(r, 0, sizeof *r);
}

/* reffile — a reference as a file, named by its digest; see reffile.h.
 * Written and hashed in chunks on every core, so a 12 GB reference needs
 * no second copy in memory and no minute of hashing. */
#include "runner/reffile.h"

#include "common/util.h"
#include "runner/compare.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Version 2: the digest of hashed chunks (version 1 hashed the file whole;
 * such a file is refused as not a reference and computed anew). */
static const unsigned char MAGIC[8] = {'K', 'F', 'R', 'E', 'F', 0, 2, 0};

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

/* The digest: BLAKE2b-256 of the header followed by the BLAKE2b-256 of each
 * HASH_CHUNK bytes of the values in order, so that the chunks are hashed
 * on every core (a 6.4 GB reference took 12 s on one). */
#define HASH_CHUNK ((size_t)32 << 20)

typedef struct hashjob {
    const unsigned char *bytes; /* the values as stored, or NULL: made from f64 */
    const double *f64;          /* with bytes NULL: converted to f32 per chunk */
    size_t size;                /* bytes of the values as stored */
    int fd;                     /* >= 0: each chunk also written there */
    unsigned char (*sums)[32];
    int failed[KF_PAR_MAX];
} hashjob;

static void hash_chunks(void *arg, unsigned part, size_t lo, size_t hi)
{
    hashjob *j = arg;
    float *f = j->bytes ? NULL : malloc(HASH_CHUNK);
    if (!j->bytes && !f) {
        j->failed[part] = ENOMEM;
        return;
    }
    for (size_t c = lo; c < hi && !j->failed[part]; c++) {
        size_t off = c * HASH_CHUNK;
        size_t len = j->size - off < HASH_CHUNK ? j->size - off : HASH_CHUNK;
        const unsigned char *p = j->bytes ? j->bytes + off : (const unsigned char *)f;
        if (f)
            for (size_t i = 0; i < len / sizeof *f; i++)
                f[i] = (float)j->f64[off / sizeof *f + i];
        crypto_generichash(j->sums[c], 32, p, len, NULL, 0);
        for (size_t done = 0; j->fd >= 0 && done < len;) {
            ssize_t w =
                pwrite(j->fd, p + done, len - done, (off_t)(KF_REFFILE_HEADER + off + done));
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                j->failed[part] = w < 0 ? errno : EIO;
                break;
            }
            done += (size_t)w;
        }
    }
    free(f);
}

/* Hashes (and with fd >= 0 writes) the values; the digest in hex. 0, or
 * the errno of the first part that failed. */
static int hash_values(hashjob *j, const unsigned char h[KF_REFFILE_HEADER],
                       char hex[KF_REFFILE_DIGEST_HEX])
{
    size_t nchunks = (j->size + HASH_CHUNK - 1) / HASH_CHUNK;
    j->sums = malloc((nchunks ? nchunks : 1) * sizeof *j->sums);
    if (!j->sums)
        return ENOMEM;
    memset(j->failed, 0, sizeof j->failed);
    kf_par_items(nchunks, kf_cpus(), hash_chunks, j);
    int failed = 0;
    for (unsigned i = 0; i < KF_PAR_MAX && !failed; i++)
        failed = j->failed[i];
    crypto_generichash_state st;
    crypto_generichash_init(&st, NULL, 0, 32);
    crypto_generichash_update(&st, h, KF_REFFILE_HEADER);
    crypto_generichash_update(&st, (const unsigned char *)j->sums, nchunks * sizeof *j->sums);
    unsigned char d[32];
    crypto_generichash_final(&st, d, sizeof d);
    sodium_bin2hex(hex, KF_REFFILE_DIGEST_HEX, d, sizeof d);
    free(j->sums);
    j->sums = NULL;
    return failed;
}

/* A new file at path with the header and the job's values, and its digest. */
static int write_file(const char *path, kf_dtype dtype, size_t n, hashjob *j,
                      char digest[KF_REFFILE_DIGEST_HEX], kf_err *err)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return kf_err_set(err, KF_EIO, "cannot create the reference file %s: %s", path,
                          strerror(errno));
    unsigned char h[KF_REFFILE_HEADER];
    header(h, dtype, n);
    int saved = kf_write_all(fd, h, sizeof h) == 0 ? 0 : errno ? errno : EIO;
    j->fd = fd;
    if (saved == 0)
        saved = hash_values(j, h, digest);
    if (close(fd) != 0 && saved == 0)
        saved = errno;
    if (saved != 0) {
        unlink(path);
        return kf_err_set(err, KF_EIO,
                          "cannot write the reference file %s (%zu elements): %s; the node's "
                          "disk must hold the problem's references",
                          path, n, strerror(saved));
    }
    return KF_OK;
}

int kf_reffile_write(const char *path, const double *ref, size_t n, kf_dtype dtype,
                     char digest[KF_REFFILE_DIGEST_HEX], kf_err *err)
{
    if (dtype != KF_DTYPE_F64 && dtype != KF_DTYPE_F32)
        return kf_err_set(err, KF_EINVAL, "a reference is kept as f64 or f32, not dtype %d",
                          (int)dtype);
    hashjob j = {.bytes = dtype == KF_DTYPE_F64 ? (const unsigned char *)ref : NULL,
                 .f64 = ref,
                 .size = n * (dtype == KF_DTYPE_F64 ? sizeof(double) : sizeof(float))};
    return write_file(path, dtype, n, &j, digest, err);
}

int kf_reffile_write_f32(const char *path, const float *ref, size_t n,
                         char digest[KF_REFFILE_DIGEST_HEX], kf_err *err)
{
    hashjob j = {.bytes = (const unsigned char *)ref, .size = n * sizeof(float)};
    return write_file(path, KF_DTYPE_F32, n, &j, digest, err);
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
    void *m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    if (m == MAP_FAILED)
        return kf_err_set(err, KF_EIO, "cannot map the reference file %s (%lld bytes): %s", digest,
                          (long long)sb.st_size, strerror(errno));
    if (verify) {
        char hex[KF_REFFILE_DIGEST_HEX];
        hashjob j = {.bytes = (const unsigned char *)m + KF_REFFILE_HEADER,
                     .size = (size_t)sb.st_size - KF_REFFILE_HEADER,
                     .fd = -1};
        int failed = hash_values(&j, h, hex);
        if (failed != 0) {
            munmap(m, (size_t)sb.st_size);
            return kf_err_set(err, KF_EIO, "cannot hash the reference file %s: %s", digest,
                              strerror(failed));
        }
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

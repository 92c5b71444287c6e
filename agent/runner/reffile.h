/* reffile — a problem's reference for one configuration and seed as a file
 * (docs/problems.md, issue 41): computed once by a runner that loads only
 * the problem, kept on the agent where candidates are judged
 * (WORKDIR/refs/DIGEST.ref, agent/refstore.h), named by its digest, which
 * the coordinator stores in place of the values. No reference travels in a
 * frame, so a reference is as large as the node's disk allows.
 *
 * Layout: 24 bytes of header, then the values, little-endian:
 *   "KFREF\0\2\0"  magic and version
 *   u32 dtype      KF_DTYPE_F64; KF_DTYPE_F32 for an output narrower than
 *                  f64 whose reference would pass KF_REFFILE_F64_MAX in
 *                  doubles (rounded to nearest: its error, 6e-8 relative,
 *                  is far below any tolerance an f32 or narrower output
 *                  can be judged by, and it halves KernelBench's 4096 x
 *                  393216 softmax's 38.6 GB of references)
 *   u32 0
 *   u64 count      elements
 * The digest, in hex: BLAKE2b-256 of the header followed by the BLAKE2b-256
 * of each 32 MiB of the values in turn (the last piece shorter), so that
 * the pieces are hashed on every core. Version 1 hashed the file whole: a
 * file of it is refused (not a reference) and computed anew. */
#ifndef KF_REFFILE_H
#define KF_REFFILE_H

#include "common/err.h"
#include "kf_kernel.h"

#include <stddef.h>
#include <stdint.h>

#define KF_REFFILE_HEADER 24
#define KF_REFFILE_DIGEST_HEX 65 /* 64 hex digits and a NUL */

/* Where a reference runner writes the reference of its task's seed number
 * i: in its scratch dir `dir` (the agent gives one to every sandboxed
 * runner; else WORKDIR/tmp), from where the agent moves it into its store
 * when the Result arrives (agent/refstore.h). */
void kf_reffile_scratch_path(char *out, size_t len, const char *dir, uint64_t task,
                             uint32_t attempt, size_t i);

/* The dtype a reference of `count` elements of an output of dtype `out` is
 * kept in. */
#define KF_REFFILE_F64_MAX (2ull << 30)
kf_dtype kf_reffile_dtype(kf_dtype out, size_t count);

/* Writes the n values of ref to a new file at path (O_EXCL, mode 0600) in
 * dtype (F64 or F32), and its digest. 0, or KF_EIO with err (the file
 * removed), KF_EINVAL for another dtype. */
int kf_reffile_write(const char *path, const double *ref, size_t n, kf_dtype dtype,
                     char digest[KF_REFFILE_DIGEST_HEX], kf_err *err);
/* The same for values already in f32 (a reference computed so, for a file
 * kept in f32): the file and digest kf_reffile_write makes of the same
 * values widened to doubles. */
int kf_reffile_write_f32(const char *path, const float *ref, size_t n,
                         char digest[KF_REFFILE_DIGEST_HEX], kf_err *err);

typedef struct kf_reffile {
    void *map;
    size_t maplen;
    kf_dtype dtype;
    uint64_t count;
    const void *values;
} kf_reffile;

/* Maps the reference file open on fd, read-only: its header must say
 * `count` elements of F64 or F32 and its size match; with verify, its
 * digest must be `digest` (a damaged or swapped file is refused). 0, or
 * KF_EINVAL (not that reference) / KF_EIO with err. */
int kf_reffile_map(int fd, uint64_t count, const char *digest, int verify, kf_reffile *out,
                   kf_err *err);
void kf_reffile_unmap(kf_reffile *r);

/* Element i as a double. */
static inline double kf_reffile_at(const kf_reffile *r, size_t i)
{
    return r->dtype == KF_DTYPE_F64 ? ((const double *)r->values)[i]
                                    : (double)((const float *)r->values)[i];
}

#endif

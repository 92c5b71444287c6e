/* cubins — the runner's own PTX modules (cudrv_ptx.h's blocking, flush and
 * stamp kernels; devcmp.h's compare) compiled once per node, not in every
 * runner (issue 45).
 *
 * The driver compiles PTX at each cuModuleLoadData: 25-27 ms for the
 * blocking module in every runner on an H200, whose entries carry a random
 * name per runner (so a kernel cannot name its own kernels out of CUPTI's
 * timing: no two texts alike, no JIT cache hit), and 31 ms for the compare
 * module in a candidate's first runner (its JIT cache is the kernel's own).
 * So the agent's doctor (`--doctor --gpu --cubins PATH`, our code only,
 * before any task) compiles each module for its GPU and writes the images
 * into one file in the agent's work dir, which no sandboxed runner can
 * write; the blocking module with a placeholder where a runner's suffix
 * goes. A runner reads the file before its sandbox and, once its context
 * is made, loads the image whose key matches its module's text, its GPU's
 * compute capability and the driver's version, the placeholder replaced
 * by its own suffix (names only: the placeholder is 19 bytes that occur
 * nowhere else, and the suffix is as long); a missing file, a key that does
 * not match (another driver, another GPU, a newer build) or an image the
 * driver refuses leaves that module to the PTX, as before. With the
 * sandbox off (KF_SANDBOX=0) a kernel can write whatever the agent's user
 * can, this file too: that mode trusts its kernels.
 *
 * File: "KFCUBINS 1\n", then per image a line "KEY LENGTH\n" and LENGTH
 * bytes. KEY: MODULE-smMAJORMINOR-drvVERSION-HASH, HASH the first 16 bytes
 * of BLAKE2b over the module's PTX text, in hex. */
#ifndef KF_CUBINS_H
#define KF_CUBINS_H

#include "common/err.h"

#include <stddef.h>

/* What the blocking module's entries carry in place of a runner's suffix
 * ("_kf" and 16 hex digits, cudrv.c). */
#define KF_CUBINS_PLACEHOLDER "_kfQZqzQZqzQZqzQZqz"
#define KF_CUBINS_KEY_MAX 128
#define KF_CUBINS_MAX 8

typedef struct kf_cubins kf_cubins;

/* The file's path in an agent's work dir. */
void kf_cubins_path(char *out, size_t len, const char *workdir);

/* The key of module (a word) compiled from ptx for compute capability
 * major.minor under driver version `driver` (cuDriverGetVersion). */
void kf_cubins_key(char out[KF_CUBINS_KEY_MAX], const char *module, int major, int minor,
                   int driver, const char *ptx);

/* The file at path, read (at most 16 MiB); NULL when it is missing or not
 * such a file (why in err: the runner then compiles the PTX). */
kf_cubins *kf_cubins_read(const char *path, kf_err *err);
void kf_cubins_free(kf_cubins **self);

/* The image of key, and its length; NULL when the file has none. */
const void *kf_cubins_find(const kf_cubins *c, const char *key, size_t *len);

/* A copy of the image with every KF_CUBINS_PLACEHOLDER replaced by suffix
 * (as long as it); NULL when suffix is not. The caller frees it. */
void *kf_cubins_named(const void *img, size_t len, const char *suffix);

/* Writes n images under their keys to path, atomically. 0, or KF_EIO /
 * KF_EINVAL with err. */
int kf_cubins_write(const char *path, const char *const *keys, const void *const *imgs,
                    const size_t *lens, size_t n, kf_err *err);

#endif

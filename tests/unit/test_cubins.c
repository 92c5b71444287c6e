/* cubins: the node's compiled harness modules (issue 45). A file written
 * with images under their keys gives each back by its key and no other; a
 * key changes with the module's text, the GPU's compute capability and the
 * driver's version, so a stale file is never used for another; the
 * placeholder in an image is replaced by a runner's suffix everywhere and
 * nothing else changes; a suffix of another length, a missing file and a
 * damaged one are refused (the runner then compiles its PTX). */
#include "runner/cubins.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static char dir[] = "/tmp/kf-test-cubins-XXXXXX";

static int setup(void **state)
{
    (void)state;
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd);
}

static void test_keys(void **state)
{
    (void)state;
    char a[KF_CUBINS_KEY_MAX], b[KF_CUBINS_KEY_MAX];
    kf_cubins_key(a, "block", 9, 0, 13000, ".entry x");
    kf_cubins_key(b, "block", 9, 0, 13000, ".entry x");
    assert_string_equal(a, b);
    assert_non_null(strstr(a, "block-sm90-drv13000-"));
    kf_cubins_key(b, "block", 9, 0, 13000, ".entry y"); /* another text */
    assert_string_not_equal(a, b);
    kf_cubins_key(b, "block", 8, 0, 13000, ".entry x"); /* another GPU */
    assert_string_not_equal(a, b);
    kf_cubins_key(b, "block", 9, 0, 12080, ".entry x"); /* another driver */
    assert_string_not_equal(a, b);
    kf_cubins_key(b, "devcmp", 9, 0, 13000, ".entry x");
    assert_string_not_equal(a, b);
}

static void test_write_read_find(void **state)
{
    (void)state;
    char path[256];
    snprintf(path, sizeof path, "%s/cubins", dir);
    /* An image holding a newline and the header's own text: found whole. */
    const char one[] = "ELF\nKFCUBINS 1\n\0binary", two[] = "second image";
    const char *keys[] = {"block-sm90-drv13000-aa", "devcmp-sm90-drv13000-bb"};
    const void *imgs[] = {one, two};
    size_t lens[] = {sizeof one, sizeof two - 1};
    kf_err err;
    assert_int_equal(kf_cubins_write(path, keys, imgs, lens, 2, &err), KF_OK);
    kf_cubins *c = kf_cubins_read(path, &err);
    assert_non_null(c);
    size_t len = 0;
    const void *got = kf_cubins_find(c, keys[0], &len);
    assert_non_null(got);
    assert_int_equal(len, sizeof one);
    assert_memory_equal(got, one, sizeof one);
    got = kf_cubins_find(c, keys[1], &len);
    assert_non_null(got);
    assert_int_equal(len, sizeof two - 1);
    assert_memory_equal(got, two, len);
    assert_null(kf_cubins_find(c, "block-sm80-drv13000-aa", &len));
    kf_cubins_free(&c);
    assert_null(c);
    assert_null(kf_cubins_find(NULL, keys[0], &len)); /* no file: nothing */

    /* Keys that would break the file are refused, nothing written. */
    const char *bad[] = {"has space"};
    size_t one_len[] = {3};
    const void *img1[] = {"abc"};
    char other[256];
    snprintf(other, sizeof other, "%s/bad", dir);
    assert_int_equal(kf_cubins_write(other, bad, img1, one_len, 1, &err), KF_EINVAL);
    assert_int_not_equal(access(other, F_OK), 0);
}

static void test_refused(void **state)
{
    (void)state;
    char path[256];
    kf_err err;
    snprintf(path, sizeof path, "%s/missing", dir);
    assert_null(kf_cubins_read(path, &err));
    assert_non_null(strstr(err.msg, path));

    /* Damaged: a length past the end, another magic, an empty list. */
    const char *damaged[] = {"KFCUBINS 1\nblock-k 100\nshort", "KFCUBINS 2\nk 1\nx", "KFCUBINS 1\n",
                             "KFCUBINS 1\nnolength\nx"};
    for (size_t i = 0; i < sizeof damaged / sizeof *damaged; i++) {
        snprintf(path, sizeof path, "%s/damaged%zu", dir, i);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(damaged[i], f);
        fclose(f);
        assert_null(kf_cubins_read(path, &err));
        assert_non_null(strstr(err.msg, "not a file of the harness's compiled modules"));
    }
}

static void test_named(void **state)
{
    (void)state;
    /* The placeholder where ELF puts names (symbol, .text.NAME,
     * .nv.info.NAME), back to back and at both ends. */
    const char *P = KF_CUBINS_PLACEHOLDER;
    char img[256], want[256];
    const char suffix[] = "_kf0123456789abcdef";
    size_t len = 0, wlen = 0;
    const char *parts[] = {"@", "Xkf_block", "@", "\0.text.kf_flush", "@", "@"};
    size_t plen[] = {0, 9, 0, 15, 0, 0};
    for (size_t i = 0; i < 6; i++) {
        const char *a = parts[i][0] == '@' ? P : parts[i];
        const char *b = parts[i][0] == '@' ? suffix : parts[i];
        size_t k = parts[i][0] == '@' ? strlen(P) : plen[i];
        memcpy(img + len, a, k);
        memcpy(want + wlen, b, k);
        len += k;
        wlen += k;
    }
    assert_int_equal(len, wlen);
    assert_int_equal(strlen(suffix), strlen(KF_CUBINS_PLACEHOLDER));
    char *out = kf_cubins_named(img, len, suffix);
    assert_non_null(out);
    assert_memory_equal(out, want, len);
    assert_null(memmem(out, len, KF_CUBINS_PLACEHOLDER, strlen(KF_CUBINS_PLACEHOLDER)));
    free(out);
    /* The image itself is left as it was. */
    assert_non_null(memmem(img, len, KF_CUBINS_PLACEHOLDER, strlen(KF_CUBINS_PLACEHOLDER)));
    /* A suffix of another length would shift every offset after it. */
    assert_null(kf_cubins_named(img, len, "_kf0123"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keys),
        cmocka_unit_test(test_write_read_find),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_named),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

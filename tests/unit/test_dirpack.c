/* Tests for common/dirpack.c: a tree packs to the same bytes every time,
 * leaves out dot-files and __pycache__, refuses links, and unpacks whole;
 * a pack that names a path out of its directory (or is cut short) is
 * refused and writes nothing there. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "common/dirpack.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[64];

static void put(const char *rel, const char *text)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", root, rel);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_roundtrip(void **state)
{
    (void)state;
    snprintf(root, sizeof root, "/tmp/kf-dirpack.XXXXXX");
    assert_non_null(mkdtemp(root));
    char p[256], why[256];
    snprintf(p, sizeof p, "%s/src", root);
    mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/src/sub", root);
    mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/src/__pycache__", root);
    mkdir(p, 0700);
    put("src/__init__.py", "X = 1\n");
    put("src/sub/data.txt", "0.5\n");
    put("src/.hidden", "no\n");
    put("src/__pycache__/m.pyc", "junk");
    kf_buf a = KF_BUF_INIT, b = KF_BUF_INIT;
    snprintf(p, sizeof p, "%s/src", root);
    assert_int_equal(kf_dirpack_pack(p, &a, 1 << 20, why, sizeof why), 0);
    assert_int_equal(kf_dirpack_pack(p, &b, 1 << 20, why, sizeof why), 0);
    assert_int_equal(a.len, b.len);
    assert_memory_equal(a.data, b.data, a.len);
    assert_null(strstr(a.data, ".hidden"));
    assert_null(memmem(a.data, a.len, "__pycache__", 11));
    kf_err err;
    char dst[256];
    snprintf(dst, sizeof dst, "%s/dst", root);
    assert_int_equal(kf_dirpack_unpack(a.data, a.len, dst, &err), KF_OK);
    kf_buf got = KF_BUF_INIT;
    snprintf(p, sizeof p, "%s/dst/sub/data.txt", root);
    assert_int_equal(kf_buf_read_file(&got, p), KF_OK);
    assert_string_equal(got.data, "0.5\n");
    /* Over the size bound, and a symbolic link: refused. */
    kf_buf_reset(&b);
    snprintf(p, sizeof p, "%s/src", root);
    assert_int_equal(kf_dirpack_pack(p, &b, 8, why, sizeof why), -1);
    assert_non_null(strstr(why, "more than 8 bytes"));
    char link[256];
    snprintf(link, sizeof link, "%s/src/key", root);
    assert_int_equal(symlink("/etc/passwd", link), 0);
    kf_buf_reset(&b);
    assert_int_equal(kf_dirpack_pack(p, &b, 1 << 20, why, sizeof why), -1);
    assert_non_null(strstr(why, "a symbolic link"));
    kf_buf_release(&a);
    kf_buf_release(&b);
    kf_buf_release(&got);
}

static void test_hostile_packs(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "kfdir1\n4 1\n../xA",       "kfdir1\n4 1\n/etc1", "kfdir1\n4 1\na//bX",
        "kfdir1\n5 1\na/./bX",      "kfdir1\n2 1\n.xA",   "kfdir1\n2 9\nabA",
        "kfdir1\n2 1\na/X",         "notapack\n",         "kfdir1\n1 1",
        "kfdir1\n99999999999 1\nx",
    };
    kf_err err;
    char dst[256];
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(dst, sizeof dst, "%s/bad%zu", root, i);
        assert_int_equal(kf_dirpack_unpack(bad[i], strlen(bad[i]), dst, &err), KF_EINVAL);
    }
    char p[256];
    snprintf(p, sizeof p, "%s/x", root);
    assert_int_not_equal(access(p, F_OK), 0); /* "../x" from bad0 wrote nothing */
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_hostile_packs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

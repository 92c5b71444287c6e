/* Tests for common/keys.c: key files made once and read back, refused when
 * others may read them or when malformed; the allow list added to, renamed,
 * refused on a taken name, revoked by name or key, and re-read only when it
 * changed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <fcntl.h>

#include "common/keys.h"
#include "common/util.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];

static int rm_cb(const char *p, const struct stat *s, int f, struct FTW *w)
{
    (void)s;
    (void)f;
    (void)w;
    return remove(p);
}

static void test_keyfile(void **state)
{
    (void)state;
    char path[128];
    snprintf(path, sizeof path, "%s/a.key", dir);
    kf_keypair k1, k2;
    kf_err err;
    assert_int_equal(kf_keys_load(path, 0, &k1, &err), KF_ENOTFOUND);
    assert_int_equal(kf_keys_load(path, 1, &k1, &err), KF_OK);
    assert_true(kf_key_valid(k1.pub) && kf_key_valid(k1.sec));
    assert_string_not_equal(k1.pub, k1.sec);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    /* Read back, not made again. */
    assert_int_equal(kf_keys_load(path, 1, &k2, &err), KF_OK);
    assert_string_equal(k1.pub, k2.pub);
    assert_string_equal(k1.sec, k2.sec);
    char pub[KF_KEY_Z85 + 1];
    assert_int_equal(kf_keys_read_public(path, pub, &err), KF_OK);
    assert_string_equal(pub, k1.pub);
    /* Readable by others: refused, with what to do. */
    chmod(path, 0644);
    assert_int_equal(kf_keys_load(path, 1, &k2, &err), KF_EINVAL);
    assert_non_null(strstr(err.msg, "chmod 600"));
    /* Not a key file. */
    snprintf(path, sizeof path, "%s/bad.key", dir);
    assert_int_equal(kf_write_file(path, "hello\nworld\n", 12, 0600, &err), KF_OK);
    assert_int_equal(kf_keys_load(path, 1, &k2, &err), KF_EINVAL);
    assert_non_null(strstr(err.msg, "is not a key file"));
    assert_false(kf_key_valid("short"));
    assert_false(kf_key_valid("0123456789012345678901234567890123456789~"));
    assert_false(kf_key_valid("012345678901234567890123456789012345678\""));
}

static void test_allow(void **state)
{
    (void)state;
    char path[128], kpath[128];
    snprintf(path, sizeof path, "%s/agents.allow", dir);
    kf_keypair a, b;
    kf_err err;
    snprintf(kpath, sizeof kpath, "%s/x.key", dir);
    assert_int_equal(kf_keys_load(kpath, 1, &a, &err), KF_OK);
    snprintf(kpath, sizeof kpath, "%s/y.key", dir);
    assert_int_equal(kf_keys_load(kpath, 1, &b, &err), KF_OK);

    kf_allow al = {0};
    assert_int_equal(kf_allow_load(path, &al, &err), KF_OK); /* missing: empty */
    assert_int_equal(al.n, 0);
    assert_int_equal(kf_allow_add(path, a.pub, "pod-1", &err), KF_OK);
    assert_int_equal(kf_allow_add(path, b.pub, "pod-2", &err), KF_OK);
    assert_int_equal(kf_allow_add(path, b.pub, "pod-1", &err), KF_EEXIST);
    assert_int_equal(kf_allow_add(path, "nope", "pod-3", &err), KF_EINVAL);
    assert_int_equal(kf_allow_add(path, a.pub, "has space", &err), KF_EINVAL);
    int changed = 0;
    assert_int_equal(kf_allow_refresh(path, &al, &changed, &err), KF_OK);
    assert_true(changed);
    assert_int_equal(al.n, 2);
    assert_string_equal(kf_allow_find(&al, a.pub), "pod-1");
    assert_string_equal(kf_allow_find(&al, b.pub), "pod-2");
    assert_int_equal(kf_allow_refresh(path, &al, &changed, &err), KF_OK);
    assert_false(changed); /* nothing changed: not read again */

    /* Re-adding a key under a new name renames it. */
    assert_int_equal(kf_allow_add(path, b.pub, "pod-2b", &err), KF_OK);
    size_t removed = 0;
    assert_int_equal(kf_allow_remove(path, "pod-1", &removed, &err), KF_OK);
    assert_int_equal(removed, 1);
    assert_int_equal(kf_allow_remove(path, b.pub, &removed, &err), KF_OK);
    assert_int_equal(removed, 1);
    assert_int_equal(kf_allow_remove(path, "nobody", &removed, &err), KF_OK);
    assert_int_equal(removed, 0);
    assert_int_equal(kf_allow_load(path, &al, &err), KF_OK);
    assert_int_equal(al.n, 0);
    assert_null(kf_allow_find(&al, a.pub));

    /* A malformed line is named by file and line. */
    assert_int_equal(kf_write_file(path, "# c\nnot-a-key pod\n", 18, 0600, &err), KF_OK);
    assert_int_equal(kf_allow_load(path, &al, &err), KF_EINVAL);
    assert_non_null(strstr(err.msg, "agents.allow:2:1"));
    kf_allow_free(&al);
}

/* The coordinator loaded the list, then an agent was enrolled within the
 * same clock tick of the file system: the file's mtime did not move. It
 * must still be seen (the first `kfleet run` that hung for 7 minutes on
 * the H100, issue 11); a list that stops parsing keeps the one in use, and
 * so does one that cannot be read for want of descriptors. */
static void test_allow_refresh_same_mtime(void **state)
{
    (void)state;
    char path[128], kpath[128];
    snprintf(path, sizeof path, "%s/tick.allow", dir);
    kf_keypair a, b;
    kf_err err;
    snprintf(kpath, sizeof kpath, "%s/t1.key", dir);
    assert_int_equal(kf_keys_load(kpath, 1, &a, &err), KF_OK);
    snprintf(kpath, sizeof kpath, "%s/t2.key", dir);
    assert_int_equal(kf_keys_load(kpath, 1, &b, &err), KF_OK);
    assert_int_equal(kf_allow_add(path, a.pub, "local-0", &err), KF_OK);
    struct stat st0;
    assert_int_equal(stat(path, &st0), 0);
    kf_allow al = {0};
    assert_int_equal(kf_allow_load(path, &al, &err), KF_OK);
    assert_int_equal(al.n, 1);

    assert_int_equal(kf_allow_add(path, b.pub, "local-1", &err), KF_OK);
    struct timespec same[2] = {st0.st_atim, st0.st_mtim};
    assert_int_equal(utimensat(AT_FDCWD, path, same, 0), 0); /* as within one tick */
    int changed = 0;
    assert_int_equal(kf_allow_refresh(path, &al, &changed, &err), KF_OK);
    assert_true(changed);
    assert_string_equal(kf_allow_find(&al, b.pub), "local-1");

    assert_int_equal(kf_write_file(path, "garbage line\n", 13, 0600, &err), KF_OK);
    assert_int_equal(kf_allow_refresh(path, &al, &changed, &err), KF_EINVAL);
    assert_false(changed);
    assert_int_equal(al.n, 2); /* the list in use stands */
    assert_int_equal(kf_allow_refresh(path, &al, &changed, &err), KF_OK); /* said once */
    assert_false(changed);

    /* Out of descriptors (a flood on the agent port, issue 31): the list
     * cannot be read, and the one in use stands; readable again, it is
     * read again. */
    char line[128];
    int ll = snprintf(line, sizeof line, "%s local-0\n", a.pub);
    assert_int_equal(kf_write_file(path, line, (size_t)ll, 0600, &err), KF_OK);
    struct rlimit was, low;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &was), 0);
    low = was;
    low.rlim_cur = 64;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    int fill[64], nfill = 0, f;
    while (nfill < 64 && (f = open("/dev/null", O_RDONLY)) >= 0)
        fill[nfill++] = f;
    int rc = kf_allow_refresh(path, &al, &changed, &err);
    for (int i = 0; i < nfill; i++)
        close(fill[i]);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &was), 0);
    assert_int_equal(rc, KF_EIO);
    assert_non_null(strstr(err.msg, "Too many open files"));
    assert_false(changed);
    assert_int_equal(al.n, 2);
    assert_string_equal(kf_allow_find(&al, b.pub), "local-1");
    assert_int_equal(kf_allow_refresh(path, &al, &changed, &err), KF_OK);
    assert_true(changed);
    assert_int_equal(al.n, 1);
    kf_allow_free(&al);
}

/* A --server-key that names a file is read as that file, even when the path
 * is exactly 40 characters of the Z85 alphabet, as
 * /tmp/kfh-h100/state/keys/coordinator.pub was: taken as the key itself, it
 * made every handshake of the first `kfleet run` on the H100 fail. */
static void test_resolve_prefers_a_file(void **state)
{
    (void)state;
    char d[32];
    snprintf(d, sizeof d, "/tmp/kfXXXXXX"); /* 13 characters, as /tmp/kfh-h100 */
    assert_non_null(mkdtemp(d));
    char keys[64], pub[64], kp[64];
    snprintf(keys, sizeof keys, "%s/state", d);
    assert_int_equal(mkdir(keys, 0700), 0);
    snprintf(keys, sizeof keys, "%s/state/keys", d);
    assert_int_equal(mkdir(keys, 0700), 0);
    snprintf(kp, sizeof kp, "%s/coordinator.key", keys);
    snprintf(pub, sizeof pub, "%s/coordinator.pub", keys);
    assert_int_equal(strlen(pub), KF_KEY_Z85);
    assert_true(kf_key_valid(pub)); /* the path itself is a well-formed key */
    kf_keypair k;
    kf_err err;
    assert_int_equal(kf_keys_coordinator(kp, pub, &k, &err), KF_OK);
    char got[KF_KEY_Z85 + 1];
    assert_int_equal(kf_keys_resolve_public(pub, got, &err), KF_OK);
    assert_string_equal(got, k.pub);
    assert_int_equal(kf_keys_resolve_public(k.pub, got, &err), KF_OK); /* a key is a key */
    assert_string_equal(got, k.pub);
    unlink(kp);
    unlink(pub);
    rmdir(keys);
    snprintf(keys, sizeof keys, "%s/state", d);
    rmdir(keys);
    rmdir(d);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/kf-test-keys.XXXXXX");
    if (!mkdtemp(dir))
        return 1;
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_keyfile), cmocka_unit_test(test_allow),
                                       cmocka_unit_test(test_allow_refresh_same_mtime),
                                       cmocka_unit_test(test_resolve_prefers_a_file)};
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    nftw(dir, rm_cb, 8, FTW_DEPTH | FTW_PHYS);
    return rc;
}

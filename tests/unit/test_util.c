/* Tests for common/buf.c, util.c and paths.c: the buffer grows and pads,
 * durations and sizes parse or are refused, hashes separate parts, locks exclude,
 * and KFLEET_HOME puts everything under one directory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "common/buf.h"
#include "common/paths.h"
#include "common/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include <errno.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

static void test_buf(void **state)
{
    (void)state;
    kf_buf b = KF_BUF_INIT;
    assert_string_equal(b.data, "");
    for (int i = 0; i < 1000; i++)
        kf_buf_addf(&b, "%d,", i);
    assert_int_equal(b.len, strlen(b.data));
    assert_non_null(strstr(b.data, "999,"));
    kf_buf_reset(&b);
    kf_buf_addpad(&b, "µs", 4, 1); /* two display columns, padded to four */
    assert_string_equal(b.data, "  µs");
    char *s = kf_buf_detach(&b);
    assert_string_equal(s, "  µs");
    assert_int_equal(b.len, 0);
    free(s);
    kf_buf_release(&b);
}

/* A word printed for pasting comes back from the shell as it was: each
 * case is quoted, then echoed by a real /bin/sh. */
static void test_shell_word(void **state)
{
    (void)state;
    static const char *const words[] = {"plain-word_1.2:3",
                                        "tcp://127.0.0.1:5555",
                                        "]U[+:Ey8e}gl0w{(jtCNaM<uB=(oEt7I9oT)wvM+",
                                        "$HOME & echo pwned > x",
                                        "it's",
                                        "a b",
                                        "*",
                                        ""};
    for (size_t i = 0; i < sizeof words / sizeof *words; i++) {
        kf_buf b = KF_BUF_INIT;
        kf_buf_adds(&b, "printf '%s' ");
        kf_buf_add_shell_word(&b, words[i]);
        FILE *p = popen(b.data, "r");
        assert_non_null(p);
        char got[256] = "";
        size_t n = fread(got, 1, sizeof got - 1, p);
        got[n] = '\0';
        assert_int_equal(pclose(p), 0);
        assert_string_equal(got, words[i]);
        kf_buf_release(&b);
    }
    kf_buf b = KF_BUF_INIT;
    kf_buf_add_shell_word(&b, "safe-as/is");
    assert_string_equal(b.data, "safe-as/is"); /* nothing to quote: as written */
    kf_buf_release(&b);
}

/* Local files are never trusted by their name alone: a symlink planted
 * where a file goes is replaced, not written through; a directory another
 * user owns or can write, or a symlink in place of one, is refused. */
static void test_file_safety(void **state)
{
    (void)state;
    char dir[64], victim[128], link[128], sub[128];
    snprintf(dir, sizeof dir, "/tmp/kf-test-safety.XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(victim, sizeof victim, "%s/precious", dir);
    snprintf(link, sizeof link, "%s/endpoint", dir);
    kf_err err;
    assert_int_equal(kf_write_file(victim, "mine\n", 5, 0600, &err), KF_OK);
    assert_int_equal(symlink(victim, link), 0);
    assert_int_equal(kf_write_file(link, "tcp://x\n", 8, 0600, &err), KF_OK);
    char got[16] = "";
    FILE *f = fopen(victim, "r");
    assert_non_null(f);
    assert_int_equal(fread(got, 1, sizeof got - 1, f), 5);
    fclose(f);
    assert_string_equal(got, "mine\n"); /* the link's target is untouched */
    struct stat st;
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISREG(st.st_mode)); /* the link itself was replaced */
    /* A link planted at the temporary's old, predictable name (PATH.tmp.PID)
     * is not where the data goes any more. */
    char planted[160];
    snprintf(planted, sizeof planted, "%s.tmp.%d", link, (int)getpid());
    assert_int_equal(symlink(victim, planted), 0);
    assert_int_equal(kf_write_file(link, "tcp://y\n", 8, 0600, &err), KF_OK);
    f = fopen(victim, "r");
    assert_non_null(f);
    memset(got, 0, sizeof got);
    assert_int_equal(fread(got, 1, sizeof got - 1, f), 5);
    fclose(f);
    assert_string_equal(got, "mine\n");

    snprintf(sub, sizeof sub, "%s/run", dir);
    assert_int_equal(kf_private_dir(sub, &err), KF_OK);
    assert_int_equal(kf_private_dir(sub, &err), KF_OK); /* existing and ours: fine */
    assert_int_equal(chmod(sub, 0777), 0);
    assert_int_equal(kf_private_dir(sub, &err), KF_EINVAL);
    assert_non_null(strstr(err.msg, "mode 0777"));
    assert_int_equal(chmod(sub, 0700), 0);
    char sublink[160];
    snprintf(sublink, sizeof sublink, "%s/run-link", dir);
    assert_int_equal(symlink(sub, sublink), 0);
    assert_int_equal(kf_private_dir(sublink, &err), KF_EINVAL);
    assert_non_null(strstr(err.msg, "symbolic link"));
    if (geteuid() == 0) { /* another owner: only root can make one here */
        assert_int_equal(chown(sub, 4242, 4242), 0);
        assert_int_equal(kf_private_dir(sub, &err), KF_EINVAL);
        assert_non_null(strstr(err.msg, "uid 4242"));
    }
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

static void test_duration(void **state)
{
    (void)state;
    double d;
    assert_int_equal(kf_parse_duration("250ms", &d), 0);
    assert_true(d == 0.25);
    assert_int_equal(kf_parse_duration("1.5m", &d), 0);
    assert_true(d == 90);
    assert_int_equal(kf_parse_duration("2", &d), 0);
    assert_true(d == 2);
    assert_int_not_equal(kf_parse_duration("2 parsecs", &d), 0);
    assert_int_not_equal(kf_parse_duration("-1s", &d), 0);
    assert_int_not_equal(kf_parse_duration("", &d), 0);
    /* strtod reads these; a duration must be a finite number (fuzz_inventory
     * found "nan"; tests/fuzz/corpus/inventory/regress-nan). */
    assert_int_not_equal(kf_parse_duration("nan", &d), 0);
    assert_int_not_equal(kf_parse_duration("inf", &d), 0);
    assert_int_not_equal(kf_parse_duration("-nan", &d), 0);
    assert_int_not_equal(kf_parse_duration("1e308h", &d), 0);
}

static void test_size(void **state)
{
    (void)state;
    uint64_t b;
    assert_int_equal(kf_parse_size("4096", &b), 0);
    assert_int_equal(b, 4096);
    assert_int_equal(kf_parse_size("512M", &b), 0);
    assert_int_equal(b, (uint64_t)512 << 20);
    assert_int_equal(kf_parse_size("16GiB", &b), 0);
    assert_int_equal(b, (uint64_t)16 << 30);
    assert_int_equal(kf_parse_size("2TB", &b), 0);
    assert_int_equal(b, (uint64_t)2 << 40);
    assert_int_equal(kf_parse_size("0", &b), 0);
    assert_int_equal(b, 0);
    assert_int_not_equal(kf_parse_size("", &b), 0);
    assert_int_not_equal(kf_parse_size("-1G", &b), 0);
    assert_int_not_equal(kf_parse_size("1.5G", &b), 0);
    assert_int_not_equal(kf_parse_size("16 G", &b), 0);
    assert_int_not_equal(kf_parse_size("16X", &b), 0);
    assert_int_not_equal(kf_parse_size("99999999999T", &b), 0); /* over 2^64 */
}

static void test_hash(void **state)
{
    (void)state;
    char a[65], b[65];
    kf_hash_part p1[2] = {{"ab", 2}, {"c", 1}}, p2[2] = {{"a", 1}, {"bc", 2}};
    kf_hash_hex(p1, 2, a);
    kf_hash_hex(p2, 2, b);
    assert_int_equal(strlen(a), 64);
    assert_string_not_equal(a, b); /* part boundaries count */
    kf_hash_hex(p1, 2, b);
    assert_string_equal(a, b);
}

static void test_lock_and_paths(void **state)
{
    (void)state;
    char dir[] = "/tmp/kf-test-util.XXXXXX";
    assert_non_null(mkdtemp(dir));
    setenv("KFLEET_HOME", dir, 1);
    kf_paths p;
    kf_err err;
    assert_int_equal(kf_paths_resolve(&p, NULL, 1, &err), 0);
    assert_true(strncmp(p.state, dir, strlen(dir)) == 0);
    assert_true(strncmp(p.run, dir, strlen(dir)) == 0);
    assert_true(strncmp(p.control_endpoint, "ipc://", 6) == 0);
    struct stat st;
    assert_int_equal(stat(p.run, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    /* --home wins over KFLEET_HOME. */
    kf_paths q;
    assert_int_equal(kf_paths_resolve(&q, "/tmp/other-home", 0, &err), 0);
    assert_true(strncmp(q.state, "/tmp/other-home/", 16) == 0);
    unsetenv("KFLEET_HOME");

    int fd = kf_lock_file(p.lock, &err);
    assert_true(fd >= 0);
    assert_int_equal(kf_lock_file(p.lock, &err), KF_EBUSY);
    close(fd);
    fd = kf_lock_file(p.lock, &err);
    assert_true(fd >= 0);
    close(fd);

    char f[256];
    snprintf(f, sizeof f, "%s/x", dir);
    assert_int_equal(kf_write_file(f, "hello", 5, 0600, &err), 0);
    kf_buf b = KF_BUF_INIT;
    assert_int_equal(kf_buf_read_file(&b, f), 0);
    assert_string_equal(b.data, "hello");
    kf_buf_release(&b);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

static void test_long_home_refused(void **state)
{
    (void)state;
    char home[200];
    memset(home, 'x', sizeof home - 1);
    home[0] = '/';
    home[sizeof home - 1] = '\0';
    kf_paths p;
    kf_err err;
    assert_int_equal(kf_paths_resolve(&p, home, 0, &err), KF_EINVAL);
    assert_non_null(strstr(err.msg, "107"));
}

/* Files read whole are regular files under a limit: a FIFO with no writer
 * (which would block the open forever), /dev/zero (which never ends), a
 * directory and a file over the limit are refused before any read. */
static void test_read_file_max(void **state)
{
    (void)state;
    char dir[] = "/tmp/kf-readmax.XXXXXX", p[96], why[160];
    assert_non_null(mkdtemp(dir));
    kf_buf b = KF_BUF_INIT;
    snprintf(p, sizeof p, "%s/fifo", dir);
    assert_int_equal(mkfifo(p, 0600), 0);
    assert_int_equal(kf_buf_read_file_max(&b, p, 1024, why, sizeof why), KF_EINVAL);
    assert_non_null(strstr(why, "a FIFO"));
    assert_int_equal(kf_buf_read_file_max(&b, "/dev/zero", 1024, why, sizeof why), KF_EINVAL);
    assert_non_null(strstr(why, "character device"));
    assert_int_equal(kf_buf_read_file_max(&b, dir, 1024, why, sizeof why), KF_EINVAL);
    assert_non_null(strstr(why, "a directory"));
    snprintf(p, sizeof p, "%s/big", dir);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    for (int i = 0; i < 2000; i++)
        fputc('x', f);
    fclose(f);
    assert_int_equal(kf_buf_read_file_max(&b, p, 1999, why, sizeof why), KF_EINVAL);
    assert_non_null(strstr(why, "is 2000 bytes; at most 1999"));
    assert_int_equal(b.len, 0);
    assert_int_equal(kf_buf_read_file_max(&b, p, 2000, why, sizeof why), KF_OK);
    assert_int_equal(b.len, 2000);
    snprintf(p, sizeof p, "%s/none", dir);
    assert_int_equal(kf_buf_read_file_max(&b, p, 10, why, sizeof why), KF_EIO);
    assert_non_null(strstr(why, "No such file"));
    kf_buf_release(&b);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

static void test_word_ok(void **state)
{
    (void)state;
    assert_true(kf_word_ok("gpu-h100", "._-", 64));
    assert_true(kf_word_ok("gpu:h100:8", ":", 64));
    assert_false(kf_word_ok("gpu:h100:8", "-", 64)); /* ':' not allowed here */
    assert_false(kf_word_ok("", "-", 64));
    assert_false(kf_word_ok("-all", "-", 64)); /* reads as an option */
    assert_false(kf_word_ok("a b", "-", 64));
    assert_false(kf_word_ok("$(id)", "-", 64));
    assert_false(kf_word_ok("abcde", "", 4));
    assert_true(kf_word_ok("abcd", "", 4));
}

/* Draws a kernel cannot predict: no two alike, and not the same few bits
 * (a clock read would share its high bits from one call to the next). */
static void test_unpredictable(void **state)
{
    (void)state;
    uint64_t x[16], ored = 0, anded = ~0ull;
    for (int i = 0; i < 16; i++) {
        x[i] = kf_unpredictable_u64();
        ored |= x[i];
        anded &= x[i];
        for (int j = 0; j < i; j++)
            assert_true(x[i] != x[j]);
    }
    assert_true(ored >> 56 != 0 && anded != ored);
}

/* A sleep takes at least what was asked, and nothing is slept for a
 * non-positive or NaN length. */
static void test_sleep(void **state)
{
    (void)state;
    assert_true(kf_sleep_s(0) == 0);
    assert_true(kf_sleep_s(-1) == 0);
    assert_true(kf_sleep_s(NAN) == 0);
    assert_true(kf_sleep_s(0.002) >= 0.002);
}

/* kf_send_fds: the bytes and the descriptors arrive together, the
 * descriptor is the same open file; none, or more than it can pass, is
 * refused; a peer that is gone is an error, not a SIGPIPE. */
static void test_send_fds(void **state)
{
    (void)state;
    int sv[2], pp[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    assert_int_equal(pipe(pp), 0);
    assert_int_equal(kf_send_fds(sv[0], "abcd", 4, &pp[1], 1), KF_OK);
    char got[4];
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } u;
    struct iovec iov = {got, sizeof got};
    struct msghdr m = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
    assert_int_equal(recvmsg(sv[1], &m, 0), 4);
    assert_memory_equal(got, "abcd", 4);
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    assert_non_null(c);
    assert_int_equal(c->cmsg_type, SCM_RIGHTS);
    int fd;
    memcpy(&fd, CMSG_DATA(c), sizeof fd);
    assert_int_equal(write(fd, "x", 1), 1); /* the pipe's write end */
    char x = 0;
    assert_int_equal(read(pp[0], &x, 1), 1);
    assert_int_equal(x, 'x');
    close(fd);
    int many[KF_SEND_FDS_MAX + 1] = {0};
    assert_int_equal(kf_send_fds(sv[0], "a", 1, many, KF_SEND_FDS_MAX + 1), KF_EIO);
    assert_int_equal(kf_send_fds(sv[0], "a", 1, many, 0), KF_EIO);
    close(sv[1]);
    assert_int_equal(kf_send_fds(sv[0], "a", 1, &pp[0], 1), KF_EIO);
    assert_int_equal(errno, EPIPE);
    close(sv[0]);
    close(pp[0]);
    close(pp[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buf),
        cmocka_unit_test(test_shell_word),
        cmocka_unit_test(test_file_safety),
        cmocka_unit_test(test_duration),
        cmocka_unit_test(test_size),
        cmocka_unit_test(test_hash),
        cmocka_unit_test(test_unpredictable),
        cmocka_unit_test(test_sleep),
        cmocka_unit_test(test_word_ok),
        cmocka_unit_test(test_lock_and_paths),
        cmocka_unit_test(test_long_home_refused),
        cmocka_unit_test(test_read_file_max),
        cmocka_unit_test(test_send_fds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

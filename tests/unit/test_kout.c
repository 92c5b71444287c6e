/* test_kout — a kernel's output as the agent keeps it (agent/kout.c): every
 * byte counted, the first and last 4 KiB kept with a line saying how much
 * went between, read from a pipe at most `max` bytes a call. */
#include "agent/kout.h"

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static void test_small_kept_whole(void **state)
{
    (void)state;
    kf_kout *k = kf_kout_new();
    kf_kout_add(k, "hello\n", 6);
    kf_kout_add(k, "world\n", 6);
    kf_buf b = KF_BUF_INIT;
    kf_kout_render(k, &b);
    assert_int_equal(kf_kout_total(k), 12);
    assert_int_equal(b.len, 12);
    assert_memory_equal(b.data, "hello\nworld\n", 12);
    kf_kout_reset(k);
    kf_kout_render(k, &b);
    assert_int_equal(b.len, 0);
    assert_int_equal(kf_kout_total(k), 0);
    kf_buf_release(&b);
    kf_kout_destroy(&k);
    assert_null(k);
}

/* Bytes numbered by position, so the kept parts show where they came from. */
static void test_head_and_tail(void **state)
{
    (void)state;
    kf_kout *k = kf_kout_new();
    size_t total = 1000003;
    uint8_t chunk[997];
    for (size_t off = 0; off < total;) {
        size_t n = total - off < sizeof chunk ? total - off : sizeof chunk;
        for (size_t i = 0; i < n; i++)
            chunk[i] = (uint8_t)((off + i) % 251);
        kf_kout_add(k, chunk, n);
        off += n;
    }
    assert_int_equal(kf_kout_total(k), total);
    kf_buf b = KF_BUF_INIT;
    kf_kout_render(k, &b);
    for (size_t i = 0; i < KF_KOUT_HEAD; i++)
        assert_int_equal((uint8_t)b.data[i], i % 251);
    char line[64];
    snprintf(line, sizeof line, "\n[kfleet: %zu bytes not kept]\n",
             total - KF_KOUT_HEAD - KF_KOUT_TAIL);
    assert_memory_equal(b.data + KF_KOUT_HEAD, line, strlen(line));
    const char *tail = b.data + KF_KOUT_HEAD + strlen(line);
    assert_int_equal(b.len, KF_KOUT_HEAD + strlen(line) + KF_KOUT_TAIL);
    for (size_t i = 0; i < KF_KOUT_TAIL; i++)
        assert_int_equal((uint8_t)tail[i], (total - KF_KOUT_TAIL + i) % 251);
    kf_buf_release(&b);
    kf_kout_destroy(&k);
}

/* One write larger than the whole tail keeps its own last part. */
static void test_one_large_write(void **state)
{
    (void)state;
    kf_kout *k = kf_kout_new();
    size_t n = 3 * KF_KOUT_TAIL + KF_KOUT_HEAD + 5;
    uint8_t *p = malloc(n);
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(i * 7);
    kf_kout_add(k, "x", 1);
    kf_kout_add(k, p, n);
    kf_buf b = KF_BUF_INIT;
    kf_kout_render(k, &b);
    assert_int_equal(kf_kout_total(k), n + 1);
    assert_memory_equal(b.data + b.len - KF_KOUT_TAIL, p + n - KF_KOUT_TAIL, KF_KOUT_TAIL);
    assert_int_equal(b.data[0], 'x');
    assert_memory_equal(b.data + 1, p, KF_KOUT_HEAD - 1);
    free(p);
    kf_buf_release(&b);
    kf_kout_destroy(&k);
}

/* A number the gap cuts goes with it: the head's last digits and the tail's
 * first, so no piece of a seed is kept where no scrubber can know it. */
static void test_cut_number_left_out(void **state)
{
    (void)state;
    kf_kout *k = kf_kout_new();
    const char *line = "setup with seed 9476377657501403 (0x21aaf3e8b5b7db)\n";
    size_t L = strlen(line), total = 0;
    assert_int_equal(L, 52); /* the head (4096 = 78 lines + 40) ends in the hex */
    while (total < 3 * (KF_KOUT_HEAD + KF_KOUT_TAIL)) {
        kf_kout_add(k, line, L);
        total += L;
    }
    kf_buf b = KF_BUF_INIT;
    kf_kout_render(k, &b);
    assert_int_equal(kf_kout_total(k), total);
    /* The head stops before the cut hex number, at "(0x". */
    size_t head = 78 * L + 36;
    assert_memory_equal(b.data + head - 3, "(0x\n[kfleet: ", 13);
    const char *gap = b.data + head + 1;
    const char *eol = memchr(gap, '\n', b.len - (size_t)(gap - b.data));
    assert_non_null(eol);
    size_t tail = b.len - (size_t)(eol + 1 - b.data);
    unsigned long long lost = strtoull(gap + 9, NULL, 10);
    assert_int_equal(head + tail + lost, total);
    assert_true(tail > KF_KOUT_TAIL - 20 && tail <= KF_KOUT_TAIL);
    /* Every run of digits and hex letters long enough to be a seed's piece
     * is a whole number the kernel wrote (kfleet's own count aside). */
    for (size_t i = 0; i < b.len;) {
        if (b.data + i == gap)
            i = (size_t)(eol - b.data);
        size_t j = i;
        while (j < b.len && strchr("0123456789abcdefABCDEF", b.data[j]) && b.data[j])
            j++;
        if (j - i >= 4)
            assert_true((j - i == 16 && memcmp(b.data + i, "9476377657501403", 16) == 0) ||
                        (j - i == 14 && memcmp(b.data + i, "21aaf3e8b5b7db", 14) == 0));
        i = j > i ? j : i + 1;
    }
    kf_buf_release(&b);
    kf_kout_destroy(&k);
}

/* A pipe is read at most max bytes a call, then to EOF, which closes it. */
static void test_read_bounded(void **state)
{
    (void)state;
    int p[2];
    assert_int_equal(pipe(p), 0);
    fcntl(p[0], F_SETFL, O_NONBLOCK);
    char buf[40000];
    memset(buf, 'a', sizeof buf);
    assert_int_equal(write(p[1], buf, sizeof buf), (ssize_t)sizeof buf);
    kf_kout *k = kf_kout_new();
    int fd = p[0];
    assert_int_equal(kf_kout_read(k, &fd, 10000), 10000);
    assert_int_equal(kf_kout_total(k), 10000);
    assert_int_equal(kf_kout_read(k, &fd, 1 << 20), 30000);
    assert_int_equal(fd, p[0]); /* nothing more yet: still open */
    close(p[1]);
    assert_int_equal(kf_kout_read(k, &fd, 1 << 20), 0);
    assert_int_equal(fd, -1);
    assert_int_equal(kf_kout_total(k), 40000);
    kf_kout_destroy(&k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_kept_whole), cmocka_unit_test(test_head_and_tail),
        cmocka_unit_test(test_one_large_write),  cmocka_unit_test(test_cut_number_left_out),
        cmocka_unit_test(test_read_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

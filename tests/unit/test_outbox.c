/* Tests for agent/outbox.c: entries survive a close and reopen, acks remove
 * exactly what they name, and sequence numbers are never reused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/outbox.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rm_cb(const char *p, const struct stat *s, int f, struct FTW *w)
{
    (void)s;
    (void)f;
    (void)w;
    return remove(p);
}

struct seen {
    uint64_t oseq[16];
    char data[16][16];
    int n;
};

static int collect(void *ctx, uint64_t oseq, const void *data, size_t len)
{
    struct seen *s = ctx;
    s->oseq[s->n] = oseq;
    snprintf(s->data[s->n], sizeof s->data[0], "%.*s", (int)len, (const char *)data);
    s->n++;
    return 0;
}

static void test_persist_ack_reuse(void **state)
{
    (void)state;
    char dir[] = "/tmp/kf-test-outbox.XXXXXX";
    assert_non_null(mkdtemp(dir));
    kf_err err;
    kf_outbox *o = NULL;
    assert_int_equal(kf_outbox_open(dir, &o, &err), 0);
    uint64_t a = kf_outbox_next(o), b = kf_outbox_next(o), c = kf_outbox_next(o);
    assert_true(a < b && b < c);
    assert_int_equal(kf_outbox_put(o, a, "one", 3, &err), 0);
    assert_int_equal(kf_outbox_put(o, b, "two", 3, &err), 0);
    assert_int_equal(kf_outbox_put(o, c, "three", 5, &err), 0);
    uint64_t ack[] = {b, 999};
    assert_int_equal(kf_outbox_ack(o, ack, 2, &err), 0);
    kf_outbox_close(&o);
    assert_null(o);

    /* After a restart: what was not acked is there, in order. */
    assert_int_equal(kf_outbox_open(dir, &o, &err), 0);
    struct seen s = {0};
    kf_outbox_foreach(o, collect, &s);
    assert_int_equal(s.n, 2);
    assert_true(s.oseq[0] == a && s.oseq[1] == c);
    assert_string_equal(s.data[0], "one");
    assert_string_equal(s.data[1], "three");
    assert_int_equal(kf_outbox_count(o), 2);
    /* A new number is above everything handed out before the restart. */
    assert_true(kf_outbox_next(o) > c);
    kf_outbox_close(&o);
    nftw(dir, rm_cb, 8, FTW_DEPTH | FTW_PHYS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_persist_ack_reuse)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}

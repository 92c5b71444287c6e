/* fresh: a candidate's timed samples on fresh inputs (issue 43 item 3):
 * before a sample each set it runs on gets new contents once, fresh or (an
 * audit) a pool seed's, and the sample is marked an audit when it is; a
 * re-check's set gets a pool seed's inputs back only where fresh ones are;
 * nothing happens where the problem allows no fresh inputs. */
#include "runner/fresh.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

typedef struct calls {
    int n, fresh, pool[8];
    void *states[8];
} calls;

static calls seen;

static int fake_refresh(hctx *h, void *state, int pool)
{
    (void)h;
    seen.states[seen.n % 8] = state;
    seen.pool[seen.n % 8] = pool;
    seen.n++;
    seen.fresh += pool < 0;
    return 0;
}

static hctx fixture(Kfleet__TaskSpec *spec, uint64_t *seeds)
{
    kfleet__task_spec__init(spec);
    spec->n_seeds = 3;
    spec->seeds = seeds;
    hctx h;
    memset(&h, 0, sizeof h);
    h.spec = spec;
    h.refresh = fake_refresh;
    return h;
}

static void test_each_set_once_per_sample(void **state)
{
    (void)state;
    Kfleet__TaskSpec spec;
    uint64_t seeds[3] = {11, 22, 33};
    hctx h = fixture(&spec, seeds);
    int s[4];
    void *states[4] = {&s[0], &s[1], &s[2], &s[3]};
    hctx_fresh f;
    hctx_fresh_start(&f, 4);
    uint32_t audits = 0;
    for (int k = 0; k < 200; k++) {
        memset(&seen, 0, sizeof seen);
        /* a batch of 6 runs over 4 sets from set 3: each set once */
        assert_int_equal(hctx_fresh_before(&h, &f, states, 4, 3, 6), 0);
        assert_int_equal(seen.n, 4);
        assert_ptr_equal(seen.states[0], &s[3]);
        assert_ptr_equal(seen.states[1], &s[0]);
        /* the whole sample fresh, or the whole sample an audit of pool seeds */
        if (f.last_audit) {
            audits++;
            assert_int_equal(seen.fresh, 0);
            for (int i = 0; i < 4; i++) {
                assert_true(seen.pool[i] >= 0 && seen.pool[i] < 3);
                assert_int_equal(f.dirty[i], 0);
            }
        } else {
            assert_int_equal(seen.fresh, 4);
            for (int i = 0; i < 4; i++)
                assert_int_equal(f.dirty[i], 1);
        }
        f.last_audit = 0;
    }
    assert_int_equal(f.audits, audits);
    assert_int_equal(f.fresh_samples + f.audits, 200);
    /* one in four on average: 200 samples have some of each */
    assert_true(audits > 0 && audits < 200);
}

static void test_recheck_gets_pool_inputs_back(void **state)
{
    (void)state;
    Kfleet__TaskSpec spec;
    uint64_t seeds[3] = {11, 22, 33};
    hctx h = fixture(&spec, seeds);
    int s[2];
    void *states[2] = {&s[0], &s[1]};
    hctx_fresh f;
    hctx_fresh_start(&f, 2);
    memset(&seen, 0, sizeof seen);
    assert_int_equal(hctx_fresh_audit(&h, &f, states, 1), 0);
    assert_int_equal(seen.n, 1);
    assert_true(seen.pool[0] >= 0);
    assert_int_equal(f.dirty[1], 0);
    /* already a pool seed's: left as it is */
    assert_int_equal(hctx_fresh_audit(&h, &f, states, 1), 0);
    assert_int_equal(seen.n, 1);
}

static void test_nothing_without_refresh(void **state)
{
    (void)state;
    Kfleet__TaskSpec spec;
    uint64_t seeds[3] = {11, 22, 33};
    hctx h = fixture(&spec, seeds);
    h.refresh = NULL;
    int s;
    void *states[1] = {&s};
    hctx_fresh f;
    hctx_fresh_start(&f, 0);
    memset(&seen, 0, sizeof seen);
    assert_int_equal(hctx_fresh_before(&h, &f, states, 1, 0, 1), 0);
    assert_int_equal(hctx_fresh_audit(&h, &f, states, 0), 0);
    assert_int_equal(seen.n, 0);
    assert_int_equal(f.last_audit, 0);
    assert_int_equal(f.fresh_samples + f.audits, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_set_once_per_sample),
        cmocka_unit_test(test_recheck_gets_pool_inputs_back),
        cmocka_unit_test(test_nothing_without_refresh),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

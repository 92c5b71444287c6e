/* Tests for agent/runner/warm.c's choice of kernels to learn launchers
 * from: the kernel before last is learned again at the next request (its
 * runner is gone by then, its records kept; the last one's runner may still
 * be on its way out), each kernel once, none empty. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "runner/warm.h"

static void expect(const char *last0, const char *last1, const char *req, size_t want_n,
                   const char *const *want)
{
    const char *out[3] = {NULL, NULL, NULL};
    size_t n = kf_warm_learn_order(last0, last1, req, out);
    assert_int_equal(n, want_n);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(out[i], want[i]);
}

static void test_first_request_learns_its_own(void **state)
{
    (void)state;
    expect("", "", "k1", 1, (const char *const[]){"k1"});
}

static void test_the_kernel_before_last_is_learned_again(void **state)
{
    (void)state;
    /* k1's runner was reaped since the request for k2: its records are
     * there now, whatever k2's runner has kept yet. */
    expect("k2", "k1", "k3", 3, (const char *const[]){"k2", "k1", "k3"});
    expect("k2", "", "k3", 2, (const char *const[]){"k2", "k3"});
}

static void test_each_kernel_once(void **state)
{
    (void)state;
    expect("k1", "k1", "k1", 1, (const char *const[]){"k1"});
    expect("k2", "k1", "k1", 2, (const char *const[]){"k2", "k1"});
    expect("k1", "k2", "k1", 2, (const char *const[]){"k2", "k1"}); /* its own, last */
    expect("k2", "k2", "k3", 2, (const char *const[]){"k2", "k3"});
    expect("", "", "", 0, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_request_learns_its_own),
        cmocka_unit_test(test_the_kernel_before_last_is_learned_again),
        cmocka_unit_test(test_each_kernel_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* launch: the pure helpers of the per-host flow (the flow itself runs
 * against real sshd pods in tests/integration/test_launch.sh). */
#include "fleet/launch.h"
#include "common/util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

static void test_version_cmp(void **state)
{
    (void)state;
    assert_int_equal(kf_version_cmp("2.35", "2.35"), 0);
    assert_true(kf_version_cmp("2.31", "2.35") < 0);
    assert_true(kf_version_cmp("2.39", "2.35") > 0);
    /* Numbers, not strings: 2.100 is newer than 2.35. */
    assert_true(kf_version_cmp("2.100", "2.35") > 0);
    assert_true(kf_version_cmp("2.35", "2.35.1") < 0);
    assert_true(kf_version_cmp("3", "2.99") > 0);
    assert_int_equal(kf_version_cmp("", ""), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version_cmp),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

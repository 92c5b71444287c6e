/* follow: the progress line fits the terminal, counts the configurations
 * apart from the builds added mid-run, shows no ETA until a rate was
 * measured, and says how long nothing ended instead of "ETA 0s". */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "cli/follow.h"

#include <stdio.h>
#include <string.h>

static Kfleet__SweepProgress progress(void)
{
    Kfleet__SweepProgress p = KFLEET__SWEEP_PROGRESS__INIT;
    p.sweep_id = 12;
    p.total = 44; /* 40 configurations + 4 builds */
    p.builds_total = 4;
    p.builds_ended = 3;
    p.succeeded = 13; /* 10 configurations + 3 builds */
    p.failed = 1;
    p.running = 2;
    p.pending = 27;
    return p;
}

static void test_line_fits_the_width(void **state)
{
    (void)state;
    Kfleet__SweepProgress p = progress();
    char line[512];
    for (int w = 20; w <= 200; w += 7) {
        kf_follow_line(line, sizeof line, w, &p, 2.5, 75, 0);
        assert_true(strlen(line) <= (size_t)w - 1); /* the cursor's column stays free: no wrap */
    }
    kf_follow_line(line, sizeof line, 60, &p, 2.5, 75, 0);
    assert_non_null(strstr(line, "sweep 12"));
    kf_follow_line(line, sizeof line, 160, &p, 2.5, 75, 0);
    assert_non_null(strstr(line, "11/40 done (builds 3/4)")); /* 14 ended - 3 builds */
    assert_non_null(strstr(line, "ETA 1m15s"));
    assert_non_null(strchr(line, '['));
}

static void test_no_eta_without_a_rate_and_quiet_said(void **state)
{
    (void)state;
    Kfleet__SweepProgress p = progress();
    char line[512];
    kf_follow_line(line, sizeof line, 160, &p, 0, -1, 3);
    assert_null(strstr(line, "ETA"));
    kf_follow_line(line, sizeof line, 160, &p, 0.1, 5, 95);
    assert_null(strstr(line, "ETA"));
    assert_non_null(strstr(line, "none ended for 1m35s"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_line_fits_the_width),
        cmocka_unit_test(test_no_eta_without_a_rate_and_quiet_said),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_slurm_jobs — reading squeue's JOB|ID|STATE|REASON|NODES lines for
 * one inventory host: only its own kfleet-NAME-I jobs (not another host's
 * whose name starts the same, not the user's other jobs), pending jobs with
 * no node, the final states, and output that is not squeue's refused. */
#include "fleet/slurm_jobs.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <string.h>

static void test_parse(void **state)
{
    (void)state;
    const char *out = "kfleet-lab-0|101|RUNNING|None|c1\n"
                      "kfleet-lab-1|102|PENDING|Resources|(null)\n"
                      "kfleet-lab-big-0|103|RUNNING|None|c2\n" /* host lab-big, not lab */
                      "kfleet-lab-x|104|RUNNING|None|c3\n"
                      "kfleet-lab-|105|RUNNING|None|c3\n"
                      "train|106|RUNNING|None|c4\n"
                      "kfleet-lab-12|107|CANCELLED|None|c1\n"
                      "\n";
    kf_slurm_job *j = NULL;
    size_t n = 0;
    kf_err err = {0};
    assert_int_equal(kf_slurm_parse("lab", out, &j, &n, &err), KF_OK);
    assert_int_equal(n, 3);
    assert_string_equal(j[0].agent_id, "lab-0");
    assert_string_equal(j[0].job_id, "101");
    assert_string_equal(j[0].state, "RUNNING");
    assert_string_equal(j[0].node, "c1");
    assert_string_equal(j[1].agent_id, "lab-1");
    assert_string_equal(j[1].reason, "Resources");
    assert_string_equal(j[1].node, ""); /* pending: no node yet */
    assert_string_equal(j[2].agent_id, "lab-12");
    assert_string_equal(j[2].state, "CANCELLED");
    kf_slurm_free(&j, &n);
    assert_null(j);
    assert_int_equal(n, 0);

    assert_int_equal(kf_slurm_parse("lab-big", out, &j, &n, &err), KF_OK);
    assert_int_equal(n, 1);
    assert_string_equal(j[0].agent_id, "lab-big-0");
    kf_slurm_free(&j, &n);

    assert_int_equal(kf_slurm_parse("lab", "", &j, &n, &err), KF_OK);
    assert_int_equal(n, 0);
}

static void test_not_squeue(void **state)
{
    (void)state;
    kf_slurm_job *j = (kf_slurm_job *)0x1;
    size_t n = 7;
    kf_err err = {0};
    assert_int_equal(kf_slurm_parse("lab",
                                    "kfleet-lab-0|101|RUNNING|None|c1\n"
                                    "slurm_load_jobs error: Unable to contact controller\n",
                                    &j, &n, &err),
                     KF_EIO);
    assert_non_null(strstr(err.msg, "Unable to contact"));
    assert_null(j);
    assert_int_equal(n, 0);
    char longf[400];
    memset(longf, 'a', sizeof longf - 1);
    longf[sizeof longf - 1] = '\0';
    memcpy(longf, "kfleet-lab-0|1|", 15);
    assert_int_equal(kf_slurm_parse("lab", longf, &j, &n, &err), KF_EIO);
}

static void test_final_states(void **state)
{
    (void)state;
    const char *over[] = {"COMPLETED", "CANCELLED", "FAILED",   "TIMEOUT",       "NODE_FAIL",
                          "PREEMPTED", "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY", NULL};
    for (size_t i = 0; over[i]; i++)
        assert_true(kf_slurm_state_final(over[i]));
    const char *live[] = {"PENDING",  "RUNNING",  "CONFIGURING", "SUSPENDED",
                          "REQUEUED", "RESIZING", NULL};
    for (size_t i = 0; live[i]; i++)
        assert_false(kf_slurm_state_final(live[i]));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_not_squeue),
        cmocka_unit_test(test_final_states),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

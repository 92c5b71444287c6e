/* echo — a task kind that lives in the test tree only, to prove that a
 * kind is one row of the table (common/taskkind.c includes this file when
 * built with KF_TASK_KINDS_EXTRA) plus its runner handler (echo_handler.h).
 * tests/CMakeLists.txt builds kfleet and kfleet-agent again with both, in
 * BUILD/testkind/; integration/test_task_kind.sh runs a sweep of
 * `tasks: [echo]` through them: submit, schedule, agent, runner, store,
 * report.
 *
 * One task per kernel on a CPU slot, needing no build; a sweep asks for it
 * by name; the report shows it with the failures (KF_REPORT_NONE). Its
 * value is in no .proto (protobuf-c carries an enum's value as it is) and
 * far above any kind's there. */
#define KF_TEST_KIND_ECHO 1000

#define KF_TASK_KIND_EXTRA_ROWS                                                                    \
    {.kind = (Kfleet__TaskKind)KF_TEST_KIND_ECHO,                                                  \
     .name = "echo",                                                                               \
     .slot = KF_SLOT_CPU,                                                                          \
     .sweep_bit = 1u << 16,                                                                        \
     .report = KF_REPORT_NONE},

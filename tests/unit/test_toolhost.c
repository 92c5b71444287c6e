/* test_toolhost — the tool host (agent/runner/toolhost.h), with a script
 * standing in for ncu that writes its --log-file and exits 5: a tool run of
 * the host's own kernel comes back with the tool's exit status and its log
 * written into the runner's scratch dir (not the host's), the host's own
 * directory emptied after each run and removed when it ends; a task of
 * another kernel, an unknown tool or a tool missing from the node is
 * refused, and the host stays up for the next request. */
#include "runner/toolhost.h"

#include "common/util.h"

#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

static char root[64], scratch[128], hostdir[160], bin[128];

static const char fake_ncu[] =
    "#!/bin/sh\n"
    "while [ $# -gt 0 ]; do [ \"$1\" = --log-file ] && log=$2; shift; done\n"
    "printf 'from the tool, TMPDIR=%s\\n' \"$TMPDIR\" >\"$log\"\n"
    "exit 5\n";

static int setup(void **state)
{
    (void)state;
    snprintf(root, sizeof root, "/tmp/kf-test-toolhost.XXXXXX");
    assert_non_null(mkdtemp(root));
    snprintf(scratch, sizeof scratch, "%s/tmp/0x1-1", root);
    snprintf(hostdir, sizeof hostdir, "%s" KF_TOOLHOST_DIR_SUFFIX, scratch);
    snprintf(bin, sizeof bin, "%s/bin", root);
    assert_int_equal(kf_mkdirs(scratch, 0700, NULL), KF_OK);
    assert_int_equal(kf_mkdirs(bin, 0700, NULL), KF_OK);
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/ncu", bin);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(fake_ncu, f);
    fclose(f);
    chmod(p, 0700);
    setenv("PATH", bin, 1); /* the fake, and no compute-sanitizer */
    unsetenv("KF_NVCC");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return kf_remove_tree(root);
}

static void task(Kfleet__TaskAssign *ta, Kfleet__TaskSpec *sp, const char *hash)
{
    kfleet__task_assign__init(ta);
    kfleet__task_spec__init(sp);
    ta->spec = sp;
    ta->task_id = 0x1;
    ta->attempt = 1;
    sp->kernel_hash = (char *)hash;
    sp->kind = KFLEET__TASK_KIND__PROFILE;
}

static void test_host(void **state)
{
    (void)state;
    kf_toolhost *th = NULL;
    kf_err err;
    assert_int_equal(kf_toolhost_start(root, hostdir, "abc123", &th, &err), KF_OK);
    Kfleet__TaskAssign ta;
    Kfleet__TaskSpec sp;
    task(&ta, &sp, "abc123");
    int st = -1;
    assert_int_equal(kf_toolhost_run(th, KF_TOOL_NCU, root, scratch, &ta, &st, &err), KF_OK);
    assert_int_equal(st, 5);
    char log[PATH_MAX], text[512] = "";
    kf_tools_log_path(KF_TOOL_NCU, scratch, &ta, log, sizeof log);
    FILE *f = fopen(log, "r");
    assert_non_null(f);
    assert_non_null(fgets(text, sizeof text, f));
    fclose(f);
    /* The tool ran with the host's own TMPDIR, not the runner's scratch. */
    char want[256];
    snprintf(want, sizeof want, "from the tool, TMPDIR=%s\n", hostdir);
    assert_string_equal(text, want);

    /* Another kernel's task: refused, and the host goes on. */
    task(&ta, &sp, "other");
    assert_int_equal(kf_toolhost_run(th, KF_TOOL_NCU, root, scratch, &ta, &st, &err), KF_EINVAL);
    assert_non_null(strstr(err.msg, "refused"));
    task(&ta, &sp, "abc123");
    assert_int_equal(kf_toolhost_run(th, KF_TOOL_COUNT, root, scratch, &ta, &st, &err), KF_EINVAL);
    assert_int_equal(kf_toolhost_run(th, KF_TOOL_MEMCHECK, root, scratch, &ta, &st, &err),
                     KF_ENOTFOUND);
    assert_non_null(strstr(err.msg, "compute-sanitizer is not on this node"));
    assert_int_equal(kf_toolhost_run(th, KF_TOOL_NCU, root, scratch, &ta, &st, &err), KF_OK);

    /* Its directory holds nothing between runs, and goes with it. */
    char cmd[256];
    snprintf(cmd, sizeof cmd, "test -z \"$(ls -A %s)\"", hostdir);
    assert_int_equal(system(cmd), 0);
    kf_toolhost_destroy(&th);
    assert_null(th);
    struct stat sb;
    assert_int_not_equal(stat(hostdir, &sb), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_host, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Tests for agent/runner/artifact.c: a cached C artifact is checked against
 * the hash its build recorded before it is loaded or taken by a build; a
 * build of an agent's own (own_build) does not take one installed from
 * another agent. Needs the host C compiler only. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "common/util.h"
#include "runner/artifact.h"
#include "runner/build.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char workdir[64];

/* A cached C artifact is checked against its record (artifact.h): it
 * passes as built; a record it does not match removes it; a build that
 * finds a tampered one in the cache compiles it again instead of taking it,
 * and so does one whose record is gone. */
static void test_artifact_check(void **state)
{
    (void)state;
    kf_buf text = KF_BUF_INIT, header = KF_BUF_INIT;
    assert_int_equal(kf_buf_read_file(&text, KF_SOURCE_DIR "/tests/kernels/wrong.c"), 0);
    assert_int_equal(kf_buf_read_file(&header, KF_SOURCE_DIR "/kernels/kf_kernel.h"), 0);
    Kfleet__SourceFile src = KFLEET__SOURCE_FILE__INIT, abi = KFLEET__SOURCE_FILE__INIT;
    src.name = "wrong.c";
    src.content = (ProtobufCBinaryData){text.len, (uint8_t *)text.data};
    abi.name = "kf_kernel.h";
    abi.content = (ProtobufCBinaryData){header.len, (uint8_t *)header.data};
    Kfleet__SourceFile *srcs[] = {&src, &abi};
    Kfleet__TaskSpec sp = KFLEET__TASK_SPEC__INIT;
    sp.sources = srcs;
    sp.n_sources = 2;
    sp.kernel = "wrong";
    sp.kernel_hash = "a11ce0000000000000000000000000000000000000000000000000000000beef";
    char scratch[128], key[65], so[PATH_MAX], built[65];
    kf_err err;
    kf_build_info bi;
    snprintf(scratch, sizeof scratch, "%s/tmp/art1", workdir);
    assert_int_equal(kf_artifact_build(&sp, workdir, scratch, &bi, &err), KF_OK);
    assert_false(bi.cached);
    snprintf(built, sizeof built, "%s", bi.artifact_hash);
    kf_build_info_release(&bi);
    assert_int_equal(
        kf_build_artifact(workdir, sp.kernel_hash, KF_LANG_C, key, so, sizeof so, &err), 0);
    assert_int_equal(kf_artifact_check(workdir, &sp, NULL, &err), KF_OK);
    assert_int_equal(kf_artifact_check(workdir, &sp, built, &err), KF_OK);
    /* Another record (the coordinator's): removed, never loaded. */
    char other[65];
    memset(other, 'f', 64);
    other[64] = '\0';
    assert_int_equal(kf_artifact_check(workdir, &sp, other, &err), KF_EINVAL);
    assert_non_null(strstr(err.msg, "changed since it was built"));
    assert_int_not_equal(access(so, F_OK), 0);
    assert_int_equal(kf_artifact_check(workdir, &sp, NULL, &err), KF_ENOTFOUND);
    /* Built again; then its bytes changed in the cache: the next build
     * compiles instead of taking them. */
    snprintf(scratch, sizeof scratch, "%s/tmp/art2", workdir);
    assert_int_equal(kf_artifact_build(&sp, workdir, scratch, &bi, &err), KF_OK);
    assert_false(bi.cached);
    kf_build_info_release(&bi);
    FILE *f = fopen(so, "ab");
    assert_non_null(f);
    fputs("planted", f);
    fclose(f);
    snprintf(scratch, sizeof scratch, "%s/tmp/art3", workdir);
    assert_int_equal(kf_artifact_build(&sp, workdir, scratch, &bi, &err), KF_OK);
    assert_false(bi.cached);
    kf_build_info_release(&bi);
    assert_int_equal(kf_artifact_check(workdir, &sp, NULL, &err), KF_OK);
    /* An untouched one is taken from the cache. */
    snprintf(scratch, sizeof scratch, "%s/tmp/art4", workdir);
    assert_int_equal(kf_artifact_build(&sp, workdir, scratch, &bi, &err), KF_OK);
    assert_true(bi.cached);
    kf_build_info_release(&bi);
    /* Installed from another agent (its sidecar names the builder): taken
     * from the cache, unless the build is to be this agent's own. */
    char side0[PATH_MAX + 16], cmd[2 * PATH_MAX];
    snprintf(side0, sizeof side0, "%s/cache/%s.json", workdir, key);
    snprintf(cmd, sizeof cmd, "sed -i 's/\"built_by\": \"\"/\"built_by\": \"evil\"/' %s", side0);
    assert_int_equal(system(cmd), 0);
    snprintf(scratch, sizeof scratch, "%s/tmp/art5", workdir);
    assert_int_equal(kf_artifact_build(&sp, workdir, scratch, &bi, &err), KF_OK);
    assert_true(bi.cached);
    kf_build_info_release(&bi);
    sp.own_build = 1;
    snprintf(scratch, sizeof scratch, "%s/tmp/art6", workdir);
    assert_int_equal(kf_artifact_build(&sp, workdir, scratch, &bi, &err), KF_OK);
    assert_false(bi.cached); /* compiled here */
    assert_string_equal(bi.built_by, "");
    kf_build_info_release(&bi);
    sp.own_build = 0;
    /* No record at all: not trusted either. */
    char side[PATH_MAX + 16];
    snprintf(side, sizeof side, "%s/cache/%s.json", workdir, key);
    assert_int_equal(unlink(side), 0);
    assert_int_equal(kf_artifact_check(workdir, &sp, NULL, &err), KF_EINVAL);
    kf_buf_release(&text);
    kf_buf_release(&header);
}

int main(void)
{
    snprintf(workdir, sizeof workdir, "/tmp/kf-test-artifact.XXXXXX");
    if (!mkdtemp(workdir))
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_artifact_check),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    kf_remove_tree(workdir);
    return rc;
}

/* Tests for coordinator/cli/client.c's submit builder: a kernel's local
 * headers travel with it and enter its hash, so editing a header rebuilds
 * the kernel; headers that are not beside the source stay behind; a Python
 * kernel's torch extension sources travel the same way. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "cli/client.h"
#include "core/ctlsock.h"
#include "core/sweep.h"
#include "common/wire.h"
#include "common/util.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

static char dir[64];

static int rm_cb(const char *p, const struct stat *s, int f, struct FTW *w)
{
    (void)s;
    (void)f;
    (void)w;
    return remove(p);
}

static void put(const char *name, const char *text)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    assert_int_equal(kf_write_file(path, text, strlen(text), 0600, NULL), KF_OK);
}

/* Parses the sweep at path and builds its submit request, both asserted. */
static void build(const char *path, kf_sweep_spec **spec, Kfleet__SubmitRequest **req)
{
    kf_err err;
    int rc = kf_sweep_parse_file(path, KF_SOURCE_DIR "/kernels", spec, &err);
    if (rc)
        print_message("%s\n", err.msg);
    assert_int_equal(rc, KF_OK);
    rc = kf_client_build_submit(*spec, KF_SOURCE_DIR "/kernels", req, &err);
    if (rc)
        print_message("%s\n", err.msg);
    assert_int_equal(rc, KF_OK);
}

/* Submits dir/sweep.yaml and returns kernel 0's hash; *nsrc its sources. */
static void submit(char hash[65], size_t *nsrc, char names[4][64])
{
    char path[128];
    snprintf(path, sizeof path, "%s/sweep.yaml", dir);
    kf_sweep_spec *spec = NULL;
    Kfleet__SubmitRequest *req = NULL;
    build(path, &spec, &req);
    Kfleet__KernelRef *k = req->sweep->kernels[0];
    snprintf(hash, 65, "%s", k->hash);
    *nsrc = k->n_sources;
    for (size_t i = 0; i < k->n_sources && i < 4; i++)
        snprintf(names[i], 64, "%s", k->sources[i]->name);
    kf_client_free_submit(&req);
    kf_sweep_destroy(&spec);
}

static void test_headers_travel(void **state)
{
    (void)state;
    put("sweep.yaml", "kernels:\n  - path: ./k.cu\ntasks: [build]\n");
    put("k.cu", "#include \"kf_kernel.h\"\n#include \"a.cuh\"\n#include <stdio.h>\n"
                "#include \"missing.h\"\nint k;\n");
    put("a.cuh", "#include \"b.cuh\"\n#include \"a.cuh\"\n");
    put("b.cuh", "static int b;\n");
    char h1[65], h2[65], h3[65], names[4][64];
    size_t n;
    submit(h1, &n, names);
    assert_int_equal(n, 4); /* k.cu, kf_kernel.h, a.cuh, b.cuh; not missing.h or stdio.h */
    assert_string_equal(names[0], "k.cu");
    assert_string_equal(names[1], "kf_kernel.h");
    assert_string_equal(names[2], "a.cuh");
    assert_string_equal(names[3], "b.cuh");
    submit(h2, &n, names);
    assert_string_equal(h1, h2);      /* nothing changed: same hash */
    put("b.cuh", "static int b2;\n"); /* a header two levels down changes */
    submit(h3, &n, names);
    assert_string_not_equal(h1, h3);

    /* A header kfleet ships (kernels/cuda/kf_cuda.cuh) is found there when
     * it is not beside the source; a local one of the same name wins. */
    put("k.cu", "#include \"kf_cuda.cuh\"\nint k;\n");
    submit(h1, &n, names);
    assert_int_equal(n, 3);
    assert_string_equal(names[2], "kf_cuda.cuh");
    put("kf_cuda.cuh", "/* a local copy */\n");
    submit(h2, &n, names);
    assert_int_equal(n, 3);
    assert_string_not_equal(h1, h2);
}

/* A Python kernel's torch extension sources travel with it, in the order
 * its `extension` line names them, and enter its hash; a Python kernel's
 * `#include` text means nothing. */
static void test_extension_travels(void **state)
{
    (void)state;
    put("sweep.yaml", "kernels:\n  - path: ./op.py\ntasks: [build]\n");
    put("op.py", "# #include \"a.cuh\"\nimport op_ext\ndevice = \"cuda\"\n"
                 "extension = [\"op_ext.cpp\", \"op_k.cu\"]\n");
    put("op_ext.cpp", "// binding\n");
    put("op_k.cu", "// kernel\n");
    put("a.cuh", "// not sent\n");
    char h1[65], h2[65], names[4][64];
    size_t n;
    submit(h1, &n, names);
    assert_int_equal(n, 4); /* op.py, kf_kernel.h, op_ext.cpp, op_k.cu */
    assert_string_equal(names[0], "op.py");
    assert_string_equal(names[2], "op_ext.cpp");
    assert_string_equal(names[3], "op_k.cu");
    put("op_k.cu", "// kernel, edited\n");
    submit(h2, &n, names);
    assert_string_not_equal(h1, h2);
}

/* A request over ZeroMQ's message limit would be dropped without a word
 * and its sender would wait for a reply: it is refused before it is sent,
 * with its size and what to do. */
static void test_oversized_request_refused(void **state)
{
    (void)state;
    void *ctx = zmq_ctx_new();
    void *s = zmq_socket(ctx, ZMQ_DEALER);
    Kfleet__ControlRequest req = KFLEET__CONTROL_REQUEST__INIT;
    Kfleet__SubmitRequest sub = KFLEET__SUBMIT_REQUEST__INIT;
    Kfleet__Sweep sw = KFLEET__SWEEP__INIT;
    size_t big = (size_t)KF_MAX_FRAME + 1024;
    char *yaml = malloc(big + 1);
    assert_non_null(yaml);
    memset(yaml, 'x', big);
    yaml[big] = '\0';
    sw.spec_yaml = yaml;
    sub.sweep = &sw;
    req.body_case = KFLEET__CONTROL_REQUEST__BODY_SUBMIT;
    req.submit = &sub;
    kf_err err;
    assert_int_equal(kf_ctlsock_send_request(s, &req, &err), KF_EINVAL);
    assert_non_null(
        strstr(err.msg, "the request is 16.0 MiB; the coordinator takes at most 16 MiB"));
    free(yaml);
    zmq_close(s);
    zmq_ctx_term(ctx);
}

/* A sweep with a problem is not sent as if its candidates were kernels
 * judging themselves: until the candidate path exists, the CLI refuses it
 * and says why; a sweep of plain kernels passes. */
/* The rmsnorm-cpu example as the submit carries it: the candidates first,
 * marked candidate, each with a group over the problem's configurations;
 * the problem last, marked problem, with its source and its own hash and
 * no tasks; the seed policy on the Sweep. */
static void test_problem_submit(void **state)
{
    (void)state;
    kf_sweep_spec *spec = NULL;
    Kfleet__SubmitRequest *req = NULL;
    build(KF_SOURCE_DIR "/examples/problems/rmsnorm-cpu/sweep.yaml", &spec, &req);
    Kfleet__Sweep *sw = req->sweep;
    assert_int_equal(spec->nkernels, 3);
    assert_int_equal(sw->n_kernels, 4);
    for (size_t i = 0; i < 3; i++) {
        assert_true(sw->kernels[i]->candidate);
        assert_false(sw->kernels[i]->problem);
    }
    Kfleet__KernelRef *p = sw->kernels[3];
    assert_true(p->problem);
    assert_false(p->candidate);
    assert_true(p->python);
    assert_string_equal(p->sources[0]->name, "problem.py");
    assert_int_equal(strlen(p->hash), 64);
    for (size_t i = 0; i < 3; i++)
        assert_string_not_equal(p->hash, sw->kernels[i]->hash);
    /* Every group is a candidate's; none is the problem's. */
    assert_int_equal(req->n_groups, 3);
    assert_int_equal(req->n_tasks, 0);
    for (size_t g = 0; g < req->n_groups; g++) {
        assert_int_equal(req->groups[g]->kernel_index, g);
        assert_int_equal(req->groups[g]->n_axes, 2); /* rows, cols */
    }
    assert_int_equal(sw->seed_pool, 3);
    assert_true(sw->seed_renew_s == 24.0 * 3600.0);
    for (size_t i = 0; i < 4; i++)
        assert_true(!sw->kernels[i]->refused || !*sw->kernels[i]->refused);
    kf_client_free_submit(&req);
    /* A refused candidate kept (refused: fail) travels with its reason. */
    spec->kernels[1].refused = strdup("t.yaml:2:3: refused for the test");
    char kdir[] = KF_SOURCE_DIR "/kernels";
    kf_err err;
    assert_int_equal(kf_client_build_submit(spec, kdir, &req, &err), KF_OK);
    assert_string_equal(req->sweep->kernels[1]->refused, "t.yaml:2:3: refused for the test");
    assert_true(!req->sweep->kernels[0]->refused || !*req->sweep->kernels[0]->refused);
    kf_client_free_submit(&req);
    kf_sweep_destroy(&spec);
}

/* The sweep's measure settings reach the request the runners get: the
 * thermal protocol and the throttle policy, and their defaults. */
static void test_measure_travels(void **state)
{
    (void)state;
    char path[128];
    snprintf(path, sizeof path, "%s/sweep.yaml", dir);
    put("k.cu", "#include \"kf_kernel.h\"\nint k;\n");
    put("sweep.yaml", "kernels:\n  - path: ./k.cu\n"
                      "memory_limit: 3G\n"
                      "measure: {thermal: sustained, throttle: keep, precision: 0.25%}\n");
    kf_sweep_spec *spec = NULL;
    Kfleet__SubmitRequest *req = NULL;
    build(path, &spec, &req);
    assert_int_equal(req->sweep->measure->thermal_sustained, 1);
    assert_int_equal(req->sweep->measure->throttle_keep, 1);
    assert_true(req->sweep->measure->precision_pct == 0.25);
    assert_int_equal(req->sweep->memory_limit_bytes, (uint64_t)3 << 30); /* issue 44 */
    kf_client_free_submit(&req);
    kf_sweep_destroy(&spec);
    put("sweep.yaml", "kernels:\n  - path: ./k.cu\n");
    build(path, &spec, &req);
    assert_int_equal(req->sweep->measure->thermal_sustained, 0); /* burst */
    assert_int_equal(req->sweep->measure->throttle_keep, 0);
    assert_int_equal(req->sweep->memory_limit_bytes, 0);
    kf_client_free_submit(&req);
    kf_sweep_destroy(&spec);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/kf-test-client.XXXXXX");
    if (!mkdtemp(dir))
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_headers_travel), cmocka_unit_test(test_extension_travels),
        cmocka_unit_test(test_oversized_request_refused), cmocka_unit_test(test_problem_submit),
        cmocka_unit_test(test_measure_travels)};
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    nftw(dir, rm_cb, 8, FTW_DEPTH | FTW_PHYS);
    return rc;
}

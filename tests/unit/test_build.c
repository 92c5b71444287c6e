/* Tests for agent/runner/build.c: the //@kfleet flags directive, cuobjdump
 * parsing, which machine code runs on which GPU, and — where this machine
 * has nvcc, as CI's image does — a real CUDA build into the cache with its
 * resource usage, its archs, and the nvcc-newer-than-driver refusal. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "runner/build.h"
#include "common/util.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char workdir[64];

static int rm_cb(const char *p, const struct stat *s, int f, struct FTW *w)
{
    (void)s;
    (void)f;
    (void)w;
    return remove(p);
}

static void test_source_flags(void **state)
{
    (void)state;
    const char *src = "// a kernel\n"
                      "  //@kfleet flags: -lcublas\t -DX=1\n"
                      "int x; //@kfleet flags: -DNOT_AT_LINE_START\n"
                      "//@kfleet flags:\n"
                      "//@kfleet flags: -O1\r\n";
    char **argv = NULL;
    size_t argc = 0;
    kf_err err;
    assert_int_equal(kf_build_source_flags(src, strlen(src), &argv, &argc, &err), KF_OK);
    assert_int_equal(argc, 3);
    assert_string_equal(argv[0], "-lcublas");
    assert_string_equal(argv[1], "-DX=1");
    assert_string_equal(argv[2], "-O1");
    for (size_t i = 0; i < argc; i++)
        free(argv[i]);
    free(argv);

    kf_buf many = KF_BUF_INIT;
    kf_buf_addf(&many, "\n//@kfleet flags:");
    for (int i = 0; i < 65; i++)
        kf_buf_addf(&many, " -DF%d", i);
    argv = NULL;
    argc = 0;
    assert_int_equal(kf_build_source_flags(many.data, many.len, &argv, &argc, &err), KF_EINVAL);
    assert_non_null(strstr(err.msg, "line 2"));
    for (size_t i = 0; i < argc; i++)
        free(argv[i]);
    free(argv);
    kf_buf_release(&many);
}

static void test_cuobjdump(void **state)
{
    (void)state;
    char archs[128];
    int ptx;
    kf_build_parse_cuobjdump("\nELF file    1: kernel.1.sm_90a.cubin\n"
                             "ELF file    2: kernel.2.sm_80.cubin\n"
                             "ELF file    3: kernel.3.sm_90a.cubin\n"
                             "PTX file    1: kernel.1.sm_90a.ptx\n",
                             archs, sizeof archs, &ptx);
    assert_string_equal(archs, "sm_90a,sm_80");
    assert_true(ptx);
    kf_build_parse_cuobjdump("ELF file    1: x.1.sm_75.cubin\n", archs, sizeof archs, &ptx);
    assert_string_equal(archs, "sm_75");
    assert_false(ptx);
    kf_build_parse_cuobjdump("", archs, sizeof archs, &ptx);
    assert_string_equal(archs, "");
}

static void test_sass_runs_on(void **state)
{
    (void)state;
    assert_true(kf_build_sass_runs_on("sm_90a", 9, 0));
    assert_true(kf_build_sass_runs_on("sm_90", 9, 0));
    assert_true(kf_build_sass_runs_on("sm_80", 8, 6));  /* same major, older minor */
    assert_false(kf_build_sass_runs_on("sm_86", 8, 0)); /* newer minor */
    assert_false(kf_build_sass_runs_on("sm_80", 9, 0)); /* other major: PTX JIT */
    assert_false(kf_build_sass_runs_on("sm_90a", 10, 0));
    assert_false(kf_build_sass_runs_on("sm_100a", 10, 3)); /* arch-specific: exact only */
    assert_false(kf_build_sass_runs_on("compute_90", 9, 0));
}

/* The spec of tests/kernels/cu_flags.cu with kf_kernel.h beside it. */
typedef struct cuspec {
    Kfleet__TaskSpec spec;
    Kfleet__SourceFile src, abi;
    Kfleet__SourceFile *srcs[2];
    kf_buf text, header;
    char hash[65];
} cuspec;

static void make_cuspec(cuspec *c)
{
    memset(c, 0, sizeof *c);
    kfleet__task_spec__init(&c->spec);
    kfleet__source_file__init(&c->src);
    kfleet__source_file__init(&c->abi);
    kf_buf_init(&c->text);
    kf_buf_init(&c->header);
    assert_int_equal(kf_buf_read_file(&c->text, KF_SOURCE_DIR "/tests/kernels/cu_flags.cu"), 0);
    assert_int_equal(kf_buf_read_file(&c->header, KF_SOURCE_DIR "/kernels/kf_kernel.h"), 0);
    c->src.name = "cu_flags.cu";
    c->src.content.data = (uint8_t *)c->text.data;
    c->src.content.len = c->text.len;
    c->abi.name = "kf_kernel.h";
    c->abi.content.data = (uint8_t *)c->header.data;
    c->abi.content.len = c->header.len;
    c->srcs[0] = &c->src;
    c->srcs[1] = &c->abi;
    c->spec.sources = c->srcs;
    c->spec.n_sources = 2;
    c->spec.device_cuda = 1;
    c->spec.kernel = "cu_flags";
    kf_hash_part part = {c->text.data, c->text.len};
    kf_hash_hex(&part, 1, c->hash);
    c->spec.kernel_hash = c->hash;
}

static void free_cuspec(cuspec *c)
{
    kf_buf_release(&c->text);
    kf_buf_release(&c->header);
}

static void test_cuda_build(void **state)
{
    (void)state;
    const char *ver;
    kf_err err;
    if (kf_build_compiler_version(1, &ver, &err) != KF_OK) {
        print_message("no nvcc on this machine: %s\n", err.msg);
        skip();
    }
    setenv("KF_CUDA_ARCH", "90a", 1); /* no GPU here: name the Hopper target */
    cuspec c;
    make_cuspec(&c);
    char scratch[128];
    snprintf(scratch, sizeof scratch, "%s/tmp/b1", workdir);
    kf_build_info bi;
    int rc = kf_build_kernel(&c.spec, workdir, scratch, &bi, &err);
    if (rc != KF_OK)
        print_message("%s\n%s\n", err.msg, bi.log.data ? bi.log.data : "");
    assert_int_equal(rc, KF_OK);
    assert_false(bi.cached);
    assert_true(bi.registers > 0); /* ptxas -v was read */
    assert_non_null(strstr(bi.sass_archs, "sm_90a"));
    assert_true(bi.has_ptx);
    assert_string_not_equal(bi.nvcc_cuda, "");
    assert_false(bi.jit_fallback); /* no GPU to compare with: not flagged */
    char key[65], path[256];
    assert_int_equal(kf_build_artifact(workdir, c.hash, 1, key, path, sizeof path, &err), KF_OK);
    assert_int_equal(access(path, R_OK), 0);
    kf_build_info_release(&bi);

    /* The second build is a cache hit that still reports the archs. */
    snprintf(scratch, sizeof scratch, "%s/tmp/b2", workdir);
    assert_int_equal(kf_build_kernel(&c.spec, workdir, scratch, &bi, &err), KF_OK);
    assert_true(bi.cached);
    assert_non_null(strstr(bi.sass_archs, "sm_90a"));
    kf_build_info_release(&bi);

    /* A driver older than nvcc: refused before anything runs, naming both. */
    setenv("KF_DRIVER_CUDA", "1.0", 1);
    snprintf(scratch, sizeof scratch, "%s/tmp/b3", workdir);
    setenv("KF_CUDA_COMPAT", "/nonexistent/compat", 1);
    assert_int_equal(kf_build_kernel(&c.spec, workdir, scratch, &bi, &err), KF_EUNAVAIL);
    assert_non_null(strstr(err.msg, "driver runs CUDA 1.0"));
    assert_non_null(strstr(err.msg, bi.nvcc_cuda));
    assert_non_null(strstr(err.msg, "cuda-compat-"));
    kf_build_info_release(&bi);
    /* With forward-compat libraries it builds, and the build says so. */
    char compat[PATH_MAX], lib[PATH_MAX + 16];
    snprintf(compat, sizeof compat, "%s/compat", workdir);
    snprintf(lib, sizeof lib, "%s/libcuda.so.1", compat);
    assert_int_equal(mkdir(compat, 0700), 0);
    FILE *lf = fopen(lib, "w");
    assert_non_null(lf);
    fclose(lf);
    setenv("KF_CUDA_COMPAT", compat, 1);
    snprintf(scratch, sizeof scratch, "%s/tmp/b4", workdir);
    assert_int_equal(kf_build_kernel(&c.spec, workdir, scratch, &bi, &err), KF_OK);
    assert_string_equal(bi.forward_compat, compat);
    kf_build_info_release(&bi);
    unsetenv("KF_CUDA_COMPAT");
    unsetenv("KF_DRIVER_CUDA");
    /* A runner the agent started with them on its path records them even
     * when its (forward-compat) libcuda reports a new enough CUDA. */
    setenv("KF_CUDA_COMPAT_DIR", compat, 1);
    snprintf(scratch, sizeof scratch, "%s/tmp/b5", workdir);
    assert_int_equal(kf_build_kernel(&c.spec, workdir, scratch, &bi, &err), KF_OK);
    assert_string_equal(bi.forward_compat, compat);
    unsetenv("KF_CUDA_COMPAT_DIR");
    unlink(lib);
    rmdir(compat);
    kf_build_info_release(&bi);
    unsetenv("KF_CUDA_ARCH");
    free_cuspec(&c);
}

/* Build once per fleet, the runner's side: a build asked for its artifact
 * sends the .so's bytes (compiled or from the cache); another work dir's
 * build that brings them installs them without compiling, records who
 * compiled them and what that compile printed, also on its next cache hit;
 * bytes that do not match their hash are not installed (it compiles). */
static void test_shared_artifact(void **state)
{
    (void)state;
    const char *ver;
    kf_err err;
    if (kf_build_compiler_version(1, &ver, &err) != KF_OK)
        skip();
    setenv("KF_CUDA_ARCH", "90a", 1);
    cuspec c;
    make_cuspec(&c);
    char wa[128], wb[128], wc[128], scratch[160];
    snprintf(wa, sizeof wa, "%s/share-a", workdir);
    snprintf(wb, sizeof wb, "%s/share-b", workdir);
    snprintf(wc, sizeof wc, "%s/share-c", workdir);
    assert_int_equal(mkdir(wa, 0700) | mkdir(wb, 0700) | mkdir(wc, 0700), 0);
    c.spec.want_artifact = 1;
    kf_build_info a, b;
    snprintf(scratch, sizeof scratch, "%s/tmp/s1", wa);
    assert_int_equal(kf_build_kernel(&c.spec, wa, scratch, &a, &err), KF_OK);
    assert_true(a.artifact.len > 0);
    assert_true(a.registers > 0);
    char got[65];
    kf_hash_part part = {a.artifact.data, a.artifact.len};
    kf_hash_hex(&part, 1, got);
    assert_string_equal(got, a.artifact_hash);
    snprintf(scratch, sizeof scratch, "%s/tmp/s2", wa); /* a cache hit sends it too */
    assert_int_equal(kf_build_kernel(&c.spec, wa, scratch, &b, &err), KF_OK);
    assert_true(b.cached);
    assert_int_equal(b.artifact.len, a.artifact.len);
    assert_int_equal(b.registers, a.registers); /* from the cache's record */
    kf_build_info_release(&b);

    Kfleet__BuildInfo src = KFLEET__BUILD_INFO__INIT;
    src.registers = a.registers;
    src.spill_bytes = 4;
    c.spec.artifact.data = (uint8_t *)a.artifact.data;
    c.spec.artifact.len = a.artifact.len;
    c.spec.artifact_hash = a.artifact_hash;
    c.spec.artifact_built_by = "agent-a";
    c.spec.artifact_build = &src;
    snprintf(scratch, sizeof scratch, "%s/tmp/s3", wb);
    assert_int_equal(kf_build_kernel(&c.spec, wb, scratch, &b, &err), KF_OK);
    assert_string_equal(b.built_by, "agent-a");
    assert_false(b.cached);
    assert_true(b.compile_s == 0);
    assert_string_equal(b.artifact_hash, a.artifact_hash);
    assert_int_equal(b.registers, a.registers);
    assert_int_equal(b.spill_bytes, 4);
    assert_int_equal(b.artifact.len, 0); /* not sent back: the coordinator has it */
    assert_non_null(strstr(b.sass_archs, "sm_90a"));
    kf_build_info_release(&b);
    c.spec.artifact.len = 0; /* the next build there is a cache hit */
    snprintf(scratch, sizeof scratch, "%s/tmp/s4", wb);
    assert_int_equal(kf_build_kernel(&c.spec, wb, scratch, &b, &err), KF_OK);
    assert_true(b.cached);
    assert_int_equal(b.spill_bytes, 4);
    kf_build_info_release(&b);

    c.spec.artifact.len = a.artifact.len;
    c.spec.artifact_hash = "0000000000000000000000000000000000000000000000000000000000000000";
    snprintf(scratch, sizeof scratch, "%s/tmp/s5", wc);
    assert_int_equal(kf_build_kernel(&c.spec, wc, scratch, &b, &err), KF_OK);
    assert_string_equal(b.built_by, "");
    assert_true(b.compile_s > 0);
    assert_int_equal(b.registers, a.registers); /* its own compile's */
    kf_build_info_release(&b);
    kf_build_info_release(&a);
    unsetenv("KF_CUDA_ARCH");
    free_cuspec(&c);
}

static void test_cuda_flags_missing(void **state)
{
    (void)state;
    const char *ver;
    kf_err err;
    if (kf_build_compiler_version(1, &ver, &err) != KF_OK)
        skip();
    setenv("KF_CUDA_ARCH", "90a", 1);
    cuspec c;
    make_cuspec(&c);
    /* Without its flags line the fixture must not compile: the directive is
     * what made the build above pass. */
    kf_buf stripped = KF_BUF_INIT;
    const char *line = strstr(c.text.data, "\n//@kfleet") + 1;
    kf_buf_add(&stripped, c.text.data, (size_t)(line - c.text.data));
    kf_buf_addf(&stripped, "%s", strchr(line, '\n'));
    c.src.content.data = (uint8_t *)stripped.data;
    c.src.content.len = stripped.len;
    kf_hash_part part = {stripped.data, stripped.len};
    kf_hash_hex(&part, 1, c.hash);
    char scratch[128];
    snprintf(scratch, sizeof scratch, "%s/tmp/b4", workdir);
    kf_build_info bi;
    assert_int_equal(kf_build_kernel(&c.spec, workdir, scratch, &bi, &err), KF_EINVAL);
    assert_true(bi.rejected);
    assert_non_null(strstr(bi.log.data, "was not applied"));
    kf_build_info_release(&bi);
    kf_buf_release(&stripped);
    unsetenv("KF_CUDA_ARCH");
    free_cuspec(&c);
}

/* A Python kernel with a torch extension, on a node whose Python has no
 * torch: the build stops saying what it needs and where it looked, not
 * with a compiler's error. Its cache key is not the plain Python one (the
 * arch and nvcc enter it). */
static void test_torch_ext_without_torch(void **state)
{
    (void)state;
    if (system("/usr/bin/python3 -c 'import torch' 2>/dev/null") == 0) {
        print_message("this machine's python3 has torch: the GPU run covers the build\n");
        skip();
    }
    setenv("KF_PYTHON", "/usr/bin/python3", 1);
    Kfleet__TaskSpec spec = KFLEET__TASK_SPEC__INIT;
    Kfleet__SourceFile py = KFLEET__SOURCE_FILE__INIT, cpp = KFLEET__SOURCE_FILE__INIT;
    Kfleet__SourceFile *srcs[] = {&py, &cpp};
    char *ext[] = {"op_ext.cpp"};
    py.name = "op.py";
    py.content.data = (uint8_t *)"import op_ext\n";
    py.content.len = 14;
    cpp.name = "op_ext.cpp";
    cpp.content.data = (uint8_t *)"// binding\n";
    cpp.content.len = 11;
    spec.sources = srcs;
    spec.n_sources = 2;
    spec.python = 1;
    spec.kernel = "op";
    spec.kernel_hash = "00ff";
    spec.extension = ext;
    spec.n_extension = 1;
    assert_int_equal(kf_build_lang(&spec), KF_LANG_TORCH_EXT);
    kf_err err;
    char k1[65], k2[65];
    assert_int_equal(kf_build_cache_key("00ff", KF_LANG_PYTHON, k1, &err), KF_OK);
    assert_int_equal(kf_build_cache_key("00ff", KF_LANG_TORCH_EXT, k2, &err), KF_OK);
    assert_string_not_equal(k1, k2);
    char scratch[128];
    snprintf(scratch, sizeof scratch, "%s/tmp/ext1", workdir);
    kf_build_info bi;
    assert_int_equal(kf_build_kernel(&spec, workdir, scratch, &bi, &err), KF_ENOTFOUND);
    assert_false(bi.rejected);
    assert_non_null(strstr(err.msg, "cannot build the torch extension op_ext here: the "
                                    "extension needs torch in /usr/bin/python3"));
    kf_build_info_release(&bi);
    /* A file the line names that did not come with the kernel. */
    char *gone[] = {"op_ext.cpp", "op_k.cu"};
    spec.extension = gone;
    spec.n_extension = 2;
    snprintf(scratch, sizeof scratch, "%s/tmp/ext2", workdir);
    assert_int_equal(kf_build_kernel(&spec, workdir, scratch, &bi, &err), KF_EINVAL);
    assert_non_null(strstr(err.msg, "extension file op_k.cu did not come with the kernel"));
    kf_build_info_release(&bi);
    /* A name that would reach the compiler as an option. */
    char *opt[] = {"-fplugin=x.so"};
    spec.extension = opt;
    spec.n_extension = 1;
    snprintf(scratch, sizeof scratch, "%s/tmp/ext3", workdir);
    assert_int_equal(kf_build_kernel(&spec, workdir, scratch, &bi, &err), KF_EINVAL);
    assert_non_null(strstr(err.msg, "extension file name '-fplugin=x.so' refused"));
    kf_build_info_release(&bi);
    unsetenv("KF_PYTHON");
}

/* Every CUDA kernel kfleet ships compiles as an agent builds it, for
 * Hopper, with kf_cuda.cuh beside it, without spilling: the GPU machine is
 * not where a typo should be found. */
static void test_shipped_kernels(void **state)
{
    (void)state;
    const char *ver;
    kf_err err;
    if (kf_build_compiler_version(1, &ver, &err) != KF_OK)
        skip();
    setenv("KF_CUDA_ARCH", "90a", 1);
    static const char *const names[] = {"copy",     "gemm_bf16",     "gemm_cublas",
                                        "bsr_spmm", "traj_resample", "voxelize"};
    kf_buf helper = KF_BUF_INIT, gemm_ref = KF_BUF_INIT;
    assert_int_equal(kf_buf_read_file(&helper, KF_SOURCE_DIR "/kernels/cuda/kf_cuda.cuh"), 0);
    assert_int_equal(kf_buf_read_file(&gemm_ref, KF_SOURCE_DIR "/kernels/cuda/kf_gemm_ref.cuh"), 0);
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        cuspec c;
        make_cuspec(&c);
        char path[256], file[64], scratch[128];
        snprintf(path, sizeof path, KF_SOURCE_DIR "/kernels/cuda/%s.cu", names[i]);
        snprintf(file, sizeof file, "%s.cu", names[i]);
        kf_buf_reset(&c.text);
        assert_int_equal(kf_buf_read_file(&c.text, path), 0);
        Kfleet__SourceFile cuh = KFLEET__SOURCE_FILE__INIT;
        cuh.name = "kf_cuda.cuh";
        cuh.content.data = (uint8_t *)helper.data;
        cuh.content.len = helper.len;
        Kfleet__SourceFile ref = KFLEET__SOURCE_FILE__INIT;
        ref.name = "kf_gemm_ref.cuh";
        ref.content.data = (uint8_t *)gemm_ref.data;
        ref.content.len = gemm_ref.len;
        Kfleet__SourceFile *srcs[4] = {&c.src, &c.abi, &cuh, &ref};
        c.src.name = file;
        c.src.content.data = (uint8_t *)c.text.data;
        c.src.content.len = c.text.len;
        c.spec.sources = srcs;
        c.spec.n_sources = 4;
        c.spec.kernel = (char *)names[i];
        kf_hash_part part = {c.text.data, c.text.len};
        kf_hash_hex(&part, 1, c.hash);
        snprintf(scratch, sizeof scratch, "%s/tmp/k%zu", workdir, i);
        kf_build_info bi;
        int rc = kf_build_kernel(&c.spec, workdir, scratch, &bi, &err);
        if (rc != KF_OK)
            print_message("%s: %s\n%s\n", names[i], err.msg, bi.log.data ? bi.log.data : "");
        assert_int_equal(rc, KF_OK);
        assert_true(bi.registers > 0);
        assert_int_equal(bi.spill_bytes, 0);
        assert_non_null(strstr(bi.sass_archs, "sm_90a"));
        kf_build_info_release(&bi);
        free_cuspec(&c);
    }
    kf_buf_release(&helper);
    kf_buf_release(&gemm_ref);
    unsetenv("KF_CUDA_ARCH");
}

int main(void)
{
    snprintf(workdir, sizeof workdir, "/tmp/kf-test-build.XXXXXX");
    if (!mkdtemp(workdir))
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_source_flags),       cmocka_unit_test(test_cuobjdump),
        cmocka_unit_test(test_sass_runs_on),       cmocka_unit_test(test_cuda_build),
        cmocka_unit_test(test_cuda_flags_missing), cmocka_unit_test(test_shared_artifact),
        cmocka_unit_test(test_shipped_kernels),    cmocka_unit_test(test_torch_ext_without_torch),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    nftw(workdir, rm_cb, 8, FTW_DEPTH | FTW_PHYS);
    return rc;
}

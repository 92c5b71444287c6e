/* test_ssh — the pure parts of the SSH layer: shell quoting, known_hosts
 * names, OpenSSH fingerprints, the tunnel's endpoint parsing, launch's size
 * parsing and remote work dir paths. Real sessions are tested against real
 * sshd in tests/integration/test_launch.sh. */
#include "cli/options.h"
#include "fleet/launch.h"
#include "fleet/ssh.h"
#include "fleet/tunnel.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

static void test_quote(void **state)
{
    (void)state;
    kf_buf b = KF_BUF_INIT;
    kf_buf_add_shell_quoted(&b, "a b");
    assert_string_equal(b.data, "'a b'");
    kf_buf_reset(&b);
    kf_buf_add_shell_quoted(&b, "it's $HOME");
    assert_string_equal(b.data, "'it'\\''s $HOME'");
    kf_buf_reset(&b);
    kf_launch_shell_path(&b, "~/kfleet dir");
    assert_string_equal(b.data, "\"$HOME\"/'kfleet dir'");
    kf_buf_reset(&b);
    kf_launch_shell_path(&b, "/workspace/kfleet");
    assert_string_equal(b.data, "'/workspace/kfleet'");
    kf_buf_release(&b);
}

static void test_known_name(void **state)
{
    (void)state;
    char n[64];
    kf_ssh_known_name("10.0.0.1", 22, n, sizeof n);
    assert_string_equal(n, "10.0.0.1");
    kf_ssh_known_name("pod.example", 22017, n, sizeof n);
    assert_string_equal(n, "[pod.example]:22017");
}

static void test_fingerprint(void **state)
{
    (void)state;
    /* sha256("abc") in base64 without padding, as ssh-keygen -l prints. */
    char fp[64];
    kf_ssh_fingerprint_blob("abc", 3, fp);
    assert_string_equal(fp, "SHA256:ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0");
}

static void test_endpoint(void **state)
{
    (void)state;
    char host[64];
    int port = 0;
    kf_err err;
    assert_int_equal(
        kf_tunnels_parse_endpoint("tcp://127.0.0.1:5555", host, sizeof host, &port, &err), KF_OK);
    assert_string_equal(host, "127.0.0.1");
    assert_int_equal(port, 5555);
    assert_int_equal(kf_tunnels_parse_endpoint("tcp://*:7", host, sizeof host, &port, &err), KF_OK);
    assert_string_equal(host, "127.0.0.1");
    assert_int_equal(kf_tunnels_parse_endpoint("ipc:///tmp/x.sock", host, sizeof host, &port, &err),
                     KF_EINVAL);
    assert_non_null(strstr(err.msg, "TCP only"));
    assert_int_equal(kf_tunnels_parse_endpoint("tcp://h:99999", host, sizeof host, &port, &err),
                     KF_EINVAL);
}

static void test_size(void **state)
{
    (void)state;
    uint64_t v = 0;
    assert_int_equal(kf_opt_parse_size("4096", &v), KF_OK);
    assert_int_equal(v, 4096);
    assert_int_equal(kf_opt_parse_size("512M", &v), KF_OK);
    assert_int_equal(v, 512ull << 20);
    assert_int_equal(kf_opt_parse_size("2GiB", &v), KF_OK);
    assert_int_equal(v, 2ull << 30);
    assert_int_not_equal(kf_opt_parse_size("lots", &v), KF_OK);
    assert_int_not_equal(kf_opt_parse_size("-1G", &v), KF_OK);
    assert_int_not_equal(kf_opt_parse_size("nan", &v), KF_OK);
}

static void test_connect_refused(void **state)
{
    (void)state;
    /* Port 1 on loopback: refused at once; two attempts, then the report. */
    kf_err err;
    assert_int_equal(kf_ssh_global_init(&err), KF_OK);
    kf_ssh_opts o = {0};
    o.name = "nobody";
    o.host = "127.0.0.1";
    o.port = 1;
    o.attempts = 2;
    o.backoff_s = 0.05;
    kf_ssh *s = NULL;
    int tries = 0;
    assert_int_equal(kf_ssh_connect(&o, &s, &tries, &err), KF_EUNAVAIL);
    assert_null(s);
    assert_int_equal(tries, 2);
    assert_non_null(strstr(err.msg, "nobody"));
    assert_non_null(strstr(err.msg, "gave up after 2 attempts"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quote),       cmocka_unit_test(test_known_name),
        cmocka_unit_test(test_fingerprint), cmocka_unit_test(test_endpoint),
        cmocka_unit_test(test_size),        cmocka_unit_test(test_connect_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

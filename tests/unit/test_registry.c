/* test_registry.c - the schema registry client (registry.c, libcurl)
 * against a stand-in registry on 127.0.0.1 (tests/unit/registry_server.py:
 * plain HTTP, HTTPS with a CA made for the test, HTTPS that wants a client
 * certificate): a schema read over each, a CA that did not sign the
 * server's certificate refused by name, basic and bearer credentials right
 * and wrong (a 401 named, the secret in no message, even one the registry
 * repeats), credentials missing from the environment, a chunked answer, a
 * redirect followed and a redirect loop cut, a slow registry timed out, an
 * oversized answer refused, a subject with '/' and spaces escaped; and
 * sd_registry_answer on hand-made answers. */
#include <criterion/criterion.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "protodyn.h"
#include "registry.h"
#include "util.h"

static pid_t server = -1;
static int http_port, https_port, mtls_port;
static char certs[PATH_MAX + 32];

#define SCHEMA "{\"type\":\"record\",\"name\":\"S\",\"fields\":[{\"name\":\"event_id\",\"type\":\"string\"}]}"

/* the stand-in started, its three ports read from the file it writes */
static void setup(void) {
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    cr_assert(n > 0);
    exe[n] = 0;
    *strrchr(exe, '/') = 0;
    snprintf(certs, sizeof(certs), "%s/registry-certs", exe);
    setenv("no_proxy", "127.0.0.1,localhost", 1); /* a proxy of the machine's is not the registry's way here */
    char log[PATH_MAX + 64];
    snprintf(log, sizeof(log), "%s-server.log", certs);
    server = fork();
    cr_assert(server >= 0);
    if (server == 0) {
        if (!freopen(log, "a", stderr)) _exit(127);
        execlp("python3", "python3", "tests/unit/registry_server.py", certs, (char *)NULL);
        _exit(127);
    }
    char ports[PATH_MAX + 64];
    snprintf(ports, sizeof(ports), "%s/ports.%d", certs, (int)server);
    FILE *f = NULL;
    for (int i = 0; i < 600 && !(f = fopen(ports, "r")); i++) usleep(50 * 1000);
    cr_assert(f, "the stand-in registry wrote no ports within 30 s (see %s)", log);
    cr_assert_eq(fscanf(f, "%d %d %d", &http_port, &https_port, &mtls_port), 3);
    fclose(f);
}

static void teardown(void) {
    if (server > 0) kill(server, SIGTERM), waitpid(server, NULL, 0);
    server = -1;
}

TestSuite(registry, .init = setup, .fini = teardown, .timeout = 60);

static char *url(const char *scheme, int port, const char *prefix) {
    return sd_util_fmt("%s://127.0.0.1:%d%s", scheme, port, prefix);
}

static char *cert(const char *name) { return sd_util_fmt("%s/%s", certs, name); }

/* GET /schemas/ids/1 at u with o: the error code, the message in err;
 * the text is the test schema's unless any_text (then only its length,
 * in *any_text) */
static sd_err_t fetch_any(const char *u, const sd_registry_opts_t *o, char *err, size_t errlen, size_t *any_text) {
    sd_registry_t *reg = NULL;
    sd_err_t e = sd_registry_open(u, o, &reg, err, errlen);
    if (e) return e;
    sd_buf_t text;
    sd_buf_init(&text);
    int found = 0;
    e = sd_registry_schema(reg, 1, &text, NULL, &found, err, errlen);
    if (!e) cr_expect(found, "schema 1 found at %s", u);
    if (!e && any_text) *any_text = text.len;
    else if (!e) cr_expect(text.len == strlen(SCHEMA) && !memcmp(text.data, SCHEMA, text.len), "expected the test schema, got %zu bytes",
                           text.len);
    sd_buf_free(&text);
    sd_registry_close(reg);
    return e;
}

static sd_err_t fetch(const char *u, const sd_registry_opts_t *o, char *err, size_t errlen) { return fetch_any(u, o, err, errlen, NULL); }

Test(registry, plain_http_and_an_unknown_id) {
    char *u = url("http", http_port, "/");
    char err[1024] = "";
    cr_assert_eq(fetch(u, NULL, err, sizeof(err)), SD_OK, "%s", err);
    sd_registry_t *reg = NULL;
    cr_assert_eq(sd_registry_open(u, NULL, &reg, err, sizeof(err)), SD_OK, "%s", err);
    sd_buf_t text;
    sd_buf_init(&text);
    int found = 1;
    cr_assert_eq(sd_registry_schema(reg, 2, &text, NULL, &found, err, sizeof(err)), SD_OK, "%s", err);
    cr_expect_eq(found, 0, "id 2 is unknown to the registry: expected found 0, got %d", found);
    cr_expect_eq(sd_registry_last_status(reg), 404);
    sd_buf_free(&text);
    sd_registry_close(reg);
    free(u);
}

Test(registry, https_with_its_ca) {
    char *u = url("https", https_port, ""), *ca = cert("ca.pem");
    sd_registry_opts_t o = {.ca = ca};
    char err[1024] = "";
    cr_expect_eq(fetch(u, &o, err, sizeof(err)), SD_OK, "%s", err);
    free(u), free(ca);
}

Test(registry, https_with_a_wrong_ca_is_refused) {
    char *u = url("https", https_port, ""), *ca = cert("wrong-ca.pem");
    sd_registry_opts_t o = {.ca = ca};
    char err[1024] = "";
    cr_assert_eq(fetch(u, &o, err, sizeof(err)), SD_ERR_REGISTRY);
    cr_expect(strstr(err, u) && strstr(err, "TLS certificate is not trusted by the CA file ca=") && strstr(err, "wrong-ca.pem"),
              "expected the URL and the untrusted certificate named, got: %s", err);
    /* without ca= the system's CAs do not know the test's CA either */
    cr_assert_eq(fetch(u, NULL, err, sizeof(err)), SD_ERR_REGISTRY);
    cr_expect(strstr(err, "not trusted by the system's CAs"), "got: %s", err);
    free(u), free(ca);
}

Test(registry, mutual_tls) {
    char *u = url("https", mtls_port, ""), *ca = cert("ca.pem"), *c = cert("client.pem"), *k = cert("client.key");
    sd_registry_opts_t o = {.ca = ca, .cert = c, .key = k};
    char err[1024] = "";
    cr_expect_eq(fetch(u, &o, err, sizeof(err)), SD_OK, "%s", err);
    sd_registry_opts_t without = {.ca = ca};
    cr_expect_eq(fetch(u, &without, err, sizeof(err)), SD_ERR_REGISTRY, "a registry that wants a client certificate, none given");
    /* the server's alert, or the connection it closed (which comes first is timing): the hint only with the alert */
    cr_expect(strstr(err, u) && (strstr(err, "wants a client certificate: cert= and key=") || strstr(err, "peer")), "got: %s", err);
    sd_registry_opts_t half = {.ca = ca, .cert = c};
    cr_expect_eq(fetch(u, &half, err, sizeof(err)), SD_ERR_REGISTRY);
    cr_expect(strstr(err, "certificate and its key together"), "got: %s", err);
    free(u), free(ca), free(c), free(k);
}

Test(registry, basic_auth_right_and_wrong) {
    char *u = url("http", http_port, "/basic");
    sd_registry_opts_t o = {.auth = "basic:env:SD_TEST_REGISTRY_KEY"};
    char err[1024] = "";
    setenv("SD_TEST_REGISTRY_KEY", "user:s3cret-basic", 1);
    cr_expect_eq(fetch(u, &o, err, sizeof(err)), SD_OK, "%s", err);
    setenv("SD_TEST_REGISTRY_KEY", "user:wr0ng-pa55word", 1);
    cr_assert_eq(fetch(u, &o, err, sizeof(err)), SD_ERR_REGISTRY);
    cr_expect(strstr(err, u) && strstr(err, "HTTP 401") && strstr(err, "unauthorized") && strstr(err, "Unauthorized"),
              "expected the URL, the status and the registry's message, got: %s", err);
    cr_expect(!strstr(err, "wr0ng-pa55word"), "the secret in the message: %s", err);
    /* from a file: its first line */
    char *path = sd_util_fmt("%s-basic-%d", certs, (int)getpid());
    cr_assert_eq(sd_util_write_file(path, "user:s3cret-basic\nsecond line\n", 30, err, sizeof(err)), SD_OK, "%s", err);
    char *spec = sd_util_fmt("basic:file:%s", path);
    sd_registry_opts_t f = {.auth = spec};
    cr_expect_eq(fetch(u, &f, err, sizeof(err)), SD_OK, "%s", err);
    unlink(path);
    free(path), free(spec), free(u);
}

Test(registry, bearer_token) {
    char *u = url("http", http_port, "/bearer");
    sd_registry_opts_t o = {.auth = "bearer:env:SD_TEST_REGISTRY_TOKEN"};
    char err[1024] = "";
    setenv("SD_TEST_REGISTRY_TOKEN", "t0ken-bearer\n", 1); /* a trailing newline, as `export X=$(cat f)` can leave, is no part of it */
    cr_expect_eq(fetch(u, &o, err, sizeof(err)), SD_OK, "%s", err);
    setenv("SD_TEST_REGISTRY_TOKEN", "exp1red-t0ken", 1);
    cr_assert_eq(fetch(u, &o, err, sizeof(err)), SD_ERR_REGISTRY);
    cr_expect(strstr(err, "HTTP 401") && !strstr(err, "exp1red-t0ken"), "got: %s", err);
    free(u);
}

Test(registry, a_secret_the_registry_repeats_is_blanked) {
    char *u = url("http", http_port, "/echo");
    char err[1024] = "";
    setenv("SD_TEST_REGISTRY_KEY", "user:s3cret-basic", 1);
    sd_registry_opts_t o = {.auth = "basic:env:SD_TEST_REGISTRY_KEY"};
    cr_assert_eq(fetch(u, &o, err, sizeof(err)), SD_ERR_REGISTRY);
    cr_expect(strstr(err, "bad credentials: Basic ***"), "expected the repeated header blanked, got: %s", err);
    cr_expect(!strstr(err, "dXNlcjpzM2NyZXQtYmFzaWM") && !strstr(err, "s3cret-basic"), "got: %s", err);
    setenv("SD_TEST_REGISTRY_TOKEN", "t0ken-bearer", 1);
    sd_registry_opts_t b = {.auth = "bearer:env:SD_TEST_REGISTRY_TOKEN"};
    cr_assert_eq(fetch(u, &b, err, sizeof(err)), SD_ERR_REGISTRY);
    cr_expect(strstr(err, "Bearer ***") && !strstr(err, "t0ken-bearer"), "got: %s", err);
    free(u);
}

Test(registry, credentials_not_found) {
    char *u = url("http", http_port, "/basic");
    sd_registry_t *reg = NULL;
    char err[1024] = "";
    unsetenv("SD_TEST_REGISTRY_UNSET");
    sd_registry_opts_t o = {.auth = "basic:env:SD_TEST_REGISTRY_UNSET"};
    cr_assert_eq(sd_registry_open(u, &o, &reg, err, sizeof(err)), SD_ERR_REGISTRY);
    cr_expect(strstr(err, "SD_TEST_REGISTRY_UNSET is not set"), "got: %s", err);
    setenv("SD_TEST_REGISTRY_KEY", "n0-colon-secret", 1);
    sd_registry_opts_t c = {.auth = "basic:env:SD_TEST_REGISTRY_KEY"};
    cr_assert_eq(sd_registry_open(u, &c, &reg, err, sizeof(err)), SD_ERR_REGISTRY);
    cr_expect(strstr(err, "expected KEY:SECRET") && !strstr(err, "n0-colon-secret"), "got: %s", err);
    sd_registry_opts_t f = {.auth = "bearer:file:/nonexistent/token"};
    cr_assert_eq(sd_registry_open(u, &f, &reg, err, sizeof(err)), SD_ERR_REGISTRY);
    cr_expect(strstr(err, "/nonexistent/token"), "got: %s", err);
    cr_expect_eq(reg, NULL);
    free(u);
}

Test(registry, urls_and_auth_forms) {
    char err[512];
    cr_expect_eq(sd_registry_url_check("https://key:hunter2@registry.example.com/apis", err, sizeof(err)), SD_ERR_REGISTRY);
    cr_expect(strstr(err, "no user:password@") && !strstr(err, "hunter2") && !strstr(err, "key:"), "got: %s", err);
    cr_expect_eq(sd_registry_url_check("ftp://h/x", err, sizeof(err)), SD_ERR_REGISTRY);
    cr_expect_eq(sd_registry_url_check("http://", err, sizeof(err)), SD_ERR_REGISTRY);
    cr_expect_eq(sd_registry_url_check("https://h:8443/apis/ccompat/v7?x=a@b", err, sizeof(err)), SD_OK, "%s", err);
    cr_expect_eq(sd_registry_auth_check("bearer:file:/run/secrets/t", err, sizeof(err)), SD_OK, "%s", err);
    cr_expect_eq(sd_registry_auth_check("basic:user:pass", err, sizeof(err)), SD_ERR_REGISTRY);
    cr_expect(strstr(err, "basic:env:NAME") && !strstr(err, "user:pass"), "a secret written in the drill is not repeated; got: %s", err);
    cr_expect_eq(sd_registry_auth_check("basic:env:", err, sizeof(err)), SD_ERR_REGISTRY);
}

Test(registry, chunked_answer) {
    char *u = url("http", http_port, "/chunked");
    char err[1024] = "";
    cr_expect_eq(fetch(u, NULL, err, sizeof(err)), SD_OK, "%s", err);
    free(u);
}

Test(registry, redirects_followed_and_bounded) {
    char *u = url("http", http_port, "/redir");
    char err[1024] = "";
    cr_expect_eq(fetch(u, NULL, err, sizeof(err)), SD_OK, "%s", err);
    free(u);
    u = url("http", http_port, "/loop");
    cr_assert_eq(fetch(u, NULL, err, sizeof(err)), SD_ERR_REGISTRY);
    cr_expect(strstr(err, "more than 5 redirects"), "got: %s", err);
    free(u);
}

Test(registry, a_slow_registry_times_out) {
    char *u = url("http", http_port, "/slow");
    sd_registry_opts_t o = {.timeout_ms = 700};
    char err[1024] = "";
    int64_t t0 = sd_util_mono_ms();
    cr_assert_eq(fetch(u, &o, err, sizeof(err)), SD_ERR_REGISTRY);
    int64_t took = sd_util_mono_ms() - t0;
    cr_expect(strstr(err, "timed out") && strstr(err, u), "got: %s", err);
    cr_expect(took < 4000, "expected the request cut at 700 ms, it took %lld ms", (long long)took);
    free(u);
}

Test(registry, an_oversized_answer_is_refused) {
    char *u = url("http", http_port, "/big");
    sd_registry_opts_t o = {.max_answer = 65536};
    char err[1024] = "";
    cr_assert_eq(fetch(u, &o, err, sizeof(err)), SD_ERR_REGISTRY);
    cr_expect(strstr(err, "an answer over 65536 bytes"), "got: %s", err);
    size_t len = 0;
    cr_expect_eq(fetch_any(u, NULL, err, sizeof(err), &len), SD_OK, "1 MiB is under the default cap: %s", err);
    cr_expect_eq(len, 1u << 20, "expected the 1 MiB schema, got %zu bytes", len);
    free(u);
}

Test(registry, subjects_escaped_register_compatibility_latest) {
    char *u = url("http", http_port, "");
    sd_registry_t *reg = NULL;
    char err[1024] = "";
    cr_assert_eq(sd_registry_open(u, NULL, &reg, err, sizeof(err)), SD_OK, "%s", err);
    int id = -1, refused = 1;
    cr_expect_eq(sd_registry_register(reg, "a/b c-value", SD_SCHEMA_AVRO, SCHEMA, &id, &refused, err, sizeof(err)), SD_OK, "%s", err);
    cr_expect_eq(id, 7, "expected id 7 for the subject sent as a%%2Fb%%20c-value, got %d", id);
    cr_expect_eq(refused, 0);
    cr_expect_eq(sd_registry_register(reg, "refused-value", SD_SCHEMA_AVRO, SCHEMA, &id, &refused, err, sizeof(err)), SD_OK, "%s", err);
    cr_expect_eq(refused, 1);
    cr_expect(strstr(err, "HTTP 409: Schema being registered is incompatible"), "got: %s", err);
    cr_expect_eq(sd_registry_compatibility(reg, "x y", "NONE", err, sizeof(err)), SD_OK, "%s", err);
    sd_buf_t text;
    sd_buf_init(&text);
    int found = 0;
    cr_expect_eq(sd_registry_latest(reg, "a/b-value", &text, &found, err, sizeof(err)), SD_OK, "%s", err);
    cr_expect(found && text.data && !strcmp(text.data, SCHEMA));
    sd_buf_free(&text);
    sd_registry_close(reg);
    free(u);
}

/* A Protobuf schema's imports come with it: each reference fetched by its
 * subject and version, theirs in turn, each once; libprotobuf then reads
 * the schema, which it cannot without them. */
Test(registry, protobuf_references_followed) {
    char *u = url("http", http_port, "");
    char err[1024] = "";
    sd_registry_t *reg = NULL;
    cr_assert_eq(sd_registry_open(u, NULL, &reg, err, sizeof(err)), SD_OK, "%s", err);
    sd_buf_t text;
    sd_buf_init(&text);
    sd_registry_refs_t refs = {0};
    int found = 0;
    cr_assert_eq(sd_registry_schema(reg, 3, &text, &refs, &found, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert(found);
    cr_assert_eq(refs.n, 2, "the import and its own import (the one naming itself again fetched once): got %zu", refs.n);
    cr_expect_str_eq(refs.names[0], "shop/common.proto");
    cr_expect_str_eq(refs.names[1], "base.proto");
    cr_expect(strstr(refs.texts[0], "message Money") && strstr(refs.texts[1], "enum Unit"));
    char why[256];
    sd_protodyn_t *alone = sd_protodyn_parse(text.data, why, sizeof(why));
    cr_expect_null(alone, "the schema without its imports must not be read");
    if (alone) sd_protodyn_free(alone);
    sd_protodyn_t *p = sd_protodyn_parse_files(text.data, (const char *const *)refs.names, (const char *const *)refs.texts, refs.n, why,
                                               sizeof(why));
    cr_assert_not_null(p, "%s", why);
    /* Order{event_id "a1", total Money{currency "EUR", cents 250, unit MILL}}: indexes [0], then the message */
    static const unsigned char rec[] = {0x00, 0x0a, 0x02, 'a', '1', 0x12, 0x0a, 0x0a, 0x03, 'E', 'U', 'R', 0x10, 0xfa, 0x01, 0x18, 0x01};
    json_t *j = NULL;
    cr_assert_eq(sd_protodyn_decode(p, rec, sizeof(rec), &j, why, sizeof(why)), 0, "%s", why);
    char *t = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
    cr_expect_str_eq(t, "{\"event_id\":\"a1\",\"total\":{\"currency\":\"EUR\",\"cents\":250,\"unit\":\"MILL\"}}");
    free(t);
    json_decref(j);
    sd_protodyn_free(p);
    sd_registry_refs_free(&refs);
    /* a reference the registry does not hold; one without a version */
    cr_expect_eq(sd_registry_schema(reg, 4, &text, &refs, &found, err, sizeof(err)), SD_ERR_REGISTRY);
    cr_expect(strstr(err, "reference shop/common.proto (subject gone version 1)") && strstr(err, "HTTP 404"), "%s", err);
    cr_expect_eq(refs.n, 0);
    cr_expect_eq(sd_registry_schema(reg, 5, &text, &refs, &found, err, sizeof(err)), SD_ERR_REGISTRY);
    cr_expect(strstr(err, "a reference without a name, a subject and a version"), "%s", err);
    sd_buf_free(&text);
    sd_registry_close(reg);
    free(u);
}

Test(registry, nothing_listening) {
    /* a port nothing listens on, asked once (once=1): named */
    sd_registry_t *reg = NULL;
    char err[1024] = "";
    sd_registry_opts_t o = {.once = 1};
    cr_assert_eq(sd_registry_open("http://127.0.0.1:1/", &o, &reg, err, sizeof(err)), SD_OK, "%s", err);
    sd_buf_t text;
    sd_buf_init(&text);
    int found;
    cr_expect_eq(sd_registry_schema(reg, 1, &text, NULL, &found, err, sizeof(err)), SD_ERR_REGISTRY);
    cr_expect(strstr(err, "registry http://127.0.0.1:1: cannot connect: ") && strstr(err, "(GET /schemas/ids/1)"), "got: %s", err);
    cr_expect_eq(sd_registry_last_status(reg), 0);
    sd_buf_free(&text);
    sd_registry_close(reg);
}

/* ---- answers read apart from the network ---- */

Test(registry_answer, hand_made_answers) {
    char why[512];
    int id = -1;
    sd_buf_t text;
    sd_buf_init(&text);
    cr_expect_eq(sd_registry_answer(200, "{\"id\":12}", 9, SD_REGISTRY_WANT_ID, 409, &id, &text, why, sizeof(why)), SD_OK);
    cr_expect_eq(id, 12);
    cr_expect_eq(sd_registry_answer(200, "{\"id\":-1}", 9, SD_REGISTRY_WANT_ID, 409, &id, &text, why, sizeof(why)), SD_ERR_REGISTRY);
    cr_expect_str_eq(why, "an answer without an id");
    cr_expect_eq(sd_registry_answer(200, "[1]", 3, SD_REGISTRY_WANT_SCHEMA, 404, &id, &text, why, sizeof(why)), SD_ERR_REGISTRY);
    cr_expect_str_eq(why, "an answer without a schema");
    cr_expect_eq(sd_registry_answer(404, "{\"message\":\"not here\"}", 22, SD_REGISTRY_WANT_SCHEMA, 404, &id, &text, why, sizeof(why)),
                 SD_OK);
    cr_expect_str_eq(why, "HTTP 404: not here");
    cr_expect_eq(sd_registry_answer(403, "no\x1b[31m", 7, SD_REGISTRY_WANT_NOTHING, 0, NULL, NULL, why, sizeof(why)), SD_ERR_REGISTRY);
    cr_expect(strstr(why, "HTTP 403 (forbidden") && strstr(why, "no\\x1B[31m"), "a body not JSON, made printable; got: %s", why);
    sd_buf_free(&text);
}

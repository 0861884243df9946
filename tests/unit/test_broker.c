/* test_broker.c - the client properties file (--kafka-config): its lines,
 * ${ENV:NAME} and its errors, which name the line and never a value; which
 * properties are secrets; a secret's value kept out of the error of a
 * property librdkafka refuses. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker.h"
#include "props.h"
#include "util.h"

static char path[64];

static void setup(void) {
    snprintf(path, sizeof(path), "/tmp/sd_props_XXXXXX");
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
}
static void teardown(void) { unlink(path); }

TestSuite(broker, .init = setup, .fini = teardown);

static void write_props(const char *text) { cr_assert_eq(sd_util_write_file(path, text, strlen(text), NULL, 0), SD_OK); }

Test(broker, reads_properties_in_order_with_comments_and_spaces) {
    write_props("# Confluent Cloud\n! another comment\n\nsecurity.protocol=SASL_SSL\r\n  sasl.mechanisms = PLAIN  \n"
                "sasl.username=$ConnectionString\nsasl.password=Endpoint=sb://x/;SharedAccessKey=a=b\n");
    sd_kvlist_t l = {0};
    char err[512];
    cr_assert_eq(sd_props_read(path, &l, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert_eq(l.n, 4, "expected 4 properties, got %d", l.n);
    cr_assert_str_eq(l.v[0].key, "security.protocol");
    cr_assert_str_eq(l.v[0].value, "SASL_SSL");
    cr_assert_str_eq(l.v[1].key, "sasl.mechanisms");
    cr_assert_str_eq(l.v[1].value, "PLAIN");
    cr_assert_str_eq(l.v[2].value, "$ConnectionString"); /* a $ without {ENV: is the user's own */
    cr_assert_str_eq(l.v[3].value, "Endpoint=sb://x/;SharedAccessKey=a=b");
    sd_kvlist_free(&l);
}

Test(broker, env_references_are_read_from_the_environment) {
    setenv("SD_TEST_API_SECRET", "s3cr3t-from-env", 1);
    write_props("sasl.password=${ENV:SD_TEST_API_SECRET}\nsasl.username=key-${ENV:SD_TEST_API_SECRET}-x\n");
    sd_kvlist_t l = {0};
    char err[512];
    cr_assert_eq(sd_props_read(path, &l, err, sizeof(err)), SD_OK, "%s", err);
    cr_assert_str_eq(sd_kvlist_get(&l, "sasl.password"), "s3cr3t-from-env");
    cr_assert_str_eq(sd_kvlist_get(&l, "sasl.username"), "key-s3cr3t-from-env-x");
    sd_kvlist_free(&l);
}

Test(broker, an_unset_variable_or_a_bad_line_is_named_without_a_value) {
    unsetenv("SD_TEST_UNSET");
    write_props("sasl.password=hunter2\nsasl.username=${ENV:SD_TEST_UNSET}\n");
    sd_kvlist_t l = {0};
    char err[512];
    cr_assert_eq(sd_props_read(path, &l, err, sizeof(err)), SD_ERR_USAGE);
    cr_assert(strstr(err, ":2: ${ENV:SD_TEST_UNSET}: the environment has no SD_TEST_UNSET"), "got: %s", err);
    cr_assert_null(strstr(err, "hunter2"), "the error shows a secret: %s", err);
    sd_kvlist_free(&l);
    write_props("sasl.password hunter2\n");
    cr_assert_eq(sd_props_read(path, &l, err, sizeof(err)), SD_ERR_USAGE);
    cr_assert(strstr(err, ":1: expected KEY=VALUE"), "got: %s", err);
    cr_assert_null(strstr(err, "hunter2"), "the error shows a secret: %s", err);
    sd_kvlist_free(&l);
    write_props("sasl.password=${ENV:SD_TEST_UNSET\n");
    cr_assert_eq(sd_props_read(path, &l, err, sizeof(err)), SD_ERR_USAGE);
    cr_assert(strstr(err, "without its closing }"), "got: %s", err);
    sd_kvlist_free(&l);
}

Test(broker, secret_properties_by_name) {
    const char *secret[] = {"sasl.password", "ssl.key.password", "sasl.oauthbearer.client.secret", "ssl.keystore.password",
                            "my.SECRET.thing"};
    const char *plain[] = {"sasl.username", "security.protocol", "ssl.ca.location", "ssl.key.location", "client.id"};
    for (size_t i = 0; i < sizeof(secret) / sizeof(secret[0]); i++) cr_assert(sd_broker_prop_secret(secret[i]), "%s is a secret", secret[i]);
    for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) cr_assert_not(sd_broker_prop_secret(plain[i]), "%s is no secret", plain[i]);
}

Test(broker, a_refused_secret_property_is_shown_as_stars) {
    sd_kvlist_t l = {0};
    /* a property librdkafka lacks is refused: its value must not show */
    sd_kvlist_add(&l, "no.such.secret", "hunter2");
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    char err[512];
    cr_assert_eq(sd_broker_conf_apply(conf, &l, "--kafka-config", err, sizeof(err)), SD_ERR_USAGE);
    cr_assert(strstr(err, "no.such.secret=***"), "got: %s", err);
    cr_assert_null(strstr(err, "hunter2"), "the error shows a secret: %s", err);
    rd_kafka_conf_destroy(conf);
    sd_kvlist_free(&l);
}

Test(broker, redact_replaces_every_copy) {
    char text[64] = "Invalid value \"ab*\" for ab*: ab*";
    sd_broker_redact(text, sizeof(text), "ab*");
    cr_assert_str_eq(text, "Invalid value \"***\" for ***: ***");
    char small[8] = "x*y*";
    sd_broker_redact(small, sizeof(small), "*");
    cr_assert_str_eq(small, "x***y**", "cut to its size, got %s", small);
    char same[16] = "nothing";
    sd_broker_redact(same, sizeof(same), "");
    cr_assert_str_eq(same, "nothing");
}

/* test_jschema.c - the JSON Schema validator (harness/base/jschema.c)
 * against the JSON Schema Test Suite's draft-7 files (Debian's
 * json-schema-test-suite): every case of every schema it compiles answers
 * as the suite says, and the schemas it refuses are the ones with a
 * keyword or a reference it says it does not follow. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "jschema.h"

#define SUITE "/usr/share/json-schema-test-suite/tests/draft7"

Test(jschema, the_test_suite_draft7) {
    DIR *d = opendir(SUITE);
    cr_assert(d, "%s: not found (scripts/deps.sh installs json-schema-test-suite)", SUITE);
    int groups = 0, refused = 0, cases = 0, wrong = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t n = strlen(de->d_name);
        if (n < 6 || strcmp(de->d_name + n - 5, ".json")) continue;
        char path[512];
        snprintf(path, sizeof(path), "%s/%s", SUITE, de->d_name);
        json_error_t je;
        json_t *file = json_load_file(path, JSON_ALLOW_NUL, &je);
        cr_assert(file, "%s: %s", path, je.text);
        size_t g;
        json_t *group;
        json_array_foreach(file, g, group) {
            groups++;
            char err[512];
            sd_jschema_t *s = sd_jschema_compile_json(json_object_get(group, "schema"), err, sizeof(err));
            if (!s) {
                /* refused: only a reference outside the schema (the remote
                 * and the $id-relative ones) may be the reason */
                refused++;
                cr_expect(strstr(err, "$ref") != NULL, "%s: \"%s\": refused for another reason: %s", de->d_name,
                          json_string_value(json_object_get(group, "description")), err);
                continue;
            }
            size_t t;
            json_t *tc;
            json_array_foreach(json_object_get(group, "tests"), t, tc) {
                cases++;
                char why[256];
                int valid = sd_jschema_valid(s, json_object_get(tc, "data"), why, sizeof(why));
                if (valid != json_is_true(json_object_get(tc, "valid"))) {
                    wrong++;
                    cr_expect_fail("%s: \"%s\" / \"%s\": answered %s (%s)", de->d_name,
                                   json_string_value(json_object_get(group, "description")),
                                   json_string_value(json_object_get(tc, "description")), valid ? "valid" : "invalid", why);
                }
            }
            sd_jschema_free(s);
        }
        json_decref(file);
    }
    closedir(d);
    cr_log_info("JSON Schema Test Suite draft 7: %d groups, %d refused, %d cases, %d answered wrongly", groups, refused, cases, wrong);
    cr_assert_eq(wrong, 0);
    /* the refusals are a handful of the suite, not a way around it */
    cr_assert(groups >= 120 && refused * 10 < groups, "%d groups, %d refused", groups, refused);
}

Test(jschema, names_the_place_and_the_keyword) {
    const char *schema = "{\"type\":\"object\",\"required\":[\"event_id\",\"weight_g\"],\"properties\":{"
                         "\"event_id\":{\"type\":\"string\"},\"weight_g\":{\"type\":\"integer\",\"minimum\":0}}}";
    char err[256], why[256];
    sd_jschema_t *s = sd_jschema_compile(schema, strlen(schema), err, sizeof(err));
    cr_assert(s, "%s", err);
    struct {
        const char *doc, *why;
    } cases[] = {
        {"{\"event_id\":\"a\",\"weight_g\":12}", ""},
        {"{\"event_id\":\"a\",\"weight_g\":\"12\"}", "/weight_g: type: expected integer, found string"},
        {"{\"event_id\":\"a\",\"weight_g\":-1}", "/weight_g: minimum: -1 is below 0"},
        {"{\"event_id\":\"a\"}", "/: required: \"weight_g\" is missing"},
        {"[1]", "/: type: expected object, found array"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *doc = json_loads(cases[i].doc, JSON_DECODE_ANY, NULL);
        int valid = sd_jschema_valid(s, doc, why, sizeof(why));
        cr_expect_eq(valid, !cases[i].why[0], "%s", cases[i].doc);
        cr_expect_str_eq(why, cases[i].why, "%s", cases[i].doc);
        json_decref(doc);
    }
    sd_jschema_free(s);
}

Test(jschema, refuses_what_it_does_not_check) {
    const char *bad[][2] = {
        {"{\"properties\":{\"a\":{\"unevaluatedProperties\":false}}}", "at /properties/a: keyword \"unevaluatedProperties\""},
        {"{\"$ref\":\"http://example.com/s.json\"}", "$ref \"http://example.com/s.json\""},
        {"{\"$ref\":\"#/definitions/none\"}", "$ref \"#/definitions/none\""},
        {"{\"pattern\":\"(\"}", "pattern \"(\""},
        {"{\"type\":\"text\"}", "at /type: expected a JSON type's name"},
        {"{\"anyOf\":[]}", "at /anyOf: expected an array of schemas"},
        {"{\"type\":", "not JSON"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char err[256] = "";
        sd_jschema_t *s = sd_jschema_compile(bad[i][0], strlen(bad[i][0]), err, sizeof(err));
        cr_expect_null(s, "%s compiled", bad[i][0]);
        cr_expect(strstr(err, bad[i][1]) != NULL, "%s: %s", bad[i][0], err);
        sd_jschema_free(s);
    }
}

/* test_jschema.c - the JSON Schema validator (harness/format/jschema.c)
 * and its ECMA-262 patterns (harness/format/ecmare.c) against the JSON
 * Schema Test Suite's draft-7 files (Debian's json-schema-test-suite):
 * every case of every schema it compiles answers as the suite says, the
 * schemas it refuses are the ones with a keyword or a reference it says it
 * does not follow, and the optional files it runs (bignum, ECMA-262
 * regexes) answer as the suite says too. Then the defects a hostile probe
 * found in the POSIX-regex and floating-point validator (issue 76), each
 * a case that answered wrongly before and answers rightly now: patterns
 * read as ECMA-262 means them, constructs it lacks refused by name,
 * multipleOf exact at every magnitude, and a bound that runs out an
 * answer of its own (SD_JSCHEMA_UNJUDGED) that no not, anyOf, oneOf or if
 * turns into a pass. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ecmare.h"
#include "jschema.h"
#include "util.h"

#define SUITE "/usr/share/json-schema-test-suite/tests/draft7"

typedef struct {
    int groups, refused, cases, wrong, unjudged;
} suite_tally_t;

/* Every group of the suite's file path (loaded with flags): each schema
 * compiled (or refused, then the reason must hold refused_because), each
 * case answered as the suite says. */
static void suite_file(const char *path, size_t flags, const char *refused_because, suite_tally_t *t) {
    json_error_t je;
    json_t *file = json_load_file(path, flags, &je);
    cr_assert(file, "%s: %s", path, je.text);
    const char *name = strrchr(path, '/') + 1;
    size_t g;
    json_t *group;
    json_array_foreach(file, g, group) {
        t->groups++;
        char err[512];
        sd_jschema_t *s = sd_jschema_compile_json(json_object_get(group, "schema"), err, sizeof(err));
        if (!s) {
            t->refused++;
            cr_expect(strstr(err, refused_because) != NULL, "%s: \"%s\": refused for another reason: %s", name,
                      json_string_value(json_object_get(group, "description")), err);
            continue;
        }
        size_t i;
        json_t *tc;
        json_array_foreach(json_object_get(group, "tests"), i, tc) {
            t->cases++;
            char why[256];
            int valid = sd_jschema_valid(s, json_object_get(tc, "data"), why, sizeof(why));
            t->unjudged += valid == SD_JSCHEMA_UNJUDGED;
            if (valid != (json_is_true(json_object_get(tc, "valid")) ? SD_JSCHEMA_VALID : SD_JSCHEMA_INVALID)) {
                t->wrong++;
                cr_expect_fail("%s: \"%s\" / \"%s\": answered %d (%s)", name, json_string_value(json_object_get(group, "description")),
                               json_string_value(json_object_get(tc, "description")), valid, why);
            }
        }
        sd_jschema_free(s);
    }
    json_decref(file);
}

Test(jschema, the_test_suite_draft7) {
    DIR *d = opendir(SUITE);
    cr_assert(d, "%s: not found (scripts/deps.sh installs json-schema-test-suite)", SUITE);
    suite_tally_t t = {0};
    int pattern_files = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t n = strlen(de->d_name);
        if (n < 6 || strcmp(de->d_name + n - 5, ".json")) continue;
        char path[512];
        snprintf(path, sizeof(path), "%s/%s", SUITE, de->d_name);
        pattern_files += !strcmp(de->d_name, "pattern.json") || !strcmp(de->d_name, "patternProperties.json") ||
                         !strcmp(de->d_name, "multipleOf.json");
        /* refused: only a reference outside the schema (the remote and the
         * $id-relative ones) may be the reason */
        suite_file(path, JSON_ALLOW_NUL, "$ref", &t);
    }
    closedir(d);
    cr_log_info("JSON Schema Test Suite draft 7: %d groups, %d refused, %d cases, %d answered wrongly", t.groups, t.refused, t.cases,
                t.wrong);
    cr_assert_eq(t.wrong, 0);
    cr_assert_eq(pattern_files, 3, "pattern.json, patternProperties.json and multipleOf.json: %d of them run", pattern_files);
    /* the refusals are a handful of the suite, not a way around it */
    cr_assert(t.groups >= 120 && t.refused * 10 < t.groups, "%d groups, %d refused", t.groups, t.refused);
}

/* The optional files this validator answers: bignum.json (read with
 * JSON_DECODE_INT_AS_REAL: jansson refuses an integer past 64 bits
 * otherwise, and the harness's own readers do refuse such a document as
 * not JSON) and ecmascript-regex.json (format "regex", the one format
 * checked). Nothing of them is refused, nothing is left unjudged. The
 * other optional files are formats and content keywords it reads as
 * annotations (jschema.h), which the suite expects checked: not run. */
Test(jschema, the_test_suite_draft7_optional) {
    suite_tally_t t = {0};
    suite_file(SUITE "/optional/bignum.json", JSON_DECODE_INT_AS_REAL, "(none)", &t);
    suite_file(SUITE "/optional/ecmascript-regex.json", 0, "(none)", &t);
    cr_log_info("JSON Schema Test Suite draft 7, optional bignum and ecmascript-regex: %d groups, %d refused, %d cases, "
                "%d answered wrongly, %d not judged", t.groups, t.refused, t.cases, t.wrong, t.unjudged);
    cr_assert_eq(t.wrong, 0);
    cr_assert_eq(t.refused, 0);
    cr_assert(t.cases >= 10, "%d cases", t.cases);
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

/* Each schema bad[i][0] refused when compiled, its error holding bad[i][1]. */
static void expect_refused(const char *const (*bad)[2], size_t n) {
    for (size_t i = 0; i < n; i++) {
        char err[512] = "";
        sd_jschema_t *s = sd_jschema_compile(bad[i][0], strlen(bad[i][0]), err, sizeof(err));
        cr_expect_null(s, "%s compiled", bad[i][0]);
        cr_expect(strstr(err, bad[i][1]) != NULL, "%s: %s", bad[i][0], err);
        sd_jschema_free(s);
    }
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
    expect_refused(bad, sizeof(bad) / sizeof(bad[0]));
}

/* The answer for doc (JSON text) against schema (JSON text); why filled. */
static int judge(const char *schema, const char *doc, char *why, size_t whylen) {
    char err[512];
    sd_jschema_t *s = sd_jschema_compile(schema, strlen(schema), err, sizeof(err));
    cr_assert(s, "%s: %s", schema, err);
    json_error_t je;
    json_t *d = json_loads(doc, JSON_DECODE_ANY, &je);
    cr_assert(d, "%s: %s", doc, je.text);
    int v = sd_jschema_valid(s, d, why, whylen);
    json_decref(d);
    sd_jschema_free(s);
    return v;
}

/* The dialect a schema's $schema names decides what a keyword means: a
 * $ref's siblings are read from 2019-09 on and ignored by draft 7;
 * $defs, dependentRequired and dependentSchemas are checked; what the
 * newer drafts have and the harness does not check is refused by name. */
#define D2020 "\"$schema\":\"https://json-schema.org/draft/2020-12/schema\","
#define D2019 "\"$schema\":\"https://json-schema.org/draft/2019-09/schema\","
Test(jschema, the_dialect_its_schema_names) {
    char why[256];
    const char *ref = "\"$defs\":{\"s\":{\"type\":\"string\"}},\"$ref\":\"#/$defs/s\",\"maxLength\":2}";
    char *modern = sd_util_fmt("{" D2020 "%s", ref), *draft7 = sd_util_fmt("{%s", ref);
    cr_expect_eq(judge(modern, "\"abc\"", why, sizeof(why)), 0, "2020-12: maxLength beside the $ref applies");
    cr_expect(strstr(why, "maxLength"), "%s", why);
    cr_expect_eq(judge(modern, "\"ab\"", why, sizeof(why)), 1, "%s", why);
    cr_expect_eq(judge(modern, "3", why, sizeof(why)), 0, "2020-12: the $ref's own schema applies too");
    cr_expect_eq(judge(draft7, "\"abc\"", why, sizeof(why)), 1, "draft 7: a $ref's siblings are not read: %s", why);
    free(modern), free(draft7);
    const char *dep = "{" D2019 "\"dependentRequired\":{\"a\":[\"b\"]},\"dependentSchemas\":{\"c\":{\"required\":[\"d\"]}}}";
    cr_expect_eq(judge(dep, "{\"a\":1}", why, sizeof(why)), 0);
    cr_expect(strstr(why, "dependentRequired: \"a\" needs \"b\""), "%s", why);
    cr_expect_eq(judge(dep, "{\"a\":1,\"b\":2}", why, sizeof(why)), 1, "%s", why);
    cr_expect_eq(judge(dep, "{\"c\":1}", why, sizeof(why)), 0, "dependentSchemas: c needs d");
    cr_expect_eq(judge(dep, "{\"c\":1,\"d\":0}", why, sizeof(why)), 1, "%s", why);
    cr_expect_eq(judge("{" D2019 "\"items\":[{\"type\":\"string\"}],\"additionalItems\":false}", "[\"a\",1]", why, sizeof(why)), 0,
                 "2019-09 keeps draft 7's tuple items");
    const char *bad[][2] = {
        {"{" D2020 "\"prefixItems\":[{\"type\":\"string\"}]}", "keyword \"prefixItems\" is not one the harness checks under draft 2020-12"},
        {"{" D2020 "\"items\":[{\"type\":\"string\"}]}", "an array of schemas is no items of draft 2020-12"},
        {"{" D2020 "\"additionalItems\":false}", "keyword \"additionalItems\" is not one the harness checks under draft 2020-12"},
        {"{" D2019 "\"unevaluatedProperties\":false}", "keyword \"unevaluatedProperties\" is not one the harness checks under draft 2019-09"},
        {"{\"dependentRequired\":{\"a\":[\"b\"]}}", "keyword \"dependentRequired\" is not one the harness checks under draft 7 (a keyword of drafts 2019-09 and 2020-12"},
        {"{" D2019 "\"dependentRequired\":{\"a\":\"b\"}}", "at /dependentRequired: expected an object of arrays of names"},
        {"{\"$schema\":\"http://json-schema.org/draft-03/schema#\"}", "the harness checks drafts 4, 6, 7, 2019-09 and 2020-12"},
        {"{\"$schema\":\"http://json-schema.org/schema#\"}", "name one of them"},
    };
    expect_refused(bad, sizeof(bad) / sizeof(bad[0]));
}

/* A message quoting a name cut at 80 bytes in the middle of a character,
 * or bytes that are not UTF-8, is still UTF-8 (reports carry it). */
Test(jschema, messages_stay_utf8) {
    sd_buf_t k;
    sd_buf_init(&k);
    sd_buf_puts(&k, "{\"a");
    for (int i = 0; i < 60; i++) sd_buf_puts(&k, "\xc3\xa9"); /* 1 + 120 bytes: the 80th byte is inside an é */
    sd_buf_puts(&k, "\":1}");
    char err[512] = "";
    sd_jschema_t *s = sd_jschema_compile(k.data, k.len, err, sizeof(err));
    cr_expect_null(s);
    json_t *j = json_string(err);
    cr_expect_not_null(j, "the compile error is not UTF-8: %s", err);
    json_decref(j);
    char why[256] = "";
    cr_expect_eq(judge("{\"required\":[\"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
                       "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
                       "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
                       "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9x\"]}",
                       "{}", why, sizeof(why)), 0);
    j = json_string(why);
    cr_expect_not_null(j, "the validation message is not UTF-8: %s", why);
    json_decref(j);
    sd_buf_free(&k);
}

/* pattern against the string value (both as C text), through a schema */
static int judge_pattern(const char *pattern, const char *value) {
    json_t *sch = json_pack("{s:s}", "pattern", pattern), *v = json_string(value);
    char err[512], why[256];
    sd_jschema_t *s = sd_jschema_compile_json(sch, err, sizeof(err));
    cr_assert(s, "pattern %s: %s", pattern, err);
    int r = sd_jschema_valid(s, v, why, sizeof(why));
    json_decref(sch), json_decref(v);
    sd_jschema_free(s);
    return r;
}

/* Each answered wrongly by the POSIX regex of the validator before
 * (regcomp with \d rewritten): as ECMA-262 reads them now. */
Test(jschema, patterns_mean_what_ecma_262_means) {
    static const struct {
        const char *pattern, *value;
        int valid;
    } cases[] = {
        {"^[\\w-]+$", "parcel-17_a", 1}, /* the probe's id pattern: POSIX read [\w-] as \, w, - */
        {"^[\\w-]+$", "parcel 17", 0},
        {"^\\t$", "\t", 1},
        {"^\\t$", "\\t", 0},
        {"^\\n$", "\n", 1},
        {"^\\u0041$", "A", 1},
        {"^\\u0041$", "u0041", 0},
        {"^[^\\d]$", "a", 1},
        {"^[^\\d]$", "5", 0},
        {"^[\\d]+$", "2026", 1},
        {"^[\\d]+$", "d", 0},
        {"^.$", "\n", 0}, /* . is no line terminator */
        {"^.$", "\r", 0},
        {"^.$", "\xe2\x80\xa8", 0},
        {"^.$", "\xc3\xa9", 1}, /* one code point */
        {"^.$", "\xf0\x9f\x98\x80", 1},
        {"^.$", "\x0b", 1}, /* PCRE2's newline conventions would refuse VT or NEL */
        {"^.$", "\xc2\x85", 1},
        {"^abc$", "abc\n", 0}, /* $ only at the end */
        {"^abc$", "abc", 1},
        {"^\\d$", "\xdf\x80", 0}, /* NKO DIGIT ZERO: \d is ASCII */
        {"^\\D$", "\xdf\x80", 1},
        {"^\\w$", "\xc3\xa9", 0},
        {"^\\W$", "\xc3\xa9", 1},
        {"^\\s$", "\xc2\xa0", 1}, /* ECMA white space: NBSP, U+FEFF, U+2003, U+2028 */
        {"^\\s$", "\xef\xbb\xbf", 1},
        {"^\\s$", "\xe2\x80\x83", 1},
        {"^\\s$", "\xe2\x80\xa8", 1},
        {"^\\s$", "\xc2\x85", 0}, /* NEL is not */
        {"^\\S$", "\xc2\xa0", 0},
        {"^[\\s]$", "\xef\xbb\xbf", 1},
        {"^\\v$", "\x0b", 1}, /* \v is VT alone */
        {"^\\v$", "\n", 0},
        {"^\\cC$", "\x03", 1},
        {"^\\cc$", "\x03", 1},
        {"^\\0$", "\\0", 0},
        {"^\\u{1F600}$", "\xf0\x9f\x98\x80", 1},
        {"^\\uD83D\\uDE00$", "\xf0\x9f\x98\x80", 1},
        {"^\\p{Letter}cole$", "\xc3\xa9" "cole", 1},
        {"^\\p{digit}+$", "\xe0\xa7\xaa\xe0\xa7\xa8", 1}, /* BENGALI DIGITS FOUR TWO */
        {"^\\p{digit}+$", "-%#", 0},
        {"^\\p{Script=Greek}$", "\xce\xb1", 1},
        {"^\\P{L}$", "1", 1},
        {"a[]", "a", 0}, /* an empty class matches nothing */
        {"^[^]$", "\n", 1}, /* and its negation anything */
        {"^(?:(a)|b)\\1$", "b", 1}, /* a reference to an unset group matches empty */
        {"^(a){1}(b)?(c){0,1}(d){01}\\1\\2\\3\\4$", "abcdabcd", 1}, /* quantifiers that repeat no group */
        {"^(?<y>\\d{4})-\\k<y>$", "2026-2026", 1},
        {"^(?<$d>a)\\k<$d>$", "aa", 1}, /* names of any identifier, refused until PCRE2's rules were the harness's */
        {"^(?<\xc3\xa9t\xc3\xa9>a)\\k<\\u00e9t\\u{E9}>$", "aa", 1},
        {"^(?<\\u{1D49C}>b)\\k<\xf0\x9d\x92\x9c>$", "bb", 1},
        {"^(?<a_name_longer_than_the_32_characters_pcre2_takes>x)$", "x", 1},
        {"^[a-z]{2,3}?$", "abc", 1},
        {"^(?=a)ab(?!c)$", "ab", 1},
        {"(?<=\\$)\\d+", "$42", 1},
        {"^[[]$", "[", 1}, /* [ inside a class is itself */
        {"^\\x41\\.$", "A.", 1},
        {"^(?:^)*a\\x0b+$", "a\x0b", 1}, /* a group of an assertion may repeat; \x0b is no \b */
        {"^[\\-]\\/$", "-/", 1}, /* identity escapes the u flag keeps */
        {"^[a\\S]$", "b", 1},     /* \S inside a class */
        {"^[\\S]$", "\xe2\x80\x83", 0},
        {"^[^\\p{M}\\W]$", "\xf0\x9f\x98\x80", 0}, /* PCRE2 10.42 matched: its \W in a negated class beside \p */
        {"^[^\\p{M}\\W]$", "a", 1},
        {"^[^\\p{M}\\D]$", "\xd9\xa3", 0},
        {"^[]?$", "", 1}, /* PCRE2 10.42 read a quantified empty class as matching nothing */
        {"^x[]*$", "x", 1},
        {"^[]{0}a$", "a", 1},
        {"^[::]{2}$", "::", 1}, /* no POSIX class: PCRE2 refused it as one */
        {"^[[:][:]$", "::", 1},
        {"^[\\b]$", "\b", 1}, /* \b in a class is a backspace */
        {"^\\P{P}+\\P{N}$", "ab", 1}, /* PCRE2 10.42 made \P{P}+ possessive before \P{N}: no match */
        {"\\P{punct}{3,}\\P{N}", "\xe2\x80\xa8\xe2\x80\xa8\xe2\x80\xa8\xf0\x9f\x98\x80", 1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        cr_expect_eq(judge_pattern(cases[i].pattern, cases[i].value), cases[i].valid ? SD_JSCHEMA_VALID : SD_JSCHEMA_INVALID,
                     "pattern %s against \"%s\": expected %s", cases[i].pattern, cases[i].value, cases[i].valid ? "valid" : "invalid");
    /* patternProperties reads the same way */
    char why[256];
    const char *pp = "{\"patternProperties\":{\"^[\\\\w-]+$\":{\"type\":\"integer\"}},\"additionalProperties\":false}";
    cr_expect_eq(judge(pp, "{\"parcel-17\":1}", why, sizeof(why)), SD_JSCHEMA_VALID, "%s", why);
    cr_expect_eq(judge(pp, "{\"parcel 17\":1}", why, sizeof(why)), SD_JSCHEMA_INVALID);
}

/* Refused when compiled, by name: what ECMA-262 does not have (PCRE2
 * would have read it, POSIX read some), and what it has that the harness
 * does not follow. The pattern is named with the reason. */
Test(jschema, patterns_ecma_262_lacks_are_refused_by_name) {
    static const char *const bad[][2] = {
        {"^[[:alpha:]]+$", "a POSIX class"},
        {"^a++$", "possessive quantifier"},
        {"^a{2}+$", "possessive quantifier"},
        {"^(?>a|ab)c$", "atomic group"},
        {"\\Aabc", "\\A is no ECMA-262 escape"},
        {"abc\\Z", "\\Z is no ECMA-262 escape"},
        {"abc\\z", "\\z is no ECMA-262 escape"},
        {"(?i)abc", "inline flags"},
        {"(?s:a.b)", "inline flags"},
        {"^(a|\\((?R)\\))$", "recursion"},
        {"^(a)(?1)$", "recursion"},
        {"(*UTF)a", "(* (a PCRE verb"},
        {"(?P<n>a)", "Python or Perl named group"},
        {"(?|(a)|(b))", "branch reset"},
        {"(?(1)a|b)", "conditional"},
        {"(?#note)a", "a comment"},
        {"\\Qa.b\\E", "\\Q is no ECMA-262 escape"},
        {"\\h", "\\h is no ECMA-262 escape"},
        {"\\R", "\\R is no ECMA-262 escape"},
        {"\\e", "\\e is no ECMA-262 escape"},
        {"\\C", "\\C is no ECMA-262 escape"},
        {"a{,3}", "starts no quantifier"},
        {"a{x}", "starts no quantifier"},
        {"a}", "lone }"},
        {"\\c1", "\\c is not followed by a letter"},
        {"\\x4", "\\x is not followed by 2 hex digits"},
        {"\\u12", "\\u is not followed by 4 hex digits"},
        {"\\01", "octal escape"},
        {"(", "is not an ECMA-262 expression"},
        {"[a", "a [ without its ]"},
        {"\\p{Xan}", "is not an ECMA-262 expression: \\p{Xan}: no Unicode property or value of that name"}, /* PCRE2 has it, ECMA not */
        {"\\p{Alphabetic}", "past what the harness checks: \\p{Alphabetic}: a binary property"},
        {"\\P{gc=Foo}", "no Unicode property or value of that name"},
        {"(?<=a+)b", "past what the harness checks"}, /* ECMA has it: a lookbehind of any length */
        {"(a)\\10", "backreference above \\9"},
        {"\\uD800", "lone surrogate"},
        {"\\p{Script=Kawi}", "a script newer than PCRE2's Unicode tables"}, /* was "not an ECMA-262 expression" */
        {"\\P{sc=Tols}", "past what the harness checks"},
        {"\\p{Script=Foo}", "is not an ECMA-262 expression: \\p{Script=Foo}: no script of that name"},
        {"^(?:(a)|b)*\\1$", "\\1 refers to a group inside a quantifier that repeats it"}, /* PCRE2 answered "ab" wrongly */
        {"(\\x0b{2}\\1){3}", "\\1 refers to a group inside a quantifier that repeats it"},
        {"(?:(?<x>a)|b){2,}\\k<x>", "\\k<x> refers to a group inside a quantifier that repeats it"},
        {"^\\-$", "\\- is no ECMA-262 escape"}, /* with the u flag, \ before - is one in a class only */
        {"a\\&b", "\\& is no ECMA-262 escape"},
        {"[\\@]", "\\@ is no ECMA-262 escape"},
        {"\\\xc3\xa9", "\\ before U+00E9 is no ECMA-262 escape"},
        {"[\\s-z]", "a range from or to a class escape"}, /* PCRE2 read the ranges \s stands for, then U+FEFF-z */
        {"[a-\\d]", "a range from or to a class escape"},
        {"[z-a]", "a range U+007A-U+0061 out of order"},
        {"(?\xc3\xa9)", "(? before a character no group opens with"},
        {"^(?=a)*b", "a quantifier * after an assertion"}, /* PCRE2 repeats a lookahead, the u flag does not */
        {"(?<!a){2}b", "a quantifier {2} after an assertion"},
        {"a\\b?", "a quantifier ? after an assertion"},
        {"a{2}{3}", "a quantifier {3} with nothing before it to repeat"},
        {"a)", "a ) without its ("},
        {"(?<1a>b)", "a group name with U+0031 first"},
        {"(?<a-b>c)", "a group name with U+002D in it"},
        {"(?<\\ud835>a)", "no \\u escape of a character"}, /* the message was "(?\xc3 (inline flags)": not UTF-8 */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        json_t *sch = json_pack("{s:s}", "pattern", bad[i][0]);
        char err[512] = "";
        sd_jschema_t *s = sd_jschema_compile_json(sch, err, sizeof(err));
        cr_expect_null(s, "pattern %s compiled", bad[i][0]);
        cr_expect(strstr(err, bad[i][1]) != NULL, "pattern %s: expected \"%s\" in: %s", bad[i][0], bad[i][1], err);
        char named[128];
        snprintf(named, sizeof(named), "pattern \"%s\"", bad[i][0]);
        cr_expect(strstr(err, named) != NULL, "pattern %s: not named in: %s", bad[i][0], err);
        json_t *utf8 = json_string(err);
        cr_expect(utf8 != NULL, "pattern %s: the message is not UTF-8: %s", bad[i][0], err);
        json_decref(utf8);
        sd_jschema_free(s);
        json_decref(sch);
    }
    /* a pattern that is not UTF-8 is refused before its bytes can reach a
     * message, and a message cut short by its buffer stays UTF-8 */
    sd_ecmare_refusal_t kind;
    char small[64];
    cr_expect_null(sd_ecmare_compile("\\p{a\xff}", 6, &kind, small, sizeof(small)));
    cr_expect(kind == SD_ECMARE_NOT_ECMA && !strcmp(small, "not UTF-8 at byte 4"), "%s", small);
    cr_expect_null(sd_ecmare_compile("\\p{\xc3\xa9}", 6, &kind, small, 5));
    cr_expect_str_eq(small, "\\p{", "the \\xc3 of a cut \\xc3\\xa9 is dropped");
    cr_expect_null(sd_ecmare_compile("\\p{\xc3\xa9}", 6, &kind, small, 6));
    cr_expect_str_eq(small, "\\p{\xc3\xa9", "a whole \\xc3\\xa9 at the cut is kept");
    /* in patternProperties too, with its place */
    char err[512] = "";
    const char *pp = "{\"properties\":{\"a\":{\"patternProperties\":{\"^x(?i)$\":true}}}}";
    cr_expect_null(sd_jschema_compile(pp, strlen(pp), err, sizeof(err)));
    cr_expect(strstr(err, "at /properties/a/patternProperties: pattern \"^x(?i)$\" is not an ECMA-262 expression") != NULL, "%s", err);
}

/* No pattern can take the harness's memory or time: nested bounded
 * repeats (glibc's regcomp ate all memory on the first of them) are
 * refused at once, an over-long pattern too; a match that backtracks
 * without end stops at its step bound, neither a pass nor a fail. */
Test(jschema, patterns_are_bounded) {
    static const char *const big[] = {
        "(((a{0,99}){0,99}){0,99}){0,99}", /* 33 bytes */
        "((((((((((a{2,9}){2,9}){2,9}){2,9}){2,9}){2,9}){2,9}){2,9}){2,9}){2,9})",
        "((a{0,1000}){0,1000}){0,1000}",
    };
    for (size_t i = 0; i < sizeof(big) / sizeof(big[0]); i++) {
        clock_t t0 = clock();
        json_t *sch = json_pack("{s:s}", "pattern", big[i]);
        char err[512] = "";
        sd_jschema_t *s = sd_jschema_compile_json(sch, err, sizeof(err));
        cr_expect_null(s, "pattern %s compiled", big[i]);
        cr_expect(strstr(err, "past what the harness checks") != NULL, "%s", err);
        cr_expect((double)(clock() - t0) / CLOCKS_PER_SEC < 1.0, "pattern %s: compiling took over a second", big[i]);
        sd_jschema_free(s);
        json_decref(sch);
    }
    char *longp = malloc(5000);
    memset(longp, 'a', 4999);
    longp[4999] = 0;
    json_t *sch = json_pack("{s:s}", "pattern", longp);
    char err[512] = "";
    cr_expect_null(sd_jschema_compile_json(sch, err, sizeof(err)));
    cr_expect(strstr(err, "4999 bytes, more than the 4096") != NULL, "%s", err);
    json_decref(sch);
    free(longp);
    /* catastrophic backtracking: could not judge, in well under a second */
    char why[256] = "";
    clock_t t0 = clock();
    const char *doc = "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!\"";
    cr_expect_eq(judge("{\"pattern\":\"^(a|aa)+$\"}", doc, why, sizeof(why)), SD_JSCHEMA_UNJUDGED, "%s", why);
    cr_expect(strstr(why, "/: could not judge: pattern \"^(a|aa)+$\": the match took more than") != NULL, "%s", why);
    /* and no not turns it into a pass, no anyOf into a fail */
    cr_expect_eq(judge("{\"not\":{\"pattern\":\"^(a|aa)+$\"}}", doc, why, sizeof(why)), SD_JSCHEMA_UNJUDGED, "%s", why);
    cr_expect_eq(judge("{\"anyOf\":[{\"pattern\":\"^(a|aa)+$\"},{\"type\":\"number\"}]}", doc, why, sizeof(why)), SD_JSCHEMA_UNJUDGED,
                 "%s", why);
    cr_expect((double)(clock() - t0) / CLOCKS_PER_SEC < 2.0, "the bounded matches took over 2 s");
}

/* multipleOf on the numbers' decimal digits: no tolerance that grows with
 * the quotient (above about 5e8 every number was a multiple before). */
Test(jschema, multiple_of_is_exact) {
    static const struct {
        const char *divisor, *value;
        int valid;
    } cases[] = {
        {"0.01", "12345678.123", 0}, /* the probe's: valid before */
        {"2.0", "2000000001", 0},     /* the probe's: valid before */
        {"2.0", "2000000000", 1},
        {"0.01", "12345678.12", 1},
        {"0.01", "123456789012345.67", 1}, /* 17 digits, each read back */
        {"0.1", "0.3", 1},
        {"0.1", "0.7", 1},
        {"0.1", "1.1", 1},
        {"0.1", "0.35", 0},
        {"0.0001", "0.0075", 1},
        {"0.0001", "0.00751", 0},
        {"1.5", "-4.5", 1},
        {"1.5", "-35", 0},
        {"1.5", "0", 1},
        {"3", "1e308", 0}, /* 10^308 is 1 modulo 3 */
        {"2", "1e308", 1},
        {"1e-308", "1e308", 1},
        {"1e307", "1e308", 1},
        {"7e-300", "1.4e-299", 1},
        {"7e-300", "1.5e-299", 0},
        {"1e308", "1e307", 0},
        {"7", "9223372036854775807", 1}, /* 2^63 - 1 = 7 * 1317624576693539401 */
        {"3", "9223372036854775807", 0},
        {"2", "-9223372036854775808", 1},
        {"2", "9007199254740993", 0}, /* 2^53 + 1: odd, whatever a double makes of it */
        {"1e19", "1e20", 1},
        {"3", "1e20", 0},
        {"0.1", "1e20", 1},
        {"0.3", "1e-5", 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char schema[128], why[256];
        snprintf(schema, sizeof(schema), "{\"multipleOf\":%s}", cases[i].divisor);
        cr_expect_eq(judge(schema, cases[i].value, why, sizeof(why)), cases[i].valid ? SD_JSCHEMA_VALID : SD_JSCHEMA_INVALID,
                     "%s multipleOf %s: expected %s (%s)", cases[i].value, cases[i].divisor, cases[i].valid ? "valid" : "invalid", why);
    }
    char why[256];
    cr_expect_eq(judge("{\"multipleOf\":0.01}", "12345678.123", why, sizeof(why)), SD_JSCHEMA_INVALID);
    cr_expect_str_eq(why, "/: multipleOf: 12345678.123 is no multiple of 0.01");
}

/* A bound that runs out inside not, anyOf, oneOf or if is no answer: the
 * probe's schema accepted "x" through "not":{"type":"string"} once the
 * checks had run out in an anyOf before it. */
Test(jschema, a_bound_run_out_is_no_answer) {
    static const char loop[] = "\"definitions\":{\"loop\":{\"anyOf\":[{\"$ref\":\"#/definitions/loop\"},{\"$ref\":\"#/definitions/loop\"}]}}";
    static const char *const schemas[] = {
        "{\"anyOf\":[{\"$ref\":\"#/definitions/loop\"},true],\"not\":{\"type\":\"string\"},%s}",
        "{\"not\":{\"$ref\":\"#/definitions/loop\"},%s}",
        "{\"oneOf\":[{\"$ref\":\"#/definitions/loop\"},true],%s}",
        "{\"if\":{\"$ref\":\"#/definitions/loop\"},\"then\":true,\"else\":false,%s}",
        "{\"anyOf\":[{\"$ref\":\"#/definitions/loop\"},{\"type\":\"string\"}],%s}",
        "{\"allOf\":[{\"$ref\":\"#/definitions/loop\"}],%s}",
        "{\"properties\":{\"a\":{\"not\":{\"$ref\":\"#/definitions/loop\"}}},%s}",
    };
    for (size_t i = 0; i < sizeof(schemas) / sizeof(schemas[0]); i++) {
        char schema[512], why[256] = "";
        snprintf(schema, sizeof(schema), schemas[i], loop);
        int v = judge(schema, i == 6 ? "{\"a\":\"x\"}" : "\"x\"", why, sizeof(why));
        cr_expect_eq(v, SD_JSCHEMA_UNJUDGED, "%s: answered %d (%s)", schema, v, why);
        cr_expect(strstr(why, "could not judge: ") != NULL && (strstr(why, "256 deep") || strstr(why, "1,000,000 checks")), "%s: %s",
                  schema, why);
    }
    /* the place is said */
    char why[256] = "";
    char schema[512];
    snprintf(schema, sizeof(schema), schemas[6], loop);
    judge(schema, "{\"a\":\"x\"}", why, sizeof(why));
    cr_expect(!strncmp(why, "/a: could not judge: ", 21), "%s", why);
}

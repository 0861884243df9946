/* test_report.c - the escaping every report relies on. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

typedef void (*escape_fn)(sd_buf_t *, const char *);

static char *esc(escape_fn f, const char *s) {
    sd_buf_t b;
    sd_buf_init(&b);
    f(&b, s);
    char *out = sd_buf_steal(&b);
    return out ? out : sd_util_strdup("");
}

Test(report, xml_escape) {
    char *s = esc(sd_report_xml_escape, "<a href=\"x\">&'</a>");
    cr_assert_str_eq(s, "&lt;a href=&quot;x&quot;&gt;&amp;&apos;&lt;/a&gt;");
    free(s);
}

Test(report, markdown_text_cannot_open_markup) {
    char *s = esc(sd_report_md_escape, "<script>*a*|_b_ `c` [d](e)\nf");
    cr_assert_str_eq(s, "&lt;script&gt;\\*a\\*\\|\\_b\\_ \\`c\\` \\[d\\](e) f");
    free(s);
}

Test(report, markdown_code_span_fence_and_pipes) {
    struct { const char *in, *out; } cases[] = {
        {"plain", "`plain`"},
        {"a|b", "`a\\|b`"},                  /* a table cell ends at a bare pipe */
        {"x`y", "``x`y``"},                  /* fence longer than any backtick run inside */
        {"`start", "`` `start ``"},          /* padded when it starts or ends with a backtick */
        {"a``b", "```a``b```"},
        {"two\nlines", "`two lines`"},
        {"", ""}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *s = esc(sd_report_md_code, cases[i].in);
        cr_assert_str_eq(s, cases[i].out, "%s -> %s", cases[i].in, s);
        free(s);
    }
}

/* every report names a verdict the same way: an error is ERROR, never INCONCLUSIVE */
Test(report, verdict_words) {
    cr_assert_str_eq(sd_report_verdict_word("pass"), "PASS");
    cr_assert_str_eq(sd_report_verdict_word("fail"), "FAIL");
    cr_assert_str_eq(sd_report_verdict_word("inconclusive"), "INCONCLUSIVE");
    cr_assert_str_eq(sd_report_verdict_word("error"), "ERROR");
    cr_assert_str_eq(sd_report_verdict_word(""), "ERROR", "no verdict recorded is no pass");
    cr_assert_str_eq(sd_report_verdict_class("error"), "error");
    cr_assert_str_eq(sd_report_verdict_class(NULL), "error");
}

/* text from a pipeline or a sink, with terminal escapes in it: shown as \xHH
 * in every kind of report, valid UTF-8 kept */
Test(report, control_characters_never_reach_a_report) {
    const char *evil = "\x1b]0;pwned\x07\x1b[2J \xc2\x9b" "31m \xe2\x80\xae" "rtl \x7f caf\xc3\xa9";
    escape_fn fns[] = {sd_report_md_escape, sd_report_md_code, sd_report_xml_escape};
    for (size_t i = 0; i < 3; i++) {
        char *s = esc(fns[i], evil);
        for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
            cr_assert(*p >= 0x20 && *p != 0x7f, "report %zu carries byte 0x%02x: %s", i, *p, s);
            cr_assert(!(p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f), "report %zu carries a C1 control: %s", i, s);
            cr_assert(!(p[0] == 0xe2 && p[1] == 0x80 && p[2] == 0xae), "report %zu carries a bidirectional override: %s", i, s);
        }
        cr_assert(strstr(s, "x1B") && strstr(s, "pwned") && strstr(s, "caf\xc3\xa9"), "report %zu: %s", i, s);
        free(s);
    }
    char *t = sd_util_safe_text("line one\r\nline two\x1b[K", 1);
    cr_assert_str_eq(t, "line one\\x0D\nline two\\x1B[K");
    free(t);
    t = sd_util_safe_text("a\\b\tc", 0);
    cr_assert_str_eq(t, "a\\b\tc", "a backslash stays one, a tab stays");
    free(t);
}

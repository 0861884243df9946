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

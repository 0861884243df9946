/* ecmare.h - ECMA-262 regular expressions (the dialect JSON Schema's
 * `pattern` and `patternProperties` are written in) matched with PCRE2.
 *
 * A pattern is read as ECMA-262 with the `u` flag and no other flag: code
 * points, `.` any code point but \n \r U+2028 U+2029, `^` and `$` only at
 * the ends of the whole string, \d \w \b ASCII only, \s the ECMA white
 * space and line terminators (Unicode's Z category, \t \n \v \f \r and
 * U+FEFF), \uXXXX (surrogate pairs joined) and \u{X...}, \cX, \p{...} of a
 * General_Category value or Script=/Script_Extensions=. It is checked and
 * rewritten token by token before PCRE2 sees it, so that what PCRE2 would
 * read differently is either spelt out or refused by name: a construct
 * ECMA-262 does not have (POSIX classes, possessive quantifiers, atomic
 * groups, inline flags, recursion, conditionals, \A \Z \z \h \R \Q ...,
 * (*VERBS), identity escapes the u flag forbids, a quantified assertion)
 * makes the pattern invalid; one ECMA-262 has that the harness does not
 * follow (a lookbehind of varying length, binary Unicode properties, \10
 * and above, a backreference into a group a quantifier repeats, a script
 * newer than PCRE2's Unicode tables) is refused as unsupported.
 *
 * Bounds: a pattern of at most SD_ECMARE_MAX_LEN bytes, parentheses nested
 * 64 deep, 8 MiB for compiling it; a match stops after 1,000,000
 * backtracking steps, 10,000 nested ones or 16 MiB of PCRE2's heap, and
 * then says it could not answer instead of answering. */
#ifndef SD_ECMARE_H
#define SD_ECMARE_H

#include <stddef.h>

#define SD_ECMARE_MAX_LEN 4096

typedef struct sd_ecmare_s sd_ecmare_t;

/* How a pattern failed to compile. */
typedef enum {
    SD_ECMARE_NOT_ECMA = 1,    /* not an ECMA-262 expression (or not one with the u flag) */
    SD_ECMARE_UNSUPPORTED = 2, /* ECMA-262, but past what the harness follows or its bounds */
} sd_ecmare_refusal_t;

/* src (len bytes of UTF-8) compiled; NULL with err saying why (without the
 * pattern itself: the caller names it) and *refusal, when not NULL, which
 * kind of refusal it is. */
sd_ecmare_t *sd_ecmare_compile(const char *src, size_t len, sd_ecmare_refusal_t *refusal, char *err, size_t errlen);
void sd_ecmare_free(sd_ecmare_t *re);

/* 1 when the pattern matches somewhere in s (len bytes of UTF-8), 0 when
 * it does not, -1 with why saying which bound stopped it (or what else
 * failed) when it could not tell. Safe from several threads at once. */
int sd_ecmare_match(const sd_ecmare_t *re, const char *s, size_t len, char *why, size_t whylen);

#endif

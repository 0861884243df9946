/* jsonfast.h - a sink row's id (and write time) without a parser, when the
 * row is plain: a flat JSON object of ASCII strings without escapes, plain
 * numbers, true, false and null. Its answer is the full parser's
 * (sd_jsonscan_id_time) on every row it answers for; on any other row it
 * says SD_JSONFAST_UNSURE and the caller asks the full parser. */
#ifndef SD_JSONFAST_H
#define SD_JSONFAST_H

#include <stddef.h>
#include <stdint.h>

#define SD_JSONFAST_UNSURE (-2)

/* The shape of the last plain row a reader saw (sd_jsonfast_line): its
 * bytes but for its string and number values. Most sinks write every row
 * in one shape (the same keys, in the same order, the same spacing), and a
 * row that has it is read by comparing those bytes and finding where each
 * value ends, instead of walking its tokens; any other row is walked and
 * gives the next shape. One reader's, for one id and time field; zeroed
 * to start (no shape yet). */
#define SD_JSONFAST_SLOTS 32
typedef struct {
    const char *field, *time_field; /* the fields it answers for */
    int nslots;                      /* values; -1 or a zeroed struct with no field: no shape */
    int id_slot, t_slot;             /* the value holding the id, the time; -1 none (or true, false, null) */
    uint8_t number[SD_JSONFAST_SLOTS];  /* a value is a number (else a string) */
    uint16_t at[SD_JSONFAST_SLOTS + 1], n[SD_JSONFAST_SLOTS + 1]; /* the bytes before each value, and after the last, in text */
    uint64_t head[SD_JSONFAST_SLOTS + 1], tail[SD_JSONFAST_SLOTS + 1]; /* the first and last 8 of each (4 and 4 under 8 bytes) */
    int64_t hits;                    /* rows read by it (for the tests) */
    char text[1024];
} sd_jsonfast_shape_t;

/* As sd_jsonscan_id_time (jsonscan.h), or SD_JSONFAST_UNSURE. */
int sd_jsonfast_id_time(const char *json, size_t len, const char *field, char *out, size_t outlen, const char *time_field,
                        int64_t *t_ms, int (*parse_time)(const char *, int64_t *));

/* The same for the line at p, whose end is found on the way: the bytes up
 * to the first newline within [p, p + avail) (never read past), *len the
 * row's (a CR before the newline not counted, 0 for an empty line, which
 * gives -1) and *used the line's, its newline included. SD_JSONFAST_UNSURE
 * when the row is not plain, or no newline comes within avail or 1,023
 * bytes: the caller finds the line's end itself and asks the full parser
 * (*len and *used are not to be read then). With shape (NULL: none), a
 * row of the shape last seen is read by that shape, and a plain row of
 * another becomes the shape. */
int sd_jsonfast_line(sd_jsonfast_shape_t *shape, const char *p, size_t avail, size_t *len, size_t *used, const char *field, char *out, size_t outlen,
                     const char *time_field, int64_t *t_ms, int (*parse_time)(const char *, int64_t *));

#endif

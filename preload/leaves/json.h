/* json.h — appending JSON text to a fixed buffer that never overflows. An append that does not
 * fit writes nothing and marks the buffer full (later appends are ignored); callers that build
 * several items check jb_full() and go back to the last whole item with jb_len()/jb_rewind(). */
#ifndef PROFLINK_JSON_H
#define PROFLINK_JSON_H

#include <stddef.h>
#include <stdint.h>

struct jbuf {
    char *p;
    size_t len, cap;
    int full; /* an append did not fit (nothing of it was written) */
};

void jb_init(struct jbuf *b, char *p, size_t cap);
static inline size_t jb_len(const struct jbuf *b) { return b->len; }
static inline int jb_full(const struct jbuf *b) { return b->full; }
/* Back to an earlier length; clears the full mark. */
void jb_rewind(struct jbuf *b, size_t len);

void jb_raw(struct jbuf *b, const char *s, size_t n);
void jb_lit(struct jbuf *b, const char *s); /* NUL-terminated, written as is */
void jb_u64(struct jbuf *b, uint64_t v);
/* "<2n lowercase hex digits>" with the quotes. */
void jb_hex(struct jbuf *b, const uint8_t *bytes, size_t n);
/* A quoted JSON string holding s[0..n): quotes, backslashes and control characters escaped,
 * invalid UTF-8 replaced by U+FFFD, so the output is always valid JSON in valid UTF-8. When
 * the whole string does not fit in the room left minus `reserve` bytes, it is cut at a
 * character boundary (the closing quote always fits if the opening one did). */
void jb_string(struct jbuf *b, const char *s, size_t n, size_t reserve);

#endif

/* utf8.h — UTF-8 well-formedness, as strict as Go's decoder (the profiler's language), which
 * refuses a whole protobuf payload over one bad string field. Pure functions. */
#ifndef PROFLINK_UTF8_H
#define PROFLINK_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Length of the well-formed sequence starting at s (n > 0 bytes available), 0 if there is
 * none: overlong forms, surrogates and values past U+10FFFF are rejected. */
size_t utf8_seq(const uint8_t *s, size_t n);

/* 1 when the n bytes at s are well-formed UTF-8 (n = 0 included). */
int utf8_valid(const char *s, size_t n);

/* Replaces every byte that is not part of a well-formed sequence with '?', in place (same
 * length, so it can be done on bytes already encoded). Returns how many were replaced. */
unsigned utf8_sanitize(uint8_t *s, size_t n);

/* The longest prefix of the n bytes at s that is at most max bytes and does not end inside a
 * multi-byte sequence (cut where the next byte is not a continuation byte). */
size_t utf8_prefix(const char *s, size_t n, size_t max);

/* Cuts the NUL-terminated s to utf8_prefix(s, strlen(s), max) bytes. */
void utf8_truncate(char *s, size_t max);

#endif

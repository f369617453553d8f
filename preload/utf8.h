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

#endif

/* text.h — building short strings without the stdio formatter. A served start formats three
 * strings (the socket's name and directory, the default service name); snprintf's formatter
 * alone is two pages of libc's text that a start would otherwise fault in, for a few bytes of
 * output. Each function writes at most cap bytes including the NUL (cap > 0) and returns the
 * length the whole text would have, as snprintf does, so a caller tells truncation the same way. */
#ifndef PROFLINK_TEXT_H
#define PROFLINK_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Appends n bytes of s at dst[*len], keeping dst NUL-terminated; *len grows by n even when
 * the bytes do not fit. */
static inline void text_put(char *dst, size_t cap, size_t *len, const char *s, size_t n)
{
    if (*len < cap - 1) {
        size_t room = cap - 1 - *len, k = n < room ? n : room;
        memcpy(dst + *len, s, k);
        dst[*len + k] = 0;
    }
    *len += n;
}

static inline void text_put_str(char *dst, size_t cap, size_t *len, const char *s)
{
    text_put(dst, cap, len, s, strlen(s));
}

static inline void text_put_uint(char *dst, size_t cap, size_t *len, uint64_t v)
{
    char digits[20];
    size_t n = 0;
    do
        digits[sizeof digits - ++n] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    text_put(dst, cap, len, digits + sizeof digits - n, n);
}

/* Eight lowercase hex digits, zero-padded (printf's %08x). */
static inline void text_put_hex32(char *dst, size_t cap, size_t *len, uint32_t v)
{
    char hex[8];
    for (int i = 7; i >= 0; i--, v >>= 4)
        hex[i] = "0123456789abcdef"[v & 15];
    text_put(dst, cap, len, hex, sizeof hex);
}

/* snprintf(dst, cap, "%s", s) */
static inline size_t text_copy(char *dst, size_t cap, const char *s)
{
    size_t len = 0;
    dst[0] = 0;
    text_put_str(dst, cap, &len, s);
    return len;
}

#endif

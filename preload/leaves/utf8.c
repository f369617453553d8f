/* utf8.c — see utf8.h. */
#include "utf8.h"

#include <string.h>

size_t utf8_seq(const uint8_t *s, size_t n)
{
    uint8_t c = s[0];
    size_t len;
    uint32_t cp, min;
    if (c < 0x80)
        return 1;
    if ((c & 0xe0) == 0xc0)
        len = 2, cp = c & 0x1fu, min = 0x80;
    else if ((c & 0xf0) == 0xe0)
        len = 3, cp = c & 0x0fu, min = 0x800;
    else if ((c & 0xf8) == 0xf0)
        len = 4, cp = c & 0x07u, min = 0x10000;
    else
        return 0;
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3fu);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

int utf8_valid(const char *s, size_t n)
{
    const uint8_t *p = (const uint8_t *)s;
    for (size_t i = 0, k; i < n; i += k) {
        if (p[i] < 0x80) { /* ASCII, the common case on the attribute hot path */
            k = 1;
            continue;
        }
        if (!(k = utf8_seq(p + i, n - i)))
            return 0;
    }
    return 1;
}

unsigned utf8_sanitize(uint8_t *s, size_t n)
{
    unsigned bad = 0;
    for (size_t i = 0; i < n;) {
        size_t k = utf8_seq(s + i, n - i);
        if (k) {
            i += k;
        } else {
            s[i++] = '?';
            bad++;
        }
    }
    return bad;
}

size_t utf8_prefix(const char *s, size_t n, size_t max)
{
    if (n <= max)
        return n;
    /* Step back over continuation bytes (10xxxxxx) so that the cut lands before a lead byte. */
    while (max > 0 && ((unsigned char)s[max] & 0xc0) == 0x80)
        max--;
    return max;
}

void utf8_truncate(char *s, size_t max) { s[utf8_prefix(s, strlen(s), max)] = 0; }

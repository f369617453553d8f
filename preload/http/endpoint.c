/* endpoint.c — see endpoint.h. */
#include "endpoint.h"

#include <string.h>

static const char methods[][8] = {"GET",     "HEAD",    "POST",  "PUT",  "DELETE",
                                  "CONNECT", "OPTIONS", "TRACE", "PATCH"};

const char *endpoint_method(const uint8_t *m, size_t n)
{
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
        if (strlen(methods[i]) == n && memcmp(methods[i], m, n) == 0)
            return methods[i];
    return "_OTHER";
}

static int is_digit(uint8_t c) { return c >= '0' && c <= '9'; }

static int is_hex(uint8_t c)
{
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* 8-4-4-4-12 hex digits */
static int is_uuid(const uint8_t *s, size_t n)
{
    if (n != 36)
        return 0;
    for (size_t i = 0; i < n; i++) {
        int dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? s[i] != '-' : !is_hex(s[i]))
            return 0;
    }
    return 1;
}

static int is_id(const uint8_t *s, size_t n)
{
    if (n == 0)
        return 0;
    size_t digits = 0, hex = 0;
    for (size_t i = 0; i < n; i++) {
        digits += is_digit(s[i]);
        hex += is_hex(s[i]);
    }
    if (digits == n)
        return 1;
    if (hex == n && n >= ENDPOINT_HEX_MIN && digits > 0)
        return 1;
    return is_uuid(s, n);
}

size_t endpoint_template(const uint8_t *t, size_t n, char *out)
{
    static const char cut_mark[] = "/...";
    if (n == 1 && t[0] == '*') {
        memcpy(out, "*", 2);
        return 1;
    }
    /* absolute form: the path starts after "scheme://authority" */
    const uint8_t *scheme_end = n && t[0] != '/' ? memchr(t, ':', n) : NULL;
    if (scheme_end && (size_t)(scheme_end - t) + 2 < n && scheme_end[1] == '/' &&
        scheme_end[2] == '/') {
        const uint8_t *auth = scheme_end + 3;
        const uint8_t *path = memchr(auth, '/', n - (size_t)(auth - t));
        n = path ? n - (size_t)(path - t) : 0;
        t = path;
    }
    size_t end = 0;
    while (end < n && t[end] != '?' && t[end] != '#')
        end++;
    size_t len = 0;
    if (end == 0 || t[0] != '/')
        out[len++] = '/';
    for (size_t i = 0; i < end;) {
        if (t[i] == '/') {
            i++;
            if (len + 1 > ENDPOINT_TEMPLATE_MAX - (sizeof cut_mark - 1))
                goto cut;
            out[len++] = '/';
            continue;
        }
        size_t j = i;
        while (j < end && t[j] != '/')
            j++;
        const char *seg = is_id(t + i, j - i) ? "{id}" : NULL;
        size_t seg_len = seg ? 4 : j - i;
        /* room for the segment and, if more follows, for the cut mark */
        size_t room = ENDPOINT_TEMPLATE_MAX - (j < end ? sizeof cut_mark - 1 : 0);
        if (len + seg_len > room)
            goto cut;
        for (size_t k = 0; k < seg_len; k++) {
            uint8_t c = seg ? (uint8_t)seg[k] : t[i + k];
            out[len++] = c > 0x20 && c < 0x7f ? (char)c : '_';
        }
        i = j;
    }
    out[len] = '\0';
    return len;
cut:
    while (len > 0 && out[len - 1] == '/')
        len--;
    memcpy(out + len, cut_mark, sizeof cut_mark);
    return len + sizeof cut_mark - 1;
}

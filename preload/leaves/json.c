/* json.c — see json.h. */
#include "json.h"

#include <string.h>

#include "utf8.h"

void jb_init(struct jbuf *b, char *p, size_t cap)
{
    b->p = p;
    b->len = 0;
    b->cap = cap;
    b->full = 0;
}

void jb_rewind(struct jbuf *b, size_t len)
{
    if (len <= b->len)
        b->len = len;
    b->full = 0;
}

void jb_raw(struct jbuf *b, const char *s, size_t n)
{
    if (b->full || n > b->cap - b->len) {
        b->full = 1;
        return;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
}

void jb_lit(struct jbuf *b, const char *s) { jb_raw(b, s, strlen(s)); }

void jb_u64(struct jbuf *b, uint64_t v)
{
    char tmp[20];
    size_t i = sizeof tmp;
    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    jb_raw(b, tmp + i, sizeof tmp - i);
}

void jb_hex(struct jbuf *b, const uint8_t *bytes, size_t n)
{
    static const char digits[] = "0123456789abcdef";
    if (b->full || 2 * n + 2 > b->cap - b->len) {
        b->full = 1;
        return;
    }
    char *o = b->p + b->len;
    *o++ = '"';
    for (size_t i = 0; i < n; i++) {
        *o++ = digits[bytes[i] >> 4];
        *o++ = digits[bytes[i] & 15];
    }
    *o++ = '"';
    b->len += 2 * n + 2;
}

void jb_string(struct jbuf *b, const char *str, size_t n, size_t reserve)
{
    static const char digits[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)str;
    /* room for the two quotes and the reserve, or nothing is written */
    if (b->full || b->cap - b->len < 2 + reserve) {
        b->full = 1;
        return;
    }
    size_t limit = b->cap - reserve - 1; /* the closing quote goes at limit at the latest */
    b->p[b->len++] = '"';
    size_t i = 0;
    while (i < n) {
        char esc[8];
        size_t elen, adv;
        const char *piece = esc;
        unsigned char c = s[i];
        if (c == '"' || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            elen = 2;
            adv = 1;
        } else if (c < 0x20 || c == 0x7F) {
            const char *named = c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t" : NULL;
            if (named) {
                piece = named;
                elen = 2;
            } else {
                memcpy(esc, "\\u00", 4);
                esc[4] = digits[c >> 4];
                esc[5] = digits[c & 15];
                elen = 6;
            }
            adv = 1;
        } else if (c < 0x80) {
            esc[0] = (char)c;
            elen = adv = 1;
        } else if ((adv = utf8_seq(s + i, n - i)) != 0) {
            piece = (const char *)s + i;
            elen = adv;
        } else {
            piece = "\xEF\xBF\xBD"; /* U+FFFD for one invalid byte */
            elen = 3;
            adv = 1;
        }
        if (elen > limit - b->len)
            break; /* cut here: whole characters only */
        memcpy(b->p + b->len, piece, elen);
        b->len += elen;
        i += adv;
    }
    b->p[b->len++] = '"';
}

/* resource_attrs.c — see resource_attrs.h. */
#include "resource_attrs.h"

#include <stdlib.h>
#include <string.h>

#include "ids.h"

#define MEMBER_MAX (64 * 1024)

/* Decodes [s, s+n) into out (NUL-terminated), trimming surrounding spaces. -1 on a bad escape. */
static int percent_decode(const char *s, size_t n, char *out)
{
    while (n && (*s == ' ' || *s == '\t'))
        s++, n--;
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '%') {
            out[o++] = s[i];
            continue;
        }
        if (i + 2 >= n) /* "%" needs two hex digits after it */
            return -1;
        int hi = hex_digit_value(s[i + 1]), lo = hex_digit_value(s[i + 2]);
        if (hi < 0 || lo < 0)
            return -1;
        out[o++] = (char)(hi << 4 | lo);
        i += 2;
    }
    out[o] = 0;
    return 0;
}

int resource_attrs_each(const char *text, resource_attr_fn fn, void *user)
{
    if (!text)
        return 0;
    int skipped = 0;
    char *buf = malloc(2 * MEMBER_MAX + 2);
    if (!buf)
        return 0;
    char *key = buf, *value = buf + MEMBER_MAX + 1;
    const char *p = text;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        if (len == 0) {
            /* an empty member ("a=b,,c=d") is not an error worth reporting */
        } else if (!eq || len > MEMBER_MAX || percent_decode(p, (size_t)(eq - p), key) ||
                   percent_decode(eq + 1, len - (size_t)(eq - p) - 1, value) || !key[0]) {
            skipped++;
        } else if (fn(key, value, user)) {
            break;
        }
        if (!end)
            break;
        p = end + 1;
    }
    free(buf);
    return skipped;
}

struct get_req {
    const char *key;
    char *out;
    size_t cap;
    int found;
};

static int get_one(const char *key, const char *value, void *user)
{
    struct get_req *r = user;
    if (strcmp(key, r->key) != 0)
        return 0;
    size_t n = strlen(value);
    if (n >= r->cap)
        n = r->cap - 1;
    memcpy(r->out, value, n);
    r->out[n] = 0;
    r->found = 1;
    return 0; /* keep going: with duplicate keys the last one wins, as in the SDKs */
}

int resource_attrs_get(const char *text, const char *key, char *out, size_t cap)
{
    struct get_req r = {key, out, cap, 0};
    if (cap == 0)
        return 0;
    resource_attrs_each(text, get_one, &r);
    return r.found;
}

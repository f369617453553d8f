/* resource_attrs.c — see resource_attrs.h. Every pass is one left-to-right walk of the text;
 * duplicate keys are resolved with a hash table, so the work is linear in the text's length
 * (a 128 KiB environment variable holds tens of thousands of members). */
#include "resource_attrs.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "leaves/ids.h"

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

/* A walk over the members: key and value buffers of MEMBER_MAX + 1 bytes each. */
struct walk {
    const char *p; /* next member, NULL when done */
    char *key, *value;
    char *buf;
};

enum member { MEMBER_END, MEMBER_EMPTY, MEMBER_BAD, MEMBER_OK };

static int walk_init(struct walk *w, const char *text)
{
    w->p = text && *text ? text : NULL;
    w->buf = malloc(2 * MEMBER_MAX + 2);
    w->key = w->buf;
    w->value = w->buf ? w->buf + MEMBER_MAX + 1 : NULL;
    return w->buf ? 0 : -1;
}

static enum member walk_next(struct walk *w)
{
    if (!w->p)
        return MEMBER_END;
    const char *p = w->p;
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    w->p = end ? end + 1 : NULL;
    if (len == 0)
        return MEMBER_EMPTY; /* "a=b,,c=d": not an error worth reporting */
    const char *eq = memchr(p, '=', len);
    if (!eq || len > MEMBER_MAX || percent_decode(p, (size_t)(eq - p), w->key) ||
        percent_decode(eq + 1, len - (size_t)(eq - p) - 1, w->value) || !w->key[0])
        return MEMBER_BAD;
    return MEMBER_OK;
}

int resource_attrs_each(const char *text, resource_attr_fn fn, void *user)
{
    struct walk w;
    if (!text || walk_init(&w, text) != 0)
        return 0;
    int skipped = 0;
    enum member m;
    while ((m = walk_next(&w)) != MEMBER_END) {
        if (m == MEMBER_BAD)
            skipped++;
        else if (m == MEMBER_OK && fn(w.key, w.value, user))
            break;
    }
    free(w.buf);
    return skipped;
}

/* ---- last occurrence of each key ---------------------------------------------------------- */

/* Open addressing; each slot names a decoded key stored in `keys` and the ordinal of the key's
 * last well-formed member. The table is at least twice the member count, so probes stay short. */
struct key_slot {
    size_t key_off; /* offset in keys + 1; 0 = empty slot */
    size_t last;
};

struct key_table {
    struct key_slot *slots;
    size_t mask;
    char *keys;
    size_t keys_len;
};

static uint64_t key_hash(const char *k)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *k; k++)
        h = (h ^ (unsigned char)*k) * 1099511628211ull;
    return h;
}

/* The slot of key, inserting it (with ordinal `ordinal`) when absent. */
static struct key_slot *key_find(struct key_table *t, const char *key, size_t ordinal)
{
    size_t i = (size_t)key_hash(key) & t->mask;
    for (;; i = (i + 1) & t->mask) {
        struct key_slot *s = &t->slots[i];
        if (!s->key_off) {
            size_t n = strlen(key) + 1;
            memcpy(t->keys + t->keys_len, key, n);
            s->key_off = t->keys_len + 1;
            s->last = ordinal;
            t->keys_len += n;
            return s;
        }
        if (!strcmp(t->keys + s->key_off - 1, key))
            return s;
    }
}

int resource_attrs_each_last(const char *text, resource_attr_fn fn, void *user)
{
    if (!text)
        return 0;
    /* Members are at most commas + 1; decoded keys never grow, so the text's length bounds
     * their total size (plus one NUL each). */
    size_t members = 1, text_len = 0;
    for (const char *c = text; *c; c++, text_len++)
        members += *c == ',';
    size_t cap = 16;
    while (cap < 2 * members)
        cap <<= 1;
    struct key_table t = {calloc(cap, sizeof *t.slots), cap - 1, malloc(text_len + members + 1), 0};
    struct walk w;
    int skipped = 0;
    if (!t.slots || !t.keys || walk_init(&w, text) != 0)
        goto out;
    enum member m;
    size_t ordinal = 0;
    while ((m = walk_next(&w)) != MEMBER_END) /* pass 1: each key's last member */
        if (m == MEMBER_OK) {
            key_find(&t, w.key, ordinal)->last = ordinal;
            ordinal++;
        }
    free(w.buf);
    if (walk_init(&w, text) != 0)
        goto out;
    ordinal = 0;
    while ((m = walk_next(&w)) != MEMBER_END) { /* pass 2: report only those */
        if (m == MEMBER_BAD)
            skipped++;
        if (m != MEMBER_OK)
            continue;
        if (key_find(&t, w.key, ordinal)->last == ordinal && fn(w.key, w.value, user))
            break;
        ordinal++;
    }
    free(w.buf);
out:
    free(t.slots);
    free(t.keys);
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

/* target_pb.c — see target_pb.h. The payload comes from the target, so it is untrusted: every
 * length is checked against the remaining bytes and nesting is bounded. */
#include "target_pb.h"

#include <stdlib.h>
#include <string.h>

#include "target_util.h"

#define MAX_DEPTH 16

struct cur {
    const uint8_t *p, *end;
};

struct field {
    uint32_t num;
    unsigned wire;
    uint64_t v;            /* varint, fixed32, fixed64 */
    const uint8_t *data;   /* length-delimited */
    size_t len;
};

static int varint(struct cur *c, uint64_t *out)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (c->p >= c->end)
            return -1;
        uint8_t byte = *c->p++;
        v |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80)) {
            *out = v;
            return 0;
        }
    }
    return -1;
}

/* Next field of the message at c: 1 got one, 0 end of message, -1 malformed. */
static int next_field(struct cur *c, struct field *f)
{
    if (c->p == c->end)
        return 0;
    uint64_t key;
    if (varint(c, &key) != 0 || (key >> 3) == 0 || (key >> 3) > 0x1fffffff)
        return -1;
    f->num = (uint32_t)(key >> 3);
    f->wire = key & 7;
    switch (f->wire) {
    case 0:
        return varint(c, &f->v) == 0 ? 1 : -1;
    case 1:
    case 5: {
        size_t n = f->wire == 1 ? 8 : 4;
        if ((size_t)(c->end - c->p) < n)
            return -1;
        f->v = 0;
        memcpy(&f->v, c->p, n); /* protobuf fixed fields are little-endian, like our targets */
        c->p += n;
        return 1;
    }
    case 2: {
        uint64_t n;
        if (varint(c, &n) != 0 || n > (uint64_t)(c->end - c->p))
            return -1;
        f->data = c->p;
        f->len = (size_t)n;
        c->p += n;
        return 1;
    }
    default:
        return -1; /* groups (3, 4) are not used by these messages */
    }
}

static char *dup_bytes(const uint8_t *p, size_t n)
{
    char *s = malloc(n + 1);
    if (s) {
        memcpy(s, p, n);
        s[n] = '\0';
    }
    return s;
}

static void free_value(struct target_pb_value *v);

static void free_kvs(struct target_pb_kv *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(v[i].key);
        free_value(&v[i].value);
    }
    free(v);
}

static void free_value(struct target_pb_value *v)
{
    free(v->s);
    for (size_t i = 0; i < v->nitems; i++)
        free_value(&v->items[i]);
    free(v->items);
    free_kvs(v->kvs, v->nkvs);
    memset(v, 0, sizeof *v);
}

static int decode_kv(const uint8_t *p, size_t n, struct target_pb_kv *kv, int depth);

/* Appends one zeroed element to a growing array. */
static void *grow(void *arr, size_t *n, size_t size)
{
    char *na = realloc(arr, (*n + 1) * size);
    if (!na)
        return NULL;
    memset(na + *n * size, 0, size);
    (*n)++;
    return na;
}

static int decode_value(const uint8_t *p, size_t n, struct target_pb_value *v, int depth)
{
    if (depth > MAX_DEPTH)
        return -1;
    struct cur c = {p, p + n};
    struct field f;
    int r;
    while ((r = next_field(&c, &f)) == 1) {
        if (f.num == 1 && f.wire == 2) {
            free_value(v);
            v->kind = TARGET_PB_STRING;
            v->len = f.len;
            if (!(v->s = dup_bytes(f.data, f.len)))
                return -1;
        } else if (f.num == 2 && f.wire == 0) {
            free_value(v);
            v->kind = TARGET_PB_BOOL;
            v->b = f.v != 0;
        } else if (f.num == 3 && f.wire == 0) {
            free_value(v);
            v->kind = TARGET_PB_INT;
            v->i = (int64_t)f.v;
        } else if (f.num == 4 && f.wire == 1) {
            free_value(v);
            v->kind = TARGET_PB_DOUBLE;
            memcpy(&v->d, &f.v, 8);
        } else if ((f.num == 5 || f.num == 6) && f.wire == 2) {
            free_value(v);
            v->kind = f.num == 5 ? TARGET_PB_ARRAY : TARGET_PB_KVLIST;
            struct cur ac = {f.data, f.data + f.len};
            struct field af;
            int ar;
            while ((ar = next_field(&ac, &af)) == 1) {
                if (af.num != 1 || af.wire != 2)
                    continue;
                if (f.num == 5) {
                    struct target_pb_value *ni = grow(v->items, &v->nitems, sizeof *ni);
                    if (!ni)
                        return -1;
                    v->items = ni;
                    if (decode_value(af.data, af.len, &ni[v->nitems - 1], depth + 1) != 0)
                        return -1;
                } else {
                    struct target_pb_kv *nk = grow(v->kvs, &v->nkvs, sizeof *nk);
                    if (!nk)
                        return -1;
                    v->kvs = nk;
                    if (decode_kv(af.data, af.len, &nk[v->nkvs - 1], depth + 1) != 0)
                        return -1;
                }
            }
            if (ar < 0)
                return -1;
        } else if (f.num == 7 && f.wire == 2) {
            free_value(v);
            v->kind = TARGET_PB_BYTES;
            v->len = f.len;
            if (!(v->s = dup_bytes(f.data, f.len)))
                return -1;
        }
    }
    return r;
}

static int decode_kv(const uint8_t *p, size_t n, struct target_pb_kv *kv, int depth)
{
    struct cur c = {p, p + n};
    struct field f;
    int r;
    while ((r = next_field(&c, &f)) == 1) {
        if (f.num == 1 && f.wire == 2) {
            free(kv->key);
            kv->key_len = f.len;
            if (!(kv->key = dup_bytes(f.data, f.len)))
                return -1;
        } else if (f.num == 2 && f.wire == 2) {
            if (decode_value(f.data, f.len, &kv->value, depth + 1) != 0)
                return -1;
        }
    }
    if (r == 0 && !kv->key && !(kv->key = dup_bytes((const uint8_t *)"", 0)))
        return -1;
    return r;
}

static int add_kv(struct target_pb_kvs *kvs, const uint8_t *p, size_t n)
{
    struct target_pb_kv *nv = grow(kvs->v, &kvs->n, sizeof *nv);
    if (!nv)
        return -1;
    kvs->v = nv;
    return decode_kv(p, n, &nv[kvs->n - 1], 0);
}

int target_pb_decode_process_context(const uint8_t *buf, size_t len,
                                     struct target_process_context *out, char *err)
{
    memset(out, 0, sizeof *out);
    struct cur c = {buf, buf + len};
    struct field f;
    int r;
    while ((r = next_field(&c, &f)) == 1) {
        if (f.num == 1 && f.wire == 2) {
            out->has_resource = 1;
            struct cur rc = {f.data, f.data + f.len};
            struct field rf;
            int rr;
            while ((rr = next_field(&rc, &rf)) == 1)
                if (rf.num == 1 && rf.wire == 2 && add_kv(&out->resource, rf.data, rf.len) != 0)
                    break;
            if (rr != 0) {
                r = -1;
                break;
            }
        } else if (f.num == 2 && f.wire == 2) {
            if (add_kv(&out->attributes, f.data, f.len) != 0) {
                r = -1;
                break;
            }
        }
    }
    if (r != 0) {
        target_pb_free_process_context(out);
        return target_fail(err, "malformed ProcessContext protobuf payload");
    }
    return 0;
}

void target_pb_free_process_context(struct target_process_context *pc)
{
    free_kvs(pc->resource.v, pc->resource.n);
    free_kvs(pc->attributes.v, pc->attributes.n);
    memset(pc, 0, sizeof *pc);
}

const struct target_pb_value *target_pb_find(const struct target_pb_kvs *kvs, const char *key)
{
    size_t n = strlen(key);
    for (size_t i = 0; i < kvs->n; i++)
        if (kvs->v[i].key_len == n && memcmp(kvs->v[i].key, key, n) == 0)
            return &kvs->v[i].value;
    return NULL;
}

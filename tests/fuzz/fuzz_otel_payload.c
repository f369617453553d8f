/* fuzz_otel_payload — fuzz target for the OpenTelemetry process context's payload encoder
 * (preload/publish/otel_payload.c). An input describes the service fields, the key map, and the members
 * of OTEL_RESOURCE_ATTRIBUTES and of the tracer's attributes; the output buffer's capacity is
 * sometimes small, so that attributes are dropped or the essentials do not fit.
 *
 * The output is decoded with a protobuf decoder of its own (sharing nothing with the encoder)
 * and must be: well-formed (canonical varints, every length within its parent, only the fields
 * ProcessContext, Resource, KeyValue, AnyValue and ArrayValue define), within the capacity,
 * valid UTF-8 in every string (checked by a validator of its own: the profiler's Go decoder
 * refuses the whole payload over one bad string), one KeyValue per resource key, and carry the
 * thread-context schema and the key map given. In model mode (the members are generated from the
 * input and percent-encoded here, so their decoded form is known) the resource must also equal a
 * simple model: proflink's owned attributes with the tracer's value replacing the default, the
 * others the last value of their key (the tracer's after the environment's), invalid UTF-8 in a
 * value replaced byte for byte by '?', a key that is not UTF-8 skipped and counted, and every
 * attribute missing from the output counted as dropped. In raw mode the attribute texts are the
 * input's bytes as they are (malformed members, escapes, anything) and only the structure is
 * checked. Nothing may crash or read or write out of bounds (ASan/UBSan).
 *
 * libFuzzer: clang -fsanitize=fuzzer,address,undefined (make fuzz). Without libFuzzer, build
 * with -DFUZZ_STANDALONE: main() feeds seeded random inputs. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../preload/leaves/ids.c"
#include "../../preload/publish/otel_payload.c"
#include "../../preload/publish/protobuf_writer.c"
#include "../../preload/config/resource_attrs.c"
#include "../../preload/leaves/utf8.c"

#define MAX_ITEMS 512   /* KeyValues decoded or modelled: inputs are at most a few KiB */
#define MAX_KEYS 16     /* key map names tried */
#define FIELD_LEN 200   /* longest generated string: below the encoder's value cut (VALUE_MAX) */
#define SMALL_CAP 4096  /* the small capacities tried are below this */
#define INSTANCE_ID "01234567-89ab-4cde-8f01-23456789abcd"

static void fail(const char *why)
{
    fprintf(stderr, "fuzz_otel_payload: %s\n", why);
    abort();
}

/* ---- an independent UTF-8 check (RFC 3629), written out as the table of its ranges -------- */

static int utf8_ok(const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        size_t len;
        uint8_t lo = 0x80, hi = 0xbf;
        if (c <= 0x7f) {
            i++;
            continue;
        } else if (c >= 0xc2 && c <= 0xdf) {
            len = 2;
        } else if (c == 0xe0) {
            len = 3, lo = 0xa0;
        } else if (c == 0xed) {
            len = 3, hi = 0x9f;
        } else if (c >= 0xe1 && c <= 0xef) {
            len = 3;
        } else if (c == 0xf0) {
            len = 4, lo = 0x90;
        } else if (c == 0xf4) {
            len = 4, hi = 0x8f;
        } else if (c >= 0xf1 && c <= 0xf3) {
            len = 4;
        } else {
            return 0;
        }
        if (n - i < len || s[i + 1] < lo || s[i + 1] > hi)
            return 0;
        for (size_t k = 2; k < len; k++)
            if (s[i + k] < 0x80 || s[i + k] > 0xbf)
                return 0;
        i += len;
    }
    return 1;
}

/* ---- an independent protobuf decoder for what the payload may contain --------------------- */

struct span {
    const uint8_t *p;
    size_t n;
};

struct kv {
    struct span key, value; /* value: the string, or the array's encoded items */
    int is_array;
};

/* One canonical varint; fails on truncation, more than 10 bytes or a non-minimal encoding. */
static uint64_t get_varint(struct span *s)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (!s->n)
            fail("truncated varint");
        uint8_t b = *s->p++;
        s->n--;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            if (b == 0 && shift)
                fail("non-minimal varint");
            return v;
        }
    }
    fail("varint longer than 10 bytes");
    return 0;
}

/* The next field, which must be length-delimited: its number, and its bytes in *body. 0 at the
 * end of s. */
static unsigned next_field(struct span *s, struct span *body)
{
    if (!s->n)
        return 0;
    uint64_t tag = get_varint(s);
    if ((tag & 7) != 2)
        fail("a field that is not length-delimited");
    if (tag >> 3 == 0 || tag >> 3 > 15)
        fail("an unexpected field number");
    uint64_t len = get_varint(s);
    if (len > s->n)
        fail("a length past its enclosing message");
    body->p = s->p;
    body->n = (size_t)len;
    s->p += len;
    s->n -= (size_t)len;
    return (unsigned)(tag >> 3);
}

/* AnyValue holding only a string_value. */
static struct span any_string(struct span any)
{
    struct span body, str = {NULL, 0};
    int seen = 0;
    unsigned f;
    while ((f = next_field(&any, &body)) != 0) {
        if (f != 1 || seen++)
            fail("AnyValue is not one string_value");
        str = body;
    }
    if (!seen)
        fail("AnyValue without a value");
    if (!utf8_ok(str.p, str.n))
        fail("a string value is not UTF-8");
    return str;
}

static void decode_kv(struct span m, struct kv *out)
{
    struct span body;
    unsigned f;
    int have_key = 0, have_value = 0;
    memset(out, 0, sizeof *out);
    while ((f = next_field(&m, &body)) != 0) {
        if (f == 1 && !have_key && !have_value) {
            out->key = body;
            have_key = 1;
        } else if (f == 2 && have_key && !have_value) {
            struct span any = body, inner;
            unsigned g = next_field(&any, &inner);
            if (g == 5) { /* array_value: ArrayValue{values: repeated AnyValue} */
                if (any.n)
                    fail("AnyValue with more than its array");
                out->is_array = 1;
                out->value = inner;
                struct span item;
                while (next_field(&inner, &item) == 1)
                    any_string(item);
                if (inner.n)
                    fail("ArrayValue with a field other than values");
            } else {
                out->value = any_string(body);
            }
            have_value = 1;
        } else {
            fail("KeyValue is not key then value");
        }
    }
    if (!have_key || !have_value)
        fail("KeyValue without key or value");
    if (!utf8_ok(out->key.p, out->key.n))
        fail("a key is not UTF-8");
}

struct decoded {
    struct kv res[MAX_ITEMS], attrs[MAX_ITEMS];
    size_t n_res, n_attrs;
};

static void decode(const uint8_t *buf, size_t size, struct decoded *d)
{
    struct span top = {buf, size}, body;
    unsigned f;
    int resources = 0;
    d->n_res = d->n_attrs = 0;
    while ((f = next_field(&top, &body)) != 0) {
        if (f == 1) { /* ProcessContext.resource, once, before the attributes */
            if (resources++ || d->n_attrs)
                fail("resource twice or after the attributes");
            struct span kv;
            while ((f = next_field(&body, &kv)) != 0) {
                if (f != 1 || d->n_res == MAX_ITEMS)
                    fail("Resource holds something other than attributes");
                decode_kv(kv, &d->res[d->n_res]);
                if (d->res[d->n_res].is_array)
                    fail("an array among the resource attributes");
                d->n_res++;
            }
        } else if (f == 2) {
            if (d->n_attrs == MAX_ITEMS)
                fail("too many extra attributes");
            decode_kv(body, &d->attrs[d->n_attrs++]);
        } else {
            fail("ProcessContext field other than resource and attributes");
        }
    }
    if (!resources)
        fail("no resource");
}

static int span_is(struct span s, const char *str)
{
    return s.n == strlen(str) && !memcmp(s.p, str, s.n);
}

static const struct kv *find_res(const struct decoded *d, const char *key)
{
    for (size_t i = 0; i < d->n_res; i++)
        if (span_is(d->res[i].key, key))
            return &d->res[i];
    return NULL;
}

/* The checks both modes share: unique resource keys, the schema and the key map. */
static void check_common(const struct decoded *d, const char *const *keys, size_t n_keys)
{
    for (size_t i = 0; i < d->n_res; i++)
        for (size_t j = i + 1; j < d->n_res; j++)
            if (d->res[i].key.n == d->res[j].key.n &&
                !memcmp(d->res[i].key.p, d->res[j].key.p, d->res[i].key.n))
                fail("a resource key twice");
    if (!find_res(d, "service.instance.id") || !find_res(d, "telemetry.sdk.name"))
        fail("identity missing");
    if (d->n_attrs != 2 || !span_is(d->attrs[0].key, "threadlocal.schema_version") ||
        d->attrs[0].is_array || !span_is(d->attrs[0].value, "tlsdesc_v1_dev") ||
        !span_is(d->attrs[1].key, "threadlocal.attribute_key_map") || !d->attrs[1].is_array)
        fail("thread-context schema differs");
    static const char *const default_keys[] = {"local_root_span_id"};
    if (!keys)
        keys = default_keys, n_keys = 1;
    struct span items = d->attrs[1].value, item;
    size_t i = 0;
    while (next_field(&items, &item) == 1) {
        struct span s = any_string(item);
        if (i >= n_keys || !span_is(s, keys[i]))
            fail("key map differs");
        i++;
    }
    if (i != n_keys)
        fail("key map has fewer names");
}

/* ---- inputs ------------------------------------------------------------------------------- */

struct input {
    const uint8_t *d;
    size_t n, i;
};

static uint8_t next_byte(struct input *in) { return in->i < in->n ? in->d[in->i++] : 0; }

/* A string of up to `max` input bytes (never NUL: a C string could not carry it), length first. */
static void next_string(struct input *in, char *out, size_t max)
{
    size_t len = next_byte(in) % (max + 1), o = 0;
    while (o < len && in->i < in->n) {
        uint8_t c = in->d[in->i++];
        out[o++] = (char)(c ? c : '0');
    }
    out[o] = 0;
}

static const char *const owned[] = {
    "service.name",       "service.instance.id",   "deployment.environment.name",
    "service.version",    "service.namespace",     "telemetry.sdk.name",
    "telemetry.sdk.version", "telemetry.sdk.language",
};
#define N_OWNED (sizeof owned / sizeof owned[0])

static int is_owned(const char *key)
{
    for (size_t i = 0; i < N_OWNED; i++)
        if (!strcmp(key, owned[i]))
            return 1;
    return 0;
}

/* A key: often one of a few (so that keys repeat and owned keys appear), else input bytes. */
static void next_key(struct input *in, char *out)
{
    static const char *const common[] = {"a", "b", "host.name", "k\xc3\xa9y"};
    uint8_t pick = next_byte(in);
    if (pick < 64)
        snprintf(out, FIELD_LEN + 1, "%s", owned[pick % N_OWNED]);
    else if (pick < 128)
        snprintf(out, FIELD_LEN + 1, "%s", common[pick % 4]);
    else
        next_string(in, out, 24);
    if (!out[0])
        strcpy(out, "e"); /* an empty key is a malformed member */
}

struct attr_member {
    char key[FIELD_LEN + 1], value[FIELD_LEN + 1];
};

/* Percent-encodes every byte the syntax gives a meaning (',', '=', '%', the spaces trimmed
 * around members), and, as the input's next bit says, any other byte. */
static size_t encode_text(struct input *in, const struct attr_member *m, size_t count, char *out)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (size_t i = 0; i < count; i++) {
        if (i)
            out[o++] = ',';
        for (int part = 0; part < 2; part++) {
            const char *s = part ? m[i].value : m[i].key;
            if (part)
                out[o++] = '=';
            uint8_t bits = next_byte(in);
            for (size_t k = 0; s[k]; k++) {
                uint8_t c = (uint8_t)s[k];
                if (strchr(",=% \t", c) || (bits >> (k % 8) & 1 && c > 0x7f)) {
                    out[o++] = '%';
                    out[o++] = hex[c >> 4];
                    out[o++] = hex[c & 15];
                } else {
                    out[o++] = (char)c;
                }
            }
        }
    }
    out[o] = 0;
    return o;
}

#define MAX_MEMBERS 64
/* Bytes of a text of MAX_MEMBERS members, every byte escaped, with separators. */
#define TEXT_MAX (MAX_MEMBERS * (2 * FIELD_LEN * 3 + 2) + 1)

static size_t read_members(struct input *in, struct attr_member *m)
{
    size_t count = next_byte(in) % (MAX_MEMBERS + 1);
    for (size_t i = 0; i < count; i++) {
        next_key(in, m[i].key);
        next_string(in, m[i].value, FIELD_LEN);
    }
    return count;
}

/* The last value of key among env then tracer, or NULL. */
static const char *last_value(const struct attr_member *env, size_t n_env, const struct attr_member *tr,
                              size_t n_tr, const char *key)
{
    for (size_t i = n_tr; i-- > 0;)
        if (!strcmp(tr[i].key, key))
            return tr[i].value;
    for (size_t i = n_env; i-- > 0;)
        if (!strcmp(env[i].key, key))
            return env[i].value;
    return NULL;
}

/* The value in the output is the model's, with each byte of invalid UTF-8 replaced by '?'. */
static void check_value(const struct kv *kv, const char *want)
{
    size_t n = strlen(want);
    if (!kv || kv->value.n != n)
        fail("a value missing or of another length than the model's");
    for (size_t i = 0; i < n; i++)
        if (kv->value.p[i] != (uint8_t)want[i] && kv->value.p[i] != '?')
            fail("a value differs from the model's");
    if (utf8_ok((const uint8_t *)want, n) && memcmp(kv->value.p, want, n))
        fail("a valid UTF-8 value was changed");
}

static void check_model(const struct decoded *d, const struct otel_payload_in *pin,
                        const struct otel_payload_out *out, const uint8_t *buf,
                        const struct attr_member *env, size_t n_env, const struct attr_member *tr,
                        size_t n_tr)
{
    /* Owned attributes: the tracer's value, else proflink's default (none when empty). */
    const char *dflt[N_OWNED] = {pin->service_name, NULL, pin->service_environment,
                                 pin->service_version, pin->service_namespace, "proflink",
                                 PROFLINK_VERSION_STRING, "cpp"};
    for (size_t i = 0; i < N_OWNED; i++) {
        const struct kv *kv = find_res(d, owned[i]);
        const char *want = last_value(NULL, 0, tr, n_tr, owned[i]);
        if (i == 1) { /* service.instance.id: the tracer's, the environment's, else ours */
            if (!want || !want[0])
                want = last_value(env, n_env, NULL, 0, owned[i]);
            int given = want && want[0];
            if (!given)
                want = INSTANCE_ID;
            if (given != (out->uuid_off == OTEL_PAYLOAD_NO_UUID))
                fail("uuid_off does not say whether the instance id is ours");
            if (!given && memcmp(buf + out->uuid_off, INSTANCE_ID, strlen(INSTANCE_ID)))
                fail("uuid_off does not point at the instance id");
        } else if (!want) {
            want = dflt[i] && dflt[i][0] ? dflt[i] : NULL;
        }
        if (want)
            check_value(kv, want);
        else if (kv)
            fail("an owned attribute without a value to give it");
    }
    /* The others: each distinct key once with its last value, unless its key is not UTF-8
     * (skipped, counted) or it did not fit (dropped, counted). */
    size_t expected = 0, missing = 0, bad = 0;
    for (size_t side = 0; side < 2; side++) {
        const struct attr_member *m = side ? tr : env;
        size_t n = side ? n_tr : n_env;
        for (size_t i = 0; i < n; i++) {
            const char *key = m[i].key;
            if (is_owned(key) || last_value(env, n_env, tr, n_tr, key) != m[i].value)
                continue; /* owned, or not the last member of its key */
            if (!utf8_ok((const uint8_t *)key, strlen(key))) {
                bad++;
                continue;
            }
            expected++;
            const struct kv *kv = find_res(d, key);
            if (kv)
                check_value(kv, m[i].value);
            else
                missing++;
        }
    }
    if (bad != out->bad_keys)
        fail("keys that are not UTF-8 miscounted");
    if (missing != out->dropped)
        fail("dropped attributes miscounted");
    size_t owned_present = 0;
    for (size_t i = 0; i < N_OWNED; i++)
        owned_present += find_res(d, owned[i]) != NULL;
    if (d->n_res != owned_present + expected - missing)
        fail("resource attributes the model does not have");
    if (out->malformed)
        fail("well-formed members reported malformed");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static uint8_t buf[OTEL_PAYLOAD_MAX + 64];
    static struct attr_member env[MAX_MEMBERS], tr[MAX_MEMBERS];
    static char env_text[TEXT_MAX], tr_text[TEXT_MAX];
    static char fields[4][FIELD_LEN + 1], key_names[MAX_KEYS][FIELD_LEN + 1];
    static struct decoded d;
    struct input in = {data, size, 0};
    const char *keys[MAX_KEYS];

    uint8_t mode = next_byte(&in);
    int raw = mode & 1;
    size_t cap = mode & 6 ? OTEL_PAYLOAD_MAX : 64 + (size_t)next_byte(&in) * (SMALL_CAP / 256);
    for (int i = 0; i < 4; i++)
        next_string(&in, fields[i], mode & 8 ? FIELD_LEN : 40);
    size_t n_keys = next_byte(&in) % (MAX_KEYS + 1);
    for (size_t i = 0; i < n_keys; i++) {
        /* the key map's names are UTF-8 by contract (attr_keys.c refuses others) */
        next_string(&in, key_names[i], 128);
        if (!utf8_ok((const uint8_t *)key_names[i], strlen(key_names[i])))
            snprintf(key_names[i], sizeof key_names[i], "key%zu", i);
        keys[i] = key_names[i];
    }
    size_t n_env = 0, n_tr = 0;
    if (raw) { /* the rest of the input, split at its first NUL: env, then the tracer's */
        size_t rest = in.n - in.i, cut = rest;
        const uint8_t *z = memchr(in.d + in.i, 0, rest);
        if (z)
            cut = (size_t)(z - (in.d + in.i));
        if (cut >= TEXT_MAX)
            cut = TEXT_MAX - 1;
        memcpy(env_text, in.d + in.i, cut);
        env_text[cut] = 0;
        size_t from = z ? cut + 1 : rest, tn = rest - from < TEXT_MAX ? rest - from : TEXT_MAX - 1;
        memcpy(tr_text, in.d + in.i + from, tn);
        tr_text[tn] = 0;
    } else {
        n_env = read_members(&in, env);
        n_tr = read_members(&in, tr);
        encode_text(&in, env, n_env, env_text);
        encode_text(&in, tr, n_tr, tr_text);
    }

    struct otel_payload_in pin = {
        .service_name = fields[0],
        .service_environment = fields[1],
        .service_version = fields[2],
        .service_namespace = fields[3],
        .instance_id = INSTANCE_ID,
        .env_attrs = mode & 16 && !n_env && !raw ? NULL : env_text,
        .tracer_attrs = mode & 32 && !n_tr && !raw ? NULL : tr_text,
        .keys = n_keys || mode & 64 ? keys : NULL, /* NULL: the default map; else maybe empty */
        .n_keys = n_keys,
    };
    struct otel_payload_out out;
    memset(buf + cap, 0xee, sizeof buf - cap);
    int rc = otel_payload_encode(&pin, buf, cap, &out);
    for (size_t i = cap; i < sizeof buf; i++)
        if (buf[i] != 0xee)
            fail("wrote past the capacity");
    if (rc != 0) {
        if (cap == OTEL_PAYLOAD_MAX)
            fail("the essentials did not fit in a whole payload");
        return 0;
    }
    if (out.size > cap || out.size == 0)
        fail("size past the capacity");
    decode(buf, out.size, &d);
    check_common(&d, pin.keys, pin.n_keys);
    if (!raw) {
        check_model(&d, &pin, &out, buf, env, n_env, tr, n_tr);
        if (cap == OTEL_PAYLOAD_MAX && out.dropped)
            fail("attributes dropped from a payload with room for them");
    }
    return 0;
}

#ifdef FUZZ_STANDALONE
#include "standalone.h"

int main(int argc, char **argv)
{
    return fuzz_standalone_main(argc, argv, "fuzz_otel_payload", 4096, 20000ul);
}
#endif

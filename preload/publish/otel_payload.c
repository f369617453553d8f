/* otel_payload.c — see otel_payload.h. */
#include "otel_payload.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "proflink.h"
#include "protobuf_writer.h"
#include "config/resource_attrs.h"
#include "leaves/utf8.h"

/* ProcessContext (opentelemetry.proto.processcontext.v1development) and the OTLP common
 * messages it uses; field numbers checked against the proto and the profiler's reader. */
enum {
    PC_RESOURCE = 1,   /* ProcessContext.resource: Resource */
    PC_ATTRIBUTES = 2, /* ProcessContext.attributes (extra_attributes): repeated KeyValue */
    RES_ATTRIBUTES = 1, /* Resource.attributes: repeated KeyValue */
    KV_KEY = 1,         /* KeyValue.key: string */
    KV_VALUE = 2,       /* KeyValue.value: AnyValue */
    ANY_STRING = 1,     /* AnyValue.string_value */
    ANY_ARRAY = 5,      /* AnyValue.array_value: ArrayValue */
    ARRAY_VALUES = 1,   /* ArrayValue.values: repeated AnyValue */
};

/* A value read back from the attribute texts: the service fields' limit in 4-byte characters,
 * with room to spare; what is longer is cut (and a split character replaced by '?'). */
#define VALUE_MAX (SERVICE_FIELD_MAX * 4 + 64)

struct encoder {
    struct pb_writer w;
    const struct otel_payload_in *in;
    struct otel_payload_out *out;
};

/* KeyValue{key, AnyValue{string_value}} as `field` of the enclosing message. Returns the offset
 * of the value's bytes in the output (valid until an enclosing message is closed). */
static size_t put_string_kv(struct encoder *e, uint32_t field, const char *key, const char *value)
{
    size_t n = strlen(value);
    pb_msg kv = pb_begin(&e->w, field);
    pb_put_string_field(&e->w, KV_KEY, key);
    pb_msg any = pb_begin(&e->w, KV_VALUE);
    pb_put_string_field(&e->w, ANY_STRING, value);
    pb_end(&e->w, any);
    pb_end(&e->w, kv);
    if (pb_status(&e->w) != 0)
        return 0;
    /* The value is the last field of both messages just closed, so (their bodies having slid
     * down to their final place) it is now the last n bytes of the output. */
    size_t at = e->w.len - n;
    e->out->sanitized += utf8_sanitize(e->w.buf + at, n);
    return at;
}

/* KeyValue{key, AnyValue{array_value: ArrayValue{values: [AnyValue{string_value}...]}}}. */
static void put_string_array_kv(struct encoder *e, uint32_t field, const char *key,
                                const char *const *items, size_t count)
{
    pb_msg kv = pb_begin(&e->w, field);
    pb_put_string_field(&e->w, KV_KEY, key);
    pb_msg any = pb_begin(&e->w, KV_VALUE);
    pb_msg array = pb_begin(&e->w, ANY_ARRAY);
    for (size_t i = 0; i < count; i++) {
        pb_msg item = pb_begin(&e->w, ARRAY_VALUES);
        pb_put_string_field(&e->w, ANY_STRING, items[i]);
        pb_end(&e->w, item);
    }
    pb_end(&e->w, array);
    pb_end(&e->w, any);
    pb_end(&e->w, kv);
}

/* ProcessContext.attributes: how to read our thread records (docs/formats.md). Position in the key
 * map is the key index used in the records; index 0 carries the local root span id. The names
 * come from otel_process_ctx_set_key_map (append-only), else that one default. */
static void put_thread_ctx_schema(struct encoder *e)
{
    static const char *const default_keys[] = {"local_root_span_id"};
    const char *const *keys = e->in->keys ? e->in->keys : default_keys;
    size_t n = e->in->keys ? e->in->n_keys : 1;
    put_string_kv(e, PC_ATTRIBUTES, "threadlocal.schema_version", "tlsdesc_v1_dev");
    put_string_array_kv(e, PC_ATTRIBUTES, "threadlocal.attribute_key_map", keys, n);
}

/* The resource attributes proflink itself decides; OTEL_RESOURCE_ATTRIBUTES cannot override
 * them (config.c already folded the environment into the service fields, with OTEL_SERVICE_NAME
 * first, so both protocols report the same identity). */
static const char *const owned_keys[] = {
    "service.name",       "service.instance.id",   "deployment.environment.name",
    "service.version",    "service.namespace",     "telemetry.sdk.name",
    "telemetry.sdk.version", "telemetry.sdk.language",
};

static int is_owned_key(const char *key)
{
    for (size_t i = 0; i < sizeof owned_keys / sizeof owned_keys[0]; i++)
        if (!strcmp(key, owned_keys[i]))
            return 1;
    return 0;
}

/* An owned attribute: the tracer's value when it published one (proflink_set_resource),
 * else proflink's default (NULL or "": not written). */
static void put_owned(struct encoder *e, const char *key, const char *dflt)
{
    char v[VALUE_MAX];
    if (e->in->tracer_attrs && resource_attrs_get(e->in->tracer_attrs, key, v, sizeof v))
        put_string_kv(e, RES_ATTRIBUTES, key, v);
    else if (dflt && dflt[0])
        put_string_kv(e, RES_ATTRIBUTES, key, dflt);
}

/* Writes the owned attributes; returns the offset of the instance id's characters,
 * OTEL_PAYLOAD_NO_UUID when the id is not proflink's random one. The instance id is the
 * tracer's, else the one OTEL_RESOURCE_ATTRIBUTES sets (so that profiles join the SDK's other
 * telemetry), else a random UUID of our own. */
static size_t put_identity(struct encoder *e)
{
    const struct otel_payload_in *in = e->in;
    char given[VALUE_MAX];
    int has_given =
        (in->tracer_attrs &&
         resource_attrs_get(in->tracer_attrs, "service.instance.id", given, sizeof given) &&
         given[0]) ||
        (in->env_attrs &&
         resource_attrs_get(in->env_attrs, "service.instance.id", given, sizeof given) &&
         given[0]);
    put_owned(e, "service.name", in->service_name);
    size_t uuid_at = put_string_kv(e, RES_ATTRIBUTES, "service.instance.id",
                                   has_given ? given : in->instance_id);
    put_owned(e, "deployment.environment.name", in->service_environment);
    put_owned(e, "service.version", in->service_version);
    put_owned(e, "service.namespace", in->service_namespace);
    put_owned(e, "telemetry.sdk.name", "proflink");
    put_owned(e, "telemetry.sdk.version", PROFLINK_VERSION_STRING);
    /* proflink is a C library; "cpp" is the semantic conventions' well-known value for C and
     * C++ SDKs (there is no "c"). The tracer in the process may be written in anything, and
     * says so with proflink_set_resource. */
    put_owned(e, "telemetry.sdk.language", "cpp");
    return has_given ? OTEL_PAYLOAD_NO_UUID : uuid_at;
}
/* One OTEL_RESOURCE_ATTRIBUTES member (already percent-decoded), the last of its key: a later
 * duplicate replaces an earlier one, as config.c reads them (resource_attrs_each_last resolves
 * that in linear time). A member that does not fit in what is left of the 64 KiB payload is
 * dropped and counted (the identity was written first and always fits). */
static int add_env_attr(const char *key, const char *value, void *user)
{
    struct encoder *e = user;
    if (is_owned_key(key))
        return 0;
    if (!utf8_valid(key, strlen(key))) {
        e->out->bad_keys++;
        return 0;
    }
    size_t mark = pb_mark(&e->w);
    put_string_kv(e, RES_ATTRIBUTES, key, value);
    if (pb_status(&e->w) != 0) {
        pb_rollback(&e->w, mark);
        if (!e->out->dropped++)
            snprintf(e->out->first_dropped, sizeof e->out->first_dropped, "%s", key);
    }
    return 0;
}

static int count_nothing(const char *key, const char *value, void *user)
{
    (void)key, (void)value, (void)user;
    return 0;
}

/* The environment's members, then the tracer's (proflink_set_resource), each key once with its
 * last value: the tracer's replace the environment's. One linear pass over "env,tracer" (a
 * member never contains an unescaped comma, so joining them changes no member). Returns the
 * environment's malformed members. */
static int add_all_attrs(struct encoder *e, const char *env, const char *tracer)
{
    if (!tracer || !tracer[0])
        return env ? resource_attrs_each_last(env, add_env_attr, e) : 0;
    if (!env || !env[0]) {
        resource_attrs_each_last(tracer, add_env_attr, e);
        return 0;
    }
    size_t n = strlen(env), m = strlen(tracer);
    char *both = malloc(n + 1 + m + 1);
    if (!both) { /* out of memory: both sets, a key in both may then appear twice */
        int malformed = resource_attrs_each_last(env, add_env_attr, e);
        resource_attrs_each_last(tracer, add_env_attr, e);
        return malformed;
    }
    memcpy(both, env, n);
    both[n] = ',';
    memcpy(both + n + 1, tracer, m + 1);
    int malformed = resource_attrs_each_last(both, add_env_attr, e) -
                    resource_attrs_each(tracer, count_nothing, NULL);
    free(both);
    return malformed;
}


int otel_payload_encode(const struct otel_payload_in *in, uint8_t *buf, size_t cap,
                        struct otel_payload_out *out)
{
    struct encoder e = {.in = in, .out = out};
    memset(out, 0, sizeof *out);

    /* The extra attributes are encoded first, so that their room is reserved before the
     * resource can fill the buffer; they are then placed after it (field order 1, 2). Usually
     * they are a few dozen bytes, encoded on the stack: the payload then touches only the pages
     * it fills (each page first touched costs a fault at every served start). A larger key map
     * is encoded at the end of buf instead, which needs no second buffer. */
    uint8_t small[OTEL_PAYLOAD_SCHEMA_SMALL];
    pb_init(&e.w, small, sizeof small);
    put_thread_ctx_schema(&e);
    size_t schema_len = e.w.len;
    const uint8_t *schema = small;
    if (pb_status(&e.w) != 0) {
        size_t room = cap < OTEL_PAYLOAD_SCHEMA_MAX ? cap : OTEL_PAYLOAD_SCHEMA_MAX;
        pb_init(&e.w, buf + cap - room, room);
        put_thread_ctx_schema(&e);
        if (pb_status(&e.w) != 0)
            return -1;
        schema_len = e.w.len;
        memmove(buf + cap - schema_len, buf + cap - room, schema_len);
        schema = buf + cap - schema_len;
    }
    if (schema_len > cap)
        return -1;

    pb_init(&e.w, buf, cap - schema_len);
    pb_msg resource = pb_begin(&e.w, PC_RESOURCE);
    size_t uuid_at = put_identity(&e);
    if (pb_status(&e.w) != 0)
        return -1;
    out->malformed = add_all_attrs(&e, in->env_attrs, in->tracer_attrs);
    size_t open_len = e.w.len;
    if (pb_end(&e.w, resource) != 0)
        return -1;
    /* Closing the resource slid its body down by the bytes the length prefix did not need. */
    if (uuid_at != OTEL_PAYLOAD_NO_UUID)
        uuid_at -= open_len - e.w.len;
    memmove(buf + e.w.len, schema, schema_len); /* may overlap: the large case */
    out->size = (uint32_t)(e.w.len + schema_len);
    out->uuid_off = uuid_at;
    return 0;
}

/* otel_payload.h — the OpenTelemetry process context's payload (docs/formats.md): a protobuf
 * ProcessContext (opentelemetry.proto.processcontext.v1development) with the resource
 * attributes and, in its extra attributes, the thread-context schema. A pure function: what it
 * needs comes in as arguments (no environment, clock, randomness or state kept between calls),
 * the bytes go out; the only memory it takes is resource_attrs.c's working buffers, freed
 * before it returns. tests/fuzz/fuzz_otel_payload.c fuzzes it. */
#ifndef PROFLINK_OTEL_PAYLOAD_H
#define PROFLINK_OTEL_PAYLOAD_H

#include <stddef.h>
#include <stdint.h>

/* Readers reject a larger payload (the OpenTelemetry eBPF profiler caps it at 65536). */
#define OTEL_PAYLOAD_MAX 65536u
/* Room for the thread-context schema: 256 key names of at most 128 bytes with their protobuf
 * framing (~34 KiB), so a full key map still leaves half the payload to the resource. */
#define OTEL_PAYLOAD_SCHEMA_MAX (40u * 1024u)
/* The schema as it usually is (the default key and a few of a tracer's, ~80 bytes) fits this
 * stack buffer; a larger one is encoded in the payload buffer (otel_payload.c says why). */
#define OTEL_PAYLOAD_SCHEMA_SMALL 512u
/* uuid_off when service.instance.id is not the instance_id passed in. */
#define OTEL_PAYLOAD_NO_UUID SIZE_MAX

struct otel_payload_in {
    /* proflink's defaults for the owned attributes (NULL or "": not written) */
    const char *service_name, *service_environment, *service_version, *service_namespace;
    const char *instance_id; /* proflink's random service.instance.id, used unless one is given */
    const char *env_attrs;    /* OTEL_RESOURCE_ATTRIBUTES, or NULL */
    const char *tracer_attrs; /* proflink_set_resource's attributes, or NULL */
    const char *const *keys;  /* threadlocal.attribute_key_map; NULL: the default one-key map */
    size_t n_keys;
};

struct otel_payload_out {
    uint32_t size;   /* bytes written */
    size_t uuid_off; /* where instance_id's characters are, or OTEL_PAYLOAD_NO_UUID */
    int malformed;       /* env_attrs members skipped as malformed */
    unsigned sanitized;  /* invalid UTF-8 bytes replaced by '?' */
    unsigned dropped;    /* attributes that did not fit */
    unsigned bad_keys;   /* attributes whose key is not UTF-8, skipped */
    char first_dropped[64];
};

/* Encodes the ProcessContext into buf (cap bytes, normally OTEL_PAYLOAD_MAX): the owned
 * attributes (identity), the schema's room set aside, then as many of the environment's and the
 * tracer's other attributes as fit. 0 ok, -1 if even the identity and the schema did not fit
 * (cannot happen with OTEL_PAYLOAD_MAX: they are a few hundred bytes plus the key map). */
int otel_payload_encode(const struct otel_payload_in *in, uint8_t *buf, size_t cap,
                        struct otel_payload_out *out);

#endif

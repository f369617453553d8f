/* target_pb.h — just enough protobuf to read the OpenTelemetry process context payload
 * (opentelemetry.proto.processcontext.v1development.ProcessContext):
 *   ProcessContext { 1: Resource resource; 2: repeated KeyValue attributes; }
 *   Resource       { 1: repeated KeyValue attributes; ... }
 *   KeyValue       { 1: string key; 2: AnyValue value; }
 *   AnyValue       { oneof: 1 string, 2 bool, 3 int64, 4 double, 5 ArrayValue, 6 KeyValueList,
 *                    7 bytes }
 *   ArrayValue     { 1: repeated AnyValue }      KeyValueList { 1: repeated KeyValue }
 * Unknown fields are skipped, as protobuf requires, so newer writers stay readable. */
#ifndef TARGET_PB_H
#define TARGET_PB_H

#include <stddef.h>
#include <stdint.h>

enum target_pb_kind {
    TARGET_PB_NONE,
    TARGET_PB_STRING,
    TARGET_PB_BOOL,
    TARGET_PB_INT,
    TARGET_PB_DOUBLE,
    TARGET_PB_ARRAY,
    TARGET_PB_KVLIST,
    TARGET_PB_BYTES,
};

struct target_pb_kv;

struct target_pb_value {
    enum target_pb_kind kind;
    char *s; /* STRING, BYTES: len bytes plus a NUL (strings may hold NULs of their own) */
    size_t len;
    int64_t i;
    double d;
    int b;
    struct target_pb_value *items; /* ARRAY */
    size_t nitems;
    struct target_pb_kv *kvs; /* KVLIST */
    size_t nkvs;
};

struct target_pb_kv {
    char *key;
    size_t key_len;
    struct target_pb_value value;
};

struct target_pb_kvs {
    struct target_pb_kv *v;
    size_t n;
};

struct target_process_context {
    int has_resource;
    struct target_pb_kvs resource;
    struct target_pb_kvs attributes;
};

int target_pb_decode_process_context(const uint8_t *buf, size_t len,
                                     struct target_process_context *out, char *err);
void target_pb_free_process_context(struct target_process_context *pc);

/* The value of the first attribute named key, or NULL. */
const struct target_pb_value *target_pb_find(const struct target_pb_kvs *kvs, const char *key);

#endif

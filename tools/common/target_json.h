/* target_json.h — a streaming JSON writer for the tools' machine-readable output. It tracks
 * commas itself, so callers just emit members in order. Strings are escaped per RFC 8259 and
 * bytes that are not valid UTF-8 (a target may publish anything) become U+FFFD, so the output
 * always parses. 64-bit addresses are written as "0x…" strings: JSON numbers beyond 2^53 are
 * not portable. */
#ifndef TARGET_JSON_H
#define TARGET_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define TARGET_JSON_DEPTH 32

struct target_json {
    FILE *f;
    int depth;
    int count[TARGET_JSON_DEPTH]; /* members written so far at each level */
};

void target_json_init(struct target_json *j, FILE *f);
/* key is the member name inside an object, NULL inside an array or at the top. */
void target_json_object(struct target_json *j, const char *key);
void target_json_array(struct target_json *j, const char *key);
void target_json_end_object(struct target_json *j);
void target_json_end_array(struct target_json *j);
void target_json_str(struct target_json *j, const char *key, const char *s);
void target_json_strn(struct target_json *j, const char *key, const char *s, size_t n);
void target_json_int(struct target_json *j, const char *key, int64_t v);
void target_json_uint(struct target_json *j, const char *key, uint64_t v);
void target_json_double(struct target_json *j, const char *key, double v);
void target_json_bool(struct target_json *j, const char *key, int v);
void target_json_null(struct target_json *j, const char *key);
void target_json_hex(struct target_json *j, const char *key, uint64_t v);
/* Writes a JSON string for s (no key, no comma handling): for building detail texts. */
void target_json_write_string(FILE *f, const char *s, size_t n);

#endif

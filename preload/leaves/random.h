/* random.h — random bytes for identifiers that must be unique, not secret (the socket file's
 * name, the accumulator's hash seed, the OpenTelemetry service.instance.id). Never blocks. */
#ifndef PROFLINK_RANDOM_H
#define PROFLINK_RANDOM_H

#include <stddef.h>
#include <stdint.h>

/* Characters of a UUID's text form, without the NUL. */
#define RANDOM_UUID_LEN 36

/* Fills out[0..n) and always succeeds: the kernel's generator when it answers without waiting,
 * else /dev/urandom, else a mix of clocks, pid and addresses. Preserves errno. */
void random_bytes(void *out, size_t n);

/* A random (version 4, RFC 9562 variant) UUID in its 36-character text form, NUL-terminated. */
void random_uuid(char out[RANDOM_UUID_LEN + 1]);

#endif

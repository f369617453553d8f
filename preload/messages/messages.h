/* messages.h — the profiler's datagrams (docs/formats.md) into proflink_message. Pure functions:
 * no I/O, no state, no allocation, so the parser can be fuzzed alone (tests/fuzz/).
 *
 * Layout (native endian): u16 message-type | u16 minor-version | payload
 *   type 1 correlation, minor >= 1: trace-id[16] | transaction-id[8] | stack-trace-id[16] |
 *          u16 count                                   (46 bytes with the header)
 *   type 2 registration, minor 1:  u32 samples-delay-ms  (8 bytes)
 *                        minor >= 2: + utf8-str host-id (u32 length + bytes, 12 + length)
 *
 * Classification:
 *   - shorter than its type and minor require, or under 4 bytes: truncated;
 *   - longer: accepted, the tail ignored (a newer minor adds fields at the end);
 *   - a type we do not know: ignored (unknown);
 *   - minor 0 of a known type: no such version was ever defined, so nothing says what it holds;
 *     it is ignored and counted with the unknown types (a version we do not know), not parsed
 *     as minor 1 and not counted as truncated. */
#ifndef PROFLINK_MESSAGES_H
#define PROFLINK_MESSAGES_H

#include <stddef.h>
#include <stdint.h>

#include "proflink.h"

#define MSG_HEADER_SIZE 4
#define MSG_CORRELATION_SIZE 46
#define MSG_REGISTRATION_V1_SIZE 8
#define MSG_REGISTRATION_V2_MIN 12

enum msg_verdict {
    MSG_VALID,     /* *out is filled (host_id points into buf) */
    MSG_TRUNCATED, /* shorter than its type and minor require */
    MSG_UNKNOWN,   /* a type, or a minor 0, we do not know */
};

enum msg_verdict message_parse(const uint8_t *buf, size_t len, proflink_message *out);

#endif

/* endpoint.h — what names a request's endpoint without its data, for PROFLINK_HTTP_ENDPOINT:
 * the method as OpenTelemetry's http.request.method has it, and a template of the path (the
 * url.template attribute): query and fragment dropped, every segment that is a number, a hex
 * string or a UUID replaced by {id}, bounded, printable ASCII only.
 *
 * Pure: no system calls, no allocation, no global state. */
#ifndef PROFLINK_ENDPOINT_H
#define PROFLINK_ENDPOINT_H

#include <stddef.h>
#include <stdint.h>

/* The longest template written; a longer path is cut after its last whole segment that fits
 * and ends in "/..." so that a reader sees it was cut. */
#define ENDPOINT_TEMPLATE_MAX 128
/* A segment of only hex digits is an id from this length on (and when it holds a digit):
 * shorter ones are words as often as ids ("cafe", "add"). */
#define ENDPOINT_HEX_MIN 8

/* The method's name when it is one of HTTP's registered methods (RFC 9110, PATCH), else
 * "_OTHER" (OpenTelemetry's semantic conventions: unknown methods must not grow cardinality). */
const char *endpoint_method(const uint8_t *m, size_t n);

/* Writes the template of a request target (origin form "/a/b?q", absolute form
 * "http://host/a/b", or "*") to out (ENDPOINT_TEMPLATE_MAX + 1 bytes, NUL-terminated) and
 * returns its length. */
size_t endpoint_template(const uint8_t *target, size_t n, char *out);

#endif

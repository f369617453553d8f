/* base64url.h — the URL-safe base64 alphabet without padding (RFC 4648 §5), the form in which
 * the Elastic spec and Elasticsearch store stack-trace ids: 16 bytes become 22 characters. */
#ifndef PROFLINK_BASE64URL_H
#define PROFLINK_BASE64URL_H

#include <stddef.h>
#include <stdint.h>

/* Characters base64url_encode writes for n input bytes (no padding, no NUL). */
#define BASE64URL_LEN(n) (((n) / 3) * 4 + ((n) % 3 ? (n) % 3 + 1 : 0))
#define STACK_ID_B64_LEN BASE64URL_LEN(16) /* 22 */

/* Writes BASE64URL_LEN(n) characters to out (no NUL). Returns that count. */
size_t base64url_encode(const uint8_t *in, size_t n, char *out);

#endif

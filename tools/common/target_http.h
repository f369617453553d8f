/* target_http.h — whether proflink in a target reads the traceparent of HTTP requests
 * (PROFLINK_HTTP=1): the library's exported flag proflink_http_reading, read from outside. */
#ifndef TARGET_HTTP_H
#define TARGET_HTTP_H

#include "target_attach.h"

#define TARGET_HTTP_SYMBOL "proflink_http_reading"

/* 1 on, 0 off, -1 unknown (no library ELF read yet, a library without the flag, unreadable). */
int target_http_reading(const struct target *t);

#endif

/* message_api.h — state shared between the message-side API (message_api.c: the exported
 * functions of include/proflink.h) and the reader thread: the tracer's message callback, and
 * what the profiler told us (samples-delay-ms, host id, "a profiler is talking to us"). */
#ifndef PROFLINK_MESSAGE_API_H
#define PROFLINK_MESSAGE_API_H

#include <stddef.h>
#include <stdint.h>

#include "proflink.h"

#define DEFAULT_SAMPLES_DELAY_MS 1000
#define HOST_ID_MAX 255 /* bytes kept of a registered host id */

/* The callback in force and its user pointer, read as one consistent pair. */
void message_callback_get(proflink_message_fn *fn, void **user);

/* A valid registration: the new delay and host id (any length; the first HOST_ID_MAX bytes
 * are kept, cut on a UTF-8 boundary). */
void profiler_registered(uint32_t samples_delay_ms, const char *host_id, size_t len);

/* A valid message arrived (auto mode starts deferring from then on). Returns 1 the first
 * time. */
int profiler_mark_seen(void);
int profiler_seen(void);

/* The delay in force, in ms. */
uint32_t profiler_delay_ms(void);

/* pthread_atfork: the locks of this module. A child keeps the callback and what the profiler
 * said (a fact about the host, which the child shares). */
void message_api_fork_prepare(void);
void message_api_fork_parent(void);
void message_api_fork_child(void);

#endif

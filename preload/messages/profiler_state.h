/* profiler_state.h — what the profiler told us (samples-delay-ms, host id, "a profiler is
 * talking to us") and the tracer's message callback: state written by the reader thread (what
 * it received) and by the message-side API (message_api.c: the exported functions), read by
 * both and by the deferral. Its own module so that the reader only reads and dispatches, and
 * no module calls back into the one that calls it. */
#ifndef PROFLINK_PROFILER_STATE_H
#define PROFLINK_PROFILER_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "proflink.h"

#define DEFAULT_SAMPLES_DELAY_MS 1000
/* The longest delay a registration can set; a longer one is cut to it. The spec calls the
 * value "a sane upper bound of the usual time" between a sample and its message reaching us,
 * and says 1 s when none is known; the real profiler sends each burst within its 250 ms
 * reporting interval. A minute is 60 times the spec's default and covers any profiler that is
 * merely slow, while a process of the same user that could write 0xffffffff would otherwise
 * hold every sampled transaction of the tracer for 49.7 days (and the id table keeps keys for
 * 10 times the delay). */
#define SAMPLES_DELAY_MAX_MS 60000
#define HOST_ID_MAX 255 /* bytes kept of a registered host id */

/* Replaces the callback pair (proflink_set_message_callback); never waits for a callback. */
void message_callback_set(proflink_message_fn fn, void *user);
/* The callback in force and its user pointer, read as one consistent pair. */
void message_callback_get(proflink_message_fn *fn, void **user);

/* A valid registration: the new delay (at most SAMPLES_DELAY_MAX_MS is used) and host id (any
 * length; the first HOST_ID_MAX bytes are kept, cut on a UTF-8 boundary). */
void profiler_registered(uint32_t samples_delay_ms, const char *host_id, size_t len);

/* A valid message arrived (auto mode starts deferring from then on). Returns 1 the first
 * time. */
int profiler_mark_seen(void);
int profiler_seen(void);

/* The delay in force, in ms. */
uint32_t profiler_delay_ms(void);

/* The registered host id, NUL-terminated and cut to cap - 1 (proflink_host_id). */
size_t profiler_host_id(char *buf, size_t cap);

/* pthread_atfork: the locks of this module. A child keeps the callback and what the profiler
 * said (a fact about the host, which the child shares). */
void profiler_state_fork_prepare(void);
/* A copy made without fork handlers (fork_sequence_orphan_child): the locks, new again. */
void profiler_state_fork_orphan(void);
void profiler_state_fork_parent(void);
void profiler_state_fork_child(void);

#endif

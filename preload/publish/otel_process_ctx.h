/* otel_process_ctx.h — the OpenTelemetry process context (OTEP 4719, docs/formats.md): a mapping
 * named OTEL_CTX whose 32-byte header points at a protobuf ProcessContext describing this process
 * (resource attributes, plus the thread-context schema of OTEP 4947 in the extra attributes),
 * found by out-of-process readers such as the OpenTelemetry eBPF profiler through /proc/PID/maps.
 * The payload is encoded by otel_payload.c.
 *
 * None of these functions is meant to be called concurrently with another of them: a call that
 * finds one already running returns -1 without waiting. All of them preserve errno and never
 * abort. With cfg->otel_context == 0 they do nothing and return 0. */
#ifndef PROFLINK_OTEL_PROCESS_CTX_H
#define PROFLINK_OTEL_PROCESS_CTX_H

#include <stddef.h>

struct config; /* config.h */

/* Create the OTEL_CTX mapping and publish the payload for this process (with a new random
 * service.instance.id). If this process already published one, republishes it in place
 * (otel_process_ctx_update). 0 ok, -1 failed (logged once, nothing left mapped). */
int otel_process_ctx_publish(const struct config *cfg);

/* In a fork child (the fork sequence's child step, single-threaded): the parent's mapping is
 * gone (MADV_DONTFORK); publish a new one with a NEW service.instance.id. When the parent had
 * published, the child reuses the parent's encoded payload and only replaces the instance id
 * (no new encoding, no re-read of the environment). 0 ok, -1 failed. */
int otel_process_ctx_after_fork(const struct config *cfg);

/* Republish the payload in place (same mapping, same service.instance.id, attributes re-read
 * from cfg and OTEL_RESOURCE_ATTRIBUTES) with the update protocol: timestamp 0, fence, swap the
 * payload, fence, new strictly greater timestamp, prctl again. Publishes from scratch if this
 * process has no context yet. 0 ok, -1 failed (the previous context, if any, stays valid). */
int otel_process_ctx_update(const struct config *cfg);

/* Sets threadlocal.attribute_key_map to keys[0..n) and, if this process has published its
 * context, republishes it with the update protocol before returning: a thread record may use
 * index n-1 only after this returned 0. The array is kept by pointer, not copied: the caller
 * keeps it alive and only ever appends to it (OTEP 4947: indices are never reused or
 * reordered). Waits a bounded time for a publication in progress on another thread. Not
 * async-signal-safe. 0 ok, -1 failed (then the previous map stays published and in force). */
int otel_process_ctx_set_key_map(const struct config *cfg, const char *const *keys, size_t n);

/* The tracer's resource (proflink_set_resource): attributes in OTEL_RESOURCE_ATTRIBUTES syntax
 * that replace proflink's defaults for the keys they name (service.*, service.instance.id,
 * telemetry.sdk.*, ...) and the environment's for the others; kept (copied) for every later
 * publication, and republished now with the update protocol. 0 ok, -1 failed (the previous
 * context and attributes stay). */
int otel_process_ctx_set_tracer_attrs(const struct config *cfg, const char *attrs);

/* 1 when addr is the start of this process's OTEL_CTX mapping. Any thread, never blocks. */
int otel_process_ctx_is_ours(const void *addr);

/* Another publisher of the process context in this process (otel_ctx_watch.h): the OTEP allows
 * one, so ours is withdrawn (timestamp 0, then unmapped) and nothing is published again in this
 * image. 1 the first time, 0 after. */
int otel_process_ctx_withdraw(void);

#endif

/* attr_keys.h — the thread-attribute key names of this process: OTEP 4947's
 * threadlocal.attribute_key_map, published in the OTel process context. Append-only: a key's
 * index (its position) never changes and is never reused, at most ATTR_KEYS_MAX keys, index 0
 * is local_root_span_id. A fork child keeps the parent's keys (plain process memory). */
#ifndef PROFLINK_ATTR_KEYS_H
#define PROFLINK_ATTR_KEYS_H

#include <stddef.h>

struct config;

/* The record's key index is a u8. */
#define ATTR_KEYS_MAX 256
/* A key name's bytes: 256 of them must fit the process context payload with the resource. */
#define ATTR_KEY_NAME_MAX 128

/* Negative results of attr_key_index (the values of proflink.h's PROFLINK_ATTR_*). */
#define ATTR_KEY_INVALID (-2)
#define ATTR_KEY_FULL (-4)
#define ATTR_KEY_BUSY (-5)

/* Registers local_root_span_id and the keys of PROFLINK_THREAD_ATTRIBUTES, encodes the latter's
 * values as the fixed attributes of every thread record (thread_records_set_fixed), and gives
 * the map to the process context. Call at start-up, before the process context is published
 * and before any thread record is made. Invalid members are skipped with a warning. */
void attr_keys_init(const struct config *cfg);

/* The index of key (len bytes, not NUL-terminated), or -1 when it is not registered. Lock-free
 * and allocation-free: safe on the hot path and in signal handlers. */
int attr_key_find(const char *key, size_t len);

/* The index of key, registering it if new: the process context is republished with the longer
 * map (update protocol) before the index is returned, so no record uses an index a fresh
 * reader could not resolve. Takes a lock only when registering (bounded wait, never blocks for
 * good): not async-signal-safe then. ATTR_KEY_INVALID (empty, longer than ATTR_KEY_NAME_MAX,
 * not UTF-8, NUL inside), ATTR_KEY_FULL, ATTR_KEY_BUSY (republishing failed or contended). */
int attr_key_index(const char *key, size_t len);

/* The fork sequence (fork_sequence.c): the registration lock. */
void attr_keys_fork_prepare(void);
/* A copy made without fork handlers (fork_sequence_orphan_child): the locks, new again. */
void attr_keys_fork_orphan(void);
void attr_keys_fork_parent(void);
void attr_keys_fork_child(void);

#endif

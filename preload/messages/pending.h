/* pending.h — the messages received and not yet delivered: a ring with one producer, the
 * intake thread (receiver.h), and one consumer, the reader thread (deliverer.c), and the two sleeps
 * that go with it (the reader waiting for work, the intake waiting for room).
 *
 * Bounded (PENDING_MAX messages): when it is full, the intake stops receiving until the reader
 * has delivered some, and the kernel keeps what arrives meanwhile, as it would for any
 * receiver. A registration's host id lives in the datagram, which the intake reuses for the
 * next batch, so each pending registration keeps its host id in a slot of a smaller pool
 * (PENDING_HOSTS); the room offered to the intake counts both. */
#ifndef PROFLINK_PENDING_H
#define PROFLINK_PENDING_H

#include <stddef.h>
#include <stdint.h>

#include "proflink.h"

/* Enough for a whole profiler burst received while the tracer's callback or a FIFO consumer
 * catches up (1000 in bench/intake.c); 48 KiB of bss, touched only as used. A power of two. */
#define PENDING_MAX 1024u
/* Host ids of pending registrations: the profiler sends one registration per process now and
 * then, so a few suffice; at least one receive batch (the intake asks for no more room). */
#define PENDING_HOSTS 32u
/* Room for the longest host id: a host id is never longer than the datagram that carries it
 * (RECV_MAX in receiver.c, which checks this bound at compile time). */
#define PENDING_HOST_MAX 1024u

/* ---- the intake thread (producer) ---- */
/* How many messages may be added now (at most max): both the ring and the host pool have room. */
unsigned pending_room(unsigned max);
/* The i-th free slot (i < the room just returned). */
proflink_message *pending_slot(unsigned i);
/* Keeps a host id (len <= PENDING_HOST_MAX) for a registration about to be published; returns
 * where it is kept now. At most one per slot handed out. */
const char *pending_keep_host(const char *host, size_t len);
/* Hands the next n slots to the reader, and wakes it if it sleeps. */
void pending_publish(unsigned n);
/* Sleeps until there is room (the reader never ends while the intake runs). */
void pending_wait_room(void);

/* ---- the reader thread (consumer) ---- */
unsigned pending_count(void);
const proflink_message *pending_at(unsigned i); /* i < pending_count() */
/* The oldest n are delivered: their slots (and host ids) go back to the intake. */
void pending_consume(unsigned n);
/* How many messages were ever published: unchanged over a wait means nothing arrived. */
uint32_t pending_published(void);
/* The reader's sleep: prepare, check everything it waits for, then wait or cancel (wakeup.h).
 * Woken by pending_publish and by pending_wake_reader. */
uint32_t pending_reader_prepare(void);
void pending_reader_wait(uint32_t seen, int64_t timeout_ns);
void pending_reader_cancel(void);

/* Any thread, async-signal-safe: the reader has something else to do (a transaction to hold,
 * the intake ended). */
void pending_wake_reader(void);

/* A fork child: nothing pending, nobody waiting. */
void pending_reset(void);

#endif

/* pending.c — the ring between the intake thread and the reader thread (pending.h).
 *
 * Single producer, single consumer, no lock: the intake owns `tail` (and host_tail), the
 * reader owns `head` (and host_head). Each writes its own index with release after writing the
 * slots it hands over, and reads the other's with acquire before touching a slot the other
 * handed over: the reader sees a whole message, the intake never overwrites one the reader is
 * still delivering. Indices are free-running unsigned counters (wrap-around subtraction). */
#include "pending.h"

#include <stdatomic.h>
#include <string.h>

#include "leaves/wakeup.h"

_Static_assert((PENDING_MAX & (PENDING_MAX - 1)) == 0, "PENDING_MAX is a power of two");

static proflink_message ring[PENDING_MAX];
static _Atomic unsigned head, tail;
static char hosts[PENDING_HOSTS][PENDING_HOST_MAX];
static _Atomic unsigned host_head, host_tail;
static unsigned host_next; /* intake only: host_tail plus the host ids kept but not published */
static unsigned char has_host[PENDING_MAX]; /* per slot: it holds a kept host id */
static struct wakeup reader_wake, room_wake;

unsigned pending_room(unsigned max)
{
    unsigned t = atomic_load_explicit(&tail, memory_order_relaxed);
    unsigned room = PENDING_MAX - (t - atomic_load_explicit(&head, memory_order_acquire));
    unsigned h = atomic_load_explicit(&host_tail, memory_order_relaxed);
    unsigned hroom = PENDING_HOSTS - (h - atomic_load_explicit(&host_head, memory_order_acquire));
    if (hroom < room)
        room = hroom;
    host_next = h;
    return room < max ? room : max;
}

proflink_message *pending_slot(unsigned i)
{
    return &ring[(atomic_load_explicit(&tail, memory_order_relaxed) + i) & (PENDING_MAX - 1)];
}

const char *pending_keep_host(const char *host, size_t len)
{
    char *slot = hosts[host_next++ % PENDING_HOSTS];
    memcpy(slot, host, len < PENDING_HOST_MAX ? len : PENDING_HOST_MAX);
    return slot;
}

void pending_publish(unsigned n)
{
    if (!n)
        return;
    unsigned t = atomic_load_explicit(&tail, memory_order_relaxed);
    /* which of the n carry a kept host id: the reader gives those slots back in order */
    for (unsigned i = 0; i < n; i++) {
        const proflink_message *m = &ring[(t + i) & (PENDING_MAX - 1)];
        has_host[(t + i) & (PENDING_MAX - 1)] =
            m->type == PROFLINK_MSG_REGISTRATION && m->u.registration.host_id;
    }
    atomic_store_explicit(&host_tail, host_next, memory_order_release);
    atomic_store_explicit(&tail, t + n, memory_order_release);
    wakeup_signal(&reader_wake);
}

void pending_wait_room(void)
{
    uint32_t seen = wakeup_prepare(&room_wake);
    if (pending_room(1))
        wakeup_cancel(&room_wake);
    else
        wakeup_wait(&room_wake, seen, -1);
}

unsigned pending_count(void)
{
    return atomic_load_explicit(&tail, memory_order_acquire) -
           atomic_load_explicit(&head, memory_order_relaxed);
}

const proflink_message *pending_at(unsigned i)
{
    return &ring[(atomic_load_explicit(&head, memory_order_relaxed) + i) & (PENDING_MAX - 1)];
}

void pending_consume(unsigned n)
{
    unsigned h = atomic_load_explicit(&head, memory_order_relaxed);
    unsigned hosts_done = 0; /* host ids are kept and given back in the order of the ring */
    for (unsigned i = 0; i < n; i++)
        hosts_done += has_host[(h + i) & (PENDING_MAX - 1)];
    if (hosts_done)
        atomic_fetch_add_explicit(&host_head, hosts_done, memory_order_release);
    atomic_store_explicit(&head, h + n, memory_order_release);
    wakeup_signal(&room_wake);
}

uint32_t pending_published(void) { return atomic_load_explicit(&tail, memory_order_relaxed); }

uint32_t pending_reader_prepare(void) { return wakeup_prepare(&reader_wake); }
void pending_reader_wait(uint32_t seen, int64_t timeout_ns)
{
    wakeup_wait(&reader_wake, seen, timeout_ns);
}
void pending_reader_cancel(void) { wakeup_cancel(&reader_wake); }
void pending_wake_reader(void) { wakeup_signal(&reader_wake); }

void pending_reset(void)
{
    atomic_store_explicit(&head, 0, memory_order_relaxed);
    atomic_store_explicit(&tail, 0, memory_order_relaxed);
    atomic_store_explicit(&host_head, 0, memory_order_relaxed);
    atomic_store_explicit(&host_tail, 0, memory_order_relaxed);
    wakeup_reset(&reader_wake);
    wakeup_reset(&room_wake);
}

/* txqueue.c — see txqueue.h.
 *
 * Each cell has a sequence number s. With p a position and i = p % cap its cell, the cell is
 * free for the producer of p when s == 2p, holds p's item when s == 2p + 1, and is freed by the
 * consumer for the next lap with s = 2(p + cap). The factor 2 keeps "holds p" (2p + 1) apart
 * from "free for p + cap" (2p + 2cap) at every capacity: with s = p / p + 1 / p + cap, as in the
 * textbook ring, a capacity of 1 made a full cell look free to the next producer, which then
 * overwrote the item the consumer was waiting for (nothing was ever delivered again).
 * The value stored is s - 2i, so that all-zero memory is the initial state (s == 2i) and the
 * ring costs no page until it is used. */
#include "txqueue.h"

#include <stdlib.h>
#include <string.h>

struct txq_cell {
    _Atomic uint64_t seq; /* s - 2i, see above */
    struct txq_item item;
};

int txq_init(struct txqueue *q, uint32_t cap)
{
    q->cap = cap ? cap : 1;
    q->cells = calloc(q->cap, sizeof *q->cells);
    atomic_init(&q->head, 0);
    atomic_init(&q->tail, 0);
    return q->cells ? 0 : -1;
}

void txq_free(struct txqueue *q)
{
    free(q->cells);
    q->cells = NULL;
}

static inline uint64_t cell_seq(const struct txq_cell *c, uint64_t i)
{
    return atomic_load_explicit(&c->seq, memory_order_acquire) + 2 * i;
}

int txq_push(struct txqueue *q, const struct txq_item *item, int *wake)
{
    *wake = 0;
    uint64_t pos = atomic_load_explicit(&q->head, memory_order_relaxed);
    struct txq_cell *c;
    for (;;) {
        uint64_t i = pos % q->cap;
        c = &q->cells[i];
        int64_t diff = (int64_t)(cell_seq(c, i) - 2 * pos);
        if (diff == 0) {
            if (atomic_compare_exchange_weak_explicit(&q->head, &pos, pos + 1,
                                                      memory_order_relaxed, memory_order_relaxed))
                break;
        } else if (diff < 0) {
            return 0; /* a consumer has not freed this cell: full */
        } else {
            pos = atomic_load_explicit(&q->head, memory_order_relaxed);
        }
    }
    c->item = *item;
    atomic_store_explicit(&c->seq, 2 * pos + 1 - 2 * (pos % q->cap), memory_order_release);
    /* Store then load, against the consumer's tail store then cell load (txq_take): with a
     * full fence on both sides, either the consumer sees this item or we see that it is
     * waiting at exactly our position, and wake it. */
    atomic_thread_fence(memory_order_seq_cst);
    *wake = atomic_load_explicit(&q->tail, memory_order_relaxed) == pos;
    return 1;
}

int txq_take(struct txqueue *q, uint64_t max_end_ns, struct txq_item *out, uint64_t *head_end_ns)
{
    uint64_t pos = atomic_load_explicit(&q->tail, memory_order_relaxed);
    for (;;) {
        uint64_t i = pos % q->cap;
        struct txq_cell *c = &q->cells[i];
        atomic_thread_fence(memory_order_seq_cst);
        int64_t diff = (int64_t)(cell_seq(c, i) - (2 * pos + 1));
        if (diff < 0)
            return TXQ_EMPTY; /* not published yet: its producer wakes the reader */
        if (diff > 0) { /* another consumer took pos */
            pos = atomic_load_explicit(&q->tail, memory_order_relaxed);
            continue;
        }
        /* The copy precedes the claim: if another consumer claims pos first (the CAS fails),
         * what was copied is discarded; once claimed, the cell cannot be rewritten before we
         * free it below, so the copy is the item. */
        *out = c->item;
        if (out->end_ns > max_end_ns) {
            *head_end_ns = out->end_ns;
            return TXQ_NOT_DUE;
        }
        if (atomic_compare_exchange_weak_explicit(&q->tail, &pos, pos + 1, memory_order_relaxed,
                                                  memory_order_relaxed)) {
            atomic_store_explicit(&c->seq, 2 * (pos + q->cap) - 2 * i, memory_order_release);
            return TXQ_TAKEN;
        }
    }
}

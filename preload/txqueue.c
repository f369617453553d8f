/* txqueue.c — see txqueue.h.
 *
 * Each cell has a sequence number s. With p a position and i = p % cap its cell, the cell is
 * free for the producer of p when s == p, holds p's item when s == p + 1, and is freed by the
 * consumer for the next lap with s = p + cap. The value stored is s - i, so that all-zero
 * memory is the initial state (s == i) and the ring costs no page until it is used. */
#include "txqueue.h"

#include <stdlib.h>
#include <string.h>

struct txq_cell {
    _Atomic uint64_t seq; /* s - i, see above */
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

int txq_push(struct txqueue *q, const struct txq_item *item, int *wake)
{
    *wake = 0;
    uint64_t pos = atomic_load_explicit(&q->head, memory_order_relaxed);
    struct txq_cell *c;
    for (;;) {
        uint64_t i = pos % q->cap;
        c = &q->cells[i];
        uint64_t s = atomic_load_explicit(&c->seq, memory_order_acquire) + i;
        int64_t diff = (int64_t)(s - pos);
        if (diff == 0) {
            if (atomic_compare_exchange_weak_explicit(&q->head, &pos, pos + 1,
                                                      memory_order_relaxed, memory_order_relaxed))
                break;
        } else if (diff < 0) {
            return 0; /* the consumer has not freed this cell: full */
        } else {
            pos = atomic_load_explicit(&q->head, memory_order_relaxed);
        }
    }
    c->item = *item;
    atomic_store_explicit(&c->seq, pos + 1 - pos % q->cap, memory_order_release);
    /* Store then load, against the consumer's tail store then cell load (txq_pop, txq_peek):
     * with a full fence on both sides, either the consumer sees this item or we see that it is
     * waiting at exactly our position, and wake it. */
    atomic_thread_fence(memory_order_seq_cst);
    *wake = atomic_load_explicit(&q->tail, memory_order_relaxed) == pos;
    return 1;
}

const struct txq_item *txq_peek(struct txqueue *q)
{
    uint64_t pos = atomic_load_explicit(&q->tail, memory_order_relaxed);
    uint64_t i = pos % q->cap;
    struct txq_cell *c = &q->cells[i];
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&c->seq, memory_order_acquire) + i != pos + 1)
        return NULL;
    return &c->item;
}

void txq_pop(struct txqueue *q)
{
    uint64_t pos = atomic_load_explicit(&q->tail, memory_order_relaxed);
    uint64_t i = pos % q->cap;
    atomic_store_explicit(&q->cells[i].seq, pos + q->cap - i, memory_order_release);
    atomic_store_explicit(&q->tail, pos + 1, memory_order_relaxed);
}

/* accum.c — see accum.h. Keys live in an entry pool with stable indices, found through an
 * open-addressing table of indices (linear probing, backward-shift deletion: no tombstones, so
 * lookups stay short however many keys come and go). Each entry has a singly linked list of
 * {stack id, count} nodes from a shared pool, and sits on a doubly linked LRU list. Indices are
 * 1-based so that zero-filled memory is the empty state. */
#include "accum.h"

#include <stdlib.h>
#include <string.h>

#include "leaves/random.h"

struct accum_entry {
    uint8_t trace_id[16];
    uint8_t transaction_id[8];
    uint64_t last_ns;
    uint32_t hash;
    uint32_t head; /* first node, 0 = none */
    uint32_t n_ids;
    uint32_t prev, next; /* LRU list; next doubles as the free-list link */
};

struct accum_node {
    uint8_t stack_id[16];
    uint32_t count;
    uint32_t next; /* next node of the same entry, or of the free list */
};

#define E(a, i) (&(a)->entries[(i) - 1])
#define N(a, i) (&(a)->nodes[(i) - 1])

int accum_init(struct accum *a, const struct accum_limits *lim)
{
    memset(a, 0, sizeof *a);
    a->lim = *lim;
    uint32_t slots = 2;
    while (slots < 2 * lim->max_keys) /* load factor <= 1/2 */
        slots <<= 1;
    a->mask = slots - 1;
    random_bytes(&a->seed, sizeof a->seed);
    a->slots = calloc(slots, sizeof *a->slots);
    a->entries = calloc(lim->max_keys, sizeof *a->entries);
    a->nodes = calloc(lim->max_ids, sizeof *a->nodes);
    if (!a->slots || !a->entries || !a->nodes) {
        accum_free(a);
        return -1;
    }
    return 0;
}

void accum_free(struct accum *a)
{
    free(a->slots);
    free(a->entries);
    free(a->nodes);
    memset(a, 0, sizeof *a);
}

/* The ids are random already; the seed keeps a crafted set of keys from piling up in one run
 * of slots (the table stays correct either way, only slower). */
static uint32_t key_hash(const struct accum *a, const uint8_t trace_id[16],
                         const uint8_t transaction_id[8])
{
    uint64_t t0, t1, x;
    memcpy(&t0, trace_id, 8);
    memcpy(&t1, trace_id + 8, 8);
    memcpy(&x, transaction_id, 8);
    uint64_t h = (x ^ a->seed) * 0x9E3779B97F4A7C15ull;
    h ^= (t0 + (h >> 29)) * 0xBF58476D1CE4E5B9ull;
    h ^= (t1 + (h >> 31)) * 0x94D049BB133111EBull;
    return (uint32_t)(h >> 32) ^ (uint32_t)h;
}

static int key_equal(const struct accum_entry *e, const uint8_t trace_id[16],
                     const uint8_t transaction_id[8])
{
    return memcmp(e->transaction_id, transaction_id, 8) == 0 &&
           memcmp(e->trace_id, trace_id, 16) == 0;
}

/* Slot holding the key, or the empty slot where it would go; *found says which. */
static uint32_t find_slot(const struct accum *a, uint32_t hash, const uint8_t trace_id[16],
                          const uint8_t transaction_id[8], int *found)
{
    uint32_t s = hash & a->mask;
    for (;;) {
        uint32_t ei = a->slots[s];
        if (!ei) {
            *found = 0;
            return s;
        }
        const struct accum_entry *e = E(a, ei);
        if (e->hash == hash && key_equal(e, trace_id, transaction_id)) {
            *found = 1;
            return s;
        }
        s = (s + 1) & a->mask;
    }
}

static void lru_unlink(struct accum *a, uint32_t ei)
{
    struct accum_entry *e = E(a, ei);
    if (e->prev)
        E(a, e->prev)->next = e->next;
    else
        a->lru_head = e->next;
    if (e->next)
        E(a, e->next)->prev = e->prev;
    else
        a->lru_tail = e->prev;
    e->prev = e->next = 0;
}

static void lru_append(struct accum *a, uint32_t ei)
{
    struct accum_entry *e = E(a, ei);
    e->prev = a->lru_tail;
    e->next = 0;
    if (a->lru_tail)
        E(a, a->lru_tail)->next = ei;
    else
        a->lru_head = ei;
    a->lru_tail = ei;
}

/* Empties slot s and shifts back the entries of its probe run that may fill it. */
static void slot_delete(struct accum *a, uint32_t s)
{
    uint32_t hole = s, j = s;
    for (;;) {
        j = (j + 1) & a->mask;
        uint32_t ei = a->slots[j];
        if (!ei)
            break;
        uint32_t home = E(a, ei)->hash & a->mask;
        /* the entry at j may move to hole iff its home is not in (hole, j] cyclically */
        int stays = hole < j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (!stays) {
            a->slots[hole] = ei;
            hole = j;
        }
    }
    a->slots[hole] = 0;
}

/* Removes entry ei (found at slot s) with its nodes. Returns the samples it held. */
static uint64_t entry_remove(struct accum *a, uint32_t ei, uint32_t s)
{
    struct accum_entry *e = E(a, ei);
    uint64_t samples = 0;
    uint32_t ni = e->head;
    while (ni) {
        struct accum_node *n = N(a, ni);
        uint32_t next = n->next;
        samples += n->count;
        n->next = a->node_free;
        a->node_free = ni;
        a->n_nodes--;
        ni = next;
    }
    slot_delete(a, s);
    lru_unlink(a, ei);
    e->head = e->n_ids = 0;
    e->next = a->entry_free;
    a->entry_free = ei;
    a->n_keys--;
    return samples;
}

static uint64_t evict(struct accum *a, uint32_t ei)
{
    struct accum_entry *e = E(a, ei);
    int found;
    uint32_t s = find_slot(a, e->hash, e->trace_id, e->transaction_id, &found);
    return found ? entry_remove(a, ei, s) : 0;
}

static uint32_t entry_alloc(struct accum *a)
{
    if (a->entry_free) {
        uint32_t ei = a->entry_free;
        a->entry_free = E(a, ei)->next;
        return ei;
    }
    return a->entry_bump < a->lim.max_keys ? ++a->entry_bump : 0;
}

static uint32_t node_alloc(struct accum *a)
{
    if (a->node_free) {
        uint32_t ni = a->node_free;
        a->node_free = N(a, ni)->next;
        return ni;
    }
    return a->node_bump < a->lim.max_ids ? ++a->node_bump : 0;
}

uint64_t accum_add(struct accum *a, const uint8_t trace_id[16], const uint8_t transaction_id[8],
                   const uint8_t stack_id[16], uint32_t count, uint64_t now_ns)
{
    uint64_t evicted = 0;
    if (!a->entries || count == 0)
        return 0;
    uint32_t hash = key_hash(a, trace_id, transaction_id);
    int found;
    uint32_t s = find_slot(a, hash, trace_id, transaction_id, &found);
    uint32_t ei;
    if (found) {
        ei = a->slots[s];
        lru_unlink(a, ei);
    } else {
        if (a->n_keys >= a->lim.max_keys) {
            evicted += evict(a, a->lru_head);
            s = find_slot(a, hash, trace_id, transaction_id, &found); /* slots moved */
        }
        ei = entry_alloc(a);
        if (!ei)
            return evicted + count; /* unreachable: a key was just freed */
        struct accum_entry *e = E(a, ei);
        memcpy(e->trace_id, trace_id, 16);
        memcpy(e->transaction_id, transaction_id, 8);
        e->hash = hash;
        e->head = e->n_ids = 0;
        a->slots[s] = ei;
        a->n_keys++;
    }
    struct accum_entry *e = E(a, ei);
    e->last_ns = now_ns;
    lru_append(a, ei); /* most recently updated: the last to be evicted */

    for (uint32_t ni = e->head; ni; ni = N(a, ni)->next) {
        struct accum_node *n = N(a, ni);
        if (memcmp(n->stack_id, stack_id, 16) == 0) {
            n->count = n->count > UINT32_MAX - count ? UINT32_MAX : n->count + count;
            return evicted;
        }
    }
    if (e->n_ids >= a->lim.max_ids_per_key)
        return evicted + count;
    while (a->n_nodes >= a->lim.max_ids && a->lru_head != ei)
        evicted += evict(a, a->lru_head);
    uint32_t ni = a->n_nodes < a->lim.max_ids ? node_alloc(a) : 0;
    if (!ni)
        return evicted + count;
    struct accum_node *n = N(a, ni);
    memcpy(n->stack_id, stack_id, 16);
    n->count = count;
    n->next = e->head;
    e->head = ni;
    e->n_ids++;
    a->n_nodes++;
    return evicted;
}

size_t accum_count(const struct accum *a, const uint8_t trace_id[16],
                   const uint8_t transaction_id[8])
{
    if (!a->entries || !a->n_keys)
        return 0;
    int found;
    uint32_t s = find_slot(a, key_hash(a, trace_id, transaction_id), trace_id, transaction_id,
                           &found);
    return found ? E(a, a->slots[s])->n_ids : 0;
}

size_t accum_take(struct accum *a, const uint8_t trace_id[16], const uint8_t transaction_id[8],
                  proflink_stack_count *out, size_t cap, uint64_t *evicted)
{
    *evicted = 0;
    if (!a->entries || !a->n_keys)
        return 0;
    int found;
    uint32_t s = find_slot(a, key_hash(a, trace_id, transaction_id), trace_id, transaction_id,
                           &found);
    if (!found)
        return 0;
    uint32_t ei = a->slots[s];
    size_t n = 0;
    uint64_t all = 0;
    for (uint32_t ni = E(a, ei)->head; ni; ni = N(a, ni)->next) {
        const struct accum_node *node = N(a, ni);
        all += node->count;
        if (n < cap) {
            memcpy(out[n].stack_trace_id, node->stack_id, 16);
            out[n].count = node->count;
            all -= node->count;
            n++;
        }
    }
    entry_remove(a, ei, s);
    *evicted = all;
    return n;
}

uint64_t accum_expire(struct accum *a, uint64_t cutoff_ns)
{
    uint64_t evicted = 0;
    while (a->lru_head && E(a, a->lru_head)->last_ns < cutoff_ns)
        evicted += evict(a, a->lru_head);
    return evicted;
}

/* agent_unwind.c — see agent_unwind.h. */
#include "agent_unwind.h"

#include <stdlib.h>
#include <string.h>

#include <libunwind-ptrace.h>

#include "common/target_util.h"

int agent_unwinder_init(struct agent_unwinder *u, char *err)
{
    memset(u, 0, sizeof *u);
    u->as = unw_create_addr_space(&_UPT_accessors, 0);
    if (!u->as)
        return target_fail(err, "libunwind: cannot create an address space");
    unw_set_caching_policy(u->as, UNW_CACHE_GLOBAL);
    return 0;
}

void agent_unwinder_free(struct agent_unwinder *u)
{
    for (size_t i = 0; i < u->n; i++)
        if (u->v[i].upt)
            _UPT_destroy(u->v[i].upt);
    free(u->v);
    if (u->as)
        unw_destroy_addr_space(u->as);
    memset(u, 0, sizeof *u);
}

void *agent_unwinder_context(struct agent_unwinder *u, pid_t tid)
{
    for (size_t i = 0; i < u->n; i++)
        if (u->v[i].tid == tid)
            return u->v[i].upt;
    if (u->n == u->cap) {
        size_t cap = u->cap ? u->cap * 2 : 16;
        struct agent_upt *nv = realloc(u->v, cap * sizeof *nv);
        if (!nv)
            return NULL;
        u->v = nv;
        u->cap = cap;
    }
    void *upt = _UPT_create(tid);
    if (!upt)
        return NULL;
    u->v[u->n].tid = tid;
    u->v[u->n].upt = upt;
    u->n++;
    return upt;
}

void agent_unwinder_set_vdso(struct agent_unwinder *u, uint64_t start, uint64_t end)
{
    u->vdso_start = start;
    u->vdso_end = end;
}

int agent_unwind(struct agent_unwinder *u, pid_t tid, struct agent_stack *out)
{
    out->n = 0;
    void *upt = agent_unwinder_context(u, tid);
    if (!upt)
        return -1;
    unw_cursor_t c;
    if (unw_init_remote(&c, u->as, upt) < 0)
        return -1;
    do {
        unw_word_t ip;
        if (unw_get_reg(&c, UNW_REG_IP, &ip) < 0 || ip == 0)
            break;
        if (out->n == 0 && ip >= u->vdso_start && ip < u->vdso_end)
            return AGENT_UNWIND_IN_VDSO;
        out->ip[out->n++] = ip;
    } while (out->n < AGENT_MAX_FRAMES && unw_step(&c) > 0);
    if (out->n == 0)
        return -1;
    agent_stack_hash(out->ip, out->n, out->id);
    return 0;
}

static uint64_t avalanche(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

void agent_stack_hash(const uint64_t *ip, size_t n, uint8_t id[16])
{
    const uint64_t prime = 0x100000001b3ULL;
    uint64_t a = 0xcbf29ce484222325ULL; /* FNV-1a offset basis */
    uint64_t b = 0x9e3779b97f4a7c15ULL; /* a different seed, and frames fed in reverse */
    for (size_t i = 0; i < n; i++) {
        uint64_t x = ip[i], y = ip[n - 1 - i];
        for (int k = 0; k < 8; k++) {
            a = (a ^ ((x >> (8 * k)) & 0xff)) * prime;
            b = (b ^ ((y >> (8 * (7 - k))) & 0xff)) * prime;
        }
    }
    a = avalanche(a ^ n);
    b = avalanche(b ^ a);
    for (int k = 0; k < 8; k++) {
        id[k] = (uint8_t)(a >> (56 - 8 * k));
        id[8 + k] = (uint8_t)(b >> (56 - 8 * k));
    }
}

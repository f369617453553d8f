/* target_libc_threads.c — see target_libc_threads.h. */
#include "target_libc_threads.h"

#include <stdlib.h>
#include <string.h>

#include "target_elf.h"
#include "target_util.h"

/* A list that is being changed while we read it could, in theory, lead us in circles: no
 * process has more threads than this. */
#define MAX_LISTED_THREADS 1000000

struct loaded {
    struct target_elf elf;
    uint64_t bias;
    int open;
};

static int has_base_name(const char *path, const char *prefix)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    return strncmp(base, prefix, strlen(prefix)) == 0;
}

/* Opens the first executable mapping whose file name starts with one of the prefixes. */
static int open_lib(pid_t pid, const struct target_maps *maps, const char *const *prefixes,
                    struct loaded *l, char *err)
{
    for (size_t i = 0; i < maps->n; i++) {
        const struct target_mapping *m = &maps->v[i];
        if (!target_mapping_exec(m) || !m->path[0])
            continue;
        for (const char *const *p = prefixes; *p; p++) {
            if (!has_base_name(m->path, *p))
                continue;
            if (target_elf_open_mapping(&l->elf, pid, m, err) != 0)
                return -1;
            l->open = 1;
            return target_elf_bias(&l->elf, m, &l->bias, err);
        }
    }
    return target_fail(err, "no %s mapping (not a dynamically linked glibc program)", prefixes[0]);
}

/* A libthread_db descriptor: 3 u32 {bits, count, offset} (a struct field), or 1 u32 (a size). */
static int read_desc(const struct loaded *l, const struct target_mem *mem, const char *name,
                     uint32_t *words, size_t nwords, char *err)
{
    struct target_sym sym;
    char why[TARGET_ERRLEN];
    if (target_elf_lookup(&l->elf, name, &sym, why) != 0)
        return target_fail(err, "libc has no %s (%s)", name, why);
    return target_mem_read(mem, l->bias + sym.value, words, nwords * sizeof *words, err);
}

static int push(struct target_libc_thread **v, size_t *n, size_t *cap, pid_t tid, uint64_t tp)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        struct target_libc_thread *nv = realloc(*v, nc * sizeof *nv);
        if (!nv)
            return -1;
        *v = nv;
        *cap = nc;
    }
    (*v)[(*n)++] = (struct target_libc_thread){tid, tp};
    return 0;
}

int target_libc_threads(pid_t pid, const struct target_maps *maps, const struct target_mem *mem,
                        struct target_libc_thread **out, size_t *n, char *err)
{
    static const char *const libc_names[] = {"libc.so.6", "libc-2.", NULL};
    static const char *const ld_names[] = {"ld-linux", "ld64.so", NULL};
    struct loaded libc = {0}, ld = {0};
    *out = NULL;
    *n = 0;
    int rc = -1;
    uint32_t used[3], user[3], list[3], tid[3], next[3], size_pthread = 0;
    struct target_sym rtld;
    char why[TARGET_ERRLEN];
    if (open_lib(pid, maps, libc_names, &libc, err) != 0 ||
        open_lib(pid, maps, ld_names, &ld, err) != 0)
        goto out;
    if (read_desc(&libc, mem, "_thread_db_rtld_global__dl_stack_used", used, 3, err) ||
        read_desc(&libc, mem, "_thread_db_rtld_global__dl_stack_user", user, 3, err) ||
        read_desc(&libc, mem, "_thread_db_pthread_list", list, 3, err) ||
        read_desc(&libc, mem, "_thread_db_pthread_tid", tid, 3, err) ||
        read_desc(&libc, mem, "_thread_db_list_t_next", next, 3, err))
        goto out;
#if defined(__aarch64__)
    if (read_desc(&libc, mem, "_thread_db_sizeof_pthread", &size_pthread, 1, err))
        goto out;
#endif
    if (target_elf_lookup(&ld.elf, "_rtld_global", &rtld, why) != 0) {
        target_fail(err, "ld.so has no _rtld_global (%s)", why);
        goto out;
    }
    size_t cap = 0;
    const uint32_t *heads[2] = {used, user};
    for (int h = 0; h < 2; h++) {
        uint64_t head = ld.bias + rtld.value + heads[h][2], node;
        if (target_mem_u64(mem, head + next[2], &node, err) != 0)
            goto out;
        for (size_t steps = 0; node != head; steps++) {
            if (steps >= MAX_LISTED_THREADS || !node) {
                target_fail(err, "glibc's thread list changed while it was read; try again");
                goto out;
            }
            uint64_t pd = node - list[2];
            int32_t t;
            if (target_mem_read(mem, pd + tid[2], &t, sizeof t, err) != 0)
                goto out;
            /* tid <= 0: a descriptor whose thread has ended (or not yet started) */
            if (t > 0 && push(out, n, &cap, (pid_t)t, pd + size_pthread) != 0) {
                target_fail(err, "out of memory");
                goto out;
            }
            if (target_mem_u64(mem, node + next[2], &node, err) != 0)
                goto out;
        }
    }
    rc = 0;
out:
    if (rc != 0) {
        free(*out);
        *out = NULL;
        *n = 0;
    }
    if (libc.open)
        target_elf_close(&libc.elf);
    if (ld.open)
        target_elf_close(&ld.elf);
    return rc;
}

int target_libc_thread_tp(const struct target_libc_thread *v, size_t n, pid_t tid, uint64_t *tp)
{
    for (size_t i = 0; i < n; i++)
        if (v[i].tid == tid) {
            *tp = v[i].tp;
            return 0;
        }
    return -1;
}

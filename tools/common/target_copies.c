/* target_copies.c — see target_copies.h. */
#include "target_copies.h"

#include <stdio.h>
#include <string.h>

#include "target_elf.h"
#include "target_mem.h"

/* 1: published, 0: NULL pointer, -1: unreadable (no symbol, no file) */
static int published(const struct target *t, const struct target_mapping *m)
{
    struct target_elf e;
    struct target_sym sym;
    char err[TARGET_ERRLEN];
    uint64_t bias, ptr;
    memset(&e, 0, sizeof e);
    if (target_elf_open_mapping(&e, t->pid, m, err) != 0)
        return -1;
    int rc = -1;
    if (target_elf_lookup(&e, TARGET_STORAGE_SYMBOL, &sym, err) == 0 && sym.shndx != SHN_UNDEF &&
        target_elf_bias(&e, m, &bias, err) == 0 &&
        target_mem_u64(&t->mem, bias + sym.value, &ptr, err) == 0)
        rc = ptr != 0;
    target_elf_close(&e);
    return rc;
}

/* the matching executable mappings, one per file (the first of each), by the callback */
static void each_file(const struct target *t, void (*fn)(const struct target_mapping *, void *),
                      void *arg)
{
    char buf[4096];
    for (size_t i = 0; i < t->maps.n; i++) {
        const struct target_mapping *c = &t->maps.v[i];
        if (!target_mapping_exec(c) || c->inode == 0 || c->path[0] != '/' ||
            !target_agent_lib_name_matches(target_mapping_clean_path(c, buf, sizeof buf)))
            continue;
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++)
            seen = target_mapping_exec(&t->maps.v[j]) && t->maps.v[j].inode == c->inode &&
                   t->maps.v[j].dev_major == c->dev_major && t->maps.v[j].dev_minor == c->dev_minor;
        if (!seen)
            fn(c, arg);
    }
}

struct pick {
    const struct target *t;
    const struct target_mapping *found;
};

static void pick_published(const struct target_mapping *m, void *arg)
{
    struct pick *p = arg;
    if (!p->found && published(p->t, m) == 1)
        p->found = m;
}

const struct target_mapping *target_copies_published(const struct target *t)
{
    struct pick p = {t, NULL};
    each_file(t, pick_published, &p);
    return p.found;
}

/* proflink's own builds, by the name the build gives them (a renamed copy reads as another
 * provider) */
static int is_proflink(const char *path)
{
    const char *base = strrchr(path, '/');
    return strncmp(base ? base + 1 : path, "elastic-jvmti-linux-proflink-", 29) == 0;
}

struct describe {
    const struct target *t;
    char serving[1024], inert[1024], others[1024];
    int n_copies, n_inert, n_others;
};

static void append(char *list, size_t cap, int *n, const char *path)
{
    size_t used = strlen(list);
    snprintf(list + used, cap - used, "%s%s", (*n)++ ? ", " : "", path);
}

static void describe_one(const struct target_mapping *m, void *arg)
{
    struct describe *d = arg;
    char buf[4096];
    const char *path = target_mapping_clean_path(m, buf, sizeof buf);
    if (!is_proflink(path)) {
        append(d->others, sizeof d->others, &d->n_others, path);
        return;
    }
    d->n_copies++;
    if (!d->serving[0] && published(d->t, m) == 1)
        snprintf(d->serving, sizeof d->serving, "%s", path);
    else
        append(d->inert, sizeof d->inert, &d->n_inert, path);
}

int target_copies_fix(const struct target *t, char *buf, size_t cap)
{
    if (t->lib_files < 2)
        return 0;
    struct describe d = {.t = t};
    each_file(t, describe_one, &d);
    if (d.n_copies < 2)
        return 0;
    if (d.serving[0])
        snprintf(buf, cap, "%d copies of proflink are loaded: %s serves this process, %s "
                 "published nothing (a second copy stays inactive); load one copy only: remove the "
                 "other from LD_PRELOAD or /etc/ld.so.preload (proflink-run uses a host-wide copy "
                 "itself)", d.n_copies, d.serving, d.inert);
    else
        snprintf(buf, cap, "%d copies of proflink are loaded (%s) and none published its "
                 "storage; load one copy only", d.n_copies, d.inert);
    return 1;
}

int target_copies_other_provider(const struct target *t, char *buf, size_t cap)
{
    if (t->lib_files < 2)
        return 0;
    struct describe d = {.t = t};
    each_file(t, describe_one, &d);
    if (!d.n_others || !d.n_copies)
        return 0;
    snprintf(buf, cap, "another provider of the format is loaded: %s; the storage is the one it "
             "published when its socket is named there (proflink then relays what reaches its own "
             "socket to it)", d.others);
    return 1;
}

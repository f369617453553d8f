/* target_maps.c — see target_maps.h. */
#include "target_maps.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "target_util.h"

static int parse_line(char *line, struct target_mapping *m)
{
    unsigned long long start, end, off, inode;
    unsigned maj, min;
    int pos = 0;
    memset(m, 0, sizeof *m);
    if (sscanf(line, "%llx-%llx %4s %llx %x:%x %llu%n", &start, &end, m->perms, &off, &maj,
               &min, &inode, &pos) != 7)
        return -1;
    m->start = start;
    m->end = end;
    m->offset = off;
    m->dev_major = maj;
    m->dev_minor = min;
    m->inode = inode;
    /* The path is everything after the padding that follows the inode; it may hold spaces. */
    const char *p = line + pos;
    while (*p == ' ' || *p == '\t')
        p++;
    m->path = strdup(p);
    return m->path ? 0 : -1;
}

int target_maps_read(pid_t pid, struct target_maps *out, char *err)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    out->v = NULL;
    out->n = 0;
    char *text = target_read_file(path, NULL);
    if (!text)
        return target_fail(err, "cannot read %s: %s", path, strerror(errno));
    size_t cap = 0;
    int rc = 0;
    for (char *save = NULL, *line = strtok_r(text, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        if (out->n == cap) {
            cap = cap ? cap * 2 : 64;
            struct target_mapping *nv = realloc(out->v, cap * sizeof *nv);
            if (!nv) {
                rc = target_fail(err, "out of memory");
                break;
            }
            out->v = nv;
        }
        if (parse_line(line, &out->v[out->n]) == 0)
            out->n++;
    }
    free(text);
    if (rc != 0)
        target_maps_free(out);
    return rc;
}

void target_maps_free(struct target_maps *m)
{
    for (size_t i = 0; i < m->n; i++)
        free(m->v[i].path);
    free(m->v);
    m->v = NULL;
    m->n = 0;
}

int target_mapping_exec(const struct target_mapping *m) { return m->perms[2] == 'x'; }

const char *target_mapping_clean_path(const struct target_mapping *m, char *buf, size_t cap)
{
    static const char suffix[] = " (deleted)";
    size_t n = strlen(m->path), s = sizeof suffix - 1;
    if (n < s || strcmp(m->path + n - s, suffix) != 0 || n - s >= cap)
        return m->path;
    memcpy(buf, m->path, n - s);
    buf[n - s] = '\0';
    return buf;
}

int target_agent_lib_name_matches(const char *path)
{
    /* The profiler's Go regex uses \w; POSIX ERE has no \w, so spell out the same class. */
    static regex_t re;
    static int ready;
    if (!ready) {
        if (regcomp(&re, ".*/elastic-jvmti-linux-([A-Za-z0-9_-]*)\\.so", REG_EXTENDED | REG_NOSUB))
            return 0;
        ready = 1;
    }
    return regexec(&re, path, 0, NULL, 0) == 0;
}

/* File-backed as the profiler means it: a real inode, and a path that is neither a memfd nor
 * a bracketed special name ([vdso], [anon:…], [anon_shmem:…]). */
static int file_backed(const struct target_mapping *m)
{
    return m->inode != 0 && m->path[0] != '\0' && m->path[0] != '[' &&
           strncmp(m->path, "/memfd:", 7) != 0;
}

static int same_file(const struct target_mapping *a, const struct target_mapping *b)
{
    return a->inode == b->inode && a->dev_major == b->dev_major && a->dev_minor == b->dev_minor;
}

const struct target_mapping *target_maps_find_agent_lib(const struct target_maps *m, size_t *count)
{
    const struct target_mapping *first = NULL;
    size_t files = 0;
    char buf[4096];
    for (size_t i = 0; i < m->n; i++) {
        const struct target_mapping *c = &m->v[i];
        if (!target_mapping_exec(c) || !file_backed(c))
            continue;
        if (!target_agent_lib_name_matches(target_mapping_clean_path(c, buf, sizeof buf)))
            continue;
        int seen = 0;
        for (size_t j = 0; j < i; j++)
            if (target_mapping_exec(&m->v[j]) && same_file(&m->v[j], c))
                seen = 1;
        if (!seen)
            files++;
        if (!first)
            first = c;
    }
    if (count)
        *count = files;
    return first;
}

const struct target_mapping *target_maps_find_otel_ctx(const struct target_maps *m)
{
    static const char *const names[] = {"[anon_shmem:OTEL_CTX]", "[anon:OTEL_CTX]",
                                        "/memfd:OTEL_CTX", "/memfd:OTEL_CTX (deleted)"};
    for (size_t i = 0; i < m->n; i++) {
        if (target_mapping_exec(&m->v[i]))
            continue;
        for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
            if (strcmp(m->v[i].path, names[k]) == 0)
                return &m->v[i];
    }
    return NULL;
}

const struct target_mapping *target_maps_first_of_file(const struct target_maps *m,
                                                       const struct target_mapping *of)
{
    const struct target_mapping *best = of;
    for (size_t i = 0; i < m->n; i++)
        if (same_file(&m->v[i], of) && m->v[i].start < best->start)
            best = &m->v[i];
    return best;
}

int target_maps_find_file(pid_t pid, const char *needle, char *out, size_t cap)
{
    char path[64], line[PATH_MAX + 128];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        char *file = strchr(line, '/');
        if (file && strstr(file, needle)) {
            file[strcspn(file, "\n")] = 0;
            if (out)
                snprintf(out, cap, "%s", file);
            found = 1;
        }
    }
    fclose(f);
    return found;
}

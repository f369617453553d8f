/* agent_by.c — see agent_by.h. */
#include "agent_by.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void agent_by_init(struct agent_by *b, const char *name)
{
    memset(b, 0, sizeof *b);
    b->name = name;
    b->key = -1;
}

void agent_by_free(struct agent_by *b)
{
    for (size_t i = 0; i < b->n; i++)
        free(b->groups[i].value);
    free(b->groups);
    b->groups = NULL;
    b->n = b->cap = 0;
}

void agent_by_set_map(struct agent_by *b, const struct target_pb_value *km)
{
    b->key = -1;
    b->known = 0;
    if (!km || km->kind != TARGET_PB_ARRAY)
        return;
    b->known = km->nitems;
    for (size_t i = 0; i < km->nitems && i < 256; i++)
        if (km->items[i].kind == TARGET_PB_STRING && strcmp(km->items[i].s, b->name) == 0)
            b->key = (int)i;
}

int agent_by_needs_refresh(const struct agent_by *b, const struct target_otel_record *r)
{
    size_t pos = 0;
    struct target_otel_attr at;
    while (target_otel_attr_next(r, &pos, &at) == 1)
        if (at.key >= b->known)
            return 1;
    return 0;
}

static struct agent_by_group *group(struct agent_by *b, const uint8_t *v, size_t len)
{
    for (size_t i = 0; i < b->n; i++)
        if (b->groups[i].len == len && memcmp(b->groups[i].value, v, len) == 0)
            return &b->groups[i];
    if (b->n == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 16;
        struct agent_by_group *g = realloc(b->groups, cap * sizeof *g);
        if (!g)
            return NULL;
        b->groups = g;
        b->cap = cap;
    }
    char *copy = malloc(len + 1);
    if (!copy)
        return NULL;
    memcpy(copy, v, len);
    copy[len] = 0;
    b->groups[b->n] = (struct agent_by_group){copy, len, 0};
    return &b->groups[b->n++];
}

void agent_by_count(struct agent_by *b, const struct target_otel_record *r)
{
    const uint8_t *v = NULL;
    size_t len = 0, pos = 0;
    struct target_otel_attr at;
    while (r && b->key >= 0 && target_otel_attr_next(r, &pos, &at) == 1)
        if (at.key == b->key) /* the last occurrence wins (OTEP 4947) */
            v = at.value, len = at.len;
    struct agent_by_group *g = v ? group(b, v, len) : NULL;
    if (g)
        g->samples++;
    else
        b->without++;
}

static int by_samples(const void *x, const void *y)
{
    const struct agent_by_group *p = x, *q = y;
    return (p->samples < q->samples) - (p->samples > q->samples);
}

void agent_by_print_text(const struct agent_by *b)
{
    qsort(b->groups, b->n, sizeof *b->groups, by_samples);
    printf("\nSamples by %s:\n", b->name);
    for (size_t i = 0; i < b->n; i++)
        printf("  %7lu  %s\n", b->groups[i].samples, b->groups[i].value);
    printf("  %7lu  (without %s)\n", b->without, b->name);
}

void agent_by_json(const struct agent_by *b, struct target_json *j)
{
    target_json_object(j, "by");
    target_json_str(j, "attribute", b->name);
    target_json_uint(j, "key_map_refreshes", b->refreshes);
    target_json_uint(j, "without", b->without);
    target_json_object(j, "groups");
    for (size_t i = 0; i < b->n; i++)
        target_json_uint(j, b->groups[i].value, b->groups[i].samples);
    target_json_end_object(j);
    target_json_end_object(j);
}

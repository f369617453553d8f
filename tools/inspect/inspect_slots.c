/* inspect_slots.c — see inspect_slots.h. */
#include "inspect_slots.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Distinct executables kept by name; a host with more is summed up as "others" (the report names
 * the few that take most slots, so the tail does not matter). */
#define SLOTS_EXES_MAX 256
/* How many executables the report names. */
#define SLOTS_NAMED 8

struct exe_count {
    char *exe;
    int n;
};

static struct exe_count table[SLOTS_EXES_MAX];
static int n_exes, others, total;

void inspect_slots_add(const char *exe)
{
    total++;
    for (int i = 0; i < n_exes; i++)
        if (!strcmp(table[i].exe, exe)) {
            table[i].n++;
            return;
        }
    char *copy = n_exes < SLOTS_EXES_MAX ? strdup(exe) : NULL;
    if (!copy) {
        others++;
        return;
    }
    table[n_exes++] = (struct exe_count){copy, 1};
}

static int by_count(const void *a, const void *b)
{
    const struct exe_count *x = a, *y = b;
    if (x->n != y->n)
        return y->n - x->n;
    return strcmp(x->exe, y->exe);
}

void inspect_slots_report(int slots)
{
    if (total > slots) {
        qsort(table, (size_t)n_exes, sizeof table[0], by_count);
        printf("the %d attachable processes take the profiler's %d slots first come, first served:",
               total, slots);
        int rest = others;
        for (int i = 0; i < n_exes; i++) {
            if (i < SLOTS_NAMED)
                printf("%s %d %s", i ? "," : "", table[i].n, table[i].exe);
            else
                rest += table[i].n;
        }
        if (rest)
            printf(", %d others", rest);
        printf("\nfix: select the services only: PROFLINK_INCLUDE in /etc/proflink/proflink.conf "
               "(proflink-system enable --include GLOBS), or proflink-run for each service\n");
    }
    for (int i = 0; i < n_exes; i++)
        free(table[i].exe);
    n_exes = others = total = 0;
}

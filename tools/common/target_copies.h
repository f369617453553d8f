/* target_copies.h — more than one mapped library matching the profiler's name rule (two copies
 * of proflink, or proflink beside an Elastic agent's own library): the profiler attaches through
 * each, and only one whose storage pointer is published gives it anything. */
#ifndef TARGET_COPIES_H
#define TARGET_COPIES_H

#include <stddef.h>

#include "target_attach.h"

/* The first matching executable mapping whose storage pointer is not NULL (the one through
 * which the profiler attaches), or NULL when none is. */
const struct target_mapping *target_copies_published(const struct target *t);

/* Writes the fix for a process with several copies of proflink into buf: which one serves, which
 * are inert, and to load one copy only. 0 when there is nothing to fix (one copy). */
int target_copies_fix(const struct target *t, char *buf, size_t cap);

/* Names the other providers (matching libraries not built as proflink) beside a proflink copy,
 * for the mapping check's detail. 0 when there are none. */
int target_copies_other_provider(const struct target *t, char *buf, size_t cap);

#endif

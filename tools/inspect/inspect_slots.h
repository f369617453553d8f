/* inspect_slots.h — for `proflink-inspect --all`: which executables hold the profiler's process
 * slots, so that a host past the limit knows what to leave out. */
#ifndef PROFLINK_INSPECT_SLOTS_H
#define PROFLINK_INSPECT_SLOTS_H

/* Counts one attachable process of executable EXE (each takes a slot once the profiler samples
 * it). */
void inspect_slots_add(const char *exe);

/* When more than SLOTS processes were counted, prints which executables hold them, most first,
 * and the fix; then forgets the counts. */
void inspect_slots_report(int slots);

#endif

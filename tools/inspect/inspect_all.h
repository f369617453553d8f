/* inspect_all.h — `proflink-inspect --all`: every process of the host that maps proflink, one
 * line each, counted against the profiler's process slots. */
#ifndef PROFLINK_INSPECT_ALL_H
#define PROFLINK_INSPECT_ALL_H

/* The apmint profiler keeps state for at most this many processes at once. */
#define PROFILER_PROCESS_SLOTS 128

/* Prints the list; returns 0 when every listed process is attachable or excluded on purpose
 * (target_selection.h: proflink.conf, its environment, setuid) and they fit the slots, 1
 * otherwise. */
int inspect_all(void);

#endif

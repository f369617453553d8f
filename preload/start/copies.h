/* copies.h — two copies of proflink in one process (a host-wide one in /etc/ld.so.preload and
 * another in LD_PRELOAD, two installs), or another provider of the apmint format loaded before
 * proflink: the first one loaded serves the process. */
#ifndef PROFLINK_COPIES_H
#define PROFLINK_COPIES_H

/* 1 when this copy is the one that serves the process; 0 when another copy, or another library
 * exporting the apmint symbols, was loaded before it (logged once, naming it). */
int copies_first(void);

#endif

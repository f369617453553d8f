/* fd_safe.h — every descriptor proflink creates goes through fd_above_stdio.
 *
 * A program may start with descriptors 0-2 closed (daemons, some supervisors). Then the lowest
 * free numbers are 0, 1 and 2, and a socket of ours there would receive what the program writes
 * to "stdout", or its log line would land in the program's data file opened next. So our
 * descriptors are moved to 3 or above, close-on-exec, before anyone sees them. */
#ifndef PROFLINK_FD_SAFE_H
#define PROFLINK_FD_SAFE_H

/* Returns fd itself when it is -1 or already >= 3; otherwise a close-on-exec duplicate >= 3
 * (the original closed), or -1 with errno set (nothing left open). Keeps errno otherwise. */
int fd_above_stdio(int fd);

#endif

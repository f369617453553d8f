/* libc_check.h — is this library running on the C library it was built for? */
#ifndef PROFLINK_LIBC_CHECK_H
#define PROFLINK_LIBC_CHECK_H

/* 1 when the process's libc is the one this build targets. When it is not (the glibc build in a
 * musl program or the reverse), the caller stays inactive: structure layouts, fortified calls
 * and the fork-handler registration all belong to the other libc. Prints its one warning with
 * log_raw (no formatting: nothing else of ours is safe to call there). */
int libc_check(void);

#endif

/* fd_identity.h — is this descriptor still the file proflink opened?
 *
 * proflink keeps descriptors (the FIFO, the pull pipe, the profiler socket: receiver.c) in a
 * program that may close them behind its back (daemons close every fd >= 3; closefrom) and
 * reuse the numbers for its own files. Reading, writing or closing such a number would steal
 * or corrupt the program's data, so every use that could touch a reused number first checks
 * device and inode against what was recorded at open. (A thread already blocked in a system
 * call on the descriptor is safe: the kernel holds the original file for that call.) */
#ifndef PROFLINK_FD_IDENTITY_H
#define PROFLINK_FD_IDENTITY_H

#include <sys/stat.h>

#include "sys_calls.h"

struct fd_identity {
    dev_t dev;
    ino_t ino;
    int valid;
};

static inline void fd_identity_record(int fd, struct fd_identity *id)
{
    struct stat st;
    id->valid = fd >= 0 && sys_fstat(fd, &st) == 0;
    if (id->valid) {
        id->dev = st.st_dev;
        id->ino = st.st_ino;
    }
}

/* 1 when fd still refers to the recorded file. */
static inline int fd_identity_same(int fd, const struct fd_identity *id)
{
    struct stat st;
    return id->valid && fd >= 0 && sys_fstat(fd, &st) == 0 && st.st_dev == id->dev &&
           st.st_ino == id->ino;
}

#endif

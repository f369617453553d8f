/* fd_safe.c — see fd_safe.h. */
#include "fd_safe.h"
#include "real_calls.h"
#include "sys_calls.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#define FIRST_FREE_FD 3 /* above stdin, stdout, stderr */

int fd_above_stdio(int fd)
{
    if (fd < 0 || fd >= FIRST_FREE_FD)
        return fd;
    int moved = sys_fcntl(fd, F_DUPFD_CLOEXEC, FIRST_FREE_FD);
    int err = errno;
    real_close(fd);
    errno = err;
    return moved;
}

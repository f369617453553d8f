/* setxid.c — the socket file follows the process's effective uid and gid.
 *
 * A daemon started as root that drops to a service user (nginx workers, memcached -u) would
 * otherwise keep a root-owned 0600 socket: the profiler requires it writable by the target's
 * effective ids, and at exit the process could not remove it from a sticky /tmp. Changing the
 * owner needs the privilege the call is about to give up, so the file is given to the ids the
 * call will set *before* it, and to the ids actually in force after it (which undoes the first
 * if the call failed, and does nothing if it worked). glibc applies these calls to every thread
 * of the process; a raw system call changes one thread only and is not followed. */
#ifndef PROFLINK_STATIC
#include <errno.h>
#include <sys/types.h>
#include <unistd.h>

#include "leaves/export.h"
#include "next_symbol.h"
#include "start/runtime.h"

#define NONE ((uid_t)-1)
#define GNONE ((gid_t)-1)

typedef int (*set1_fn)(uid_t);
typedef int (*set2_fn)(uid_t, uid_t);
typedef int (*set3_fn)(uid_t, uid_t, uid_t);
typedef int (*gset1_fn)(gid_t);
typedef int (*gset2_fn)(gid_t, gid_t);
typedef int (*gset3_fn)(gid_t, gid_t, gid_t);
NEXT_SYMBOL(set1_fn, setuid)
NEXT_SYMBOL(set1_fn, seteuid)
NEXT_SYMBOL(set2_fn, setreuid)
NEXT_SYMBOL(set3_fn, setresuid)
NEXT_SYMBOL(gset1_fn, setgid)
NEXT_SYMBOL(gset1_fn, setegid)
NEXT_SYMBOL(gset2_fn, setregid)
NEXT_SYMBOL(gset3_fn, setresgid)

/* rc is the call's result; errno is the call's whatever proflink does after it. */
static int followed(int rc)
{
    int saved_errno = errno;
    runtime_creds_follow(NONE, GNONE);
    errno = saved_errno;
    return rc;
}

static int missing(void)
{
    errno = ENOSYS;
    return -1;
}

static void before(uid_t euid, gid_t egid)
{
    int saved_errno = errno;
    runtime_creds_follow(euid, egid);
    errno = saved_errno;
}

/* new_euid / new_egid: what the call sets, NONE / GNONE for "unchanged". */
#define CRED_HOOK(next, new_euid, new_egid, ...)                                               \
    do {                                                                                       \
        __typeof__(next()) f = next();                                                         \
        if (!f)                                                                                \
            return missing();                                                                  \
        if ((new_euid) != NONE || (new_egid) != GNONE)                                         \
            before((new_euid), (new_egid));                                                    \
        return followed(f(__VA_ARGS__));                                                       \
    } while (0)

PROFLINK_EXPORT int setuid(uid_t uid) { CRED_HOOK(next_setuid, uid, GNONE, uid); }
PROFLINK_EXPORT int seteuid(uid_t euid) { CRED_HOOK(next_seteuid, euid, GNONE, euid); }
PROFLINK_EXPORT int setreuid(uid_t r, uid_t e) { CRED_HOOK(next_setreuid, e, GNONE, r, e); }
PROFLINK_EXPORT int setresuid(uid_t r, uid_t e, uid_t s) { CRED_HOOK(next_setresuid, e, GNONE, r, e, s); }
PROFLINK_EXPORT int setgid(gid_t gid) { CRED_HOOK(next_setgid, NONE, gid, gid); }
PROFLINK_EXPORT int setegid(gid_t egid) { CRED_HOOK(next_setegid, NONE, egid, egid); }
PROFLINK_EXPORT int setregid(gid_t r, gid_t e) { CRED_HOOK(next_setregid, NONE, e, r, e); }
PROFLINK_EXPORT int setresgid(gid_t r, gid_t e, gid_t s) { CRED_HOOK(next_setresgid, NONE, e, r, e, s); }
#endif

/* target_socket.c — see target_socket.h. */
#include "target_socket.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "target_util.h"

int target_clean_path(const char *in, char *out, size_t cap)
{
    size_t n = strlen(in);
    /* The result is never longer than the input, plus "." or "/" and the NUL. */
    if (cap < n + 2)
        return -1;
    int rooted = in[0] == '/';
    size_t len = 0;
    if (rooted)
        out[len++] = '/';
    size_t base = len;   /* segments start here */
    size_t dotdot = len; /* end of the leading ".." segments a relative path cannot pop */
    for (size_t i = 0; i < n;) {
        while (i < n && in[i] == '/')
            i++;
        size_t s = i;
        while (i < n && in[i] != '/')
            i++;
        size_t sl = i - s;
        if (sl == 0 || (sl == 1 && in[s] == '.'))
            continue;
        if (sl == 2 && in[s] == '.' && in[s + 1] == '.') {
            if (len > dotdot) { /* pop the last segment and the separator before it */
                size_t j = len;
                while (j > dotdot && out[j - 1] != '/')
                    j--;
                len = j > base ? j - 1 : j;
            } else if (!rooted) { /* a relative path keeps the ".." it cannot resolve */
                if (len > base)
                    out[len++] = '/';
                out[len++] = '.';
                out[len++] = '.';
                dotdot = len;
            } /* else ".." at the root stays at the root */
            continue;
        }
        if (len > base)
            out[len++] = '/';
        memcpy(out + len, in + s, sl);
        len += sl;
    }
    if (len == 0)
        out[len++] = '.';
    out[len] = '\0';
    return 0;
}

static int parse_id_line(const char *status, const char *tag, unsigned long *eid)
{
    const char *p = strstr(status, tag);
    unsigned long real, eff;
    if (!p || sscanf(p + strlen(tag), "%lu %lu", &real, &eff) != 2)
        return -1;
    *eid = eff;
    return 0;
}

int target_proc_owner(pid_t pid, uid_t *euid, gid_t *egid, char *err)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    char *s = target_read_file(path, NULL);
    if (!s)
        return target_fail(err, "cannot read %s: %s", path, strerror(errno));
    unsigned long u, g;
    int rc = parse_id_line(s, "\nUid:", &u) == 0 && parse_id_line(s, "\nGid:", &g) == 0;
    free(s);
    if (!rc)
        return target_fail(err, "no Uid:/Gid: lines in %s", path);
    *euid = (uid_t)u;
    *egid = (gid_t)g;
    return 0;
}

/* The last pid of the "NSpid:" line of /proc/PID/status (pid as the process itself sees it, in
 * its innermost pid namespace), or "PPid:" (as we see it). -1 if unreadable. */
static long status_pid(pid_t pid, const char *tag)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    char *s = target_read_file(path, NULL);
    const char *p = s ? strstr(s, tag) : NULL;
    long v = -1;
    if (p) {
        const char *eol = strchr(p + 1, '\n');
        char *end;
        for (p += strlen(tag);; p = end) {
            long n = strtol(p, &end, 10);
            if (end == p || (eol && end > eol))
                break;
            v = n;
        }
    }
    free(s);
    return v;
}

/* The pid proflink named its socket for ("proflink-<pid>-<8 hex>.sock", socket.c), or -1 when
 * the file is not named that way (another implementation of the protocol: no opinion). */
static long proflink_name_pid(const char *path)
{
    const char *name = strrchr(path, '/');
    name = name ? name + 1 : path;
    int pid, end = 0;
    unsigned hex;
    if (sscanf(name, "proflink-%d-%8x.sock%n", &pid, &hex, &end) != 2 || name[end] || pid <= 0)
        return -1;
    return pid;
}

/* The fix line of the last target found publishing another process's socket (target_socket_fix):
 * target_fix knows only the pid and the check's name. */
static struct {
    pid_t pid;
    long named_for;
    int parent;
} foreign;

/* A proflink process publishes a socket named for its own pid. One named for another pid is
 * that process's: a copy made by a raw clone(), which ran no fork handlers and has not used the
 * library since, still publishes its parent's. The profiler would send this process's samples
 * there, to a process that knows nothing of its traces: a failure, not a pass. */
static int check_owner(pid_t pid, struct target_socket *out, char *err)
{
    long named = proflink_name_pid(out->cleaned);
    long self = status_pid(pid, "\nNSpid:");
    if (named < 0 || self < 0 || named == self)
        return 0;
    long ppid = status_pid(pid, "\nPPid:");
    out->named_for_pid = named;
    foreign.pid = pid;
    foreign.named_for = named;
    foreign.parent = ppid > 0 && status_pid((pid_t)ppid, "\nNSpid:") == named;
    return target_fail(err, "%s is named for pid %ld%s, not for this process (pid %ld): "
                            "another process's socket",
                       out->cleaned, named, foreign.parent ? " (its parent)" : "", self);
}

int target_socket_fix(pid_t pid, char *fix, size_t cap)
{
    if (!foreign.named_for || foreign.pid != pid)
        return 0;
    snprintf(fix, cap,
             "this process is a copy of %s %ld made by a raw clone() (no fork handlers ran) "
             "that has not used proflink since: it still publishes that process's socket. It "
             "gets its own at its first pthread_create, proflink API call or accepted "
             "connection (docs/source-layout.md: raw clone children)",
             foreign.parent ? "its parent, pid" : "pid", foreign.named_for);
    return 1;
}

static int has_dotdot(const char *p)
{
    for (const char *s = p; *s;) {
        size_t l = strcspn(s, "/");
        if (l == 2 && s[0] == '.' && s[1] == '.')
            return 1;
        s += l;
        while (*s == '/')
            s++;
    }
    return 0;
}

int target_socket_check(pid_t pid, const char *path, size_t len, struct target_socket *out,
                        char *err)
{
    memset(out, 0, sizeof *out);
    if (foreign.pid == pid)
        foreign.named_for = 0; /* a new check of the same process: its old finding goes */
    if (memchr(path, '\0', len))
        return target_fail(err, "socket path contains a NUL byte");
    if (target_clean_path(path, out->cleaned, sizeof out->cleaned) != 0)
        return target_fail(err, "socket path too long");
    if (has_dotdot(out->cleaned))
        return target_fail(err, "socket path \"%s\" escapes the root (\"..\")", out->cleaned);
    const char *rel = out->cleaned[0] == '/' ? out->cleaned + 1 : out->cleaned;
    if (strcmp(rel, ".") == 0)
        rel = "";
    snprintf(out->proc_path, sizeof out->proc_path, "/proc/%d/root%s%s", (int)pid,
             rel[0] ? "/" : "", rel);
    out->proc_path_len = strlen(out->proc_path);

    if (target_proc_owner(pid, &out->target_euid, &out->target_egid, err) != 0 ||
        check_owner(pid, out, err) != 0)
        return -1;
    struct stat st;
    if (stat(out->proc_path, &st) != 0)
        return target_fail(err, "%s: %s", out->proc_path, strerror(errno));
    out->stat_ok = 1;
    out->mode = st.st_mode;
    out->uid = st.st_uid;
    out->gid = st.st_gid;
    if (!S_ISSOCK(st.st_mode))
        return target_fail(err, "%s is not a socket", out->proc_path);
    if (out->target_euid == 0)
        out->access = "target is root";
    else if ((st.st_mode & S_IWUSR) && st.st_uid == out->target_euid)
        out->access = "owner";
    else if ((st.st_mode & S_IWGRP) && st.st_gid == out->target_egid)
        out->access = "group";
    else if (st.st_mode & S_IWOTH)
        out->access = "others";
    else
        return target_fail(err, "%s: mode %04o owner %u:%u: not writable by the target's euid "
                                "%u or egid %u",
                           out->proc_path, (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid,
                           (unsigned)st.st_gid, (unsigned)out->target_euid,
                           (unsigned)out->target_egid);

    if (out->proc_path_len > TARGET_SUN_PATH_USABLE)
        return target_fail(err, "%s is %zu bytes, more than sun_path holds (%d): every send "
                                "would fail",
                           out->proc_path, out->proc_path_len, TARGET_SUN_PATH_USABLE);

    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    memcpy(sa.sun_path, out->proc_path, out->proc_path_len + 1);
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return target_fail(err, "socket(AF_UNIX, SOCK_DGRAM): %s", strerror(errno));
    /* connect() on a datagram socket only records the peer: nothing reaches the target. */
    out->connect_tried = 1;
    out->connect_errno = connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0 ? 0 : errno;
    close(fd);
    if (out->connect_errno == EPROTOTYPE)
        return target_fail(err, "%s is not a datagram socket (connect: %s)", out->proc_path,
                           strerror(out->connect_errno));
    if (out->connect_errno == ECONNREFUSED)
        return target_fail(err, "%s: nobody is bound to it (connect: %s)", out->proc_path,
                           strerror(out->connect_errno));
    if (out->connect_errno)
        return target_fail(err, "%s: connect: %s", out->proc_path, strerror(out->connect_errno));
    return 0;
}

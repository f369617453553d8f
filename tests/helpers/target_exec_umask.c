/* target_exec_umask — a program whose threads race a failed exec against their own files.
 * usage: target_exec_umask DIR EXECS
 * One thread calls execv on a missing binary EXECS times; meanwhile the main thread creates
 * files in DIR with mode 0644 (open O_CREAT, then fstat, then unlink) until that thread is done.
 * Prints "files=N bad=B umask=UUU socket=MODE": B files whose mode was not 0644 less the umask
 * the program set, the process's umask at the end, and the mode of every proflink-*.sock in
 * $ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_SOCKET_DIR named for this pid ("none" without
 * one). The program sets its own umask from $TARGET_UMASK (octal, default 022) first. */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static long execs;
static atomic_int done;

static void *exec_loop(void *arg)
{
    (void)arg;
    char *argv[] = {"/nonexistent/proflink-test-binary", NULL};
    for (long i = 0; i < execs; i++)
        execv(argv[0], argv); /* fails with ENOENT: the program runs on */
    atomic_store(&done, 1);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    const char *um = getenv("TARGET_UMASK");
    mode_t mask = (mode_t)strtol(um ? um : "022", NULL, 8);
    umask(mask);
    execs = atol(argv[2]);
    pthread_t t;
    if (pthread_create(&t, NULL, exec_loop, NULL) != 0)
        return 3;
    long files = 0, bad = 0;
    char path[4096];
    while (!atomic_load(&done)) {
        snprintf(path, sizeof path, "%s/f%ld", argv[1], files % 64);
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0)
            return 4;
        struct stat st;
        if (fstat(fd, &st) != 0)
            return 5;
        if ((st.st_mode & 07777) != (0644 & ~mask))
            bad++;
        close(fd);
        unlink(path);
        files++;
    }
    pthread_join(t, NULL);
    mode_t now = umask(0);
    umask(now);
    char modes[256] = "none";
    const char *dir = getenv("ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_SOCKET_DIR");
    DIR *d = dir ? opendir(dir) : NULL;
    char prefix[64];
    snprintf(prefix, sizeof prefix, "proflink-%d-", (int)getpid());
    struct dirent *e;
    size_t used = 0;
    while (d && (e = readdir(d))) {
        if (strncmp(e->d_name, prefix, strlen(prefix)) != 0)
            continue;
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (lstat(path, &st) == 0 && used + 8 < sizeof modes)
            used += (size_t)snprintf(modes + used, sizeof modes - used, "%s%04o",
                                     used ? "," : "", (unsigned)(st.st_mode & 07777));
    }
    if (d)
        closedir(d);
    printf("files=%ld bad=%ld umask=%03o socket=%s\n", files, bad, (unsigned)now, modes);
    return 0;
}

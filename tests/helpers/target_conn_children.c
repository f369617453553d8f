/* target_conn_children — a server that hands each connection to a child of its own, and its
 * clients: the two shapes of child a preloaded library meets in servers.
 * usage: target_conn_children fork|fork-ignore|rawclone N
 * The process listens on 127.0.0.1 (a port the kernel picks) and, N times, connects a client to
 * itself and makes a child for the connection:
 *   fork      a fork() child that accepts nothing (the parent accepted), reads the request and
 *             answers after the client reset the connection: SIGPIPE kills it, as it kills the
 *             child of a forking server whose client went away. The parent reaps each child
 *             with waitpid. At the end: "children=N signaled=S files=F", F the proflink-*
 *             entries of $ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_SOCKET_DIR.
 *   fork-ignore  the same with SIGCHLD ignored (the kernel reaps the children; the parent never
 *             waits, and watches each child with kill(pid, 0) until it is gone): "children=N
 *             gone=G files=F".
 *   rawclone  a child made by a raw clone(SIGCHLD) system call (no fork handlers), which
 *             accepts the connection, reads the request, answers and _exits, while a thread of
 *             the parent allocates and frees memory without pause (with MALLOC_ARENA_MAX=1 all
 *             threads share one arena, whose lock the copy may take held). A child that has
 *             not exited within CHILD_WAIT_MS is counted as hung and killed. At the end:
 *             "children=N hung=H".
 * Exits 0. */
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "listen_local.h"

#define CHILD_WAIT_MS 5000 /* a child answers in microseconds; a loaded machine, milliseconds */

static const char request[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
static const char reply[] = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n";
static atomic_int stop;

static void *allocator(void *arg)
{
    (void)arg;
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        void *p[16];
        for (int i = 0; i < 16; i++)
            p[i] = malloc(64 + 512 * (size_t)i);
        for (int i = 0; i < 16; i++)
            free(p[i]);
    }
    return NULL;
}

static int connect_to(int port)
{
    int c = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof a) != 0)
        exit(4);
    return c;
}

/* The fork child: waits for the client's reset, then answers until SIGPIPE ends it. client: its
 * copy of the client's end, closed at once (the reset comes when the last copy closes). */
static void doomed_child(int conn, int client)
{
    close(client);
    char buf[512];
    if (read(conn, buf, sizeof buf) <= 0)
        _exit(7);
    struct pollfd p = {.fd = conn, .events = POLLIN};
    poll(&p, 1, CHILD_WAIT_MS); /* the reset */
    for (int i = 0; i < 100; i++)
        if (write(conn, reply, sizeof reply - 1) < 0 && i > 10)
            break;
    _exit(8); /* SIGPIPE did not come */
}

static int count_files(void)
{
    const char *dir = getenv("ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_SOCKET_DIR");
    DIR *d = dir ? opendir(dir) : NULL;
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += !strncmp(e->d_name, "proflink-", 9);
    if (d)
        closedir(d);
    return n;
}

/* The child waited for within CHILD_WAIT_MS: its status, or -1 (then killed and reaped). */
static int wait_child(pid_t pid)
{
    int status;
    for (int ms = 0; ms < CHILD_WAIT_MS; ms++) {
        if (waitpid(pid, &status, WNOHANG) == pid)
            return status;
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    int raw = !strcmp(argv[1], "rawclone");
    int ignore = !strcmp(argv[1], "fork-ignore");
    if (ignore)
        signal(SIGCHLD, SIG_IGN);
    int n = atoi(argv[2]);
    int port;
    int ls = listen_local_any(16, &port);
    if (ls < 0)
        return 3;
    pthread_t t;
    if (raw && pthread_create(&t, NULL, allocator, NULL) != 0)
        return 5;
    int signaled = 0, hung = 0;
    for (int i = 0; i < n; i++) {
        int c = connect_to(port);
        if (raw) {
            long pid = syscall(SYS_clone, (long)SIGCHLD, 0L, 0L, 0L, 0L);
            if (pid == 0) {
                char buf[512];
                int conn = accept(ls, NULL, NULL);
                if (conn < 0 || read(conn, buf, sizeof buf) <= 0 ||
                    write(conn, reply, sizeof reply - 1) < 0)
                    _exit(7);
                _exit(0);
            }
            if (pid < 0)
                return 6;
            if (write(c, request, sizeof request - 1) < 0)
                return 6;
            hung += wait_child((pid_t)pid) == -1;
            close(c);
        } else {
            int conn = accept(ls, NULL, NULL);
            pid_t pid = fork();
            if (pid == 0)
                doomed_child(conn, c);
            if (pid < 0 || conn < 0)
                return 6;
            close(conn);
            if (write(c, request, sizeof request - 1) < 0)
                return 6;
            struct linger reset = {1, 0}; /* close with a reset, as a client that gave up */
            setsockopt(c, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
            close(c);
            if (ignore) {
                int ms = 0;
                while (kill(pid, 0) == 0 && ms++ < CHILD_WAIT_MS)
                    nanosleep(&(struct timespec){0, 1000000}, NULL);
                signaled += ms < CHILD_WAIT_MS; /* gone */
                continue;
            }
            int status = wait_child(pid);
            signaled += status != -1 && WIFSIGNALED(status) && WTERMSIG(status) == SIGPIPE;
        }
    }
    if (raw) {
        atomic_store(&stop, 1);
        pthread_join(t, NULL);
        printf("children=%d hung=%d\n", n, hung);
    } else {
        printf("children=%d %s=%d files=%d\n", n, ignore ? "gone" : "signaled", signaled,
               count_files());
    }
    return 0;
}

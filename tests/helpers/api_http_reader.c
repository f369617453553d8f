/* api_http_reader — one thread that accepts connections on 127.0.0.1:PORT one after the other
 * and reads each with read() until the client closes, printing "got N" after each read; after
 * each connection it prints the HTTP counters of proflink_get_stats ("stats traced=T
 * untraced=U"). With a
 * TRACEPARENT argument (not "-") it first sets that context through the API (dlsym, so it also
 * runs without proflink), the way a tracer would. With "once" it reads each connection once,
 * then sleeps 3 s, closes it, prints "closed" and sleeps 3 s more before the next accept.
 * usage: api_http_reader PORT [TRACEPARENT|- [once]] */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "listen_local.h"

#include "proflink.h"

typedef int (*set_tp_fn)(const char *, const char *);
typedef int (*stats_fn)(proflink_stats *, size_t);

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    int once = argc > 3 && !strcmp(argv[3], "once");
    if (argc > 2 && strcmp(argv[2], "-") != 0) {
        set_tp_fn set_tp = (set_tp_fn)dlsym(RTLD_DEFAULT, "proflink_set_traceparent");
        if (!set_tp || set_tp(argv[2], NULL) != 0)
            printf("set failed\n");
    }
    int ls = listen_local(argv[1], 4);
    for (;;) {
        int fd = accept(ls, NULL, NULL);
        if (fd < 0)
            continue;
        char buf[512];
        ssize_t r;
        while ((r = read(fd, buf, sizeof buf)) > 0) {
            printf("got %zd\n", r);
            fflush(stdout);
            if (once)
                break;
        }
        if (once)
            sleep(3);
        close(fd);
        if (once) {
            printf("closed\n");
            fflush(stdout);
            sleep(3);
        }
        proflink_stats s = {0};
        stats_fn get = (stats_fn)dlsym(RTLD_DEFAULT, "proflink_get_stats");
        if (get)
            get(&s, sizeof s);
        printf("stats traced=%llu untraced=%llu\n", (unsigned long long)s.http_requests_traced,
               (unsigned long long)s.http_requests_untraced);
        fflush(stdout);
    }
}

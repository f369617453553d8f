/* https_io — what HTTP reading of HTTPS (PROFLINK_HTTP, hooks/ssl_io.c) costs, in one process
 * run under the preloaded library with or without the option (bench/run.sh alternates the two).
 * OpenSSL is loaded here with dlopen (RTLD_GLOBAL) and called through the global scope, where
 * the library's definitions come first, as in a program linked with -lssl.
 *   https_io keepalive S CERT KEY  a server thread answering one keep-alive TLS client over TCP on
 *                                  127.0.0.1 for S seconds, each request carrying a traceparent:
 *                                  "keepalive_cpu_ns" (process CPU time per request)
 *   https_io nonhttp N CERT KEY    SSL_write + SSL_read of 64 bytes on an accepted TLS connection
 *                                  that carries no HTTP: "nonhttp_ns" per pair
 * Prints "<name> <value>" lines. */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef void SSL;
typedef void SSL_CTX;
static void *(*server_method)(void), *(*client_method)(void);
static SSL_CTX *(*ctx_new)(void *);
static int (*use_cert)(SSL_CTX *, const char *, int), (*use_key)(SSL_CTX *, const char *, int);
static SSL *(*ssl_new)(SSL_CTX *);
static int (*set_fd)(SSL *, int), (*ssl_accept)(SSL *), (*ssl_connect)(SSL *);
static int (*ssl_read)(SSL *, void *, int), (*ssl_write)(SSL *, const void *, int);
static void (*ssl_free)(SSL *);

static void die(const char *what)
{
    fprintf(stderr, "https_io: %s\n", what);
    exit(1);
}

static void *sym(const char *name)
{
    void *f = dlsym(RTLD_DEFAULT, name);
    if (!f)
        die(name);
    return f;
}

static void load(void)
{
    if (!dlopen("libssl.so.3", RTLD_NOW | RTLD_GLOBAL) &&
        !dlopen("libssl.so.1.1", RTLD_NOW | RTLD_GLOBAL))
        die("no libssl.so.3 or libssl.so.1.1");
    *(void **)&server_method = sym("TLS_server_method");
    *(void **)&client_method = sym("TLS_client_method");
    *(void **)&ctx_new = sym("SSL_CTX_new");
    *(void **)&use_cert = sym("SSL_CTX_use_certificate_file");
    *(void **)&use_key = sym("SSL_CTX_use_PrivateKey_file");
    *(void **)&ssl_new = sym("SSL_new");
    *(void **)&set_fd = sym("SSL_set_fd");
    *(void **)&ssl_accept = sym("SSL_accept");
    *(void **)&ssl_connect = sym("SSL_connect");
    *(void **)&ssl_read = sym("SSL_read");
    *(void **)&ssl_write = sym("SSL_write");
    *(void **)&ssl_free = sym("SSL_free");
}

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static const char request[] =
    "GET /item/42 HTTP/1.1\r\nHost: bench\r\nUser-Agent: https_io\r\nAccept: */*\r\n"
    "traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\n\r\n";
static const char response[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

struct server {
    int ls, http;
    SSL_CTX *ctx;
    SSL *ssl; /* nonhttp: the accepted connection, handed back */
};

/* The server side: accept, handshake; keepalive: read a head (one record), answer. */
static void *serve(void *arg)
{
    struct server *s = arg;
    int fd = accept(s->ls, NULL, NULL);
    SSL *ssl = ssl_new(s->ctx);
    set_fd(ssl, fd);
    if (ssl_accept(ssl) != 1)
        die("SSL_accept");
    if (!s->http) {
        s->ssl = ssl;
        return NULL;
    }
    char buf[1024];
    while (ssl_read(ssl, buf, sizeof buf) > 0)
        if (ssl_write(ssl, response, sizeof response - 1) <= 0)
            break;
    ssl_free(ssl);
    close(fd);
    return NULL;
}

/* A connected client over TLS to a server thread (started in *th). */
static SSL *connect_pair(struct server *s, pthread_t *th, const char *cert, const char *key,
                         int *fd)
{
    s->ctx = ctx_new(server_method());
    if (use_cert(s->ctx, cert, 1) != 1 || use_key(s->ctx, key, 1) != 1)
        die("certificate");
    s->ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (bind(s->ls, (struct sockaddr *)&a, sizeof a) != 0 || listen(s->ls, 1) != 0 ||
        getsockname(s->ls, (struct sockaddr *)&a, &len) != 0)
        die("listen");
    pthread_create(th, NULL, serve, s);
    int c = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    if (connect(c, (struct sockaddr *)&a, sizeof a) != 0)
        die("connect");
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    *fd = c;
    SSL *ssl = ssl_new(ctx_new(client_method()));
    set_fd(ssl, c);
    if (ssl_connect(ssl) != 1)
        die("SSL_connect");
    return ssl;
}

static void bench_keepalive(double seconds, const char *cert, const char *key)
{
    struct server s = {.http = 1};
    pthread_t th;
    int fd;
    SSL *c = connect_pair(&s, &th, cert, key, &fd);
    char buf[256];
    long n = 0;
    double cpu0 = cpu_s(), t0 = now_s();
    do {
        for (int i = 0; i < 100; i++, n++) {
            if (ssl_write(c, request, sizeof request - 1) != (int)sizeof request - 1)
                die("SSL_write");
            int got = 0;
            while (got < (int)sizeof response - 1) {
                int r = ssl_read(c, buf, sizeof buf);
                if (r <= 0)
                    die("SSL_read");
                got += r;
            }
        }
    } while (now_s() - t0 < seconds);
    printf("keepalive_cpu_ns %.0f\n", (cpu_s() - cpu0) * 1e9 / n);
    ssl_free(c);
    close(fd);
    pthread_join(th, NULL);
}

static void bench_nonhttp(long n, const char *cert, const char *key)
{
    struct server s = {.http = 0};
    pthread_t th;
    int fd;
    SSL *c = connect_pair(&s, &th, cert, key, &fd);
    pthread_join(th, NULL);
    char buf[64] = {1, 2, 3}; /* binary: no HTTP request starts so */
    double t0 = now_s();
    for (long i = 0; i < n; i++) {
        if (ssl_write(c, buf, sizeof buf) != (int)sizeof buf)
            die("SSL_write");
        int got = 0;
        while (got < (int)sizeof buf) {
            int r = ssl_read(s.ssl, buf, sizeof buf - got);
            if (r <= 0)
                die("SSL_read");
            got += r;
        }
    }
    printf("nonhttp_ns %.1f\n", (now_s() - t0) * 1e9 / n);
}

int main(int argc, char **argv)
{
    if (argc != 5)
        return 2;
    load();
    if (!strcmp(argv[1], "keepalive"))
        bench_keepalive(atof(argv[2]), argv[3], argv[4]);
    else if (!strcmp(argv[1], "nonhttp"))
        bench_nonhttp(atol(argv[2]), argv[3], argv[4]);
    else
        return 2;
    return 0;
}

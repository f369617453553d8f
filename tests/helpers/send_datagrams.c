/* send_datagrams — sends datagrams to a process's profiler socket the way the eBPF profiler
 * does: an unbound SOCK_DGRAM socket, sendto("/proc/PID/root" + PATH, MSG_DONTWAIT).
 *
 * usage: send_datagrams [--drop] [--minor N] [--every-us N] PID SOCKET_PATH COMMAND ARGS…
 *   --every-us N: a pause of N microseconds after each datagram (a steady rate)
 *   corr TRACE_HEX32 TXN_HEX16 STACK_HEX32 COUNT [REPEAT]   correlation(s), minor 1 (--minor)
 *   reg DELAY_MS                          registration minor 1
 *   reg DELAY_MS HOST_ID                  registration minor 2 (--minor) with a host id
 *   reg-hex DELAY_MS HOST_ID_HEX          the same, host id given as hex bytes
 *   raw HEX                               any bytes
 *   big N                                 N bytes: a correlation header, then filler
 *   corr-ids TRACE_HEX32 TXN_HEX16 N      N correlations, distinct stack ids 1..N, count 1
 *   corr-keys N                           N correlations with distinct transaction ids
 *   garbage SEED COUNT                    a seeded random corpus of mostly malformed datagrams
 * By default a full socket queue (EAGAIN) is waited out so that tests are exact (but if one
 * datagram waits 3 s, nobody reads: the rest is sent as with --drop); --drop drops on EAGAIN
 * like the profiler. Prints "sent N dropped M". */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static int fd;
static struct sockaddr_un addr;
static int drop_mode;
static long every_us;
static unsigned long sent, dropped;

static void die(const char *what)
{
    fprintf(stderr, "send_datagrams: %s: %s\n", what, strerror(errno));
    exit(2);
}

static void send_one(const void *buf, size_t len)
{
    struct timespec pause = {0, 200000};
    for (int tries = 0;; tries++) {
        if (sendto(fd, buf, len, MSG_DONTWAIT, (struct sockaddr *)&addr, sizeof addr) >= 0) {
            sent++;
            break;
        }
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != ENOBUFS)
            die("sendto");
        if (drop_mode || tries > 15000) {
            if (!drop_mode)
                fprintf(stderr, "send_datagrams: nobody reads for 3 s; dropping from now on\n");
            drop_mode = 1;
            dropped++;
            break;
        }
        nanosleep(&pause, NULL);
    }
    if (every_us > 0) {
        struct timespec gap = {every_us / 1000000, (every_us % 1000000) * 1000};
        nanosleep(&gap, NULL);
    }
}

static size_t hex_bytes(const char *hex, uint8_t *out, size_t cap)
{
    size_t n = strlen(hex) / 2;
    if (strlen(hex) % 2 || n > cap) {
        fprintf(stderr, "send_datagrams: bad hex %s\n", hex);
        exit(2);
    }
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        if (sscanf(hex + 2 * i, "%2x", &v) != 1) {
            fprintf(stderr, "send_datagrams: bad hex %s\n", hex);
            exit(2);
        }
        out[i] = (uint8_t)v;
    }
    return n;
}

static void put16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }
static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }

static uint64_t rng;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Mostly malformed, some valid: every class the parser knows, at every boundary length. */
static void garbage(uint64_t seed, unsigned long count)
{
    static const uint16_t minors[] = {0, 1, 2, 3, 0xFFFF};
    uint8_t buf[1600];
    rng = seed * 0x9E3779B97F4A7C15ull + 1;
    for (unsigned long i = 0; i < count; i++) {
        size_t len;
        for (size_t j = 0; j < sizeof buf; j += 8) {
            uint64_t r = next_rand();
            memcpy(buf + j, &r, 8);
        }
        switch (next_rand() % 10) {
        case 0: case 1: case 2: /* random bytes, short */
            len = next_rand() % 64;
            break;
        case 3: case 4: case 5: /* correlation header, any minor, lengths around 46 */
            put16(buf, 1);
            put16(buf + 2, minors[next_rand() % 5]);
            len = next_rand() % 60;
            break;
        case 6: case 7: case 8: /* registration, host id length sometimes fitting */
            put16(buf, 2);
            put16(buf + 2, minors[next_rand() % 5]);
            len = next_rand() % 48;
            if (next_rand() % 2 && len >= 12)
                put32(buf + 8, (uint32_t)(next_rand() % (len - 11)));
            break;
        default: /* long ones, some beyond the receive buffer */
            len = next_rand() % sizeof buf;
            put16(buf, (uint16_t)(next_rand() % 4));
            put16(buf + 2, minors[next_rand() % 5]);
            break;
        }
        send_one(buf, len);
    }
}

int main(int argc, char **argv)
{
    int a = 1;
    int minor = -1; /* -1: the command's own */
    for (; a < argc && argv[a][0] == '-' && argv[a][1] == '-'; a++) {
        if (!strcmp(argv[a], "--drop"))
            drop_mode = 1;
        else if (!strcmp(argv[a], "--minor") && a + 1 < argc)
            minor = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--every-us") && a + 1 < argc)
            every_us = atol(argv[++a]);
        else
            break;
    }
    if (argc - a < 3) {
        fprintf(stderr, "usage: send_datagrams [--drop] [--minor N] PID PATH COMMAND ARGS...\n");
        return 2;
    }
    addr.sun_family = AF_UNIX;
    if (snprintf(addr.sun_path, sizeof addr.sun_path, "/proc/%s/root%s", argv[a],
                 argv[a + 1]) >= (int)sizeof addr.sun_path) {
        fprintf(stderr, "send_datagrams: path too long\n");
        return 2;
    }
    fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        die("socket");
    const char *cmd = argv[a + 2];
    char **args = argv + a + 3;
    int nargs = argc - a - 3;
    uint8_t buf[2048];
    memset(buf, 0, sizeof buf);

    if (!strcmp(cmd, "corr") && nargs >= 4) {
        put16(buf, 1);
        put16(buf + 2, (uint16_t)(minor >= 0 ? minor : 1));
        hex_bytes(args[0], buf + 4, 16);
        hex_bytes(args[1], buf + 20, 8);
        hex_bytes(args[2], buf + 28, 16);
        put16(buf + 44, (uint16_t)atoi(args[3]));
        long repeat = nargs > 4 ? atol(args[4]) : 1;
        for (long i = 0; i < repeat; i++)
            send_one(buf, 46);
    } else if ((!strcmp(cmd, "reg") || !strcmp(cmd, "reg-hex")) && nargs >= 1) {
        put16(buf, 2);
        put32(buf + 4, (uint32_t)strtoul(args[0], NULL, 10));
        if (nargs == 1) {
            put16(buf + 2, (uint16_t)(minor >= 0 ? minor : 1));
            send_one(buf, 8);
        } else {
            size_t n;
            if (!strcmp(cmd, "reg"))
                memcpy(buf + 12, args[1], n = strlen(args[1]) < 1500 ? strlen(args[1]) : 1500);
            else
                n = hex_bytes(args[1], buf + 12, 1500);
            put16(buf + 2, (uint16_t)(minor >= 0 ? minor : 2));
            put32(buf + 8, (uint32_t)n);
            send_one(buf, 12 + n);
        }
    } else if (!strcmp(cmd, "raw") && nargs >= 1) {
        send_one(buf, hex_bytes(args[0], buf, sizeof buf));
    } else if (!strcmp(cmd, "big") && nargs >= 1) {
        size_t n = (size_t)atol(args[0]);
        if (n > sizeof buf)
            n = sizeof buf;
        put16(buf, 1);
        put16(buf + 2, 1);
        send_one(buf, n);
    } else if (!strcmp(cmd, "corr-ids") && nargs >= 3) {
        put16(buf, 1);
        put16(buf + 2, 1);
        hex_bytes(args[0], buf + 4, 16);
        hex_bytes(args[1], buf + 20, 8);
        put16(buf + 44, 1);
        long n = atol(args[2]);
        for (long i = 1; i <= n; i++) {
            memcpy(buf + 28, &i, sizeof i);
            send_one(buf, 46);
        }
    } else if (!strcmp(cmd, "corr-keys") && nargs >= 1) {
        put16(buf, 1);
        put16(buf + 2, 1);
        memset(buf + 4, 0x7e, 16);
        memset(buf + 28, 0x5a, 16);
        put16(buf + 44, 1);
        long n = atol(args[0]);
        for (long i = 1; i <= n; i++) {
            memcpy(buf + 20, &i, sizeof i);
            send_one(buf, 46);
        }
    } else if (!strcmp(cmd, "garbage") && nargs >= 2) {
        garbage(strtoull(args[0], NULL, 10), strtoul(args[1], NULL, 10));
    } else {
        fprintf(stderr, "send_datagrams: unknown command %s\n", cmd);
        return 2;
    }
    printf("sent %lu dropped %lu\n", sent, dropped);
    return 0;
}

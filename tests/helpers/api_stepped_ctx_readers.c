/* api_stepped_ctx_readers — the OTel process context's update protocol checked the way its
 * readers use it (OTEP 4719): a reader reads published_at_ns, then the header and the payload,
 * then the timestamp again, and accepts the copy only when that timestamp is non-zero and
 * unchanged. Here readers start at every instruction of the writer and run their steps spread
 * over its next instructions; every copy one of them accepts must be a payload that was
 * published, whatever instruction each of its reads landed on.
 *
 * The process forks: the child (run it under LD_PRELOAD with PROFLINK_OTEL_CONTEXT=1)
 * republishes its resource in a loop, proflink_set_resource("test.seq=N,test.fill=<N%20 x>");
 * the parent attaches with ptrace, single-steps it STEPS times, and after every instruction
 * starts one reader of each shape below and advances those in flight, all reading with
 * process_vm_readv. A reader shape is the number of the writer's instructions between its
 * first timestamp read and its header read, between the header and the payload copy, between
 * the copy and the second timestamp read, and how many bytes of the payload it copies per
 * instruction (0: all at once): from a reader that does everything at one instant to one slow
 * enough to overlap a whole update.
 *
 * This reader shares no code with the library: it finds the mapping by name in
 * /proc/PID/maps, knows the header from docs/formats.md and decodes the protobuf itself. An
 * accepted copy must (1) be byte for byte the copy accepted before under the same timestamp,
 * (2) decode strictly as a ProcessContext whose resource holds test.seq=N and
 * test.fill=<N%20 x> and otherwise exactly what the first accepted copy held, (3) carry an N
 * the writer had asked for by the time of the second read and no older than the last call
 * that returned before the first read, and (4) never go back in N as timestamps grow.
 *
 * usage: api_stepped_ctx_readers STEPS
 * Prints "steps N readers R accepted A writing W changed C invalid I publications P" (readers
 * started; copies accepted; readers that found the timestamp 0 at their first read, or changed
 * at their second; gave up on the header or an unreadable payload; distinct timestamps
 * accepted) and "ok", or "FAIL step N pc 0x… (library +0x…): what" at the first bad copy;
 * exit 0/1 (2: could not set up; 77: ptrace is not allowed here). */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

/* docs/formats.md: "OTEL_CTX" | u32 version (2) | u32 payload_size | u64 published_at_ns |
 * u64 payload pointer, native endian */
struct ctx_header {
    char signature[8];
    uint32_t version, payload_size;
    uint64_t published_at_ns, payload;
};
#define TS_OFFSET 16
#define PAYLOAD_MAX 65536 /* the format's limit: a reader rejects larger sizes */
#define COPY_CAP 8192     /* this writer's payloads are far smaller */
#define NO_PTRACE 77

/* ---- the writer (child) ------------------------------------------------------------------ */

/* Same addresses in both processes (fork): the call in progress and the last that returned. */
static volatile unsigned long seq_calling, seq_done;

static void fill_attrs(char *out, size_t cap, unsigned long n)
{
    snprintf(out, cap, "test.seq=%lu,test.fill=%.*s", n, (int)(n % 20), "xxxxxxxxxxxxxxxxxxxx");
}

static void write_process(int (*set_resource)(const char *))
{
    char attrs[64];
    for (unsigned long n = seq_done + 1;; n++) {
        fill_attrs(attrs, sizeof attrs, n);
        seq_calling = n;
        set_resource(attrs);
        seq_done = n;
    }
}

/* ---- reading the child ------------------------------------------------------------------- */

static pid_t child;
static long step;
static uint64_t lib_lo, lib_hi, lib_base;

static int peek(uint64_t addr, void *buf, size_t len)
{
    struct iovec local = {buf, len}, remote = {(void *)(uintptr_t)addr, len};
    return process_vm_readv(child, &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -1;
}

/* The child's memory as the readers see it at this instruction: it cannot change before the
 * next one, so each 4 KiB piece they touch is read once per instruction and shared. */
#define PIECE 4096
#define PIECES 8
static struct piece {
    uint64_t at;
    uint8_t bytes[PIECE];
} pieces[PIECES];
static int pieces_n;

static void next_instruction(void) { pieces_n = 0; }

static const uint8_t *piece_of(uint64_t at)
{
    for (int i = 0; i < pieces_n; i++)
        if (pieces[i].at == at)
            return pieces[i].bytes;
    if (pieces_n == PIECES || peek(at, pieces[pieces_n].bytes, PIECE))
        return NULL;
    pieces[pieces_n].at = at;
    return pieces[pieces_n++].bytes;
}

/* What a reader reads at this instruction: 0, or -1 if it is not all mapped. */
static int read_now(uint64_t addr, void *buf, size_t len)
{
    uint8_t *out = buf;
    while (len) {
        uint64_t at = addr & ~(uint64_t)(PIECE - 1);
        size_t off = (size_t)(addr - at), n = PIECE - off < len ? PIECE - off : len;
        const uint8_t *p = piece_of(at);
        if (!p)
            return peek(addr, out, len);
        memcpy(out, p + off, n);
        out += n, addr += n, len -= n;
    }
    return 0;
}

static unsigned long peek_ulong(const volatile unsigned long *p)
{
    unsigned long v = 0;
    peek((uintptr_t)p, &v, sizeof v);
    return v;
}

static unsigned long pc(void)
{
    struct user_regs_struct r;
    struct iovec io = {&r, sizeof r};
    if (ptrace(PTRACE_GETREGSET, child, (void *)1 /* NT_PRSTATUS */, &io) != 0)
        return 0;
#if defined(__x86_64__)
    return r.rip;
#elif defined(__aarch64__)
    return r.pc;
#else
    return 0;
#endif
}

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
    unsigned long at = pc();
    printf("FAIL step %ld pc 0x%lx", step, at);
    if (at >= lib_lo && at < lib_hi)
        printf(" (library +0x%lx)", (unsigned long)(at - lib_base));
    printf(": ");
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    kill(child, SIGKILL);
    exit(1);
}

/* Where the header is mapped, found by name as readers do (non-executable); 0 if none. */
static uint64_t find_header(void)
{
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)child);
    FILE *f = fopen(path, "r");
    uint64_t at = 0;
    while (f && !at && fgets(line, sizeof line, f)) {
        char perms[8];
        unsigned long lo;
        if (sscanf(line, "%lx-%*x %7s", &lo, perms) == 2 && perms[2] != 'x' &&
            (strstr(line, "[anon:OTEL_CTX]") || strstr(line, "/memfd:OTEL_CTX")))
            at = lo;
    }
    if (f)
        fclose(f);
    return at;
}

static void find_library(void)
{
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)child);
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f)) {
        unsigned long lo, hi, off;
        char perms[8];
        if (strstr(line, "elastic-jvmti-linux-") &&
            sscanf(line, "%lx-%lx %7s %lx", &lo, &hi, perms, &off) == 4 && perms[2] == 'x') {
            if (!lib_lo || lo < lib_lo)
                lib_lo = lo, lib_base = lo - off;
            if (hi > lib_hi)
                lib_hi = hi;
        }
    }
    if (f)
        fclose(f);
}

/* ---- the payload, decoded strictly ------------------------------------------------------- */

/* A varint at *p (below end); -1 if truncated or longer than 10 bytes. */
static int varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (*p >= end)
            return -1;
        uint8_t b = *(*p)++;
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return 0;
    }
    return -1;
}

/* The next field of the message [*p, end): its number and wire type, and for a LEN field its
 * bytes in [*val, *val_end). 0, 1 at the end, -1 if malformed (a length past the end, an
 * unknown wire type, field 0). */
static int next_field(const uint8_t **p, const uint8_t *end, unsigned *field, unsigned *wire,
                      const uint8_t **val, const uint8_t **val_end)
{
    if (*p == end)
        return 1;
    uint64_t key, n;
    if (varint(p, end, &key) || (key >> 3) == 0)
        return -1;
    *field = (unsigned)(key >> 3);
    *wire = (unsigned)(key & 7);
    *val = *p;
    switch (*wire) {
    case 0:
        if (varint(p, end, &n))
            return -1;
        break;
    case 1:
    case 5:
        n = *wire == 1 ? 8 : 4;
        if ((uint64_t)(end - *p) < n)
            return -1;
        *p += n;
        break;
    case 2:
        if (varint(p, end, &n) || n > (uint64_t)(end - *p))
            return -1;
        *val = *p;
        *p += n;
        break;
    default:
        return -1;
    }
    *val_end = *p;
    return 0;
}

/* A KeyValue whose value is a string (AnyValue field 1): key and value; -1 otherwise. */
static int string_kv(const uint8_t *p, const uint8_t *end, const uint8_t **k, size_t *klen,
                     const uint8_t **v, size_t *vlen)
{
    unsigned f, w;
    const uint8_t *a, *b;
    int r;
    *k = *v = NULL;
    while ((r = next_field(&p, end, &f, &w, &a, &b)) == 0) {
        if (f == 1 && w == 2) {
            *k = a, *klen = (size_t)(b - a);
        } else if (f == 2 && w == 2) {
            const uint8_t *q = a, *c, *d;
            unsigned g, x;
            int s;
            while ((s = next_field(&q, b, &g, &x, &c, &d)) == 0)
                if (g == 1 && x == 2)
                    *v = c, *vlen = (size_t)(d - c);
            if (s < 0)
                return -1;
        }
    }
    return r < 0 || !*k || !*v ? -1 : 0;
}

static int text_is(const uint8_t *s, size_t n, const char *want)
{
    return n == strlen(want) && memcmp(s, want, n) == 0;
}

/* What a payload says beyond test.seq and test.fill (every other field's bytes, in order):
 * the same in every publication of this writer. */
static uint8_t rest_first[COPY_CAP], rest[COPY_CAP];
static size_t rest_first_len, rest_len;
static int have_rest_first;

static void rest_add(const uint8_t *a, const uint8_t *b)
{
    memcpy(rest + rest_len, a, (size_t)(b - a)); /* a part of the payload: it fits */
    rest_len += (size_t)(b - a);
}

/* Decodes a ProcessContext (1: Resource, whose 1: repeated KeyValue; 2: repeated KeyValue):
 * its test.seq (*seq), and NULL, or what is wrong with it. */
static const char *decode(const uint8_t *buf, size_t size, unsigned long *seq)
{
    const uint8_t *p = buf, *end = buf + size, *a, *b;
    unsigned f, w;
    int r, resources = 0, seqs = 0, fills = 0;
    size_t fill_len = 0;
    rest_len = 0;
    while ((r = next_field(&p, end, &f, &w, &a, &b)) == 0) {
        if (!(f == 1 && w == 2)) {
            rest_add(a, b);
            continue;
        }
        resources++;
        const uint8_t *q = a, *c, *d;
        unsigned g, x;
        int s;
        while ((s = next_field(&q, b, &g, &x, &c, &d)) == 0) {
            const uint8_t *k, *v;
            size_t klen, vlen;
            if (g == 1 && x == 2 && string_kv(c, d, &k, &klen, &v, &vlen) == 0 &&
                text_is(k, klen, "test.seq")) {
                char digits[24];
                if (vlen == 0 || vlen >= sizeof digits)
                    return "test.seq is not a number";
                memcpy(digits, v, vlen);
                digits[vlen] = 0;
                char *stop;
                *seq = strtoul(digits, &stop, 10);
                if (*stop)
                    return "test.seq is not a number";
                seqs++;
            } else if (g == 1 && x == 2 && string_kv(c, d, &k, &klen, &v, &vlen) == 0 &&
                       text_is(k, klen, "test.fill")) {
                for (size_t i = 0; i < vlen; i++)
                    if (v[i] != 'x')
                        return "test.fill holds other bytes than x";
                fill_len = vlen;
                fills++;
            } else {
                rest_add(c, d);
            }
        }
        if (s < 0)
            return "the resource does not decode";
    }
    if (r < 0)
        return "the payload does not decode (a field runs past its end or the payload's)";
    if (resources != 1)
        return "not exactly one resource";
    if (seqs != 1)
        return "not exactly one test.seq";
    if (fills > 1 || fill_len != *seq % 20)
        return "test.fill does not go with test.seq";
    if (!have_rest_first) {
        memcpy(rest_first, rest, rest_len);
        rest_first_len = rest_len;
        have_rest_first = 1;
    } else if (rest_len != rest_first_len || memcmp(rest, rest_first, rest_len) != 0) {
        return "its other attributes differ from the first accepted payload's";
    }
    return NULL;
}

/* ---- the readers ------------------------------------------------------------------------- */

/* Instructions of the writer between a reader's first timestamp read and its header read,
 * between that and its payload copy, between the copy and its second timestamp read; bytes
 * copied per instruction (0: all at once). */
static const struct shape {
    int to_header, to_copy, to_recheck, chunk;
} shapes[] = {
    {0, 0, 0, 0}, {1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}, {1, 1, 1, 0},
    {0, 0, 0, 64}, {2, 3, 5, 0},
};
#define SHAPES (sizeof shapes / sizeof shapes[0])

enum { R_FREE, R_HEADER, R_COPY, R_RECHECK };
struct reader {
    int state, wait;
    const struct shape *shape;
    uint64_t ts1, ptr;
    uint32_t size, copied;
    unsigned long done_at_start; /* the last call that had returned at its first read */
    uint8_t buf[COPY_CAP];
};
#define READERS 1024
static struct reader readers[READERS];

/* The copies accepted so far, one per timestamp (the last few: readers in flight hold none
 * older than the two publications before the current one). */
#define KEPT 8
static struct accepted {
    uint64_t ts;
    uint32_t size;
    unsigned long seq;
    uint8_t bytes[COPY_CAP];
} kept[KEPT];
static int kept_n;
static uint64_t header_at;
static long started, accepted, writing, changed, invalid, publications;

static void accept(struct reader *r)
{
    accepted++;
    for (int i = 0; i < kept_n; i++) {
        struct accepted *a = &kept[i];
        if (a->ts != r->ts1)
            continue;
        if (a->size != r->size || memcmp(a->bytes, r->buf, r->size) != 0)
            fail("a copy of %u bytes accepted under timestamp %llu differs from the %u bytes "
                 "accepted under it before (seq %lu)", r->size, (unsigned long long)r->ts1,
                 a->size, a->seq);
        return;
    }
    unsigned long seq = 0;
    const char *why = decode(r->buf, r->size, &seq);
    if (why)
        fail("a copy of %u bytes accepted under timestamp %llu: %s", r->size,
             (unsigned long long)r->ts1, why);
    unsigned long calling = peek_ulong(&seq_calling);
    if (seq > calling)
        fail("accepted test.seq=%lu before the writer asked for it (calling %lu)", seq, calling);
    if (seq < r->done_at_start)
        fail("accepted test.seq=%lu, older than the %lu published before the read began", seq,
             r->done_at_start);
    for (int i = 0; i < kept_n; i++)
        if ((kept[i].ts < r->ts1 && kept[i].seq > seq) || (kept[i].ts > r->ts1 && kept[i].seq < seq))
            fail("test.seq %lu under timestamp %llu, %lu under %llu: the order went back", seq,
                 (unsigned long long)r->ts1, kept[i].seq, (unsigned long long)kept[i].ts);
    /* the oldest timestamp makes room */
    int slot = 0;
    if (kept_n < KEPT) {
        slot = kept_n++;
    } else {
        for (int i = 1; i < KEPT; i++)
            if (kept[i].ts < kept[slot].ts)
                slot = i;
    }
    kept[slot].ts = r->ts1;
    kept[slot].size = r->size;
    kept[slot].seq = seq;
    memcpy(kept[slot].bytes, r->buf, r->size);
    publications++;
}

/* Does whatever the reader has to do at this instruction; 0 once it is done. */
static int advance(struct reader *r)
{
    while (r->wait == 0) {
        switch (r->state) {
        case R_HEADER: {
            struct ctx_header h;
            if (read_now(header_at, &h, sizeof h) || memcmp(h.signature, "OTEL_CTX", 8) != 0 ||
                h.version != 2 || h.payload_size == 0 || h.payload_size > PAYLOAD_MAX) {
                invalid++;
                return 0;
            }
            if (h.payload_size > COPY_CAP)
                fail("a payload size of %u: this writer's are far smaller", h.payload_size);
            r->ptr = h.payload;
            r->size = h.payload_size;
            r->copied = 0;
            r->state = R_COPY;
            r->wait = r->shape->to_copy;
            break;
        }
        case R_COPY: {
            uint32_t n = r->size - r->copied;
            if (r->shape->chunk && n > (uint32_t)r->shape->chunk)
                n = (uint32_t)r->shape->chunk;
            if (read_now(r->ptr + r->copied, r->buf + r->copied, n)) {
                invalid++; /* the payload is gone: the recheck would have failed anyway */
                return 0;
            }
            r->copied += n;
            if (r->copied < r->size) {
                r->wait = 1;
                break;
            }
            r->state = R_RECHECK;
            r->wait = r->shape->to_recheck;
            break;
        }
        case R_RECHECK: {
            uint64_t ts2;
            if (read_now(header_at + TS_OFFSET, &ts2, sizeof ts2)) {
                invalid++;
                return 0;
            }
            if (ts2 != r->ts1) {
                changed++;
                return 0;
            }
            accept(r);
            return 0;
        }
        }
    }
    r->wait--;
    return 1;
}

static void start_reader(const struct shape *s)
{
    uint64_t ts1;
    started++;
    if (read_now(header_at + TS_OFFSET, &ts1, sizeof ts1)) {
        invalid++;
        return;
    }
    if (ts1 == 0) {
        writing++;
        return;
    }
    struct reader *r = NULL;
    for (int i = 0; i < READERS && !r; i++)
        if (readers[i].state == R_FREE)
            r = &readers[i];
    if (!r)
        fail("%s", "more readers in flight than the test holds");
    r->shape = s;
    r->ts1 = ts1;
    r->done_at_start = peek_ulong(&seq_done);
    r->state = R_HEADER;
    r->wait = s->to_header;
    if (!advance(r))
        r->state = R_FREE;
}

/* After each instruction of the writer: the readers in flight go on, then new ones start. */
static void readers_step(void)
{
    next_instruction();
    for (int i = 0; i < READERS; i++)
        if (readers[i].state != R_FREE && !advance(&readers[i]))
            readers[i].state = R_FREE;
    for (size_t s = 0; s < SHAPES; s++)
        start_reader(&shapes[s]);
}

static void writer_gone(int status)
{
    printf("FAIL step %ld: the writer is gone (status 0x%x: %s)\n", step, status,
           WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "exited");
    exit(1);
}

int main(int argc, char **argv)
{
    if (argc != 2 || atol(argv[1]) <= 0) {
        fprintf(stderr, "usage: api_stepped_ctx_readers STEPS\n");
        return 2;
    }
    long steps = atol(argv[1]);
    int pfd[2];
    if (pipe(pfd) != 0)
        return 2;
    pid_t parent = getpid();
    child = fork();
    if (child < 0)
        return 2;
    if (child == 0) {
        /* the writer loops forever: it must not outlive its reader, however that ends */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
            _exit(2);
        close(pfd[0]);
        int (*set_resource)(const char *);
        *(void **)&set_resource = dlsym(RTLD_DEFAULT, "proflink_set_resource");
        if (!set_resource)
            _exit(2);
        char attrs[64];
        fill_attrs(attrs, sizeof attrs, 0);
        seq_calling = 0;
        set_resource(attrs);
        seq_done = 0;
        char ok = 1;
        if (write(pfd[1], &ok, 1) != 1)
            _exit(2);
        close(pfd[1]);
        write_process(set_resource);
    }
    close(pfd[1]);
    char ok;
    if (read(pfd[0], &ok, 1) != 1) {
        printf("FAIL: the writer did not start (is the library preloaded?)\n");
        return 2;
    }
    find_library();
    header_at = find_header();
    if (!header_at) {
        printf("FAIL: no OTEL_CTX mapping (PROFLINK_OTEL_CONTEXT=1?)\n");
        kill(child, SIGKILL);
        return 2;
    }
    int status;
    if (ptrace(PTRACE_SEIZE, child, NULL, NULL) != 0 ||
        ptrace(PTRACE_INTERRUPT, child, NULL, NULL) != 0 || waitpid(child, &status, __WALL) != child) {
        printf("cannot trace the writer: %s\n", strerror(errno));
        kill(child, SIGKILL);
        return NO_PTRACE;
    }
    int sig = 0;
    for (step = 0; step < steps; step++) {
        readers_step();
        if (ptrace(PTRACE_SINGLESTEP, child, NULL, (void *)(intptr_t)sig) != 0 ||
            waitpid(child, &status, __WALL) != child || !WIFSTOPPED(status))
            writer_gone(status);
        /* a signal for the writer (not our trap) goes on with the next step */
        sig = WSTOPSIG(status) == SIGTRAP ? 0 : WSTOPSIG(status);
    }
    kill(child, SIGKILL);
    waitpid(child, &status, __WALL);
    printf("steps %ld readers %ld accepted %ld writing %ld changed %ld invalid %ld "
           "publications %ld\n", steps, started, accepted, writing, changed, invalid,
           publications);
    printf("ok\n");
    return 0;
}

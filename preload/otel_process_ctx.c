/* otel_process_ctx.c — publishes the OpenTelemetry process context (see otel_process_ctx.h).
 *
 * Memory layout (what readers rely on, README: formats):
 *  - The OTEL_CTX mapping is one page holding only the 32-byte header, at its start. It is a
 *    private mapping of a memfd named "OTEL_CTX" (maps: "/memfd:OTEL_CTX (deleted)"), or a
 *    private anonymous mapping when memfd_create is unavailable (seccomp, old kernels); either
 *    way it is also named with prctl(PR_SET_VMA_ANON_NAME) where the kernel supports it.
 *  - The header holds a pointer to the payload, which lives in a separate private anonymous
 *    region of two 64 KiB slots (untouched pages cost nothing). An update encodes into the slot
 *    the header does not point at, then swaps the pointer, so a reader never sees the bytes it
 *    is reading change under a timestamp it will accept.
 *  - The header mapping has MADV_DONTFORK, so a fork child never carries a stale context; the
 *    payload region does not, so the child republishes the parent's bytes with its own
 *    service.instance.id, without encoding again or re-reading the environment (cheap; what a
 *    fork child handler may do at all is fork_sequence.c's rule).
 *
 * Readers are other processes reading our memory (process_vm_readv, /proc/PID/mem) while we
 * run: the C11 fences below order our stores as seen from another CPU, which is what a seqlock
 * writer needs (the reader side is each reader's business). The timestamp is the sequence word:
 * 0 means "being written", and every publication uses a strictly greater value than the last,
 * so a reader that sees the same non-zero timestamp before and after copying the payload knows
 * its copy is whole. */
#include "otel_process_ctx.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "proflink.h"
#include "protobuf_writer.h"
#include "resource_attrs.h"
#include "fd_safe.h"
#include "utf8.h"

/* Older libc headers (and musl's) may lack these; the values are the kernel ABI. memfd_create
 * and getrandom are called through syscall(): a libc wrapper would make the library fail to
 * load on a glibc older than the wrapper (we bind every symbol at load time). */
#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 0x0001U
#endif
#ifndef MFD_ALLOW_SEALING
#define MFD_ALLOW_SEALING 0x0002U
#endif
#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U
#endif
#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#endif
#ifndef PR_SET_VMA_ANON_NAME
#define PR_SET_VMA_ANON_NAME 0
#endif
#ifndef MADV_DONTFORK
#define MADV_DONTFORK 10
#endif
#ifndef CLOCK_BOOTTIME
#define CLOCK_BOOTTIME 7
#endif
#ifndef GRND_NONBLOCK
#define GRND_NONBLOCK 0x0001
#endif
#ifndef SYS_memfd_create
#if defined(__x86_64__)
#define SYS_memfd_create 319
#elif defined(__aarch64__)
#define SYS_memfd_create 279
#endif
#endif
#ifndef SYS_getrandom
#if defined(__x86_64__)
#define SYS_getrandom 318
#elif defined(__aarch64__)
#define SYS_getrandom 278
#endif
#endif

#define CTX_NAME "OTEL_CTX"
#define CTX_VERSION 2
/* Readers reject a larger payload_size (the OpenTelemetry eBPF profiler caps it at 65536). */
#define PAYLOAD_MAX 65536u
#define SLOTS 2
/* Room for the thread-context schema: 256 key names of at most 128 bytes with their protobuf
 * framing (~34 KiB), so a full key map still leaves half the payload to the resource. */
#define SCHEMA_MAX (40u * 1024u)
#define UUID_LEN 36

/* The header, exactly as readers parse it: native endian, 32 bytes, no padding. The words a
 * republication changes are atomics so each store is one untorn instruction. */
struct ctx_header {
    char signature[8];                /* "OTEL_CTX" */
    uint32_t version;                 /* 2 */
    _Atomic uint32_t payload_size;    /* > 0, <= PAYLOAD_MAX */
    _Atomic uint64_t published_at_ns; /* CLOCK_BOOTTIME; 0 while being written */
    _Atomic uint64_t payload;         /* address of the protobuf payload in this process */
};
_Static_assert(sizeof(struct ctx_header) == 32, "OTEL_CTX header is 32 bytes");
_Static_assert(offsetof(struct ctx_header, payload_size) == 12, "payload_size at 12");
_Static_assert(offsetof(struct ctx_header, published_at_ns) == 16, "timestamp at 16");
_Static_assert(offsetof(struct ctx_header, payload) == 24, "payload pointer at 24");

/* ProcessContext (opentelemetry.proto.processcontext.v1development) and the OTLP common
 * messages it uses; field numbers checked against the proto and the profiler's reader. */
enum {
    PC_RESOURCE = 1,   /* ProcessContext.resource: Resource */
    PC_ATTRIBUTES = 2, /* ProcessContext.attributes (extra_attributes): repeated KeyValue */
    RES_ATTRIBUTES = 1, /* Resource.attributes: repeated KeyValue */
    KV_KEY = 1,         /* KeyValue.key: string */
    KV_VALUE = 2,       /* KeyValue.value: AnyValue */
    ANY_STRING = 1,     /* AnyValue.string_value */
    ANY_ARRAY = 5,      /* AnyValue.array_value: ArrayValue */
    ARRAY_VALUES = 1,   /* ArrayValue.values: repeated AnyValue */
};

/* Everything this process published. Only the thread that holds `busy` touches it. */
static struct {
    struct ctx_header *hdr; /* the OTEL_CTX mapping, NULL if none */
    size_t hdr_len;
    int hdr_is_memfd; /* its maps name shows even when the kernel cannot name mappings */
    pid_t owner;    /* the process hdr belongs to: after a fork it is not ours */
    uint8_t *slots; /* SLOTS * PAYLOAD_MAX bytes, NULL if none */
    /* The slot the header points at. Atomic with release/acquire so that a fork child (whose
     * memory was copied at an arbitrary instant) that sees a slot index also sees the
     * uuid_off and payload bytes written for that slot before the index changed. */
    _Atomic int active;
    uint32_t size[SLOTS];     /* payload bytes in each slot */
    /* Where service.instance.id's 36 characters sit in each slot; NO_UUID when the instance id
     * is not proflink's random one (the tracer's or OTEL_RESOURCE_ATTRIBUTES' is kept as is). */
    size_t uuid_off[SLOTS];
    uint64_t last_ts;         /* the last timestamp published, for strict increase */
    char instance_id[UUID_LEN + 1];
    /* threadlocal.attribute_key_map: the caller's append-only array (see the header) */
    const char *const *keys;
    size_t n_keys;
    char *tracer_attrs; /* proflink_set_resource's attributes (owned copy), NULL if none */
} st;

#define NO_UUID SIZE_MAX

static atomic_flag busy = ATOMIC_FLAG_INIT;

/* "Logged once": one failure warning per process image (inherited by fork children, whose
 * failures would only repeat the parent's), plus one per kind of dropped input. */
enum {
    ONCE_FAIL,
    ONCE_MALFORMED,
    ONCE_DROPPED,
    ONCE_BAD_KEY,
    ONCE_SANITIZED,
    ONCE_UNNAMED,
    ONCE_COUNT
};
static _Atomic int logged[ONCE_COUNT];

static int first_time(int which)
{
    return !atomic_exchange_explicit(&logged[which], 1, memory_order_relaxed);
}

static void fail(const char *what, int err)
{
    if (first_time(ONCE_FAIL))
        log_warn("OpenTelemetry process context not published: %s: %s", what, strerror(err));
}

/* ---- time, randomness, UTF-8 ------------------------------------------------------------- */

/* Strictly greater than every timestamp published before in this process (and in its parent,
 * whose last_ts a fork child inherits): readers use it as a sequence number. */
static uint64_t next_timestamp(void)
{
    struct timespec ts;
    uint64_t now = 0;
    if (clock_gettime(CLOCK_BOOTTIME, &ts) == 0)
        now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    if (now <= st.last_ts)
        now = st.last_ts + 1;
    st.last_ts = now;
    return now;
}

static size_t read_urandom(uint8_t *out, size_t n)
{
    int fd = fd_above_stdio(open("/dev/urandom", O_RDONLY | O_CLOEXEC));
    size_t got = 0;
    if (fd < 0)
        return 0;
    while (got < n) {
        ssize_t r = read(fd, out + got, n - got);
        if (r > 0)
            got += (size_t)r;
        else if (!(r < 0 && errno == EINTR))
            break;
    }
    close(fd);
    return got;
}

/* getrandom without blocking (an early-boot service must not hang in our constructor), then
 * /dev/urandom, then a last-resort mix of clocks, pid and addresses: an instance id only has to
 * be unique, not secret. */
static void random_bytes(uint8_t *out, size_t n)
{
    size_t got = 0;
#ifdef SYS_getrandom
    while (got < n) {
        long r = syscall(SYS_getrandom, out + got, n - got, GRND_NONBLOCK);
        if (r > 0)
            got += (size_t)r;
        else if (!(r < 0 && errno == EINTR))
            break;
    }
#endif
    if (got < n)
        got += read_urandom(out + got, n - got);
    if (got == n)
        return;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    clock_gettime(CLOCK_REALTIME, &b);
    uint64_t x = (uint64_t)a.tv_nsec ^ (uint64_t)b.tv_nsec << 20 ^ (uint64_t)b.tv_sec ^
                 (uint64_t)getpid() << 40 ^ (uint64_t)(uintptr_t)&a;
    for (size_t i = got; i < n; i++) { /* splitmix64 */
        x += 0x9e3779b97f4a7c15u;
        uint64_t z = x;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
        out[i] = (uint8_t)(z ^ (z >> 31));
    }
}

/* A random (version 4, RFC 9562 variant) UUID in its 36-character text form. */
static void make_uuid(char out[UUID_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";
    uint8_t b[16];
    random_bytes(b, sizeof b);
    b[6] = (uint8_t)((b[6] & 0x0f) | 0x40);
    b[8] = (uint8_t)((b[8] & 0x3f) | 0x80);
    size_t o = 0;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            out[o++] = '-';
        out[o++] = hex[b[i] >> 4];
        out[o++] = hex[b[i] & 15];
    }
    out[o] = 0;
}

/* Replaces every byte that is not part of a well-formed sequence with '?', in place (same
 * length, so it can be done on bytes already encoded). Returns how many were replaced. */
static unsigned utf8_sanitize(uint8_t *s, size_t n)
{
    unsigned bad = 0;
    for (size_t i = 0; i < n;) {
        size_t k = utf8_seq(s + i, n - i);
        if (k) {
            i += k;
        } else {
            s[i++] = '?';
            bad++;
        }
    }
    return bad;
}

/* ---- payload encoding -------------------------------------------------------------------- */

struct encoder {
    struct pb_writer w;
    unsigned sanitized; /* invalid UTF-8 bytes replaced */
    unsigned dropped;   /* attributes that did not fit */
    unsigned bad_keys;  /* attributes whose key is not UTF-8 */
    char first_dropped[64];
};

/* KeyValue{key, AnyValue{string_value}} as `field` of the enclosing message. Returns the offset
 * of the value's bytes in the output (valid until an enclosing message is closed). */
static size_t put_string_kv(struct encoder *e, uint32_t field, const char *key, const char *value)
{
    size_t n = strlen(value);
    pb_msg kv = pb_begin(&e->w, field);
    pb_put_string_field(&e->w, KV_KEY, key);
    pb_msg any = pb_begin(&e->w, KV_VALUE);
    pb_put_string_field(&e->w, ANY_STRING, value);
    pb_end(&e->w, any);
    pb_end(&e->w, kv);
    if (pb_status(&e->w) != 0)
        return 0;
    /* The value is the last field of both messages just closed, so (their bodies having slid
     * down to their final place) it is now the last n bytes of the output. */
    size_t at = e->w.len - n;
    e->sanitized += utf8_sanitize(e->w.buf + at, n);
    return at;
}

/* KeyValue{key, AnyValue{array_value: ArrayValue{values: [AnyValue{string_value}...]}}}. */
static void put_string_array_kv(struct encoder *e, uint32_t field, const char *key,
                                const char *const *items, size_t count)
{
    pb_msg kv = pb_begin(&e->w, field);
    pb_put_string_field(&e->w, KV_KEY, key);
    pb_msg any = pb_begin(&e->w, KV_VALUE);
    pb_msg array = pb_begin(&e->w, ANY_ARRAY);
    for (size_t i = 0; i < count; i++) {
        pb_msg item = pb_begin(&e->w, ARRAY_VALUES);
        pb_put_string_field(&e->w, ANY_STRING, items[i]);
        pb_end(&e->w, item);
    }
    pb_end(&e->w, array);
    pb_end(&e->w, any);
    pb_end(&e->w, kv);
}

/* ProcessContext.attributes: how to read our thread records (README: formats). Position in the key
 * map is the key index used in the records; index 0 carries the local root span id. The names
 * come from otel_process_ctx_set_key_map (append-only), else that one default. */
static void put_thread_ctx_schema(struct encoder *e)
{
    static const char *const default_keys[] = {"local_root_span_id"};
    const char *const *keys = st.keys ? st.keys : default_keys;
    size_t n = st.keys ? st.n_keys : 1;
    put_string_kv(e, PC_ATTRIBUTES, "threadlocal.schema_version", "tlsdesc_v1_dev");
    put_string_array_kv(e, PC_ATTRIBUTES, "threadlocal.attribute_key_map", keys, n);
}

/* The resource attributes proflink itself decides; OTEL_RESOURCE_ATTRIBUTES cannot override
 * them (config.c already folded the environment into the service fields, with OTEL_SERVICE_NAME
 * first, so both protocols report the same identity). */
static const char *const owned_keys[] = {
    "service.name",       "service.instance.id",   "deployment.environment.name",
    "service.version",    "service.namespace",     "telemetry.sdk.name",
    "telemetry.sdk.version", "telemetry.sdk.language",
};

static int is_owned_key(const char *key)
{
    for (size_t i = 0; i < sizeof owned_keys / sizeof owned_keys[0]; i++)
        if (!strcmp(key, owned_keys[i]))
            return 1;
    return 0;
}

/* An owned attribute: the tracer's value when it published one (proflink_set_resource),
 * else proflink's default (NULL or "": not written). */
static void put_owned(struct encoder *e, const char *key, const char *dflt)
{
    char v[SERVICE_FIELD_MAX * 4 + 64];
    if (st.tracer_attrs && resource_attrs_get(st.tracer_attrs, key, v, sizeof v))
        put_string_kv(e, RES_ATTRIBUTES, key, v);
    else if (dflt && dflt[0])
        put_string_kv(e, RES_ATTRIBUTES, key, dflt);
}

/* Writes the owned attributes; returns the offset of the instance id's characters, NO_UUID
 * when the id is not proflink's random one. The instance id is the tracer's, else the one
 * OTEL_RESOURCE_ATTRIBUTES sets (so that profiles join the SDK's other telemetry), else a
 * random UUID of our own. */
static size_t put_identity(struct encoder *e, const struct config *cfg, const char *instance_id)
{
    char given[SERVICE_FIELD_MAX * 4 + 64];
    const char *env_attrs = secure_getenv("OTEL_RESOURCE_ATTRIBUTES");
    int has_given =
        (st.tracer_attrs &&
         resource_attrs_get(st.tracer_attrs, "service.instance.id", given, sizeof given) &&
         given[0]) ||
        (env_attrs && resource_attrs_get(env_attrs, "service.instance.id", given, sizeof given) &&
         given[0]);
    put_owned(e, "service.name", cfg->service_name);
    size_t uuid_at = put_string_kv(e, RES_ATTRIBUTES, "service.instance.id",
                                   has_given ? given : instance_id);
    put_owned(e, "deployment.environment.name", cfg->service_environment);
    put_owned(e, "service.version", cfg->service_version);
    put_owned(e, "service.namespace", cfg->service_namespace);
    put_owned(e, "telemetry.sdk.name", "proflink");
    put_owned(e, "telemetry.sdk.version", PROFLINK_VERSION_STRING);
    /* proflink is a C library; "cpp" is the semantic conventions' well-known value for C and
     * C++ SDKs (there is no "c"). The tracer in the process may be written in anything, and
     * says so with proflink_set_resource. */
    put_owned(e, "telemetry.sdk.language", "cpp");
    return has_given ? NO_UUID : uuid_at;
}

/* One OTEL_RESOURCE_ATTRIBUTES member (already percent-decoded), the last of its key: a later
 * duplicate replaces an earlier one, as config.c reads them (resource_attrs_each_last resolves
 * that in linear time). A member that does not fit in what is left of the 64 KiB payload is
 * dropped and counted (the identity was written first and always fits). */
static int add_env_attr(const char *key, const char *value, void *user)
{
    struct encoder *e = user;
    if (is_owned_key(key))
        return 0;
    if (!utf8_valid(key, strlen(key))) {
        e->bad_keys++;
        return 0;
    }
    size_t mark = pb_mark(&e->w);
    put_string_kv(e, RES_ATTRIBUTES, key, value);
    if (pb_status(&e->w) != 0) {
        pb_rollback(&e->w, mark);
        if (!e->dropped++)
            snprintf(e->first_dropped, sizeof e->first_dropped, "%s", key);
    }
    return 0;
}

static int count_nothing(const char *key, const char *value, void *user)
{
    (void)key, (void)value, (void)user;
    return 0;
}

/* The environment's members, then the tracer's (proflink_set_resource), each key once with its
 * last value: the tracer's replace the environment's. One linear pass over "env,tracer" (a
 * member never contains an unescaped comma, so joining them changes no member). Returns the
 * environment's malformed members. */
static int add_all_attrs(struct encoder *e, const char *env, const char *tracer)
{
    if (!tracer || !tracer[0])
        return env ? resource_attrs_each_last(env, add_env_attr, e) : 0;
    if (!env || !env[0]) {
        resource_attrs_each_last(tracer, add_env_attr, e);
        return 0;
    }
    size_t n = strlen(env), m = strlen(tracer);
    char *both = malloc(n + 1 + m + 1);
    if (!both) { /* out of memory: both sets, a key in both may then appear twice */
        int malformed = resource_attrs_each_last(env, add_env_attr, e);
        resource_attrs_each_last(tracer, add_env_attr, e);
        return malformed;
    }
    memcpy(both, env, n);
    both[n] = ',';
    memcpy(both + n + 1, tracer, m + 1);
    int malformed = resource_attrs_each_last(both, add_env_attr, e) -
                    resource_attrs_each(tracer, count_nothing, NULL);
    free(both);
    return malformed;
}

static void report_encoding(const struct encoder *e, int malformed)
{
    if (malformed && first_time(ONCE_MALFORMED))
        log_warn("OTEL_RESOURCE_ATTRIBUTES: %d malformed member(s) skipped", malformed);
    if (e->bad_keys && first_time(ONCE_BAD_KEY))
        log_warn("OTEL_RESOURCE_ATTRIBUTES: %u attribute(s) whose key is not UTF-8 skipped",
                 e->bad_keys);
    if (e->sanitized && first_time(ONCE_SANITIZED))
        log_warn("OpenTelemetry process context: %u byte(s) of invalid UTF-8 replaced by '?'",
                 e->sanitized);
    if (e->dropped && first_time(ONCE_DROPPED))
        log_warn("OTEL_RESOURCE_ATTRIBUTES: %u attribute(s) dropped (first: %.63s): the "
                 "OpenTelemetry process context payload is limited to %u bytes",
                 e->dropped, e->first_dropped, PAYLOAD_MAX);
}

/* Encodes the whole ProcessContext into `slot` (PAYLOAD_MAX bytes): the identity, then the
 * thread-context schema's room is set aside, then as many OTEL_RESOURCE_ATTRIBUTES members as
 * fit. Sets *size and *uuid_off. 0 ok, -1 if even the essentials did not fit (cannot happen:
 * they are a few hundred bytes). */
static int encode_payload(const struct config *cfg, const char *instance_id, uint8_t *slot,
                          uint32_t *size, size_t *uuid_off)
{
    /* Only the publication lock holder runs this, so one static buffer serves every call. */
    static uint8_t schema[SCHEMA_MAX];
    struct encoder e = {0};

    /* The extra attributes are encoded first, aside, so their room is reserved before the
     * resource can fill the slot; they are then appended after it (field order 1, 2). */
    pb_init(&e.w, schema, sizeof schema);
    put_thread_ctx_schema(&e);
    if (pb_status(&e.w) != 0)
        return -1;
    size_t schema_len = e.w.len;

    pb_init(&e.w, slot, PAYLOAD_MAX - schema_len);
    pb_msg resource = pb_begin(&e.w, PC_RESOURCE);
    size_t uuid_at = put_identity(&e, cfg, instance_id);
    if (pb_status(&e.w) != 0)
        return -1;
    const char *attrs = secure_getenv("OTEL_RESOURCE_ATTRIBUTES");
    int malformed = add_all_attrs(&e, attrs, st.tracer_attrs);
    size_t open_len = e.w.len;
    if (pb_end(&e.w, resource) != 0)
        return -1;
    /* Closing the resource slid its body down by the bytes the length prefix did not need. */
    if (uuid_at != NO_UUID)
        uuid_at -= open_len - e.w.len;
    e.w.cap = PAYLOAD_MAX;
    if (pb_put_raw(&e.w, schema, schema_len) != 0)
        return -1;
    report_encoding(&e, malformed);
    *size = (uint32_t)e.w.len;
    *uuid_off = uuid_at;
    return 0;
}

/* ---- the mapping ------------------------------------------------------------------------- */

static size_t page_size(void)
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096;
}

static int memfd_open(void)
{
#ifdef SYS_memfd_create
    /* NOEXEC_SEAL (Linux 6.3+) keeps the file from ever being made executable; older kernels
     * reject the unknown flag with EINVAL, so ask again without it. */
    int fd = (int)syscall(SYS_memfd_create, CTX_NAME,
                          MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_NOEXEC_SEAL);
    if (fd < 0 && errno == EINVAL)
        fd = (int)syscall(SYS_memfd_create, CTX_NAME, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    return fd_above_stdio(fd);
#else
    errno = ENOSYS;
    return -1;
#endif
}

/* The memfd first: its name is visible in /proc/PID/maps on every kernel, while naming an
 * anonymous mapping needs CONFIG_ANON_VMA_NAME (5.17+). Private, so our writes never reach the
 * file and nobody who opens it sees them; the descriptor is closed at once (the mapping keeps
 * the file alive), so the program never sees an extra fd. */
static void *map_header(size_t len)
{
    int fd = memfd_open();
    st.hdr_is_memfd = 0;
    if (fd >= 0) {
        void *p = MAP_FAILED;
        if (ftruncate(fd, (off_t)len) == 0)
            p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
        close(fd);
        st.hdr_is_memfd = p != MAP_FAILED;
        if (p != MAP_FAILED)
            return p;
        log_debug("OTEL_CTX: memfd mapping failed (%s); using an anonymous mapping",
                  strerror(errno));
    } else {
        log_debug("OTEL_CTX: memfd_create failed (%s); using an anonymous mapping",
                  strerror(errno));
    }
    return mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

/* Names the mapping "OTEL_CTX" for readers, and tells a profiler that hooks this prctl that
 * there is something new to read. Fails without CONFIG_ANON_VMA_NAME, and on memfd mappings on
 * some kernels: harmless, the memfd name or the eBPF hook on the call itself still work. */
static void name_header(void)
{
    int saved = errno;
    if (prctl(PR_SET_VMA, (unsigned long)PR_SET_VMA_ANON_NAME, (unsigned long)(uintptr_t)st.hdr,
              (unsigned long)st.hdr_len, (unsigned long)(uintptr_t)CTX_NAME) != 0) {
        log_debug("OTEL_CTX: prctl(PR_SET_VMA_ANON_NAME) at %p: %s", (void *)st.hdr,
                  strerror(errno));
        /* Not a failure of ours, but then nothing names the mapping: say so once. */
        if (!st.hdr_is_memfd && first_time(ONCE_UNNAMED))
            log_info("OTEL_CTX: neither memfd_create nor PR_SET_VMA_ANON_NAME is available; "
                     "readers that look the context up by name will not find it");
    }
    errno = saved;
}

/* Fills a fresh header (all zero, so readers skip it) and makes it valid with the timestamp. */
static void header_init(struct ctx_header *h, const uint8_t *payload, uint32_t size)
{
    memcpy(h->signature, CTX_NAME, sizeof h->signature);
    h->version = CTX_VERSION;
    atomic_store_explicit(&h->payload_size, size, memory_order_relaxed);
    atomic_store_explicit(&h->payload, (uint64_t)(uintptr_t)payload, memory_order_relaxed);
    /* Release: the payload bytes and every header field above become visible to another CPU
     * before the non-zero timestamp that tells a reader the context is complete. */
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&h->published_at_ns, next_timestamp(), memory_order_relaxed);
}

/* The update protocol on a live header (seqlock writer): the new payload is already complete in
 * the other slot. */
static void header_swap(struct ctx_header *h, const uint8_t *payload, uint32_t size)
{
    uint64_t ts = next_timestamp(); /* taken first: the "being written" window stays tiny */
    atomic_store_explicit(&h->published_at_ns, 0, memory_order_relaxed);
    /* Release: the 0 must be visible before the pointer and size change, so that a reader who
     * could see the new pointer with the old timestamp cannot exist. */
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&h->payload_size, size, memory_order_relaxed);
    atomic_store_explicit(&h->payload, (uint64_t)(uintptr_t)payload, memory_order_relaxed);
    /* Release: pointer, size and the payload bytes are visible before the new timestamp. */
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&h->published_at_ns, ts, memory_order_relaxed);
}

static void release_header(void)
{
    if (st.hdr && st.owner == getpid())
        munmap(st.hdr, st.hdr_len);
    st.hdr = NULL; /* in a fork child the range is simply not mapped: never touch it */
}

static void release_all(void)
{
    release_header();
    if (st.slots)
        munmap(st.slots, (size_t)SLOTS * PAYLOAD_MAX);
    st.slots = NULL;
}

/* Creates the header mapping and publishes slot `active` in it. On failure nothing of ours
 * stays mapped. */
static int create_header(void)
{
    int slot = atomic_load_explicit(&st.active, memory_order_acquire);
    st.hdr_len = page_size();
    void *p = map_header(st.hdr_len);
    if (p == MAP_FAILED) {
        fail("mmap", errno);
        release_all();
        return -1;
    }
    /* Before anything is written: if the program forks between mmap and here, its child gets
     * an all-zero copy that no reader accepts (no signature), and after this no copy at all. */
    if (madvise(p, st.hdr_len, MADV_DONTFORK) != 0) {
        fail("madvise(MADV_DONTFORK)", errno);
        munmap(p, st.hdr_len);
        release_all();
        return -1;
    }
    st.hdr = p;
    st.owner = getpid();
    header_init(st.hdr, st.slots + (size_t)slot * PAYLOAD_MAX, st.size[slot]);
    name_header();
    log_debug("OTEL_CTX: published at %p (payload %u bytes, instance %s)", p, st.size[slot],
              st.instance_id);
    return 0;
}

/* A new context for this process: a new instance id, slot 0, a new header. */
static int publish_fresh(const struct config *cfg)
{
    release_header();
    if (!st.slots) {
        void *p = mmap(NULL, (size_t)SLOTS * PAYLOAD_MAX, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            fail("mmap", errno);
            return -1;
        }
        st.slots = p;
    }
    make_uuid(st.instance_id);
    if (encode_payload(cfg, st.instance_id, st.slots, &st.size[0], &st.uuid_off[0]) != 0) {
        fail("encoding", EOVERFLOW);
        release_all();
        return -1;
    }
    atomic_store_explicit(&st.active, 0, memory_order_release);
    return create_header();
}

/* Republish in place: encode into the slot readers are not pointed at, then swap. A reader
 * still copying that slot from two publications ago holds an older timestamp, which no longer
 * matches when it re-checks, so it discards what it copied. */
static int republish(const struct config *cfg)
{
    int next = 1 - atomic_load_explicit(&st.active, memory_order_relaxed);
    uint8_t *slot = st.slots + (size_t)next * PAYLOAD_MAX;
    if (encode_payload(cfg, st.instance_id, slot, &st.size[next], &st.uuid_off[next]) != 0) {
        fail("encoding", EOVERFLOW);
        return -1; /* the current context stays published */
    }
    header_swap(st.hdr, slot, st.size[next]);
    atomic_store_explicit(&st.active, next, memory_order_release);
    name_header(); /* again: profilers hooking the prctl learn there is something new */
    return 0;
}

static int published_here(void) { return st.hdr && st.slots && st.owner == getpid(); }

/* Never waits: the callers are a constructor, a fork child and tests, none of which may hang. */
static int lock(void)
{
    if (atomic_flag_test_and_set_explicit(&busy, memory_order_acquire)) {
        log_debug("OTEL_CTX: another publication is in progress; skipped");
        return -1;
    }
    return 0;
}

static void unlock(void) { atomic_flag_clear_explicit(&busy, memory_order_release); }

int otel_process_ctx_publish(const struct config *cfg)
{
    if (!cfg || !cfg->otel_context)
        return 0;
    int saved = errno;
    int rc = -1;
    if (lock() == 0) {
        rc = published_here() ? republish(cfg) : publish_fresh(cfg);
        unlock();
    }
    errno = saved;
    return rc;
}

int otel_process_ctx_update(const struct config *cfg) { return otel_process_ctx_publish(cfg); }

/* How often a key-map change waits for another publication (a resource update on another
 * thread) to finish: publications take microseconds, so this many yields is plenty, and
 * bounded so that a caller never hangs. */
#define KEY_MAP_LOCK_TRIES 1000

int otel_process_ctx_set_key_map(const struct config *cfg, const char *const *keys, size_t n)
{
    int saved = errno;
    int rc = -1;
    for (int i = 0; i < KEY_MAP_LOCK_TRIES && rc != 0; i++) {
        if (atomic_flag_test_and_set_explicit(&busy, memory_order_acquire)) {
            sched_yield();
            continue;
        }
        const char *const *old_keys = st.keys;
        size_t old_n = st.n_keys;
        st.keys = keys;
        st.n_keys = n;
        rc = 0;
        /* Not yet published (start-up): the first publication carries the map. */
        if (cfg && cfg->otel_context && published_here() && republish(cfg) != 0) {
            st.keys = old_keys; /* readers keep the old map; the caller must not use the new key */
            st.n_keys = old_n;
            rc = -2;
        }
        unlock();
    }
    errno = saved;
    return rc == 0 ? 0 : -1;
}

int otel_process_ctx_set_tracer_attrs(const struct config *cfg, const char *attrs)
{
    if (!cfg || !cfg->otel_context)
        return 0;
    int saved = errno;
    int rc = -1;
    char *copy = attrs ? strdup(attrs) : NULL;
    if ((!attrs || copy) && lock() == 0) {
        char *old = st.tracer_attrs;
        st.tracer_attrs = copy;
        copy = NULL;
        rc = published_here() ? republish(cfg) : publish_fresh(cfg);
        if (rc != 0) { /* the published context still shows the old attributes: keep them */
            copy = st.tracer_attrs;
            st.tracer_attrs = old;
        } else {
            free(old); /* only the encoder reads it, under the same flag */
        }
        unlock();
    }
    free(copy);
    errno = saved;
    return rc;
}

int otel_process_ctx_after_fork(const struct config *cfg)
{
    /* Single-threaded now: a parent thread that held the flag when fork() copied our memory
     * does not exist here and will never release it. */
    atomic_flag_clear_explicit(&busy, memory_order_relaxed);
    if (!cfg || !cfg->otel_context)
        return 0;
    int saved = errno;
    int rc;
    st.hdr = NULL; /* the parent's header was not inherited (MADV_DONTFORK) */
    if (!st.slots) {
        rc = publish_fresh(cfg); /* the parent had none: try from scratch */
    } else {
        /* Reuse the parent's complete payload: only the instance id changes, and it has a fixed
         * length, so it is overwritten in place. No reader can see this slot yet. */
        int slot = atomic_load_explicit(&st.active, memory_order_acquire);
        make_uuid(st.instance_id);
        /* an instance id the tracer or the environment gave is theirs to change, not ours */
        if (st.uuid_off[slot] != NO_UUID)
            memcpy(st.slots + (size_t)slot * PAYLOAD_MAX + st.uuid_off[slot], st.instance_id,
                   UUID_LEN);
        rc = create_header();
    }
    errno = saved;
    return rc;
}

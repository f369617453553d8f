/* otel_process_ctx.c — publishes the OpenTelemetry process context (see otel_process_ctx.h):
 * the mapping, its update protocol and the publication state; the payload's bytes come from
 * otel_payload.c, the instance id from random.c.
 *
 * Memory layout (what readers rely on, docs/formats.md):
 *  - The OTEL_CTX mapping is one page holding only the 32-byte header, at its start. It is a
 *    private anonymous mapping named with prctl(PR_SET_VMA_ANON_NAME) (maps: "[anon:OTEL_CTX]"),
 *    or, where the kernel cannot name it (before 5.17, or a filter), a private mapping of a
 *    memfd named "OTEL_CTX" (maps: "/memfd:OTEL_CTX (deleted)"); unnamed and anonymous when
 *    neither works (create_header says why this order).
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
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sched.h>
#include <unistd.h>

#include "leaves/clock.h"
#include "config/config.h"
#include "leaves/fd_safe.h"
#include "leaves/log.h"
#include "otel_payload.h"
#include "leaves/random.h"
#include "leaves/real_calls.h"
#include "leaves/raw_syscall.h"
#include "leaves/sys_calls.h"
#include "leaves/str.h"

/* Older libc headers (and musl's) may lack these; the values are the kernel ABI. (memfd_create
 * is made as a system call: random.c says why.) */
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

#define CTX_NAME "OTEL_CTX"
#define CTX_VERSION 2
#define SLOTS 2

/* The header, exactly as readers parse it: native endian, 32 bytes, no padding. The words a
 * republication changes are atomics so each store is one untorn instruction. */
struct ctx_header {
    char signature[8];                /* "OTEL_CTX" */
    uint32_t version;                 /* 2 */
    _Atomic uint32_t payload_size;    /* > 0, <= OTEL_PAYLOAD_MAX */
    _Atomic uint64_t published_at_ns; /* CLOCK_BOOTTIME; 0 while being written */
    _Atomic uint64_t payload;         /* address of the protobuf payload in this process */
};
_Static_assert(sizeof(struct ctx_header) == 32, "OTEL_CTX header is 32 bytes");
_Static_assert(offsetof(struct ctx_header, payload_size) == 12, "payload_size at 12");
_Static_assert(offsetof(struct ctx_header, published_at_ns) == 16, "timestamp at 16");
_Static_assert(offsetof(struct ctx_header, payload) == 24, "payload pointer at 24");

/* Everything this process published. Only the thread that holds `busy` touches it. */
static struct {
    struct ctx_header *hdr; /* the OTEL_CTX mapping, NULL if none */
    size_t hdr_len;
    int hdr_is_memfd; /* its maps name shows even when the kernel cannot name mappings */
    pid_t owner;    /* the process hdr belongs to: after a fork it is not ours */
    uint8_t *slots; /* SLOTS * OTEL_PAYLOAD_MAX bytes, NULL if none */
    /* The slot the header points at. Atomic with release/acquire so that a fork child (whose
     * memory was copied at an arbitrary instant) that sees a slot index also sees the
     * uuid_off and payload bytes written for that slot before the index changed. */
    _Atomic int active;
    uint32_t size[SLOTS];     /* payload bytes in each slot */
    /* Where service.instance.id's 36 characters sit in each slot; OTEL_PAYLOAD_NO_UUID when the
     * instance id is not proflink's random one (the tracer's or OTEL_RESOURCE_ATTRIBUTES' is
     * kept as is). */
    size_t uuid_off[SLOTS];
    uint64_t last_ts;         /* the last timestamp published, for strict increase */
    char instance_id[RANDOM_UUID_LEN + 1];
    /* threadlocal.attribute_key_map: the caller's append-only array (see the header) */
    const char *const *keys;
    size_t n_keys;
    char *tracer_attrs; /* proflink_set_resource's attributes (owned copy), NULL if none */
} st;

static atomic_flag busy = ATOMIC_FLAG_INIT;

/* Another publisher took the format (otel_ctx_watch.c): nothing is published again. */
static _Atomic int withdrawn;
/* The header's address, for the prctl hook to tell our own naming call from another's. */
static _Atomic uintptr_t hdr_addr;

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

/* Strictly greater than every timestamp published before in this process (and in its parent,
 * whose last_ts a fork child inherits): readers use it as a sequence number. */
static uint64_t next_timestamp(void)
{
    uint64_t now = clock_boottime_ns();
    if (now <= st.last_ts)
        now = st.last_ts + 1;
    st.last_ts = now;
    return now;
}

static void report_encoding(const struct otel_payload_out *e)
{
    if (e->malformed && first_time(ONCE_MALFORMED))
        log_warn("OTEL_RESOURCE_ATTRIBUTES: %d malformed member(s) skipped", e->malformed);
    if (e->bad_keys && first_time(ONCE_BAD_KEY))
        log_warn("OTEL_RESOURCE_ATTRIBUTES: %u attribute(s) whose key is not UTF-8 skipped",
                 e->bad_keys);
    if (e->sanitized && first_time(ONCE_SANITIZED))
        log_warn("OpenTelemetry process context: %u byte(s) of invalid UTF-8 replaced by '?'",
                 e->sanitized);
    if (e->dropped && first_time(ONCE_DROPPED))
        log_warn("OTEL_RESOURCE_ATTRIBUTES: %u attribute(s) dropped (first: %.63s): the "
                 "OpenTelemetry process context payload is limited to %u bytes",
                 e->dropped, e->first_dropped, OTEL_PAYLOAD_MAX);
}

/* Encodes the whole ProcessContext into `slot` (OTEL_PAYLOAD_MAX bytes) from the configuration,
 * the environment and the tracer's attributes. Sets *size and *uuid_off. 0 ok, -1 if it did
 * not fit (cannot happen, see otel_payload_encode). */
static int encode_payload(const struct config *cfg, uint8_t *slot, uint32_t *size,
                          size_t *uuid_off)
{
    const struct otel_payload_in in = {
        .service_name = cfg->service_name,
        .service_environment = cfg->service_environment,
        .service_version = cfg->service_version,
        .service_namespace = cfg->service_namespace,
        .instance_id = st.instance_id,
        .env_attrs = secure_getenv("OTEL_RESOURCE_ATTRIBUTES"),
        .tracer_attrs = st.tracer_attrs,
        .keys = st.keys,
        .n_keys = st.n_keys,
    };
    struct otel_payload_out out;
    if (otel_payload_encode(&in, slot, OTEL_PAYLOAD_MAX, &out) != 0)
        return -1;
    report_encoding(&out);
    *size = out.size;
    *uuid_off = out.uuid_off;
    return 0;
}

/* ---- the mapping ------------------------------------------------------------------------- */

static size_t page_size(void)
{
    unsigned long p = getauxval(AT_PAGESZ);
    return p > 0 ? (size_t)p : 4096;
}

static int memfd_open(void)
{
    /* NOEXEC_SEAL (Linux 6.3+) keeps the file from ever being made executable; older kernels
     * reject the unknown flag with EINVAL, so ask again without it. */
    long fd = raw_syscall6(SYS_memfd_create, (long)CTX_NAME,
                           MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_NOEXEC_SEAL, 0, 0, 0, 0);
    if (fd == -EINVAL)
        fd = raw_syscall6(SYS_memfd_create, (long)CTX_NAME, MFD_CLOEXEC | MFD_ALLOW_SEALING, 0, 0,
                          0, 0);
    if (fd < 0) {
        errno = (int)-fd; /* for the caller's message */
        return -1;
    }
    return fd_above_stdio((int)fd);
}

/* A private mapping of a memfd named OTEL_CTX: its name shows in /proc/PID/maps on every
 * kernel. Private, so our writes never reach the file and nobody who opens it sees them; the
 * descriptor is closed at once (the mapping keeps the file alive), so the program never sees an
 * extra fd. MAP_FAILED (errno set) when the kernel or a filter refuses it. */
static void *map_memfd(size_t len, const char **what)
{
    int fd = memfd_open();
    *what = "memfd_create";
    if (fd < 0)
        return MAP_FAILED;
    *what = "memfd mapping";
    void *p = MAP_FAILED;
    long r = raw_syscall6(SYS_ftruncate, fd, (long)len, 0, 0, 0, 0);
    if (r == 0)
        p = sys_mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    else
        errno = (int)-r;
    int saved = errno;
    real_close(fd);
    errno = saved;
    return p;
}

static void *map_anonymous(size_t len)
{
    return sys_mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

/* Names the mapping "OTEL_CTX" for readers, and tells a profiler that hooks this prctl that
 * there is something new to read. 0, or -1 without CONFIG_ANON_VMA_NAME (5.17+), under a filter
 * and on memfd mappings on some kernels (errno kept as it was). */
static int name_mapping(void)
{
    int saved = errno;
    int rc = prctl(PR_SET_VMA, (unsigned long)PR_SET_VMA_ANON_NAME,
                   (unsigned long)(uintptr_t)st.hdr, (unsigned long)st.hdr_len,
                   (unsigned long)(uintptr_t)CTX_NAME);
    if (rc != 0)
        log_debug("OTEL_CTX: prctl(PR_SET_VMA_ANON_NAME) at %p: %s", (void *)st.hdr,
                  strerror(errno));
    errno = saved;
    return rc;
}

/* After an update: the call itself is what a profiler hooking the prctl waits for. A failure is
 * not ours, but if nothing names the mapping, say so once. */
static void name_header(void)
{
    if (name_mapping() != 0 && !st.hdr_is_memfd && first_time(ONCE_UNNAMED))
        log_info("OTEL_CTX: neither memfd_create nor PR_SET_VMA_ANON_NAME is available; "
                 "readers that look the context up by name will not find it");
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
    if (st.hdr && st.owner == raw_getpid())
        sys_munmap(st.hdr, st.hdr_len);
    st.hdr = NULL; /* in a fork child the range is simply not mapped: never touch it */
    atomic_store_explicit(&hdr_addr, 0, memory_order_relaxed);
}

static void release_all(void)
{
    release_header();
    if (st.slots)
        sys_munmap(st.slots, (size_t)SLOTS * OTEL_PAYLOAD_MAX);
    st.slots = NULL;
}

/* Maps one header page at st.hdr (memfd: a memfd's, else anonymous), MADV_DONTFORK, and
 * publishes slot `slot` in it. 0, or -1 with errno and *what set and nothing mapped (the
 * previous st.hdr untouched). */
static int place_header(int memfd, int slot, const char **what)
{
    *what = "mmap";
    void *p = memfd ? map_memfd(st.hdr_len, what) : map_anonymous(st.hdr_len);
    if (p == MAP_FAILED)
        return -1;
    /* Before anything is written: if the program forks between mmap and here, its child gets
     * an all-zero copy that no reader accepts (no signature), and after this no copy at all. */
    long r = raw_syscall6(SYS_madvise, (long)p, (long)st.hdr_len, MADV_DONTFORK, 0, 0, 0);
    if (r != 0) {
        sys_munmap(p, st.hdr_len);
        *what = "madvise(MADV_DONTFORK)";
        errno = (int)-r;
        return -1;
    }
    st.hdr = p;
    st.hdr_is_memfd = memfd;
    st.owner = raw_getpid();
    atomic_store_explicit(&hdr_addr, (uintptr_t)p, memory_order_relaxed);
    header_init(st.hdr, st.slots + (size_t)slot * OTEL_PAYLOAD_MAX, st.size[slot]);
    return 0;
}

/* Whether this kernel names anonymous mappings (CONFIG_ANON_VMA_NAME, 5.17+), asked with an
 * empty range: the kernel answers 0 without touching any mapping, or EINVAL when it cannot (a
 * filter may refuse it too). A system call of its own, not libc's prctl: it names nothing, so
 * neither our prctl hook nor a profiler watching libc's prctl has anything to learn from it. */
static int kernel_names_mappings(void)
{
    return raw_syscall6(SYS_prctl, PR_SET_VMA, PR_SET_VMA_ANON_NAME, 0, 0,
                        (long)(uintptr_t)CTX_NAME, 0) == 0;
}

/* Creates the header mapping and publishes slot `active` in it. On failure nothing of ours
 * stays mapped.
 *
 * Anonymous and named with prctl where the kernel can name it, else a memfd, whose name shows
 * on every kernel: creating the memfd's file and tearing it down at exit cost each served
 * process about 13 us more than an anonymous page (a loop of either, best of 5 rounds), and
 * readers accept both names. Unnamed and anonymous when neither works. */
static int create_header(void)
{
    int slot = atomic_load_explicit(&st.active, memory_order_acquire);
    st.hdr_len = page_size();
    const char *what;
    int memfd = !kernel_names_mappings();
    if (memfd && place_header(1, slot, &what) != 0) {
        log_debug("OTEL_CTX: %s failed (%s); using an anonymous mapping", what, strerror(errno));
        memfd = 0;
    }
    if (!memfd && place_header(0, slot, &what) != 0) {
        fail(what, errno);
        release_all();
        return -1;
    }
    name_header();
    log_debug("OTEL_CTX: published at %p (payload %u bytes, instance %s)", st.hdr, st.size[slot],
              st.instance_id);
    return 0;
}

/* A new context for this process: a new instance id, slot 0, a new header. */
static int publish_fresh(const struct config *cfg)
{
    release_header();
    if (!st.slots) {
        void *p = sys_mmap(NULL, (size_t)SLOTS * OTEL_PAYLOAD_MAX, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            fail("mmap", errno);
            return -1;
        }
        st.slots = p;
    }
    random_uuid(st.instance_id);
    if (encode_payload(cfg, st.slots, &st.size[0], &st.uuid_off[0]) != 0) {
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
    uint8_t *slot = st.slots + (size_t)next * OTEL_PAYLOAD_MAX;
    if (encode_payload(cfg, slot, &st.size[next], &st.uuid_off[next]) != 0) {
        fail("encoding", EOVERFLOW);
        return -1; /* the current context stays published */
    }
    header_swap(st.hdr, slot, st.size[next]);
    atomic_store_explicit(&st.active, next, memory_order_release);
    name_header(); /* again: profilers hooking the prctl learn there is something new */
    return 0;
}

static int published_here(void) { return st.hdr && st.slots && st.owner == raw_getpid(); }

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
    if (!cfg || !cfg->otel_context || atomic_load_explicit(&withdrawn, memory_order_relaxed))
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
            raw_sched_yield();
            continue;
        }
        const char *const *old_keys = st.keys;
        size_t old_n = st.n_keys;
        st.keys = keys;
        st.n_keys = n;
        rc = 0;
        /* Not yet published (start-up): the first publication carries the map. */
        if (cfg && cfg->otel_context && published_here() &&
            !atomic_load_explicit(&withdrawn, memory_order_relaxed) && republish(cfg) != 0) {
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
    if (!cfg || !cfg->otel_context || atomic_load_explicit(&withdrawn, memory_order_relaxed))
        return 0;
    int saved = errno;
    int rc = -1;
    char *copy = attrs ? str_dup(attrs) : NULL;
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
    st.hdr = NULL; /* the parent's header was not inherited (MADV_DONTFORK) */
    atomic_store_explicit(&hdr_addr, 0, memory_order_relaxed);
    if (!cfg || !cfg->otel_context || atomic_load_explicit(&withdrawn, memory_order_relaxed))
        return 0;
    int saved = errno;
    int rc;
    if (!st.slots) {
        rc = publish_fresh(cfg); /* the parent had none: try from scratch */
    } else {
        /* Reuse the parent's complete payload: only the instance id changes, and it has a fixed
         * length, so it is overwritten in place. No reader can see this slot yet. */
        int slot = atomic_load_explicit(&st.active, memory_order_acquire);
        random_uuid(st.instance_id);
        /* an instance id the tracer or the environment gave is theirs to change, not ours */
        if (st.uuid_off[slot] != OTEL_PAYLOAD_NO_UUID)
            memcpy(st.slots + (size_t)slot * OTEL_PAYLOAD_MAX + st.uuid_off[slot],
                   st.instance_id, RANDOM_UUID_LEN);
        rc = create_header();
    }
    errno = saved;
    return rc;
}

int otel_process_ctx_is_ours(const void *addr)
{
    return addr && (uintptr_t)addr == atomic_load_explicit(&hdr_addr, memory_order_relaxed);
}

int otel_process_ctx_withdraw(void)
{
    if (atomic_exchange_explicit(&withdrawn, 1, memory_order_relaxed))
        return 0;
    int saved = errno;
    /* a publication in progress on another thread finishes first (bounded, as for key maps);
     * the flag above keeps any later one from starting */
    for (int i = 0; i < KEY_MAP_LOCK_TRIES; i++) {
        if (lock() != 0) {
            raw_sched_yield();
            continue;
        }
        if (published_here()) {
            /* "being written" first: a reader between its two timestamp reads discards its copy */
            atomic_store_explicit(&st.hdr->published_at_ns, 0, memory_order_relaxed);
            atomic_thread_fence(memory_order_release);
            release_header();
        }
        unlock();
        break;
    }
    errno = saved;
    return 1;
}

/* api_profiler_view — does, from inside a process, what the profiler does from outside, for
 * architectures where no outside reader runs here (aarch64 under qemu-user: no ptrace of the
 * guest, no eBPF). It never asks the library where its records are:
 *   1. finds the preloaded elastic-jvmti-linux-*.so (dl_iterate_phdr: path and load bias);
 *   2. parses that file on disk: the R_*_TLSDESC relocations (x86_64 36, aarch64 1031) that name
 *      elastic_apm_profiling_correlation_tls_v1 and otel_thread_ctx_v1, their r_offset;
 *   3. in each thread: TLS argument word = the second word of the descriptor at bias + r_offset,
 *      record pointer = *(thread pointer + word), thread pointer = %fs base or tpidr_el0.
 * Each of NTHREADS threads (and main) sets its own context through proflink_set_trace (dlsym),
 * reads both records the profiler's way and compares every field. It also checks the process
 * storage block and that an OTEL_CTX mapping with a valid header is published.
 * usage: api_profiler_view NTHREADS
 * Prints "word apm W otel W", one "thread I ok" line per thread (or "thread I FAIL why"),
 * "storage ok <service> <socket path>", "otel_ctx ok <payload size>" and "done"; exit 0 when
 * every check passed, 1 otherwise. */
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "thread_pointer.h"

#if defined(__x86_64__)
#define TLSDESC_TYPE 36 /* R_X86_64_TLSDESC */
#elif defined(__aarch64__)
#define TLSDESC_TYPE 1031 /* R_AARCH64_TLSDESC */
#endif
#define THREADS_MAX 64

static const char APM_VAR[] = "elastic_apm_profiling_correlation_tls_v1";
static const char OTEL_VAR[] = "otel_thread_ctx_v1";

static char lib_path[4096];
static uintptr_t lib_bias;
static uint64_t apm_roff, otel_roff;
static int failures;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
static void (*set_trace)(const uint8_t *, const uint8_t *, const uint8_t *, uint8_t);


static int find_lib(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size, (void)data;
    const char *base = strrchr(info->dlpi_name, '/');
    base = base ? base + 1 : info->dlpi_name;
    if (strncmp(base, "elastic-jvmti-linux-", 20) != 0)
        return 0;
    snprintf(lib_path, sizeof lib_path, "%s", info->dlpi_name);
    lib_bias = info->dlpi_addr;
    return 1;
}

/* The r_offset of the TLSDESC relocations naming our two variables, from the file's sections. */
static int read_relocations(void)
{
    int fd = open(lib_path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0)
        return -1;
    const uint8_t *f = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (f == MAP_FAILED)
        return -1;
    const Elf64_Ehdr *eh = (const void *)f;
    const Elf64_Shdr *sh = (const void *)(f + eh->e_shoff);
    for (unsigned i = 0; i < eh->e_shnum; i++) {
        if (sh[i].sh_type != SHT_RELA)
            continue;
        const Elf64_Shdr *symtab = &sh[sh[i].sh_link], *strtab = &sh[symtab->sh_link];
        for (uint64_t o = 0; o + sizeof(Elf64_Rela) <= sh[i].sh_size; o += sizeof(Elf64_Rela)) {
            const Elf64_Rela *r = (const void *)(f + sh[i].sh_offset + o);
            if (ELF64_R_TYPE(r->r_info) != TLSDESC_TYPE)
                continue;
            const Elf64_Sym *sym =
                (const void *)(f + symtab->sh_offset + ELF64_R_SYM(r->r_info) * sizeof *sym);
            const char *name = (const char *)f + strtab->sh_offset + sym->st_name;
            if (!strcmp(name, APM_VAR))
                apm_roff = r->r_offset;
            else if (!strcmp(name, OTEL_VAR))
                otel_roff = r->r_offset;
        }
    }
    return apm_roff && otel_roff ? 0 : -1;
}

/* The TLS argument word: a descriptor is {resolver, argument}; for static TLS the argument is
 * the variable's offset from the thread pointer. */
static int64_t tls_word(uint64_t r_offset)
{
    return ((const int64_t *)(lib_bias + r_offset))[1];
}

static void *profiler_read(uint64_t r_offset)
{
    return *(void **)(thread_pointer() + (uintptr_t)tls_word(r_offset));
}

static void check_thread(int i)
{
    uint8_t trace[16], span[8], txn[8];
    for (int k = 0; k < 16; k++)
        trace[k] = (uint8_t)(0x10 + i + k);
    for (int k = 0; k < 8; k++)
        span[k] = (uint8_t)(0x80 + i + k), txn[k] = (uint8_t)(0xc0 + i + k);
    set_trace(trace, span, txn, 1);
    const uint8_t *apm = profiler_read(apm_roff), *otel = profiler_read(otel_roff);
    const char *why = NULL;
    /* apmint: u16 minor, valid, trace-present, flags, trace[16], span[8], transaction[8] */
    if (!apm)
        why = "apm pointer NULL";
    else if (apm[0] != 1 || apm[1] != 0 || apm[2] != 1 || apm[3] != 1 || apm[4] != 1)
        why = "apm header";
    else if (memcmp(apm + 5, trace, 16) || memcmp(apm + 21, span, 8) || memcmp(apm + 29, txn, 8))
        why = "apm ids";
    /* OTel: trace[16], span[8], valid, flags, ... */
    else if (!otel)
        why = "otel pointer NULL";
    else if (memcmp(otel, trace, 16) || memcmp(otel + 16, span, 8) || otel[24] != 1)
        why = "otel record";
    pthread_mutex_lock(&out_lock);
    if (why) {
        failures++;
        printf("thread %d FAIL %s\n", i, why);
    } else {
        printf("thread %d ok\n", i);
    }
    pthread_mutex_unlock(&out_lock);
}

static void *worker(void *arg)
{
    check_thread((int)(intptr_t)arg);
    return NULL;
}

static uint32_t get_u32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* The apmint process storage: u16 minor, then three u32-length strings. */
static void check_storage(void)
{
    void **storage = dlsym(RTLD_DEFAULT, "elastic_apm_profiling_correlation_process_storage_v1");
    const uint8_t *b = storage ? *storage : NULL;
    if (!b || b[0] != 1 || b[1] != 0) {
        failures++;
        printf("storage FAIL %s\n", b ? "minor version" : "pointer NULL");
        return;
    }
    const uint8_t *p = b + 2;
    uint32_t n1 = get_u32(p);
    const uint8_t *svc = p + 4;
    p = svc + n1;
    p += 4 + get_u32(p);
    uint32_t n3 = get_u32(p);
    char sock[512];
    snprintf(sock, sizeof sock, "%.*s", (int)n3, (const char *)p + 4);
    struct stat st;
    if (stat(sock, &st) != 0 || !S_ISSOCK(st.st_mode)) {
        failures++;
        printf("storage FAIL socket %s\n", sock);
        return;
    }
    printf("storage ok %.*s %s\n", (int)n1, (const char *)svc, sock);
}

/* OTEP 4719 header at the start of the OTEL_CTX mapping: "OTEL_CTX", u32 version 2, u32
 * payload size, u64 published-at, u64 payload pointer. */
static void check_otel_ctx(void)
{
    FILE *m = fopen("/proc/self/maps", "r");
    char line[512];
    unsigned long start = 0;
    while (m && fgets(line, sizeof line, m))
        if (strstr(line, "OTEL_CTX") && sscanf(line, "%lx-", &start) == 1)
            break;
    if (m)
        fclose(m);
    const uint8_t *h = (const void *)start;
    if (!h || memcmp(h, "OTEL_CTX", 8) != 0) {
        failures++;
        printf("otel_ctx FAIL %s\n", h ? "signature" : "no OTEL_CTX mapping");
        return;
    }
    uint32_t version = get_u32(h + 8), size = get_u32(h + 12);
    const uint8_t *payload;
    memcpy(&payload, h + 24, sizeof payload);
    if (version != 2 || !size || !payload) {
        failures++;
        printf("otel_ctx FAIL version %u size %u\n", version, size);
        return;
    }
    printf("otel_ctx ok %u ", size);
    for (uint32_t i = 0; i < size; i++)
        printf("%02x", payload[i]);
    printf("\n");
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 3;
    if (n < 0 || n > THREADS_MAX)
        return 2;
    set_trace = (void (*)(const uint8_t *, const uint8_t *, const uint8_t *, uint8_t))dlsym(
        RTLD_DEFAULT, "proflink_set_trace");
    if (!set_trace || !dl_iterate_phdr(find_lib, NULL)) {
        printf("FAIL the library is not loaded\n");
        return 1;
    }
    if (read_relocations() != 0) {
        printf("FAIL no TLSDESC relocation names both TLS pointers in %s\n", lib_path);
        return 1;
    }
    printf("word apm %lld otel %lld\n", (long long)tls_word(apm_roff), (long long)tls_word(otel_roff));
    fflush(stdout);
    check_thread(0);
    pthread_t t[THREADS_MAX];
    for (int i = 0; i < n; i++)
        pthread_create(&t[i], NULL, worker, (void *)(intptr_t)(i + 1));
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    check_storage();
    check_otel_ctx();
    printf("done\n");
    return failures ? 1 : 0;
}

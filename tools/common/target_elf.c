/* target_elf.c — see target_elf.h. The file is mapped whole and every offset taken from it is
 * bounds-checked: the file belongs to the target, so it is untrusted input. */
#include "target_elf.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "target_util.h"

#ifndef R_AARCH64_TLSDESC
#define R_AARCH64_TLSDESC 1031
#endif

/* Pointer to [off, off+len) inside the file, or NULL if any of it lies outside or off is not
 * aligned for the type read there (well-formed files always align their tables; a misaligned
 * one is corrupt, and reading it through a typed pointer would be undefined behaviour). The
 * mapping is page-aligned, so file offset alignment is pointer alignment. */
static const void *at(const struct target_elf *e, uint64_t off, uint64_t len, uint64_t align)
{
    if (off > e->size || len > e->size - off || off % align != 0)
        return NULL;
    return e->data + off;
}

/* File offset of link-time address va, through the PT_LOAD segment that holds it on disk. */
static int va_to_off(const struct target_elf *e, uint64_t va, uint64_t len, uint64_t align,
                     uint64_t *off)
{
    for (unsigned i = 0; i < e->eh->e_phnum; i++) {
        const Elf64_Phdr *p = &e->ph[i];
        if (p->p_type != PT_LOAD || va < p->p_vaddr || va - p->p_vaddr >= p->p_filesz)
            continue;
        if (len > p->p_filesz - (va - p->p_vaddr))
            return -1;
        *off = p->p_offset + (va - p->p_vaddr);
        return at(e, *off, len, align) ? 0 : -1;
    }
    return -1;
}

static const void *at_va(const struct target_elf *e, uint64_t va, uint64_t len, uint64_t align)
{
    uint64_t off;
    return va_to_off(e, va, len, align, &off) == 0 ? e->data + off : NULL;
}

/* The hash tables and symbol/string tables named by PT_DYNAMIC. The file holds link-time
 * addresses (only the in-memory copy is relocated by the dynamic loader). */
static void read_dynamic(struct target_elf *e)
{
    for (unsigned i = 0; i < e->eh->e_phnum; i++) {
        const Elf64_Phdr *p = &e->ph[i];
        if (p->p_type != PT_DYNAMIC || p->p_filesz == 0)
            continue;
        const Elf64_Dyn *d = at(e, p->p_offset, p->p_filesz, 8);
        if (!d)
            return;
        for (size_t k = 0; k < p->p_filesz / sizeof *d && d[k].d_tag != DT_NULL; k++) {
            switch (d[k].d_tag) {
            case DT_GNU_HASH: e->gnu_hash = d[k].d_un.d_ptr; break;
            case DT_HASH: e->sysv_hash = d[k].d_un.d_ptr; break;
            case DT_SYMTAB: e->symtab = d[k].d_un.d_ptr; break;
            case DT_STRTAB: e->strtab = d[k].d_un.d_ptr; break;
            }
        }
    }
}

static int validate(struct target_elf *e, char *err)
{
    e->eh = at(e, 0, sizeof(Elf64_Ehdr), 8);
    if (!e->eh || memcmp(e->eh->e_ident, ELFMAG, SELFMAG) != 0)
        return target_fail(err, "%s: not an ELF file", e->source);
    if (e->eh->e_ident[EI_CLASS] != ELFCLASS64 || e->eh->e_ident[EI_DATA] != ELFDATA2LSB ||
        e->eh->e_ident[EI_VERSION] != EV_CURRENT)
        return target_fail(err, "%s: not a 64-bit little-endian ELF file", e->source);
    if (e->eh->e_phnum == 0 || e->eh->e_phentsize != sizeof(Elf64_Phdr) ||
        !(e->ph = at(e, e->eh->e_phoff, (uint64_t)e->eh->e_phnum * sizeof(Elf64_Phdr), 8)))
        return target_fail(err, "%s: no usable program headers", e->source);
    if (e->eh->e_shnum != 0 && e->eh->e_shentsize == sizeof(Elf64_Shdr))
        e->sh = at(e, e->eh->e_shoff, (uint64_t)e->eh->e_shnum * sizeof(Elf64_Shdr), 8);
    read_dynamic(e);
    return 0;
}

static int map_fd(struct target_elf *e, int fd, char *err)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return target_fail(err, "%s: %s", e->source, strerror(errno));
    if (!S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(Elf64_Ehdr))
        return target_fail(err, "%s: not a regular file large enough for ELF", e->source);
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED)
        return target_fail(err, "%s: mmap: %s", e->source, strerror(errno));
    e->data = p;
    e->size = (size_t)st.st_size;
    if (validate(e, err) != 0) {
        target_elf_close(e);
        return -1;
    }
    return 0;
}

int target_elf_open_path(struct target_elf *e, const char *path, char *err)
{
    memset(e, 0, sizeof *e);
    snprintf(e->source, sizeof e->source, "%s", path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return target_fail(err, "cannot open %s: %s", path, strerror(errno));
    int rc = map_fd(e, fd, err);
    close(fd);
    return rc;
}

int target_elf_open_mapping(struct target_elf *e, pid_t pid, const struct target_mapping *m,
                            char *err)
{
    char path[sizeof e->source];
    snprintf(path, sizeof path, "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid, m->start,
             m->end);
    char first_err[TARGET_ERRLEN];
    if (target_elf_open_path(e, path, first_err) == 0)
        return 0;
    /* map_files needs CAP_SYS_ADMIN on older kernels; the profiler then opens the path inside
     * the target's root (its mount namespace). */
    char clean[4096];
    snprintf(path, sizeof path, "/proc/%d/root%s", (int)pid,
             target_mapping_clean_path(m, clean, sizeof clean));
    if (target_elf_open_path(e, path, err) == 0)
        return 0;
    char second[TARGET_ERRLEN];
    snprintf(second, sizeof second, "%s", err);
    return target_fail(err, "%s; %s", first_err, second);
}

void target_elf_close(struct target_elf *e)
{
    if (e->data)
        munmap(e->data, e->size);
    e->data = NULL;
    e->size = 0;
    e->eh = NULL;
    e->ph = NULL;
    e->sh = NULL;
}

const char *target_elf_machine_name(const struct target_elf *e)
{
    switch (e->eh->e_machine) {
    case EM_X86_64: return "x86_64";
    case EM_AARCH64: return "aarch64";
    default: return "unsupported machine";
    }
}

/* ---- dynamic symbol lookup through the hash tables ---------------------------------------- */

static uint32_t gnu_hash(const char *s)
{
    uint32_t h = 5381;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        h = h * 33 + *p;
    return h;
}

static uint32_t sysv_hash(const char *s)
{
    uint32_t h = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        h = (h << 4) + *p;
        h ^= (h >> 24) & 0xf0;
    }
    return h & 0x0fffffff;
}

/* Symbol i of DT_SYMTAB if its name is name. */
static int sym_matches(const struct target_elf *e, uint32_t i, const char *name,
                       struct target_sym *out)
{
    const Elf64_Sym *s = at_va(e, e->symtab + (uint64_t)i * sizeof *s, sizeof *s, 8);
    size_t n = strlen(name);
    const char *str = s ? at_va(e, e->strtab + s->st_name, n + 1, 1) : NULL;
    if (!str || memcmp(str, name, n) != 0 || str[n] != '\0')
        return 0;
    out->value = s->st_value;
    out->size = s->st_size;
    out->type = ELF64_ST_TYPE(s->st_info);
    out->bind = ELF64_ST_BIND(s->st_info);
    out->visibility = ELF64_ST_VISIBILITY(s->st_other);
    out->shndx = s->st_shndx;
    return 1;
}

static int lookup_gnu(const struct target_elf *e, const char *name, struct target_sym *out,
                      char *err)
{
    const uint32_t *hdr = at_va(e, e->gnu_hash, 16, 4);
    if (!hdr || hdr[0] == 0 || hdr[2] == 0)
        return target_fail(err, "DT_GNU_HASH table is corrupt");
    uint32_t nbuckets = hdr[0], symoffset = hdr[1], bloom_size = hdr[2], shift = hdr[3];
    uint32_t h = gnu_hash(name);
    const uint64_t *bloom = at_va(e, e->gnu_hash + 16, (uint64_t)bloom_size * 8, 8);
    if (!bloom)
        return target_fail(err, "DT_GNU_HASH bloom filter out of the file");
    uint64_t word = bloom[(h / 64) % bloom_size];
    /* a shift of 32 or more (corrupt file) yields 0, as in the profiler's Go */
    uint32_t h_shifted = shift < 32 ? h >> shift : 0;
    uint64_t mask = (1ull << (h % 64)) | (1ull << (h_shifted % 64));
    if ((word & mask) != mask)
        return target_fail(err, "%s not in .dynsym (DT_GNU_HASH bloom filter)", name);
    uint64_t buckets_va = e->gnu_hash + 16 + (uint64_t)bloom_size * 8;
    const uint32_t *bucket = at_va(e, buckets_va + 4ull * (h % nbuckets), 4, 4);
    if (!bucket)
        return target_fail(err, "DT_GNU_HASH buckets out of the file");
    uint32_t i = *bucket;
    if (i == 0)
        return target_fail(err, "%s not in .dynsym (empty DT_GNU_HASH bucket)", name);
    if (i < symoffset)
        return target_fail(err, "DT_GNU_HASH bucket points below symoffset");
    uint64_t chain_va = buckets_va + 4ull * nbuckets;
    for (;; i++) {
        const uint32_t *h2 = at_va(e, chain_va + 4ull * (i - symoffset), 4, 4);
        if (!h2)
            return target_fail(err, "DT_GNU_HASH chain runs out of the file");
        if ((h | 1) == (*h2 | 1) && sym_matches(e, i, name, out)) {
            out->via = "DT_GNU_HASH";
            return 0;
        }
        if (*h2 & 1)
            break; /* last entry of this bucket's chain */
    }
    return target_fail(err, "%s not in .dynsym (DT_GNU_HASH)", name);
}

static int lookup_sysv(const struct target_elf *e, const char *name, struct target_sym *out,
                       char *err)
{
    const uint32_t *hdr = at_va(e, e->sysv_hash, 8, 4);
    if (!hdr || hdr[0] == 0)
        return target_fail(err, "DT_HASH table is corrupt");
    uint32_t nbucket = hdr[0], nchain = hdr[1];
    const uint32_t *bucket = at_va(e, e->sysv_hash + 8, 4ull * nbucket, 4);
    const uint32_t *chain = at_va(e, e->sysv_hash + 8 + 4ull * nbucket, 4ull * nchain, 4);
    if (!bucket || !chain)
        return target_fail(err, "DT_HASH table out of the file");
    uint32_t i = bucket[sysv_hash(name) % nbucket];
    /* At most nchain steps: a corrupt chain must not loop forever. */
    for (uint32_t steps = 0; i != 0 && i < nchain && steps <= nchain; steps++, i = chain[i]) {
        if (sym_matches(e, i, name, out)) {
            out->via = "DT_HASH";
            return 0;
        }
    }
    return target_fail(err, "%s not in .dynsym (DT_HASH)", name);
}

int target_elf_lookup(const struct target_elf *e, const char *name, struct target_sym *out,
                      char *err)
{
    memset(out, 0, sizeof *out);
    if (e->symtab == 0 || e->strtab == 0)
        return target_fail(err, "no DT_SYMTAB/DT_STRTAB in PT_DYNAMIC");
    if (e->gnu_hash)
        return lookup_gnu(e, name, out, err);
    if (e->sysv_hash)
        return lookup_sysv(e, name, out, err);
    return target_fail(err, "no DT_GNU_HASH or DT_HASH: symbols cannot be looked up");
}

/* ---- TLS relocations -------------------------------------------------------------------- */

static const char *reloc_name(unsigned machine, uint32_t type)
{
    if (machine == EM_X86_64) {
        switch (type) {
        case R_X86_64_DTPMOD64: return "R_X86_64_DTPMOD64 (default TLS dialect)";
        case R_X86_64_DTPOFF64: return "R_X86_64_DTPOFF64 (default TLS dialect)";
        case R_X86_64_TPOFF64: return "R_X86_64_TPOFF64 (initial-exec TLS)";
        case R_X86_64_TLSDESC: return "R_X86_64_TLSDESC";
        }
    } else if (machine == EM_AARCH64) {
        switch (type) {
        case 1028: return "R_AARCH64_TLS_DTPMOD64 (traditional TLS dialect)";
        case 1029: return "R_AARCH64_TLS_DTPREL64 (traditional TLS dialect)";
        case 1030: return "R_AARCH64_TLS_TPREL64 (initial-exec TLS)";
        case 1031: return "R_AARCH64_TLSDESC";
        }
    }
    return NULL;
}

static const char *section_name(const struct target_elf *e, const Elf64_Shdr *s)
{
    if (e->eh->e_shstrndx >= e->eh->e_shnum)
        return "?";
    const Elf64_Shdr *strs = &e->sh[e->eh->e_shstrndx];
    if (s->sh_name >= strs->sh_size)
        return "?";
    uint64_t left = strs->sh_size - s->sh_name;
    const char *p = at(e, strs->sh_offset + s->sh_name, left, 1);
    return p && memchr(p, '\0', left) ? p : "?";
}

/* Name of symbol symno in the symbol table sym (whose string table is its sh_link), or NULL. */
static const char *reloc_sym_name(const struct target_elf *e, const Elf64_Shdr *sym, uint64_t symno)
{
    if (sym->sh_link >= e->eh->e_shnum)
        return NULL;
    const Elf64_Shdr *str = &e->sh[sym->sh_link];
    if (symno >= sym->sh_size / sizeof(Elf64_Sym))
        return NULL;
    const Elf64_Sym *s = at(e, sym->sh_offset + symno * sizeof *s, sizeof *s, 8);
    if (!s || s->st_name >= str->sh_size)
        return NULL;
    const char *n = at(e, str->sh_offset + s->st_name, str->sh_size - s->st_name, 1);
    return n && memchr(n, '\0', str->sh_size - s->st_name) ? n : NULL;
}

int target_elf_find_tlsdesc(const struct target_elf *e, const char *name, struct target_reloc *out,
                            char *err)
{
    uint32_t want;
    if (e->eh->e_machine == EM_X86_64)
        want = R_X86_64_TLSDESC;
    else if (e->eh->e_machine == EM_AARCH64)
        want = R_AARCH64_TLSDESC;
    else
        return target_fail(err, "machine %u: profilers know TLSDESC only on x86_64 and aarch64",
                           e->eh->e_machine);
    if (!e->sh)
        return target_fail(err, "no section headers (stripped with --strip-section-headers?): "
                                "the TLSDESC relocation cannot be found");
    char others[160] = "";
    unsigned anonymous = 0;
    for (unsigned i = 0; i < e->eh->e_shnum; i++) {
        const Elf64_Shdr *s = &e->sh[i];
        if (s->sh_type != SHT_RELA)
            continue;
        if (s->sh_link >= e->eh->e_shnum || s->sh_size % sizeof(Elf64_Rela) != 0)
            return target_fail(err, "malformed SHT_RELA section %s", section_name(e, s));
        const Elf64_Rela *r = at(e, s->sh_offset, s->sh_size, 8);
        if (!r)
            return target_fail(err, "SHT_RELA section %s lies outside the file", section_name(e, s));
        for (size_t k = 0; k < s->sh_size / sizeof *r; k++) {
            uint32_t type = (uint32_t)(r[k].r_info & 0xffff);
            const char *rn = reloc_name(e->eh->e_machine, type);
            if (!rn)
                continue; /* not a TLS relocation */
            if (type == want && ELF64_R_SYM(r[k].r_info) == 0)
                anonymous++; /* a descriptor for a non-exported variable: nameless */
            const char *sn = reloc_sym_name(e, &e->sh[s->sh_link], ELF64_R_SYM(r[k].r_info));
            if (!sn || strcmp(sn, name) != 0)
                continue;
            if (type == want) {
                out->r_offset = r[k].r_offset;
                out->r_addend = r[k].r_addend;
                out->section = section_name(e, s);
                return 0;
            }
            if (!others[0])
                snprintf(others, sizeof others, "%s", rn);
        }
    }
    if (others[0])
        target_fail(err, "no TLSDESC relocation names %s, only %s: build with "
                         "-ftls-model=global-dynamic and the TLS descriptor dialect",
                    name, others);
    else if (anonymous)
        target_fail(err, "no TLS relocation names %s, but %u TLSDESC relocation(s) name no "
                         "symbol: is the variable hidden, protected or static?", name, anonymous);
    else
        target_fail(err, "no TLS relocation names %s (absent, hidden visibility, never "
                         "accessed, or relaxed at link time)", name);
    return 1;
}

/* ---- load bias ---------------------------------------------------------------------------- */

int target_elf_bias(const struct target_elf *e, const struct target_mapping *m, uint64_t *bias,
                    char *err)
{
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    for (unsigned i = 0; i < e->eh->e_phnum; i++) {
        const Elf64_Phdr *p = &e->ph[i];
        if (p->p_type != PT_LOAD || !(p->p_flags & PF_X))
            continue;
        /* The loader maps a segment from its page-aligned file offset, so the mapping's offset
         * may lie before p_offset; the matching link-time address moves back by as much. */
        uint64_t aligned = p->p_offset & ~(page - 1);
        if (m->offset >= aligned && m->offset < p->p_offset + p->p_filesz) {
            *bias = m->start - (p->p_vaddr - (p->p_offset - m->offset));
            return 0;
        }
    }
    return target_fail(err, "mapping offset 0x%" PRIx64 " is in no executable PT_LOAD", m->offset);
}

int target_elf_bias_from_first(const struct target_elf *e, const struct target_mapping *first,
                               uint64_t *bias, char *err)
{
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    for (unsigned i = 0; i < e->eh->e_phnum; i++) {
        const Elf64_Phdr *p = &e->ph[i];
        if (p->p_type != PT_LOAD)
            continue;
        /* The first PT_LOAD is mapped at bias + its page-aligned vaddr, from its page-aligned
         * file offset; a mapping that starts further into the file moves forward by as much. */
        uint64_t va = p->p_vaddr & ~(page - 1), off = p->p_offset & ~(page - 1);
        *bias = first->start - (first->offset - off) - va;
        return 0;
    }
    return target_fail(err, "no PT_LOAD segment");
}

/* agent_symbolize.c — see agent_symbolize.h. */
#include "agent_symbolize.h"

#include <elf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void agent_symbols_init(struct agent_symbols *s, pid_t pid)
{
    memset(s, 0, sizeof *s);
    s->pid = pid;
}

void agent_symbols_free(struct agent_symbols *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i].name);
    free(s->v);
    for (size_t i = 0; i < s->nfiles; i++)
        if (s->files[i].ok)
            target_elf_close(&s->files[i].elf);
    free(s->files);
    if (s->have_maps)
        target_maps_free(&s->maps);
    memset(s, 0, sizeof *s);
}

static const struct target_mapping *mapping_of(struct agent_symbols *s, uint64_t at)
{
    for (int pass = 0; pass < 2; pass++) {
        if (!s->have_maps || pass == 1) {
            if (s->have_maps)
                target_maps_free(&s->maps);
            char err[256];
            s->have_maps = target_maps_read(s->pid, &s->maps, err) == 0;
            if (!s->have_maps)
                return NULL;
        }
        for (size_t i = 0; i < s->maps.n; i++) {
            const struct target_mapping *m = &s->maps.v[i];
            if (at >= m->start && at < m->end)
                return m->path[0] == '/' && target_mapping_exec(m) ? m : NULL;
        }
    }
    return NULL;
}

static struct agent_symfile *file_of(struct agent_symbols *s, const struct target_mapping *m)
{
    for (size_t i = 0; i < s->nfiles; i++)
        if (s->files[i].start == m->start && s->files[i].end == m->end)
            return &s->files[i];
    if (s->nfiles == s->capfiles) {
        size_t cap = s->capfiles ? s->capfiles * 2 : 16;
        struct agent_symfile *nf = realloc(s->files, cap * sizeof *nf);
        if (!nf)
            return NULL;
        s->files = nf;
        s->capfiles = cap;
    }
    struct agent_symfile *f = &s->files[s->nfiles++];
    memset(f, 0, sizeof *f);
    f->start = m->start;
    f->end = m->end;
    char err[256];
    if (target_elf_open_mapping(&f->elf, s->pid, m, err) == 0) {
        f->ok = target_elf_bias(&f->elf, m, &f->bias, err) == 0;
        if (!f->ok)
            target_elf_close(&f->elf);
    }
    return f;
}

/* The STT_FUNC (or GNU_IFUNC) symbol of one symbol table containing addr, by st_size. */
static const char *lookup(const struct target_elf *e, unsigned type, uint64_t addr)
{
    const Elf64_Ehdr *eh = e->eh;
    if (!e->sh)
        return NULL;
    for (unsigned i = 0; i < eh->e_shnum; i++) {
        const Elf64_Shdr *sh = &e->sh[i];
        if (sh->sh_type != type || sh->sh_entsize != sizeof(Elf64_Sym) || sh->sh_link >= eh->e_shnum)
            continue;
        const Elf64_Shdr *str = &e->sh[sh->sh_link];
        if (sh->sh_offset > e->size || sh->sh_size > e->size - sh->sh_offset ||
            str->sh_offset > e->size || str->sh_size > e->size - str->sh_offset)
            continue;
        const Elf64_Sym *sym = (const Elf64_Sym *)(e->data + sh->sh_offset);
        size_t n = sh->sh_size / sizeof *sym;
        const char *names = (const char *)(e->data + str->sh_offset);
        for (size_t k = 0; k < n; k++) {
            unsigned t = ELF64_ST_TYPE(sym[k].st_info);
            if ((t != STT_FUNC && t != STT_GNU_IFUNC) || sym[k].st_shndx == SHN_UNDEF ||
                sym[k].st_size == 0)
                continue;
            if (addr >= sym[k].st_value && addr - sym[k].st_value < sym[k].st_size &&
                sym[k].st_name < str->sh_size &&
                memchr(names + sym[k].st_name, '\0', str->sh_size - sym[k].st_name))
                return names + sym[k].st_name;
        }
    }
    return NULL;
}

const char *agent_symbolize(struct agent_symbols *s, uint64_t ip, int leaf)
{
    uint64_t at = leaf || ip == 0 ? ip : ip - 1;
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i].ip == at)
            return s->v[i].name;
    char name[320];
    snprintf(name, sizeof name, "0x%" PRIx64, ip);
    const struct target_mapping *m = mapping_of(s, at);
    if (m) {
        const char *base = strrchr(m->path, '/');
        snprintf(name, sizeof name, "%.200s+0x%" PRIx64, base ? base + 1 : m->path,
                 ip - m->start + m->offset);
        struct agent_symfile *f = file_of(s, m);
        if (f && f->ok) {
            const char *fn = lookup(&f->elf, SHT_SYMTAB, at - f->bias);
            if (!fn)
                fn = lookup(&f->elf, SHT_DYNSYM, at - f->bias);
            if (fn && *fn)
                snprintf(name, sizeof name, "%.300s", fn);
        }
    }
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        struct agent_sym *nv = realloc(s->v, cap * sizeof *nv);
        if (!nv)
            return "?";
        s->v = nv;
        s->cap = cap;
    }
    char *copy = strdup(name);
    if (!copy)
        return "?";
    s->v[s->n].ip = at;
    s->v[s->n].name = copy;
    return s->v[s->n++].name;
}

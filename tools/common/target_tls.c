/* target_tls.c — see target_tls.h. */
#include "target_tls.h"

#include <elf.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "target_elf.h"
#include "target_maps.h"
#include "target_util.h"

/* Shared TLS libraries other than OpenSSL, by the start of their file name. */
static const struct {
    const char *prefix, *name;
} others[] = {
    {"libgnutls.so", "GnuTLS"},     {"libnss3.so", "NSS"},        {"libwolfssl.so", "wolfSSL"},
    {"libmbedtls.so", "Mbed TLS"},  {"libs2n.so", "s2n-tls"},      {"libbotan-", "Botan"},
    {"libjvm.so", "Java (JSSE, TLS written in Java)"},
};

static const char *base_name(const char *path)
{
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

/* 1 when a symbol table section of e defines name. */
static int defines(const struct target_elf *e, const char *name)
{
    if (!e->sh)
        return 0;
    for (unsigned i = 0; i < e->eh->e_shnum; i++) {
        const Elf64_Shdr *s = &e->sh[i];
        if ((s->sh_type != SHT_SYMTAB && s->sh_type != SHT_DYNSYM) || !s->sh_entsize ||
            s->sh_link >= e->eh->e_shnum || s->sh_offset + s->sh_size > e->size)
            continue;
        const Elf64_Shdr *str = &e->sh[s->sh_link];
        if (str->sh_offset + str->sh_size > e->size)
            continue;
        const Elf64_Sym *sym = (const Elf64_Sym *)(e->data + s->sh_offset);
        size_t n = s->sh_size / sizeof *sym;
        const char *names = (const char *)e->data + str->sh_offset;
        for (size_t k = 0; k < n; k++)
            if (sym[k].st_shndx != SHN_UNDEF && sym[k].st_name < str->sh_size &&
                strncmp(names + sym[k].st_name, name, str->sh_size - sym[k].st_name) == 0)
                return 1;
    }
    return 0;
}

static int contains(const struct target_elf *e, const char *needle)
{
    return memmem(e->data, e->size, needle, strlen(needle)) != 0;
}

/* What the executable itself holds (a TLS implementation linked in). */
static void look_at_program(pid_t pid, struct target_tls *out)
{
    char path[64], err[TARGET_ERRLEN];
    snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
    struct target_elf e;
    if (target_elf_open_path(&e, path, err) != 0)
        return;
    char exe[4096];
    ssize_t n = readlink(path, exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    const char *name = exe[0] ? exe : e.source;
    if (defines(&e, "SSL_read") || defines(&e, "SSL_do_handshake"))
        snprintf(out->what, sizeof out->what,
                 "OpenSSL (or BoringSSL) linked into the program itself (%s): its calls "
                 "cannot be interposed",
                 name);
    else if (contains(&e, "crypto/tls.(*Conn).Read"))
        snprintf(out->what, sizeof out->what, "Go's crypto/tls, in the program (%s)",
                 name);
    else if (contains(&e, "rustls::"))
        snprintf(out->what, sizeof out->what, "rustls, in the program (%s)", name);
    if (out->what[0])
        out->reach = TARGET_TLS_OUT_OF_REACH;
    target_elf_close(&e);
}

int target_tls_find(pid_t pid, struct target_tls *out)
{
    memset(out, 0, sizeof *out);
    struct target_maps m;
    char err[TARGET_ERRLEN];
    if (target_maps_read(pid, &m, err) != 0)
        return -1;
    const char *other = 0, *other_path = 0;
    for (size_t i = 0; i < m.n; i++) {
        const char *b = base_name(m.v[i].path);
        if (!m.v[i].path[0] || m.v[i].path[0] != '/')
            continue;
        if (strncmp(b, "libssl.so", 9) == 0 || strncmp(b, "libssl-", 7) == 0) {
            out->reach = TARGET_TLS_OPENSSL;
            snprintf(out->what, sizeof out->what, "OpenSSL, shared (%s)", m.v[i].path);
            break;
        }
        for (size_t k = 0; !other && k < sizeof others / sizeof others[0]; k++)
            if (strncmp(b, others[k].prefix, strlen(others[k].prefix)) == 0) {
                other = others[k].name;
                other_path = m.v[i].path;
            }
    }
    if (out->reach == TARGET_TLS_NONE && other) {
        out->reach = TARGET_TLS_OUT_OF_REACH;
        snprintf(out->what, sizeof out->what, "%s (%s)", other, other_path);
    }
    target_maps_free(&m);
    if (out->reach == TARGET_TLS_NONE)
        look_at_program(pid, out);
    return 0;
}

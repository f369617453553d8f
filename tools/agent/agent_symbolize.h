/* agent_symbolize.h — function names for the frame addresses of a stack, from the ELF symbol
 * tables (.symtab, else .dynsym) of the target's mapped files, cached per address and file.
 *
 * An address counts as inside a function only when it lies within the symbol's st_size, so a
 * stripped library (libc keeps only its exported symbols) never lends an internal function the
 * name of an exported neighbour: such a frame is shown as file+offset ("libc.so.6+0x94ac3"),
 * as is any address without a symbol ("0x…" outside every file mapping). */
#ifndef AGENT_SYMBOLIZE_H
#define AGENT_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/target_elf.h"
#include "common/target_maps.h"

struct agent_symbols {
    pid_t pid;
    struct target_maps maps; /* read at first use, re-read when an address is in none */
    int have_maps;
    struct agent_sym {
        uint64_t ip;
        char *name;
    } *v;
    size_t n, cap;
    struct agent_symfile {
        uint64_t start, end; /* the executable mapping it was opened for */
        int ok;
        uint64_t bias;
        struct target_elf elf;
    } *files;
    size_t nfiles, capfiles;
};

void agent_symbols_init(struct agent_symbols *s, pid_t pid);
void agent_symbols_free(struct agent_symbols *s);

/* The function containing ip. leaf = 0 for return addresses, which are looked up one byte
 * earlier (the call, not what follows it). The string lives as long as s. */
const char *agent_symbolize(struct agent_symbols *s, uint64_t ip, int leaf);

#endif

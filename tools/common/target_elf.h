/* target_elf.h — the parts of an ELF shared object that profilers use to find the apmint and
 * OpenTelemetry exports, read the way the eBPF profiler reads them:
 *  - a dynamic symbol is found through the hash tables named by PT_DYNAMIC (DT_GNU_HASH first,
 *    else DT_HASH), not by scanning .dynsym, so a library without hash tables has no symbols;
 *  - a TLS variable is found through an R_X86_64_TLSDESC / R_AARCH64_TLSDESC relocation in any
 *    SHT_RELA section whose symbol is named after it, so section headers must be present;
 *  - the load bias comes from the executable mapping and the executable PT_LOAD that contains
 *    its file offset. */
#ifndef TARGET_ELF_H
#define TARGET_ELF_H

#include <elf.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "target_maps.h"

struct target_elf {
    uint8_t *data; /* the whole file, mapped read-only */
    size_t size;
    char source[4200]; /* which file was opened (map_files entry or path under /proc/PID/root) */
    const Elf64_Ehdr *eh;
    const Elf64_Phdr *ph;
    const Elf64_Shdr *sh; /* NULL when the file has no (usable) section headers */
    uint64_t gnu_hash, sysv_hash, symtab, strtab; /* link-time addresses from PT_DYNAMIC */
};

struct target_sym {
    uint64_t value, size;
    unsigned type, bind, visibility, shndx;
    const char *via; /* "DT_GNU_HASH" or "DT_HASH" */
};

struct target_reloc {
    uint64_t r_offset; /* link-time address of the relocated word (for TLSDESC: the descriptor) */
    int64_t r_addend;
    const char *section; /* name of the SHT_RELA section it was found in */
};

/* Opens the file behind mapping m of process pid: /proc/PID/map_files/START-END (works even if
 * the file was deleted or replaced), else the path under /proc/PID/root. */
int target_elf_open_mapping(struct target_elf *e, pid_t pid, const struct target_mapping *m,
                            char *err);
int target_elf_open_path(struct target_elf *e, const char *path, char *err);
void target_elf_close(struct target_elf *e);

/* Looks name up through the dynamic hash tables. 0 found, -1 not found or error (see err). */
int target_elf_lookup(const struct target_elf *e, const char *name, struct target_sym *out,
                      char *err);

/* Finds the TLSDESC relocation naming name. 0 found; 1 not found (err says what was found
 * instead, e.g. a DTPMOD64 relocation from the default TLS dialect); -1 malformed file. */
int target_elf_find_tlsdesc(const struct target_elf *e, const char *name, struct target_reloc *out,
                            char *err);

/* Load bias (runtime address minus link-time address) as the profiler computes it from an
 * executable mapping of this file. */
int target_elf_bias(const struct target_elf *e, const struct target_mapping *exec_map,
                    uint64_t *bias, char *err);

/* The same from the lowest mapping of the file and the first PT_LOAD (page-aligned); a second
 * opinion that must agree with target_elf_bias for a normally loaded library. */
int target_elf_bias_from_first(const struct target_elf *e, const struct target_mapping *first,
                               uint64_t *bias, char *err);

const char *target_elf_machine_name(const struct target_elf *e);

#endif

/* export.h — what leaves the library. Everything is hidden (-fvisibility=hidden) unless marked
 * here; tests/variants.bats ("the tracer API and nothing internal is exported") compares the
 * defined dynamic symbols with the list in tests/elf_contract.bash (elf_exports). */
#ifndef PROFLINK_EXPORT_H
#define PROFLINK_EXPORT_H
#define PROFLINK_EXPORT __attribute__((visibility("default")))

/* A hidden second name for an exported definition of the same file, for the library's own uses:
 * they bind when the library is linked, where a use of the exported name is a relocation that
 * the dynamic loader resolves by a lookup in every process that loads the library (-z now),
 * served or not (raw_syscall.h). Not for a use that must see a program's own definition of the
 * name, or another copy's (copies.c). */
#define PROFLINK_LOCAL_ALIAS(local, exported)                                                    \
    extern __typeof(exported) local                                                              \
        __attribute__((copy(exported), alias(#exported), visibility("hidden")))
#endif

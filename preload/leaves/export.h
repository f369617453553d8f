/* export.h — what leaves the library. Everything is hidden (-fvisibility=hidden) unless marked
 * here; tests/variants.bats ("the tracer API and nothing internal is exported") compares the
 * defined dynamic symbols with the list in tests/elf_contract.bash (elf_exports). */
#ifndef PROFLINK_EXPORT_H
#define PROFLINK_EXPORT_H
#define PROFLINK_EXPORT __attribute__((visibility("default")))
#endif

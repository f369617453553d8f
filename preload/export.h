/* export.h — what leaves the library. Everything is hidden (-fvisibility=hidden) unless marked
 * here; tests/elf_contract.bats compares `nm -D --defined-only` with the list in README. */
#ifndef PROFLINK_EXPORT_H
#define PROFLINK_EXPORT_H
#define PROFLINK_EXPORT __attribute__((visibility("default")))
#endif

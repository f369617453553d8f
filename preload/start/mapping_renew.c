/* mapping_renew.c — a second look by the profiler once the storage is published
 * (mapping_renew.h).
 *
 * The OpenTelemetry eBPF profiler (its apmint reader, v0.0.202633) reads the process storage
 * when it first handles our executable mapping, at the process's first samples, and handles a
 * mapping again only when it is new to it: a new start address, or the same start with a new
 * length. A process sampled after the dynamic loader mapped us but before our constructor
 * published the storage (another library's constructor, a long relocation, a loaded machine)
 * found the pointer NULL and was never correlated: measured with the real profiler, 4 of 5
 * processes whose start-up burnt 300 ms of CPU before our constructor, and 7 of 72 attaches of
 * the test programs of a loaded 2-CPU machine (tests/e2e/profiler.bats).
 *
 * So once the storage is published, our executable mapping changes shape: one page of it, which
 * holds no code and is never executed (renew_page below), loses PROT_EXEC. The kernel splits the
 * mapping there; the profiler finds a shorter mapping at the same start and another after the
 * page, both new to it, same file, same load bias, and attaches on the first (or finds itself
 * attached already, and does nothing). It reads the mappings again at the next sample that
 * falls outside what it knows and whenever the process names its OTEL_CTX mapping: the caller
 * publishes that right after us.
 *
 * The page is ours alone: its own section, aligned to and sized one 4 KiB page. On a kernel
 * with larger pages (some aarch64 systems) a page of the mapping would hold code, so nothing is
 * done there. mprotect fails only in a sandbox that forbids it (none is installed before our
 * constructor runs): then nothing changes. */
#include "mapping_renew.h"
#include "leaves/raw_syscall.h"

#include <stdint.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#define RENEW_PAGE 4096

#ifndef PROFLINK_STATIC
/* In the executable segment ("ax") so that taking PROT_EXEC away splits the text mapping; zeros,
 * never executed, never referenced but here. */
__asm__(".pushsection .text.proflink_renew_page,\"ax\"\n"
        ".balign 4096\n"
        ".globl proflink_renew_page\n"
        ".hidden proflink_renew_page\n"
        "proflink_renew_page:\n"
        ".fill 4096,1,0\n"
        ".popsection\n");
extern const char proflink_renew_page[RENEW_PAGE];
#endif

void mapping_renew(void)
{
#ifndef PROFLINK_STATIC
    /* a statically linked program is never matched by the profiler's file name: nothing to do */
    if (getauxval(AT_PAGESZ) != RENEW_PAGE)
        return;
    raw_syscall6(SYS_mprotect, (long)proflink_renew_page, RENEW_PAGE, PROT_READ, 0, 0, 0);
#endif
}

/* target_http.c — see target_http.h. */
#include "target_http.h"

int target_http_reading(const struct target *t)
{
    struct target_sym sym;
    char err[TARGET_ERRLEN];
    uint32_t v;
    if (!t->elf.eh || target_elf_lookup(&t->elf, TARGET_HTTP_SYMBOL, &sym, err) != 0 ||
        sym.shndx == 0 || sym.size != sizeof v)
        return -1;
    if (target_mem_read(&t->mem, t->load_bias + sym.value, &v, sizeof v, err) != 0)
        return -1;
    return v != 0;
}

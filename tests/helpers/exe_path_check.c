/* exe_path_check — the library's executable-path resolution (preload/config/exe_path.c) run on
 * given names, for tests/exe_path.bats to compare with what the kernel says.
 * usage: exe_path_check NAME...   prints, per name, "NAME -> PATH" when the name resolves to an
 *        ELF program of this machine, or "NAME -> proc" when the library would ask /proc/self/exe;
 * exe_path_check --self    prints the path the library reads for this very program. */
#include <stdio.h>
#include <string.h>

#include "config/exe_path.c"

int main(int argc, char **argv)
{
    char path[PATH_MAX];
    if (argc == 2 && strcmp(argv[1], "--self") == 0) {
        exe_path_read(path);
        printf("%s\n", path);
        return 0;
    }
    for (int i = 1; i < argc; i++) {
        if (exe_path_resolve(argv[i], path) == 0)
            printf("%s -> %s\n", argv[i], path);
        else
            printf("%s -> proc\n", argv[i]);
    }
    return 0;
}

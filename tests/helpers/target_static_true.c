/* target_static_true — a statically linked program (no preload can run in it) that prints
 * "static" and exits 0: what an exec into a static binary looks like. */
#include <stdio.h>

int main(void)
{
    puts("static");
    return 0;
}

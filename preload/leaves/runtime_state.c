/* runtime_state.c — see runtime_state.h. */
#include "runtime_state.h"

#include <stdatomic.h>

static _Atomic int active;
/* Set by the seccomp hooks before the program installs a filter: from then on proflink makes
 * no system call the program did not ask for (its filter may kill the process for one). */
static _Atomic int sandboxed;

/* Relaxed load: "active" only gates whether to do work; every structure it guards was published
 * before it was set (release), by this same thread, before any other thread could have been
 * created by the program (constructor) — or is reached through pointers published with release
 * stores. */
int runtime_active(void) { return atomic_load_explicit(&active, memory_order_relaxed); }

void runtime_set_active(int on)
{
    atomic_store_explicit(&active, on, on ? memory_order_release : memory_order_relaxed);
}

void runtime_sandbox_begin(void) { atomic_store_explicit(&sandboxed, 1, memory_order_relaxed); }
void runtime_sandbox_failed(void) { atomic_store_explicit(&sandboxed, 0, memory_order_relaxed); }
int runtime_sandboxed(void) { return atomic_load_explicit(&sandboxed, memory_order_relaxed); }

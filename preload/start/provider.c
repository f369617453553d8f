/* provider.c — see provider.h. */
#include "provider.h"

#include "delivery/deliverer_lazy.h"
#include "messages/provider_relay.h"
#include "leaves/runtime_state.h"

void provider_check(void)
{
    /* (in a sandboxed process: reading the block, logging and relaying are system calls) */
    if (runtime_sandboxed() || !provider_noticed())
        return;
    /* relaying needs the intake thread, which a process without a consumer has not started */
    reader_ensure_running();
}

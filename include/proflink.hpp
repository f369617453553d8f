/*
 * proflink.hpp — C++ scopes over the tracer API of proflink.h.
 *
 *     proflink::context ctx = proflink::context::from_ids(trace_id, span_id, txn_id, 0x01);
 *     {
 *         proflink::scope s(ctx);   // ctx is this thread's context ...
 *         handle_request();         // ... nested scopes stack, exceptions unwind them ...
 *     }                             // ... and the previous context is back here
 *
 * A scope swaps its context in with proflink_swap_context and restores the previous one with
 * proflink_set_context when it is destroyed, however the block is left (return, break, an
 * exception). Scopes belong to the thread that made them: create and destroy one on the same
 * thread, innermost first (which C++ block scoping guarantees). Neither the constructor nor the
 * destructor throws, allocates or takes a lock once the thread made its first call.
 *
 * Three ways to get the functions:
 *  - nothing at link time (the default): they are looked up once with dlsym(RTLD_DEFAULT), so
 *    the program runs unchanged where proflink is absent (scopes are then no-ops). Preloading
 *    the library (LD_PRELOAD, proflink-run) is all it takes;
 *  - -lproflink (pkg-config proflink): define PROFLINK_HPP_LINKED before including this file
 *    to call the functions directly (the dlsym default works too);
 *  - the static archive (libproflink.a, call proflink_init() at the start of main): define
 *    PROFLINK_HPP_LINKED; a static program has no dynamic symbol table for dlsym to search.
 * C++11 or later.
 */
#ifndef PROFLINK_HPP
#define PROFLINK_HPP

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "proflink.h"

#ifndef PROFLINK_HPP_LINKED
#include <dlfcn.h>
#endif

namespace proflink {

namespace detail {

typedef void (*set_context_fn)(const proflink_context *);
typedef int (*swap_context_fn)(const proflink_context *, proflink_context *);

struct api {
    set_context_fn set;
    swap_context_fn swap;
};

/* The functions, found once per process (a thread-safe function-local static). Both or
 * neither: a library that had one would have the other. */
inline const api &functions() noexcept
{
#ifdef PROFLINK_HPP_LINKED
    static const api a = {&proflink_set_context, &proflink_swap_context};
#else
    static const api a = [] {
        api found = {reinterpret_cast<set_context_fn>(dlsym(RTLD_DEFAULT, "proflink_set_context")),
                     reinterpret_cast<swap_context_fn>(dlsym(RTLD_DEFAULT, "proflink_swap_context"))};
        if (!found.set || !found.swap)
            found.set = nullptr, found.swap = nullptr;
        return found;
    }();
#endif
    return a;
}

} // namespace detail

/* proflink_context with constructors. All-zero (the default) means "no trace". */
struct context : proflink_context {
    context() noexcept { std::memset(static_cast<proflink_context *>(this), 0, sizeof(proflink_context)); }

    /* Raw W3C ids. transaction_id == nullptr: the span is its own local root. */
    static context from_ids(const std::uint8_t trace_id[16], const std::uint8_t span_id[8],
                            const std::uint8_t transaction_id[8], std::uint8_t trace_flags) noexcept
    {
        context c;
        std::memcpy(c.trace_id, trace_id, 16);
        std::memcpy(c.span_id, span_id, 8);
        if (transaction_id)
            std::memcpy(c.transaction_id, transaction_id, 8);
        c.trace_flags = trace_flags;
        return c;
    }

    bool has_trace() const noexcept
    {
        for (std::size_t i = 0; i < 16; i++)
            if (trace_id[i])
                return true;
        return false;
    }
};

/* Makes ctx the calling thread's context until the scope ends, then restores the one that was
 * active before (or none). */
class scope {
  public:
    explicit scope(const proflink_context &ctx) noexcept : active_(false)
    {
        const detail::api &f = detail::functions();
        if (f.swap)
            active_ = f.swap(&ctx, &previous_) >= 0; /* -1: proflink is disabled */
    }

    ~scope()
    {
        if (active_)
            detail::functions().set(&previous_);
    }

    /* The context that was active when the scope began (all-zero when none). */
    const proflink_context &previous() const noexcept { return previous_; }
    /* Whether proflink is there and enabled (false: the scope changes nothing). */
    bool active() const noexcept { return active_; }

    scope(const scope &) = delete;
    scope &operator=(const scope &) = delete;

  private:
    proflink_context previous_ = {};
    bool active_;
};

} // namespace proflink

#endif /* PROFLINK_HPP */

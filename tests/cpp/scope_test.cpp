// scope_test — proflink::scope (include/proflink.hpp) in a real C++ program, built three ways
// (tests/cpp.mk): dlsym (no link), -lproflink, and the static archive. Prints what
// proflink_get_trace reports after each step ("<name> <trace hex or ->"); at "pause NAME" it
// waits for a line on stdin, so that the test can read the records from outside meanwhile.
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>

#include "proflink.hpp"

#ifdef PROFLINK_HPP_LINKED
static int get_trace(uint8_t *t) { return proflink_get_trace(t, nullptr, nullptr, nullptr); }
#else
static int get_trace(uint8_t *t)
{
    typedef int (*get_fn)(uint8_t *, uint8_t *, uint8_t *, uint8_t *);
    static get_fn get = reinterpret_cast<get_fn>(dlsym(RTLD_DEFAULT, "proflink_get_trace"));
    return get ? get(t, nullptr, nullptr, nullptr) : -2;
}
#endif

static std::string current()
{
    uint8_t t[16];
    if (get_trace(t) != 1)
        return "-";
    char h[33];
    for (int i = 0; i < 16; i++)
        std::snprintf(h + 2 * i, 3, "%02x", t[i]);
    return h;
}

static void report(const char *what)
{
    std::printf("%s %s\n", what, current().c_str());
    std::fflush(stdout);
}

static void pause(const char *what)
{
    std::printf("pause %s\n", what);
    std::fflush(stdout);
    char line[16];
    if (!std::fgets(line, sizeof line, stdin))
        std::exit(0);
}

static proflink::context make(uint8_t fill)
{
    uint8_t t[16], s[8];
    std::memset(t, fill, sizeof t);
    std::memset(s, fill, sizeof s);
    return proflink::context::from_ids(t, s, nullptr, 1);
}

int main()
{
#ifdef PROFLINK_STATIC_ARCHIVE
    std::printf("init %d\n", proflink_init());
#endif
    const proflink::context a = make(0xaa), b = make(0xbb), c = make(0xcc);
    report("start");
    {
        proflink::scope outer(a);
        std::printf("active %d\n", outer.active() ? 1 : 0);
        report("outer");
        {
            proflink::scope inner(b);
            report("inner");
            pause("inner");
        }
        report("after-inner");
    }
    report("after-outer");

    // an exception thrown two scopes deep, caught between them and outside both
    try {
        proflink::scope outer(a);
        try {
            proflink::scope inner(b);
            throw std::runtime_error("inner");
        } catch (const std::exception &) {
            report("caught-inside");
        }
        proflink::scope again(c);
        throw std::runtime_error("outer");
    } catch (const std::exception &) {
        report("caught-outside");
    }

    // a second thread has its own context: its scopes never touch the main thread's
    proflink::scope main_scope(a);
    std::string seen_in_thread, after_in_thread;
    std::thread th([&] {
        seen_in_thread = current();
        {
            proflink::scope s(c);
            after_in_thread = current();
            pause("thread");
        }
        seen_in_thread += "/" + after_in_thread + "/" + current();
    });
    th.join();
    std::printf("thread %s\n", seen_in_thread.c_str());
    report("main-after-thread");
    pause("end");
    return 0;
}

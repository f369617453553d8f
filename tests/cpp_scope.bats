#!/usr/bin/env bats
# shellcheck shell=bash
# include/proflink.hpp: proflink::scope restores the previous context on exit (nesting,
# exceptions, a second thread), in a C++ program built the three ways users link it
# (tests/cpp.mk): dlsym with no link dependency, -lproflink, and the static archive. Where the
# apmint reader can see the program (not the static one), the records are read from outside
# with proflink-inspect while the program waits inside a scope.
load stepped_helpers

CPP=$ROOT/build/tests/cpp
A=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
B=bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb
C=cccccccccccccccccccccccccccccccc

setup() { setup_sockdir; }
teardown() { stepped_teardown; }

# thread_traces — "tid:trace" of every thread with a trace present (from outside).
thread_traces() {
    inspect_json "$TARGET_PID"
    jget "' '.join(sorted(('main' if t['tid'] == $TARGET_PID else 'other') + ':' + t['apm']['trace_id'] for t in j['threads'] if t['apm'] and t['apm']['trace_present']))"
}

# expect_steps — what the program reports when proflink is there.
expect_steps() {
    grep -qx 'active 1' "$OUT"
    grep -qx 'start -' "$OUT"
    grep -qx "outer $A" "$OUT"
    grep -qx "inner $B" "$OUT"
    grep -qx "after-inner $A" "$OUT"
    grep -qx 'after-outer -' "$OUT"
    grep -qx "caught-inside $A" "$OUT"
    grep -qx 'caught-outside -' "$OUT"
    # the thread started with no context (PROFLINK_INHERIT defaults to 0), had C in its scope,
    # and none after it; the main thread kept A throughout
    grep -qx "thread -/$C/-" "$OUT"
    grep -qx "main-after-thread $A" "$OUT"
}

# step_through SEEN_FROM_OUTSIDE — lets the program pass its pauses; with 1, checks the
# records from outside at each.
step_through() {
    wait_for_line "$OUT" '^pause inner'
    if [ "$1" = 1 ]; then [ "$(thread_traces)" = "main:$B" ]; fi
    echo go >&8
    wait_for_line "$OUT" '^pause thread'
    if [ "$1" = 1 ]; then [ "$(thread_traces)" = "main:$A other:$C" ]; fi
    echo go >&8
    wait_for_line "$OUT" '^pause end'
    if [ "$1" = 1 ]; then [ "$(thread_traces)" = "main:$A" ]; fi
    echo go >&8
    wait "$TARGET_PID"
    TARGET_PID=
}

@test "dlsym, no link dependency: nested scopes, exceptions and a second thread, seen from outside" {
    [ "$(readelf -dW "$CPP/scope_dlsym" | grep -c proflink)" = 0 ]
    start_stepped LD_PRELOAD="$LIB" "$CPP/scope_dlsym"
    wait_attachable "$TARGET_PID"
    step_through 1
    expect_steps
}

@test "dlsym, without the library: every scope is a no-op and the program runs the same" {
    start_stepped "$CPP/scope_dlsym"
    step_through 0
    grep -qx 'active 0' "$OUT"
    [ "$(grep -c ' -$' "$OUT")" -eq 8 ] # every report: no trace
    grep -qx 'thread -/-/-' "$OUT"
}

@test "-lproflink: the same, through the library named in DT_NEEDED" {
    readelf -dW "$CPP/scope_linked" | grep -q 'NEEDED.*elastic-jvmti-linux-proflink'
    start_stepped "$CPP/scope_linked"
    wait_attachable "$TARGET_PID"
    step_through 1
    expect_steps
}

@test "static archive: the same in a statically linked program (proflink_init in main)" {
    [ "$(readelf -lW "$CPP/scope_static" | grep -c INTERP)" = 0 ]
    start_stepped "$CPP/scope_static"
    step_through 0
    grep -qx 'init 0' "$OUT"
    expect_steps
}

#!/usr/bin/env bats
# The project's rule "no call cycles between modules", checked on the built objects
# (tests/module_calls.py reads who references whose symbols), so a change that adds one fails.
# shellcheck shell=bash
load helpers

# The objects of one build (OBJDIR under build/) reference nothing up the floors and close no circle.
floors_hold() {
    [ -d "$ROOT/build/$1/preload" ] || skip "library objects not built ($1)"
    run "$PY" "$ROOT/tests/module_calls.py" "$ROOT/build/$1"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "${lines[-1]}" == "0 reference(s) up, 0 cycle(s) among "* ]]
}

@test "no call up the floors and no call cycle between the library's modules (preload/, hooks/)" {
    floors_hold obj
}

# The static archive's objects differ (pthread_wrap.c and the PROFLINK_STATIC paths): its weak
# references count as calls too, since the linker resolves them whenever the symbol is there.
@test "no call up the floors and no cycle in the static build, weak references counted" {
    floors_hold static
}

# The checker itself sees a reference up: a leaf that names a symbol of the start floor, by a
# weak reference only, is reported.
@test "module_calls.py reports a weak reference that runs up the floors" {
    [ -d "$ROOT/build/obj/preload" ] || skip "library objects not built"
    t=$(mktemp -d "$BATS_TEST_TMPDIR/objs.XXXXXX")
    cp -r "$ROOT/build/obj/preload" "$ROOT/build/obj/hooks" "$t/"
    printf 'extern void fork_sequence_child(void) __attribute__((weak));\nvoid *version_probe(void) { return (void *)fork_sequence_child; }\n' >"$t/probe.c"
    cc -c -fPIC -o "$t/preload/leaves/version.o" "$t/probe.c"
    run "$PY" "$ROOT/tests/module_calls.py" "$t"
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$output" == *"up: preload/leaves/version -> preload/start/fork_sequence"* ]]
}

@test "only the fork sequence registers fork handlers (preload/start/fork_sequence.c)" {
    [ -d "$ROOT/build/obj/preload" ] || skip "library objects not built"
    run "$PY" "$ROOT/tests/module_calls.py" "$ROOT/build/obj" --who-calls atfork_register
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$output" = preload/start/fork_sequence ]
}

@test "layer rules: what each folder includes (tests/module_layers.py, docs/source-layout.md)" {
    run "$PY" "$ROOT/tests/module_layers.py" "$ROOT"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "${lines[-1]}" =~ ^0\ broken\ rule\(s\)\ in\ [1-9][0-9]*\ includes$ ]]
}

# The same rules on what the objects reference, which an extern declaration cannot get around:
# no library module uses a symbol the hooks define, and the leaves use only leaves.
@test "the library references nothing the hooks define; leaves reference only leaves" {
    [ -d "$ROOT/build/obj/preload/leaves" ] || skip "library objects not built"
    map=$("$PY" "$ROOT/tests/module_calls.py" "$ROOT/build/obj" --map | grep -e ' -> ') || true
    echo "$map"
    # the map covers the library (a layer's module and the hooks' are there)
    grep -q '^preload/delivery/deliverer -> ' <<<"$map"
    grep -q '^hooks/pthread_create -> .*preload/leaves/pthread_real' <<<"$map"
    run grep -E '^preload/[^ ]+ -> .*hooks/' <<<"$map"
    [ "$status" -eq 1 ]
    run grep -E '^preload/leaves/[^ ]+ -> .*(hooks|preload/(start|config|context|publish|messages|deferral|delivery|http|api))/' <<<"$map"
    [ "$status" -eq 1 ]
}

# A call the library makes by one of the names the hooks interpose (close, read, write, sendto,
# syscall...) would run proflink's own interposer on proflink's own descriptors: the library
# calls the system directly (preload/leaves/real_calls.h, raw_syscall.h) or libc's function past
# the interposer (preload/leaves/pthread_real.c). The prctl calls are left through the hook for
# now on purpose: the interposer shows every naming of a mapping to otel_ctx_watch.c, and a
# profiler may watch libc's prctl for the OTEL_CTX naming. Nothing else may be added.
@test "library code reaches no interposer of proflink's by accident" {
    [ -d "$ROOT/build/obj/preload/leaves" ] || skip "library objects not built"
    run "$PY" "$ROOT/tests/module_calls.py" "$ROOT/build/obj" --hooked
    echo "$output"
    [ "$status" -eq 0 ]
    expected=$'preload/delivery/deliverer prctl\npreload/messages/receiver prctl\npreload/publish/otel_process_ctx prctl'
    [ "$output" = "$expected" ]
}

#!/usr/bin/env bats
# The project's rule "no call cycles between modules", checked on the built objects
# (tests/module_calls.py reads who references whose symbols), so a change that adds one fails.
# shellcheck shell=bash
load helpers

@test "no call cycle between the library's modules (preload/, hooks/)" {
    [ -d "$ROOT/build/obj/preload" ] || skip "library objects not built"
    run "$PY" "$ROOT/tests/module_calls.py" "$ROOT/build/obj"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "${lines[-1]}" == "0 cycle(s) among "* ]]
}

@test "only the fork sequence registers fork handlers (preload/start/fork_sequence.c)" {
    [ -d "$ROOT/build/obj/preload" ] || skip "library objects not built"
    run "$PY" "$ROOT/tests/module_calls.py" "$ROOT/build/obj" --who-calls atfork_register
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$output" = preload/start/fork_sequence ]
}

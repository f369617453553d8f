#!/usr/bin/env bats
# shellcheck shell=bash
# variants: glibc musl
# Never harm the host: each test reproduces a way proflink once changed what a program saw (a
# file's mode, a seccomp kill, a multi-threaded fork child, a hang, a flushed file, files left
# behind), and runs it with and without the library: the results must be the same.
load helpers

setup() {
    setup_sockdir
    PIDS=()
}

teardown() {
    stop_pids "${PIDS[@]}"
    rm -rf "$SOCKDIR"
}

# ---- a failed exec and the program's umask ----------------------------------------------------

@test "a failed exec in one thread never changes the modes of files another thread creates" {
    local files=$BATS_TEST_TMPDIR/files
    mkdir "$files"
    run "$HELPERS/target_exec_umask" "$files" 2000
    echo "without: $output"
    [[ "$output" == *" bad=0 umask=022 socket=none" ]]
    # each failed exec recreates the socket (README: fork, exec) while the other thread runs
    run env LD_PRELOAD="$LIB" "$HELPERS/target_exec_umask" "$files" 2000
    echo "with: $output"
    [ "$status" -eq 0 ]
    [[ "$output" == *" bad=0 umask=022 socket=0600" ]]
}

@test "a umask that takes the owner's bits still gives a 0600 socket, and stays the program's" {
    local files=$BATS_TEST_TMPDIR/files
    mkdir "$files"
    TARGET_UMASK=0277 run env LD_PRELOAD="$LIB" "$HELPERS/target_exec_umask" "$files" 50
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *" bad=0 umask=277 socket=0600" ]]
    # nothing of the private directory it was made in is left
    [ -z "$(find "$SOCKDIR" -mindepth 1 -name '.*')" ]
}

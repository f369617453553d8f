#!/usr/bin/env bats
# variants: glibc musl
# shellcheck shell=bash
# A fork child has a socket file of its own; one killed by a signal cannot remove it, so its
# parent does when it reaps it (hooks/children.c), whichever way it reaps: each libc call, with
# or without a status or siginfo pointer, the raw syscall(SYS_wait4 / SYS_waitid), the forms
# that name no child (wait, waitpid(-1), wait3, waitid(P_ALL): the child is the one the kernel
# returned), a parent that never waits (SIGCHLD ignored: the file goes at its next fork), and a
# child that switched to another user (a server's worker) first.
load helpers

# every way a program can reap the child (target_reap's FORMs)
FORMS=(wait waitpid-any waitpid wait3 wait4 syscall-wait4 waitid-all waitid-pid syscall-waitid ignored)

setup() {
    setup_sockdir
    # a directory like /tmp (sticky, everybody may write), so that a child running as another
    # user can make files there as it could in /tmp
    chmod 1777 "$SOCKDIR"
}

teardown() {
    rm -rf "$SOCKDIR"
}

# reap_all ARGS... — target_reap FORM ARGS for every FORM and both pointer choices: one line
# "FORM POINTERS: output" each.
reap_all() {
    local f ptr out
    for f in "${FORMS[@]}"; do
        for ptr in with null; do
            out=$(LD_PRELOAD=$LIB "$HELPERS/target_reap" "$f" "$ptr" "$@" 2>&1) || out="$out (exit $?)"
            echo "$f $ptr: $out"
        done
    done
}

@test "a fork child killed by SIGKILL leaves no socket file, whichever way its parent reaps it" {
    run reap_all
    echo "$output"
    [ "$status" -eq 0 ]
    [ "${#lines[@]}" -eq $((2 * ${#FORMS[@]})) ]
    # each child had its file (made by proflink, the parent's owner), the call returned it with
    # its status, and its file was gone once the call returned
    run grep -cE ': before=1 owner=[0-9]+ reaped=1 status=(ok|-) after=0$' <<<"$output"
    [ "$output" -eq $((2 * ${#FORMS[@]})) ]
    [ -z "$(find "$SOCKDIR" -name 'proflink-*')" ]
}

@test "a fork child that switched to another user (uid 65534) leaves no socket file, whichever way it is reaped" {
    [ "$(id -u)" -eq 0 ] || skip "needs root: the child switches to uid 65534"
    run reap_all nobody
    echo "$output"
    [ "$status" -eq 0 ]
    [ "${#lines[@]}" -eq $((2 * ${#FORMS[@]})) ]
    # the file was the child's user's when it died: the parent, root, removed it all the same
    run grep -cE ': before=1 owner=65534 reaped=1 status=(ok|-) after=0$' <<<"$output"
    [ "$output" -eq $((2 * ${#FORMS[@]})) ]
    [ -z "$(find "$SOCKDIR" -name 'proflink-*')" ]
}

@test "a look-alike socket put under a reaped child's name (not the file it bound) is left alone" {
    [ "$(id -u)" -eq 0 ] || skip "needs root: the child switches to uid 65534"
    # the child, as uid 65534, replaces its file by another socket nobody is bound to: the
    # parent removes the file its child bound, never another one of that user's
    run env LD_PRELOAD="$LIB" "$HELPERS/target_reap" waitpid-any impostor nobody
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$output" = "before=1 owner=65534 reaped=1 status=ok after=1" ]
    # nor at the parent's exit
    [ "$(find "$SOCKDIR" -name 'proflink-*' -type s -user 65534 | wc -l)" -eq 1 ]
}

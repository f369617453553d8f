#!/usr/bin/env bats
# variants: glibc musl
# The executable's path that PROFLINK_INCLUDE/EXCLUDE match and the default service name is made
# of (preload/config/exe_path.c): taken from the name the program was executed by where that is
# the same file and holds no link, else from the file /proc/self/maps shows at the entry point,
# with no system call the dynamic loader does not make; it must always be what /proc/PID/exe
# says, through links to directories and to files, "." and "..", for scripts (their
# interpreter) and for what cannot be resolved (a loop, an unreadable program).
# modules: preload/config/exe_path.c
load helpers

CHECK=$ROOT/build/tests/exe_path_check

setup() {
    [ -x "$CHECK" ] || skip "build/tests/exe_path_check is not built (make test-helpers)"
    D=$(mktemp -d)
    mkdir -p "$D/real/bin"
    cp "$HELPERS/target_threads" "$D/real/bin/prog"
    ln -s real "$D/dirlink"                 # a relative link to a directory
    ln -s "$D/real/bin/prog" "$D/abslink"   # an absolute link to the file
    ln -s ../real/bin/prog "$D/real/rel"    # a relative link climbing up
    ln -s "$D/loop2" "$D/loop1"
    ln -s "$D/loop1" "$D/loop2"
    printf '#!/bin/sh\n:\n' >"$D/script"
    chmod +x "$D/script"
    mkfifo "$D/fifo"                        # a name that became a FIFO since the exec
    cp "$HELPERS/target_threads" "$D/unreadable"
    chmod 0711 "$D/unreadable"
}
teardown() { rm -rf "$D"; }

@test "exe path: names resolve as the kernel resolves them, ELF programs only; through a link, the kernel names it" {
    libc_independent
    run "$CHECK" "$D/dirlink/bin/prog" "$D/abslink" "$D/real/rel" "$D/real/bin/../bin/./prog" \
        "$D/real//bin/prog" /bin/sh
    echo "$output"
    [ "$status" -eq 0 ]
    local real name
    real=$(readlink -f "$D/real/bin/prog")
    # a link's target takes readlink, a call the dynamic loader never makes: left to the kernel
    [ "${lines[0]}" = "$D/dirlink/bin/prog -> proc" ]
    [ "${lines[1]}" = "$D/abslink -> proc" ]
    [ "${lines[2]}" = "$D/real/rel -> proc" ]
    [ "${lines[3]}" = "$D/real/bin/../bin/./prog -> $real" ]
    [ "${lines[4]}" = "$D/real//bin/prog -> $real" ]
    if [ -L /bin ] || [ -L /bin/sh ]; then
        [ "${lines[5]}" = "/bin/sh -> proc" ]
    else
        [ "${lines[5]}" = "/bin/sh -> /bin/sh" ]
    fi
    # and what the kernel says (the file mapped at the entry point) is /proc/PID/exe's path
    cp "$CHECK" "$D/real/bin/check"
    ln -s "$D/real/bin/check" "$D/checklink"
    ln -s ../real/bin/check "$D/real/relcheck"
    real=$(readlink -f "$D/real/bin/check")
    for name in "$D/dirlink/bin/check" "$D/checklink" "$D/real/relcheck" "$D/real/bin/../bin/check"; do
        run "$name" --self
        echo "$name: $output"
        [ "$output" = "$real" ]
    done
    run bash -c 'cd "$1/real" && exec ./bin/check --self' - "$D" # a relative name
    [ "$output" = "$real" ]
}

@test "exe path: what it cannot vouch for is left to /proc/self/exe" {
    libc_independent
    # (timeout: opening a FIFO to read its first bytes would wait for a writer)
    run timeout 10 "$CHECK" "$D/script" "$D/loop1" "$D/missing" relative/prog /etc/passwd \
        "$D/real/bin" "$D/fifo"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "${lines[0]}" = "$D/script -> proc" ]       # a script: its exe is the interpreter
    [ "${lines[1]}" = "$D/loop1 -> proc" ]        # a link loop
    [ "${lines[2]}" = "$D/missing -> proc" ]
    [ "${lines[3]}" = "relative/prog -> proc" ]   # not absolute
    [ "${lines[4]}" = "/etc/passwd -> proc" ]     # not a program
    [ "${lines[5]}" = "$D/real/bin -> proc" ]     # a directory
    [ "${lines[6]}" = "$D/fifo -> proc" ]         # not a regular file, and never waited on
}

@test "exe path: an executable the process cannot read is left to /proc/self/exe" {
    libc_independent
    # root reads any file: the check needs an unprivileged user
    [ "$(id -u)" = 0 ] || skip "needs root to run the check as another user"
    chmod 0755 "$D" "$D/real" "$D/real/bin"
    cp "$CHECK" "$D/check"
    chmod 0755 "$D/check"
    run setpriv --reuid=65534 --regid=65534 --clear-groups "$D/check" "$D/unreadable" "$D/real/bin/prog"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "${lines[0]}" = "$D/unreadable -> proc" ]
    [ "${lines[1]}" = "$D/real/bin/prog -> $(readlink -f "$D/real/bin/prog")" ]
}

# selected_as NAME INCLUDE ARGS... — runs NAME under the library with PROFLINK_INCLUDE and info
# logging; prints the path its "not selected" line names (empty when it was selected).
selected_as() {
    local name=$1 include=$2
    shift 2
    PROFLINK_LOG=info PROFLINK_INCLUDE=$include LD_PRELOAD=$LIB ${EMULATOR:+"$EMULATOR"} \
        "$name" "$@" 2>&1 >/dev/null | sed -n 's/^proflink: inactive: \(.*\) is not selected.*/\1/p'
}

@test "selection: a program started through links is matched by the path /proc names" {
    local real out
    real=$(readlink -f "$D/real/bin/prog")
    out=$(selected_as "$D/dirlink/bin/prog" '/nothing' 1 0)
    [ "$out" = "$real" ]
    # the real path selects it, the link's does not
    out=$(selected_as "$D/dirlink/bin/prog" "$real" 1 0)
    [ -z "$out" ]
    out=$(selected_as "$D/abslink" "$D/abslink" 1 0)
    [ "$out" = "$real" ]
}

@test "selection: a script is matched by its interpreter, as /proc names it" {
    [ "$LIBC" = glibc ] || skip "the script's interpreter (/bin/sh) is a glibc program"
    local out
    out=$(selected_as "$D/script" '*/script')
    [ "$out" = "$(readlink -f /bin/sh)" ]
}

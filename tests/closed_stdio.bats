#!/usr/bin/env bats
# variants: glibc musl
# A program started with descriptors 0-2 closed: proflink's descriptors (sockets, FIFO, memfd,
# files) stay at 3 and above, and its log never writes into a descriptor that is not the stderr
# the program was given. Seen from outside: the program's own files hold exactly what it wrote.
# modules: preload/leaves/fd_safe.c preload/leaves/log.c
load message_helpers

setup() {
    setup_sockdir
    D=$BATS_TEST_TMPDIR/data
    mkdir "$D"
    TARGET_PID=
}
teardown() {
    exec 7<&-
    [ -z "$TARGET_PID" ] || { kill "$TARGET_PID" 2>/dev/null; wait "$TARGET_PID" 2>/dev/null; }
    rm -rf "$SOCKDIR"
    return 0
}

@test "started with fds 0-2 closed: the program's stdout and data files get only its own bytes" {
    # PROFLINK_FIFO starts the reader at the program's first wait (its threads, FIFO); info level makes it log
    # the registration sent below, after the program has put its data file on fd 2
    mkfifo -m 600 "$BATS_TEST_TMPDIR/records.fifo"
    exec 7<>"$BATS_TEST_TMPDIR/records.fifo" # a reader all along (read-write: never blocks)
    (
        exec 0<&- 1>&- 2>&-
        exec env LD_PRELOAD="$PRELOAD" PROFLINK_LOG=info PROFLINK_FIFO="$BATS_TEST_TMPDIR/records.fifo" \
            "$HELPERS/target_closed_stdio" "$D" 20
    ) &
    TARGET_PID=$!
    for _ in $(seq 100); do [ -e "$D/ready" ] && break; sleep 0.05; done
    [ -e "$D/ready" ]
    # every descriptor proflink holds is above stdio, and 0-2 are the program's files
    for fd in 0 1 2; do
        [ "$(readlink "/proc/$TARGET_PID/fd/$fd")" = "$D/f$fd" ]
    done
    # shellcheck disable=SC2034 # read by send (message_helpers.bash)
    SOCK=$(socket_of "$TARGET_PID")
    send reg 40 # the reader logs it (info) and writes its record
    read -r -t 10 record <&7
    [[ "$record" == *'"type":"registration"'* ]]
    exec 7<&-
    touch "$D/go"
    for _ in $(seq 100); do kill -0 "$TARGET_PID" 2>/dev/null || break; sleep 0.05; done
    wait "$TARGET_PID"
    TARGET_PID=
    [ "$(cat "$D/f0")" = "$(printf 'f0 opened as fd 0\nend f0')" ]
    [ "$(cat "$D/f1")" = "$(printf 'f1 opened as fd 1\nstdout line\nend f1')" ]
    [ "$(cat "$D/f2")" = "$(printf 'f2 opened as fd 2\nend f2')" ]
}

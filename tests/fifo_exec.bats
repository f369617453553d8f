#!/usr/bin/env bats
# PROFLINK_FIFO across exec chains (sh -c 'exec …', shims, entrypoint scripts): the process keeps
# its pid and gets a new image, whose proflink opens the FIFO again. proflink-fifo-cat keeps
# reading through it (a plain reader sees end of file when the old image's write end closes),
# and a shell's PATH search, whose first execve attempts fail, prints no false failed-exec warning.
# TARGET_PID and SOCK are read by send() (message_helpers.bash)
# shellcheck disable=SC2034
# modules: preload/messages/fifo.c hooks/exec.c
load message_helpers

setup() {
    setup_sockdir
    FIFO=$BATS_TEST_TMPDIR/records.fifo
    READ=$BATS_TEST_TMPDIR/read.jsonl
    CAT_PID='' CHAIN_PID=''
}

teardown() {
    local p
    for p in $CHAIN_PID $CAT_PID; do kill "$p" 2>/dev/null || :; done
    for p in $CHAIN_PID $CAT_PID; do wait "$p" 2>/dev/null || :; done
    rm -rf "$SOCKDIR"
}

# wait_records N: until the consumer has written N lines (10 s)
wait_records() {

    for _ in $(seq 200); do
        [ "$(wc -l <"$READ" 2>/dev/null || echo 0)" -ge "$1" ] && return 0
        sleep 0.05
    done
    echo "wanted $1 records, read:" >&2
    cat "$READ" >&2
    return 1
}

@test "proflink-fifo-cat reads on across the writer's exec; a PATH search prints no failed-exec warning" {
    libc_independent
    command -v dash >/dev/null || skip "dash is not installed (its PATH search is what is tested)"
    "$ROOT/scripts/proflink-fifo-cat" "$FIFO" >"$READ" 3>&- &
    CAT_PID=$!

    for _ in $(seq 100); do [ -p "$FIFO" ] && break; sleep 0.05; done
    [ "$(stat -c %a "$FIFO")" = 600 ]
    mkfifo "$BATS_TEST_TMPDIR/go"
    # dash searches PATH itself: execve in the missing directory fails first, then python3 runs.
    # The new image waits in select(): proflink's threads start at a program's first wait or
    # thread (deliverer_lazy.h), never in a single-threaded program that did neither, so that is
    # when it writes records. The shell image opens the FIFO at start all the same, and closes
    # it when it execs: a plain reader sees end of file there.
    # shellcheck disable=SC2016 # expanded by the shell under test
    PATH=$BATS_TEST_TMPDIR/no-such-dir:$PATH LD_PRELOAD=$LIB PROFLINK_FIFO=$FIFO \
        dash -c 'read -r _ <"$0"; exec /usr/bin/python3 -c "import select; select.select([], [], [], 60)"' \
        "$BATS_TEST_TMPDIR/go" >"$BATS_TEST_TMPDIR/chain.out" 2>"$BATS_TEST_TMPDIR/chain.err" 3>&- &
    CHAIN_PID=$!
    TARGET_PID=$CHAIN_PID # send() aims at it
    # the shell image's proflink has started (and opened the FIFO) once its socket is there
    SOCK=$(socket_of "$CHAIN_PID")
    # the shell execs: the old image's socket goes, the new one gets its own
    echo go >"$BATS_TEST_TMPDIR/go"
    local py
    py=$(readlink -f /usr/bin/python3)
    for _ in $(seq 200); do
        [ "$(readlink "/proc/$CHAIN_PID/exe")" = "$py" ] && [ ! -e "$SOCK" ] && break
        sleep 0.05
    done
    [ "$(readlink "/proc/$CHAIN_PID/exe")" = "$py" ]
    SOCK=$(socket_of "$CHAIN_PID")
    send reg 2500
    wait_records 1
    kill -0 "$CAT_PID"
    grep -q '2500' "$READ"
    cat "$BATS_TEST_TMPDIR/chain.err"
    refute grep -q 'failed exec' "$BATS_TEST_TMPDIR/chain.err"
}

@test "proflink-fifo-cat: refuses a path that is not a FIFO; no argument is a usage error" {
    echo x >"$BATS_TEST_TMPDIR/plain"
    run "$ROOT/scripts/proflink-fifo-cat" "$BATS_TEST_TMPDIR/plain"
    [ "$status" -eq 1 ]
    [[ "$output" == *"is not a FIFO"* ]]
    run "$ROOT/scripts/proflink-fifo-cat"
    [ "$status" -eq 2 ]
}

# message_helpers.bash — for the suites of the profiler-message side (messages, deferral, fifo):
# a target program driven line by line (tests/helpers/api_message_target.c) and a sender that
# talks to its socket the way the profiler does (tests/helpers/send_datagrams.c).
# Variables here are used by the suites that load this file.
# shellcheck disable=SC2034
load helpers

SENDER=$ROOT/build/tests/send_datagrams
# PROFLINK_TEST_PRELOAD replaces the preload list, e.g. to run these suites against a
# sanitizer build: "$(gcc -print-file-name=libasan.so) /path/to/asan/build/elastic-….so"
PRELOAD=${PROFLINK_TEST_PRELOAD:-$LIB}
TRACE=0af7651916cd43dd8448eb211c80319c
TXN=b7ad6b7169203331
ID_A=60b420bb3851d9d47acb933dbe70399b # YLQguzhR2dR6y5M9vnA5mw (the spec's example)
ID_B=4c9326bb9805fa8f85882c12eae724ce # TJMmu5gF-o-FiCwS6uckzg
B64_A=YLQguzhR2dR6y5M9vnA5mw
B64_B=TJMmu5gF-o-FiCwS6uckzg

# start_msg_target [VAR=VALUE…] — api_message_target under the library, with the given
# environment; commands go through fd 8 (`cmd`; bats owns fd 3), output to $OUT and $ERR.
# Sets TARGET_PID and SOCK (its socket path).
start_msg_target() {
    [ -n "${SOCKDIR:-}" ] || setup_sockdir
    OUT=$BATS_TEST_TMPDIR/target.out
    ERR=$BATS_TEST_TMPDIR/target.err
    rm -f "$BATS_TEST_TMPDIR/cmd"
    mkfifo "$BATS_TEST_TMPDIR/cmd"
    env "$@" LD_PRELOAD="$PRELOAD" ${EMULATOR:+"$EMULATOR"} "$HELPERS/api_message_target" <"$BATS_TEST_TMPDIR/cmd" \
        >"$OUT" 2>"$ERR" &
    TARGET_PID=$!
    exec 8>"$BATS_TEST_TMPDIR/cmd"
    wait_for_line "$OUT" '^ready pid='
    SOCK=
    [[ " $* " == *" ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED=false "* ]] ||
        SOCK=$(socket_of "$TARGET_PID")
    # a FIFO's records start at the program's first wait for work or thread (deliverer_lazy.h):
    # the target waits once, as the server it stands for would
    if [[ " $* " == *" PROFLINK_FIFO="* ]]; then
        cmd poll
        wait_for_line "$OUT" '^polled$'
    fi
}

# api_start — a first message-side API call (proflink_samples_delay_ms), which starts the reader
# thread (preload/delivery/deliverer_lazy.h); returns once it answered.
api_start() {
    local before
    before=$(lines '^delay ')
    cmd delay
    wait_lines '^delay ' $((before + 1))
}

# socket_of PID — the socket file of PID in $SOCKDIR (waits for it, 5 s).
socket_of() {
    local i f
    for i in $(seq 100); do
        f=$(compgen -G "$SOCKDIR/proflink-$1-*.sock" | head -1)
        [ -n "$f" ] && { echo "$f"; return 0; }
        sleep 0.05
    done
    echo "no socket for pid $1 in $SOCKDIR" >&2
    return 1
}

cmd() { echo "$*" >&8; }

# send [--drop] [--minor N] COMMAND ARGS… — send_datagrams to the target (see the helper).
send() {
    local opts=()
    while [[ "${1:-}" == --* ]]; do
        opts+=("$1")
        [ "$1" = --minor ] && { opts+=("$2"); shift; }
        shift
    done
    "$SENDER" "${opts[@]}" "$TARGET_PID" "$SOCK" "$@" >/dev/null
}

# lines PATTERN — how many output lines match.
lines() { grep -cE "$1" "$OUT" || true; }

# wait_lines PATTERN N [TENTHS] — until at least N lines match (default 10 s).
wait_lines() {
    local i
    for i in $(seq "${3:-100}"); do
        [ "$(lines "$1")" -ge "$2" ] && return 0
        sleep 0.1
    done
    echo "expected $2 lines matching '$1', got $(lines "$1"):" >&2
    tail -20 "$OUT" >&2
    return 1
}

# stats — asks for proflink_get_stats and leaves the answer in $STATS (key=value words).
stats() {
    local before
    before=$(lines '^stats ')
    cmd stats
    wait_lines '^stats ' $((before + 1))
    STATS=$(grep -E '^stats ' "$OUT" | tail -1)
}

# stat_val NAME — a value from the last `stats`.
stat_val() { echo "$STATS" | tr ' ' '\n' | sed -n "s/^$1=//p"; }

# wait_stat NAME VALUE — until the counter reaches VALUE (10 s).
wait_stat() {
    local i
    for i in $(seq 100); do
        stats
        [ "$(stat_val "$1")" -ge "$2" ] && return 0
        sleep 0.1
    done
    echo "$1 never reached $2: $STATS" >&2
    return 1
}

# The id of proflink's thread named $2 (proflink-reader by default), found by name.
reader_tid() {
    local t
    for t in /proc/"$1"/task/*; do
        [ "$(cat "$t/comm" 2>/dev/null)" = "${2:-proflink-reader}" ] && { basename "$t"; return 0; }
    done
    return 1
}

# stop_msg_target — EOF on its commands; it must exit 0 by itself (5 s), else it is killed.
stop_msg_target() {
    [ -n "${TARGET_PID:-}" ] || return 0
    exec 8>&- 2>/dev/null || true
    local i
    for _ in $(seq 50); do
        kill -0 "$TARGET_PID" 2>/dev/null || break
        sleep 0.1
    done
    kill -9 "$TARGET_PID" 2>/dev/null || true
    TARGET_STATUS=0
    wait "$TARGET_PID" || TARGET_STATUS=$?
    TARGET_PID=
}

msg_teardown() {
    stop_msg_target
    [ -n "${SOCKDIR:-}" ] && rm -rf "$SOCKDIR"
    return 0
}

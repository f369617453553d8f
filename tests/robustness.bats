#!/usr/bin/env bats
# variants: glibc musl
# Never breaks the host: whatever the environment or the machine does to proflink, the program
# prints the same, exits the same, and proflink says at most one line about it.
# modules: preload/config/config.c preload/leaves/log.c preload/publish/socket.c
# modules: hooks/pthread_create.c preload/context/thread_records.c preload/start/start.c
load helpers

setup() { setup_sockdir; }
teardown() { rm -rf "$SOCKDIR"; }

# same_as_without CMD… — runs CMD with and without the library; stdout and status must match,
# and the library may add at most $MAX_LINES (default 1) "proflink:" lines to stderr.
same_as_without() {
    local plain_out plain_rc pre_out pre_rc
    plain_out=$("$@" 2>/dev/null) && plain_rc=0 || plain_rc=$?
    pre_out=$(LD_PRELOAD=$LIB "$@" 2>"$BATS_TEST_TMPDIR/err") && pre_rc=0 || pre_rc=$?
    if [ "$plain_out" != "$pre_out" ] || [ "$plain_rc" != "$pre_rc" ]; then
        echo "differs: [$plain_rc] $plain_out  vs  [$pre_rc] $pre_out" >&2
        return 1
    fi
    local n
    n=$(grep -c '^proflink:' "$BATS_TEST_TMPDIR/err" || true)
    if [ "$n" -gt "${MAX_LINES:-1}" ]; then
        echo "too many proflink lines ($n):" >&2
        cat "$BATS_TEST_TMPDIR/err" >&2
        return 1
    fi
    if grep -v '^proflink:' "$BATS_TEST_TMPDIR/err" >&2; then return 1; fi
}

# the program of these tests, as a word list (expanded unquoted on purpose)
prog() { echo "$HELPERS/target_threads" 3 0.05; }

@test "garbage, empty and oversized values of every variable change nothing but a warning" {
    big=$(head -c 20000 /dev/zero | tr '\0' x)
    vars=(ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED
          ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_SOCKET_DIR
          ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_BUFFER_SIZE
          OTEL_SERVICE_NAME OTEL_RESOURCE_ATTRIBUTES ELASTIC_APM_SERVICE_NAME
          ELASTIC_APM_ENVIRONMENT TRACEPARENT PROFLINK_FIFO PROFLINK_INHERIT
          PROFLINK_OTEL_CONTEXT PROFLINK_LOG PROFLINK_INCLUDE PROFLINK_EXCLUDE)
    values=("" "garbage" "$big" "-1" "99999999999999999999999" "=,,%zz,a=%,=b" $'\xff\xfe' "[" "../../..")
    for v in "${vars[@]}"; do
        for x in "${values[@]}"; do
            # the FIFO and socket-dir values must not create files outside the test dir
            case "$v:$x" in PROFLINK_FIFO:*|*SOCKET_DIR:garbage|*SOCKET_DIR:-1) x="$SOCKDIR/sub/$x" ;; esac
            env "$v=$x" MAX_LINES=2 bash -c "$(declare -f same_as_without); LIB='$LIB' BATS_TEST_TMPDIR='$BATS_TEST_TMPDIR' same_as_without $(prog)" ||
                { echo "with $v=${x:0:40}" >&2; return 1; }
        done
    done
}

@test "socket dir missing, a file, a symlink, or too long: warn and fall back to the default" {
    ln -s /tmp "$SOCKDIR/link"
    touch "$SOCKDIR/file"
    long=$SOCKDIR/$(head -c 80 /dev/zero | tr '\0' d)
    mkdir -p "$long"
    for d in "$SOCKDIR/missing" "$SOCKDIR/file" "$SOCKDIR/link" "$long" relative/dir; do
        ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_SOCKET_DIR=$d \
            LD_PRELOAD=$LIB "$HELPERS/target_threads" 1 30 >/dev/null 2>"$BATS_TEST_TMPDIR/err" &
        pid=$!
        # fell back to /tmp (waits for the file, however loaded the machine)
        for _ in $(seq 200); do
            if compgen -G "/tmp/proflink-$pid-*.sock" >/dev/null; then break; fi
            sleep 0.05
        done
        ls /tmp/proflink-"$pid"-*.sock
        stop_pids "$pid"
        grep -q "proflink: socket dir $d" "$BATS_TEST_TMPDIR/err"
        [ "$(grep -c proflink: "$BATS_TEST_TMPDIR/err")" = 1 ]
    done
}

@test "an unwritable socket dir for an unprivileged program: fall back, same output" {
    command -v setpriv >/dev/null || skip "setpriv (util-linux) is not installed"
    chmod 0755 "$SOCKDIR"
    cp "$HELPERS/target_threads" "$SOCKDIR/t"
    chmod 0755 "$SOCKDIR/t"
    copy_for_all "$SOCKDIR" "$LIB"
    run setpriv --reuid=65534 --regid=65534 --clear-groups env \
        ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_SOCKET_DIR="$SOCKDIR" LD_PRELOAD="$COPY" "$SOCKDIR/t" 1 0.1
    [ "$status" = 0 ]
    [[ "$output" == *"not writable"* ]]
    [[ "$output" == *done* ]]
    refute compgen -G "$SOCKDIR/*proflink*"
}

@test "no file descriptor for the socket: one error line, program unchanged" {
    # shellcheck disable=SC2046 # $(prog) is a word list
    run "$ROOT/build/tests/fail_syscall" socket EMFILE env LD_PRELOAD="$LIB" $(prog)
    echo "$output"
    [ "$status" = 0 ]
    [ "$(echo "$output" | grep -c '^proflink:')" = 1 ]
    [[ "$output" == *"correlation disabled"* ]]
    [[ "$output" == *done* ]]
    [ -z "$(ls "$SOCKDIR")" ]
}

@test "malloc failing inside proflink: the program runs as without it" {
    [ "$VARIANT" = glibc ] || skip "the malloc shim uses glibc's __libc_malloc"
    # shellcheck disable=SC2046 # $(prog) is a word list
    LIB="$ROOT/build/tests/fixtures/libfailmalloc.so $LIB" same_as_without $(prog)
    [ -z "$(ls "$SOCKDIR")" ]
}

@test "disabled: the same program, the same output, nothing created" {
    # shellcheck disable=SC2046 # $(prog) is a word list
    ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED=false MAX_LINES=0 same_as_without $(prog)
    [ -z "$(ls "$SOCKDIR")" ]
}

@test "300 short-lived threads, a third ending in pthread_exit: no leak, no invalid access (valgrind)" {
    [ "$VARIANT" = glibc ] || skip "valgrind runs the glibc variant"
    command -v valgrind >/dev/null || skip "valgrind is not installed"
    # a record leaked per thread would be 300 definitely lost blocks: a few hundred threads
    # prove it as well as 10,000, in seconds instead of minutes
    run env LD_PRELOAD="$LIB" valgrind --error-exitcode=99 --leak-check=full \
        --errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect -q \
        "$HELPERS/target_churn" 300 16
    echo "$output" | tail -30
    [ "$status" = 0 ]
    [[ "$output" == *"churned 300"* ]]
}

@test "10,000 short-lived threads run to the end with the same output" {
    run env LD_PRELOAD="$LIB" "$HELPERS/target_churn" 10000 16
    [ "$status" = 0 ]
    [ "$output" = "churned 10000" ]
}

# fdreuse_run — target_fdreuse under the library (FIFO delivery, so the intake runs from the
# program's first wait); sends one datagram to proflink's socket, then 20 to the program's own,
# on the number proflink's socket had; leaves its output in out and err
fdreuse_run() {
    rm -f "$SOCKDIR/fifo" "$SOCKDIR/own.sock"
    mkfifo -m 600 "$SOCKDIR/fifo"
    cat "$SOCKDIR/fifo" >/dev/null & # a consumer: the reader runs from the program's first wait
    cat_pid=$!
    # started with nothing open above 2 (bats keeps some), so that proflink's socket is fd 3
    (
        for fd in /proc/"$BASHPID"/fd/*; do fd=${fd##*/}; [ "$fd" -le 2 ] || eval "exec $fd>&-"; done
        exec env PROFLINK_FIFO="$SOCKDIR/fifo" LD_PRELOAD="$LIB" \
            "$HELPERS/target_fdreuse" "$SOCKDIR/own.sock" 20
    ) >"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err" &
    pid=$!
    ours=$(for _ in $(seq 50); do ls "$SOCKDIR"/proflink-*.sock 2>/dev/null && break; sleep 0.05; done)
    [ -n "$ours" ]
    wait_for_line "$BATS_TEST_TMPDIR/out" '^fd '
    grep -qx 'fd 3' "$BATS_TEST_TMPDIR/out" # the number proflink's socket had
    # one datagram wakes the intake blocked on its socket; then 20 for the program, spaced so
    # that an intake that went on receiving on the reused number would take some of them
    "$PY" - "$ours" "$SOCKDIR/own.sock" <<'PY'
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
try:
    s.sendto(bytes(46), sys.argv[1])
except OSError:
    pass
time.sleep(0.3)
for i in range(20):
    s.sendto(bytes(46), sys.argv[2])
    time.sleep(0.02)
PY
    wait "$pid"
    kill "$cat_pid" 2>/dev/null || true
    cat "$BATS_TEST_TMPDIR/out" "$BATS_TEST_TMPDIR/err"
}

@test "a program that closes our descriptors and reuses the numbers keeps all its data" {
    # the intake shares the program's descriptor table (a table of its own would be a copy of
    # the program's files) and checks the number before each receive: it stops at the reuse
    # and says so, and the program's own socket on that number gets every datagram
    fdreuse_run
    grep -qx 'got 20' "$BATS_TEST_TMPDIR/out"
    grep -q 'profiler socket: Bad file descriptor' "$BATS_TEST_TMPDIR/err"
}

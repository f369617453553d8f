# helpers.bash — shared by every suite: where the built artifacts are, how to start a program
# under the library and read it from outside with proflink-inspect (as the profiler would).
# Variables here are used by the suites that load this file.
# shellcheck disable=SC2034
ROOT=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
ARCH=$(uname -m)
VARIANT=${PROFLINK_VARIANT:-glibc}
# EMULATOR: what runs a program of the variant's architecture ("" for the machine's own; for
# aarch64, qemu-user through tests/fixtures/qemu_exec.c). LIBC: the variant's C library.
EMULATOR=
# musl has no thread list the inspector can read without stopping threads (proflink-inspect --stop)
INSPECT_STOP=()
case $VARIANT in
    musl)
        LIB=$ROOT/build/musl/elastic-jvmti-linux-proflink-musl-$ARCH.so
        HELPERS=$ROOT/build/tests/musl LIBC=musl INSPECT_STOP=(--stop) ;;
    aarch64-glibc)
        ARCH=aarch64 LIB=$ROOT/build/aarch64/elastic-jvmti-linux-proflink-aarch64.so
        HELPERS=$ROOT/build/aarch64/tests LIBC=glibc EMULATOR=$ROOT/build/tests/fixtures/qemu_exec ;;
    aarch64-musl)
        ARCH=aarch64 LIB=$ROOT/build/aarch64/musl/elastic-jvmti-linux-proflink-musl-aarch64.so
        HELPERS=$ROOT/build/aarch64/tests/musl LIBC=musl EMULATOR=$ROOT/build/tests/fixtures/qemu_exec
        INSPECT_STOP=(--stop) ;;
    *)
        LIB=$ROOT/build/elastic-jvmti-linux-proflink-$ARCH.so
        HELPERS=$ROOT/build/tests LIBC=glibc ;;
esac

# not_emulated REASON — skips a test that cannot hold under qemu-user, saying why
not_emulated() {
    if [ -n "$EMULATOR" ]; then skip "under qemu-user: $1"; fi
}
INSPECT=$ROOT/build/proflink-inspect
SOCKDIR_DEFAULT=/tmp

# libc_independent — first line of a test whose outcome cannot depend on the C library (it runs
# glibc-built helpers, or only parses): it runs in the glibc variant; tests/run.sh does not count
# it in the others.
libc_independent() {
    if [ "$VARIANT" != glibc ]; then skip "libc-independent: covered by the glibc variant"; fi
}

# Each test gets its own socket directory so that suites never see each other's files.
setup_sockdir() {
    SOCKDIR=$(mktemp -d /tmp/plt.XXXXXX)
    export ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_SOCKET_DIR=$SOCKDIR
}

# copy_for_all DIR FILE — COPY: FILE copied into DIR/all (mode 755), for a program that runs as
# another user: the checkout may be out of that user's reach (a clone in root's home, mode 700)
copy_for_all() {
    [ -d "$1/all" ] || mkdir -m 755 "$1/all"
    cp "$2" "$1/all/"
    COPY=$1/all/${2##*/}
    chmod 755 "$COPY"
}

# start_target CMD ARGS… — runs CMD under the library in the background (stdout/stderr to
# $BATS_TEST_TMPDIR/target.out/.err), sets TARGET_PID and waits until the profiler could attach.
start_target() {
    # fd 3 is bats' output: a target that kept it would hold the test open until it exits
    LD_PRELOAD=$LIB "$@" >"$BATS_TEST_TMPDIR/target.out" 2>"$BATS_TEST_TMPDIR/target.err" 3>&- &
    TARGET_PID=$!
    wait_attachable "$TARGET_PID"
}

wait_attachable() {
    local pid=$1 i
    for i in $(seq 100); do
        "$INSPECT" --no-threads "$pid" >/dev/null 2>&1 && return 0
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
    done
    echo "pid $pid never became attachable:" >&2
    "$INSPECT" "$pid" >&2 || true
    return 1
}

# wait_for_line FILE PATTERN [SECONDS] — until FILE has a line matching PATTERN (5 s).
wait_for_line() {
    local i
    for _ in $(seq $((${3:-5} * 20))); do
        grep -qE "$2" "$1" 2>/dev/null && return 0
        sleep 0.05
    done
    echo "no line matching '$2' in $1:" >&2
    cat "$1" >&2 2>/dev/null
    return 1
}

# inspect_threads PID — `run "$INSPECT" PID` until every thread has its record (5 s): a thread
# exists in /proc before it first runs, and installs its record only then. The caller checks
# $status and $output.
inspect_threads() {
    for _ in $(seq 100); do
        run "$INSPECT" "$1"
        # shellcheck disable=SC2154 # output: set by bats' run
        grep -q '^PASS  threads' <<<"$output" && return 0
        sleep 0.05
    done
}

stop_target() {
    [ -n "${TARGET_PID:-}" ] || return 0
    kill "$TARGET_PID" 2>/dev/null || true
    wait "$TARGET_PID" 2>/dev/null || true
    TARGET_PID=
}

# inspect_json PID [options] — proflink-inspect --json, into $BATS_TEST_TMPDIR/inspect.json.
inspect_json() {
    local pid=$1
    shift
    local rc=0
    "$INSPECT" --json "${INSPECT_STOP[@]}" "$@" "$pid" >"$BATS_TEST_TMPDIR/inspect.json" || rc=$?
    json_eval_start
    return "$rc"
}

# Debian's interpreter, not a version manager's shim (a shim costs ~0.2 s a start).
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)

# unique_user TAG — a user name for useradd that no other test, variant or run of the suites
# on this machine uses at the same time (a fixed name collided when two runs shared it)
unique_user() { echo "plt_$1_$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')"; }

# free_port — a TCP port on 127.0.0.1 that the kernel just picked as free (bound to port 0, then
# closed), for a test server to listen on: two runs of a suite on one machine never share one.
# The kernel spreads such picks over its ephemeral range, so it does not hand it out again soon.
free_port() {
    "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# json_eval_start — one tests/json_eval.py server answers this test's json_get queries. Call it
# from the test's own shell (inspect_json does), not from $(…): a subshell's server dies with it.
json_eval_start() {
    if [ -n "${JSON_EVAL_PID:-}" ] && kill -0 "$JSON_EVAL_PID" 2>/dev/null; then return 0; fi
    # without fd 3 (bats' output): a server still running would hold the test open
    coproc JSON_EVAL { exec 3>&- "$PY" "$ROOT/tests/json_eval.py"; }
}

# json_get FILE NAME EXPR — the Python expression EXPR with NAME bound to FILE's JSON; lists,
# dicts, booleans and None print as JSON. Fails (message on stderr) when EXPR raises.
json_get() {
    if [ -z "${JSON_EVAL_PID:-}" ] || ! kill -0 "$JSON_EVAL_PID" 2>/dev/null; then
        "$PY" "$ROOT/tests/json_eval.py" --once "$@"
        return
    fi
    local st v
    printf '%s\0%s\0%s\0' "$1" "$2" "$3" >&"${JSON_EVAL[1]}"
    read -r st <&"${JSON_EVAL[0]}"
    IFS= read -r -d '' v <&"${JSON_EVAL[0]}"
    if [ "$st" != 0 ]; then
        echo "json_get $3: $v" >&2
        return 1
    fi
    printf '%s\n' "$v"
}

# jget EXPR — json_get over the last inspect_json output, bound to `j`.
jget() { json_get "$BATS_TEST_TMPDIR/inspect.json" j "$1"; }

# refute CMD ARGS… — the check fails when CMD succeeds. A bare `! CMD` never fails a bats test
# unless it is the test's last line (errexit ignores negated commands, ShellCheck SC2314).
refute() {
    if "$@"; then
        echo "expected to fail, but succeeded: $*" >&2
        return 1
    fi
}

# every_line FILE SELECT MATCH — every line of FILE that matches SELECT also matches MATCH
# (extended regular expressions); otherwise prints the offending lines and fails.
every_line() {
    local bad
    bad=$(grep -E -- "$2" "$1" | grep -vE -- "$3" || true)
    [ -z "$bad" ] && return 0
    echo "lines matching '$2' that do not match '$3':" >&2
    echo "$bad" | head -20 >&2
    return 1
}

# wait_states PID STATE — until every thread of PID is in STATE ("S (sleeping)", "T (stopped)";
# 10 s): a signal or a wake-up takes effect when the scheduler gets to it, later under load
wait_states() {
    for _ in $(seq 200); do
        if ! grep -h '^State:' /proc/"$1"/task/*/status 2>/dev/null | grep -vqF "$2"; then return 0; fi
        sleep 0.05
    done
    echo "not every thread of $1 is $2:" >&2
    grep -h '^State:' /proc/"$1"/task/*/status >&2
    return 1
}

# stop_pids PID…: kills the background processes a test started (by pid) and reaps them
stop_pids() {
    local p
    for p in "$@"; do kill "$p" 2>/dev/null || true; done
    for p in "$@"; do wait "$p" 2>/dev/null || true; done
}

# nginx_conf DIR USER LISTEN SIZE — an nginx of a master and 2 workers (event loops), everything
# under DIR, its workers running as USER, listening on LISTEN (an address, or unix:PATH), serving
# DIR/www: "big", a sparse file of SIZE that gzip at level 9 keeps a worker on the CPU for
# inside one request's processing (between the read of its head and the next epoll_wait: the
# part of a request a sample can catch), and "small". Each response names its worker
# (X-Worker).
nginx_conf() {
    local d=$1 user=$2 listen=$3 size=$4
    mkdir -p "$d/www" "$d/tmp"
    truncate -s "$size" "$d/www/big"
    echo small >"$d/www/small"
    cat >"$d/nginx.conf" <<NGX
user $user;
worker_processes 2;
daemon off;
master_process on;
pid $d/nginx.pid;
error_log $d/error.log warn;
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path $d/tmp/body; proxy_temp_path $d/tmp/proxy;
    fastcgi_temp_path $d/tmp/fcgi; uwsgi_temp_path $d/tmp/uwsgi; scgi_temp_path $d/tmp/scgi;
    server {
        listen $listen;
        root $d/www;
        sendfile off;
        gzip on; gzip_comp_level 9; gzip_types *; gzip_min_length 0;
        add_header X-Worker \$pid;
    }
}
NGX
}

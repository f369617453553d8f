# helpers.bash — shared by every suite: where the built artifacts are, how to start a program
# under the library and read it from outside with proflink-inspect (as the profiler would).
ROOT=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
ARCH=$(uname -m)
VARIANT=${PROFLINK_VARIANT:-glibc}
INSPECT_STOP=()
if [ "$VARIANT" = musl ]; then
    LIB=$ROOT/build/musl/elastic-jvmti-linux-proflink-musl-$ARCH.so
    HELPERS=$ROOT/build/tests/musl
    INSPECT_STOP=(--stop) # musl has no thread list the inspector can read without stopping threads
else
    LIB=$ROOT/build/elastic-jvmti-linux-proflink-$ARCH.so
    HELPERS=$ROOT/build/tests
fi
INSPECT=$ROOT/build/proflink-inspect
SOCKDIR_DEFAULT=/tmp

# Each test gets its own socket directory so that suites never see each other's files.
setup_sockdir() {
    SOCKDIR=$(mktemp -d /tmp/plt.XXXXXX)
    export ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_SOCKET_DIR=$SOCKDIR
}

# start_target CMD ARGS… — runs CMD under the library in the background (stdout/stderr to
# $BATS_TEST_TMPDIR/target.out/.err), sets TARGET_PID and waits until the profiler could attach.
start_target() {
    LD_PRELOAD=$LIB "$@" >"$BATS_TEST_TMPDIR/target.out" 2>"$BATS_TEST_TMPDIR/target.err" &
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

# wait_for_line FILE PATTERN — until FILE has a line matching PATTERN (5 s).
wait_for_line() {
    local i
    for i in $(seq 100); do
        grep -qE "$2" "$1" 2>/dev/null && return 0
        sleep 0.05
    done
    echo "no line matching '$2' in $1:" >&2
    cat "$1" >&2 2>/dev/null
    return 1
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
    "$INSPECT" --json "${INSPECT_STOP[@]}" "$@" "$pid" >"$BATS_TEST_TMPDIR/inspect.json"
}

# jq-like access with python: jget EXPR, evaluated with `j` bound to the last inspect_json.
jget() {
    python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); v=eval(sys.argv[2]); print(json.dumps(v) if isinstance(v,(dict,list,bool)) or v is None else v)' \
        "$BATS_TEST_TMPDIR/inspect.json" "$1"
}

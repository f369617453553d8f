#!/usr/bin/env bats
# variants: glibc musl
# Statically linked programs: they cannot be preloaded, so they link libproflink.a and call
# proflink_init() first thing in main. Only the OpenTelemetry process context (and the API)
# can serve them: the apmint reader looks for a mapped elastic-jvmti-linux-*.so file and finds
# none. The programs come from tests/static/*.c, built by tests/static.mk.
# modules: hooks/pthread_wrap.c preload/start/start.c
load helpers
bats_require_minimum_version 1.5.0

if [ "$VARIANT" = musl ]; then
    STATIC=$ROOT/build/tests/static/musl
    ARCHIVE=$ROOT/build/musl/libproflink.a
    STATIC_CC=musl-gcc
else
    STATIC=$ROOT/build/tests/static
    ARCHIVE=$ROOT/build/libproflink.a
    STATIC_CC=gcc
fi

TRACE=0af7651916cd43dd8448eb211c80319c
SPAN=b7ad6b7169203331

setup_file() {
    if [ ! -x "$STATIC/static_app" ] || [ ! -x "$STATIC/static_app-wrap" ]; then
        echo "$STATIC/static_app is not built: make test-helpers (tests/static.mk)" >&2
        return 1
    fi
}

setup() { setup_sockdir; }
teardown() { stop_target; rm -rf "$SOCKDIR"; }

start_static() { # PROGRAM ARGS... — started directly: there is nothing to preload
    "$@" >"$BATS_TEST_TMPDIR/target.out" 2>"$BATS_TEST_TMPDIR/target.err" &
    TARGET_PID=$!
    wait_for_line "$BATS_TEST_TMPDIR/target.out" '^ready'
}

@test "the archive links into a static program with no warning, and the result is static" {
    run --separate-stderr "$STATIC_CC" -std=c11 -O1 -static -pthread -I"$ROOT/include" \
        -o "$BATS_TEST_TMPDIR/app" "$ROOT/tests/static/static_app.c" "$ARCHIVE"
    [ "$status" -eq 0 ]
    [ -z "$stderr" ]
    readelf -lW "$BATS_TEST_TMPDIR/app" >"$BATS_TEST_TMPDIR/app.ph"
    refute grep -q INTERP "$BATS_TEST_TMPDIR/app.ph"
    readelf -dW "$BATS_TEST_TMPDIR/app" >"$BATS_TEST_TMPDIR/app.dyn"
    refute grep -q NEEDED "$BATS_TEST_TMPDIR/app.dyn"
}

@test "proflink_init() in main: the OTel process context is published, records via the API" {
    start_static "$STATIC/static_app" 10
    grep -qx 'init 0' "$BATS_TEST_TMPDIR/target.out"
    grep -qx "main 1 $TRACE $SPAN 01" "$BATS_TEST_TMPDIR/target.out"
    grep -qx 'setter 1 11111111111111111111111111111111 3333333333333333 00' "$BATS_TEST_TMPDIR/target.out"
    # no interposition without --wrap: a thread that never called the API has no context
    grep -qx 'plain 0' "$BATS_TEST_TMPDIR/target.out"
    grep -E '(\[anon_shmem:OTEL_CTX\]|\[anon:OTEL_CTX\]|/memfd:OTEL_CTX \(deleted\))$' "/proc/$TARGET_PID/maps"
    run "$INSPECT" --json "$TARGET_PID"
    echo "$output" >"$BATS_TEST_TMPDIR/inspect.json"
    [ "$(jget 'j["otel_process_context"]["found"]')" = true ]
    [ "$(jget 'j["otel_process_context"]["resource"]["service.name"]')" = unknown_service:static_app ]
    [ -z "$(cat "$BATS_TEST_TMPDIR/target.err")" ]
}

@test "the apmint reader cannot see a static program: no elastic-jvmti-linux-*.so is mapped" {
    start_static "$STATIC/static_app" 10
    run "$INSPECT" --json --no-threads "$TARGET_PID"
    [ "$status" -eq 1 ]
    echo "$output" >"$BATS_TEST_TMPDIR/inspect.json"
    [ "$(jget 'j["attachable"]')" = false ]
    [ "$(jget '[c["ok"] for c in j["checks"] if c["name"] == "mapping"][0]')" = false ]
    refute grep -q 'elastic-jvmti-linux-' "/proc/$TARGET_PID/maps"
}

@test "linked with -Wl,--wrap=pthread_create: new threads get records at once, with the creator's context under PROFLINK_INHERIT=1" {
    PROFLINK_INHERIT=1 start_static "$STATIC/static_app-wrap" 10
    grep -qx 'init 0' "$BATS_TEST_TMPDIR/target.out"
    grep -qx "plain 1 $TRACE $SPAN 01" "$BATS_TEST_TMPDIR/target.out"
    grep -qx 'setter 1 11111111111111111111111111111111 3333333333333333 00' "$BATS_TEST_TMPDIR/target.out"
    start_static "$STATIC/static_app-wrap" 10
    grep -qx 'plain 0' "$BATS_TEST_TMPDIR/target.out"
}

@test "disabled or not selected: proflink_init() returns -1 and nothing is created" {
    ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED=false start_static "$STATIC/static_app" 10
    grep -qx 'init -1' "$BATS_TEST_TMPDIR/target.out"
    grep -qx 'main -1' "$BATS_TEST_TMPDIR/target.out"
    refute grep -q OTEL_CTX "/proc/$TARGET_PID/maps"
    [ -z "$(ls -A "$SOCKDIR")" ]
    stop_target
    PROFLINK_EXCLUDE='*/static_app' start_static "$STATIC/static_app" 10
    grep -qx 'init -1' "$BATS_TEST_TMPDIR/target.out"
    refute grep -q OTEL_CTX "/proc/$TARGET_PID/maps"
    [ -z "$(ls -A "$SOCKDIR")" ]
}

@test "a program whose own symbols are named like proflink internals still links and runs" {
    # the archive puts only the contract and proflink_* symbols in the program's namespace
    cat >"$BATS_TEST_TMPDIR/names.c" <<'EOF'
#include <stdio.h>
#include "proflink.h"
int config_load = 1, socket_create = 2, reader_start = 3;
void log_msg(const char *s) { puts(s); }
int hex_decode(void) { return 4; }
int main(void)
{
    int rc = proflink_init();
    log_msg("own log_msg");
    return rc + config_load + socket_create + reader_start + hex_decode() - 10;
}
EOF
    run --separate-stderr "$STATIC_CC" -std=c11 -static -pthread -I"$ROOT/include" \
        -o "$BATS_TEST_TMPDIR/names" "$BATS_TEST_TMPDIR/names.c" "$ARCHIVE"
    echo "$stderr"
    [ "$status" -eq 0 ]
    run "$BATS_TEST_TMPDIR/names"
    [ "$status" -eq 0 ]
    [ "$output" = "own log_msg" ]
}

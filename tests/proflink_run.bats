#!/usr/bin/env bats
# proflink-run: picks the library matching the program's C library (by its ELF interpreter, or
# its #! interpreter's), keeps LD_PRELOAD, runs static and non-ELF programs unchanged with one
# warning, and execs (signals, exit status, no process left behind) as an ENTRYPOINT must.
load helpers
bats_require_minimum_version 1.5.0

RUN=$ROOT/scripts/proflink-run
GLIBC_LIB=$ROOT/build/elastic-jvmti-linux-proflink-$ARCH.so
MUSL_LIB=$ROOT/build/musl/elastic-jvmti-linux-proflink-musl-$ARCH.so

FIX=$ROOT/build/tests/fixtures # built by make (tests/fixtures.mk)

setup() { setup_sockdir; }
teardown() { stop_target; rm -rf "$SOCKDIR"; }

need_musl() { [ -x "$FIX/showenv_musl" ] || skip "musl-gcc is not installed"; }
need_static() { [ -x "$FIX/showenv_static" ] || skip "no static libc (libc.a) to link a static program"; }

# maps_has PID LIB: LIB is mapped in PID
maps_has() { grep -qF " $2" "/proc/$1/maps"; }

@test "--print-lib: a glibc program gets the glibc library, a musl program the musl one" {
    run "$RUN" --print-lib "$ROOT/build/tests/target_threads"
    [ "$status" -eq 0 ]
    [ "$output" = "$GLIBC_LIB" ]
    run "$RUN" --print-lib ls # found on PATH
    [ "$output" = "$GLIBC_LIB" ]
    need_musl
    run "$RUN" --print-lib "$ROOT/build/tests/musl/target_threads"
    [ "$status" -eq 0 ]
    [ "$output" = "$MUSL_LIB" ]
}

@test "a glibc and a musl program started through proflink-run each map their own variant, attachable" {
    "$RUN" "$ROOT/build/tests/target_threads" 2 10 >"$BATS_TEST_TMPDIR/target.out" 2>&1 &
    TARGET_PID=$!
    wait_attachable "$TARGET_PID"
    maps_has "$TARGET_PID" "$GLIBC_LIB"
    refute maps_has "$TARGET_PID" "$MUSL_LIB"
    [ "$(readlink "/proc/$TARGET_PID/exe")" = "$ROOT/build/tests/target_threads" ] # exec'd, no wrapper left
    stop_target
    [ -x "$ROOT/build/tests/musl/target_threads" ] || skip "musl helpers are not built"
    "$RUN" "$ROOT/build/tests/musl/target_threads" 2 10 >"$BATS_TEST_TMPDIR/target.out" 2>&1 &
    TARGET_PID=$!
    wait_attachable "$TARGET_PID"
    maps_has "$TARGET_PID" "$MUSL_LIB"
    refute maps_has "$TARGET_PID" "$GLIBC_LIB"
    inspect_json "$TARGET_PID" --stop # musl: no thread list to read without stopping threads
    [ "$(jget 'j["attachable"]')" = true ]
    [ "$(jget 'sum(1 for t in j["threads"] if t["comm"].startswith("worker-") and t["apm"])')" = 2 ]
}

@test "a static program runs unchanged, with a single warning and no LD_PRELOAD" {
    need_static
    run --separate-stderr env -u LD_PRELOAD SHOWENV_STATUS=3 "$RUN" "$FIX/showenv_static" x
    [ "$status" -eq 3 ]
    [ "$output" = "$(printf 'arg x\nLD_PRELOAD=(unset)')" ]
    # shellcheck disable=SC2154 # set by run --separate-stderr
    [ "${#stderr_lines[@]}" -eq 1 ]
    [[ "${stderr_lines[0]}" == "proflink-run: warning: "*"statically linked"*"running it without proflink" ]]
    run --separate-stderr "$RUN" --print-lib "$FIX/showenv_static"
    [ "$status" -eq 1 ]
    [ -z "$output" ]
    # shellcheck disable=SC2154 # set by run --separate-stderr
    [[ "$stderr" == *"statically linked"* ]]
}

# shellcheck disable=SC2016 # expanded by the script under test
@test "a #! script is judged by its interpreter: sh and env python3 get glibc, a musl interpreter musl" {
    printf '#!/bin/sh\necho "LD_PRELOAD=$LD_PRELOAD"\n' >"$BATS_TEST_TMPDIR/s.sh"
    printf '#!/usr/bin/env python3\nimport os\nprint(os.environ["LD_PRELOAD"])\n' >"$BATS_TEST_TMPDIR/s.py"
    chmod +x "$BATS_TEST_TMPDIR/s.sh" "$BATS_TEST_TMPDIR/s.py"
    run env -u LD_PRELOAD "$RUN" "$BATS_TEST_TMPDIR/s.sh"
    [ "$status" -eq 0 ]
    [ "$output" = "LD_PRELOAD=$GLIBC_LIB" ]
    run env -u LD_PRELOAD "$RUN" "$BATS_TEST_TMPDIR/s.py"
    [ "$status" -eq 0 ]
    [ "$output" = "$GLIBC_LIB" ]
    need_musl
    # interpreter given by path, and through env with options and assignments before it
    printf '#!%s\n' "$FIX/showenv_musl" >"$BATS_TEST_TMPDIR/m1"
    printf '#!/usr/bin/env -i A=1 showenv_musl\n' >"$BATS_TEST_TMPDIR/m2"
    chmod +x "$BATS_TEST_TMPDIR/m1" "$BATS_TEST_TMPDIR/m2"
    run env -u LD_PRELOAD "$RUN" "$BATS_TEST_TMPDIR/m1" y
    [ "$status" -eq 0 ]
    [ "${lines[0]}" = "arg $BATS_TEST_TMPDIR/m1" ]
    [ "${lines[1]}" = "arg y" ]
    [ "${lines[2]}" = "LD_PRELOAD=$MUSL_LIB" ]
    run env PATH="$FIX:$PATH" "$RUN" --print-lib "$BATS_TEST_TMPDIR/m2"
    [ "$output" = "$MUSL_LIB" ]
}

@test "a script run by a static interpreter, and a file that is neither ELF nor script, run unchanged with one warning" {
    need_static
    printf '#!%s\n' "$FIX/showenv_static" >"$BATS_TEST_TMPDIR/st"
    chmod +x "$BATS_TEST_TMPDIR/st"
    run --separate-stderr env -u LD_PRELOAD "$RUN" "$BATS_TEST_TMPDIR/st"
    [ "$status" -eq 0 ]
    [ "${lines[1]}" = "LD_PRELOAD=(unset)" ]
    [ "${#stderr_lines[@]}" -eq 1 ]
    [[ "$stderr" == *"(run by $FIX/showenv_static) is statically linked"* ]]
    printf 'echo plain\n' >"$BATS_TEST_TMPDIR/plain"
    chmod +x "$BATS_TEST_TMPDIR/plain"
    run --separate-stderr "$RUN" --print-lib "$BATS_TEST_TMPDIR/plain"
    [ "$status" -eq 1 ]
    [[ "$stderr" == *"neither an ELF program nor a #! script"* ]]
}

@test "LD_PRELOAD: ours first, the rest kept in order, no duplicate, the other variant dropped" {
    other=$FIX/libother.so
    run env LD_PRELOAD="$other" "$RUN" "$FIX/showenv_glibc"
    [ "${lines[0]}" = "LD_PRELOAD=$GLIBC_LIB:$other" ]
    run env LD_PRELOAD="$GLIBC_LIB $other:$GLIBC_LIB" "$RUN" "$FIX/showenv_glibc"
    [ "${lines[0]}" = "LD_PRELOAD=$GLIBC_LIB:$other" ]
    need_musl
    # the glibc library would stay inactive in a musl program: it is replaced by the musl one
    run env LD_PRELOAD="$GLIBC_LIB:$other" SHOWENV_STATUS=0 "$RUN" "$FIX/showenv_musl"
    [ "$status" -eq 0 ]
    [ "${lines[0]}" = "LD_PRELOAD=$MUSL_LIB:$other" ]
}

@test "exit status and arguments pass through unchanged" {
    run "$RUN" bash -c 'exit 42'
    [ "$status" -eq 42 ]
    run "$RUN" -- printf '%s|' 'a b' '' '--service' '*'
    [ "$status" -eq 0 ]
    [ "$output" = "a b||--service|*|" ]
    run env SHOWENV_STATUS=5 "$RUN" "$FIX/showenv_glibc"
    [ "$status" -eq 5 ]
}

@test "signals reach the program itself: proflink-run is replaced by it (ENTRYPOINT)" {
    "$RUN" bash -c 'trap "echo got-term; exit 7" TERM; echo ready; while :; do sleep 0.05; done' \
        >"$BATS_TEST_TMPDIR/sig.out" 2>&1 &
    pid=$!
    wait_for_line "$BATS_TEST_TMPDIR/sig.out" '^ready'
    [ "$(readlink "/proc/$pid/exe")" = "$(readlink -f "$(command -v bash)")" ]
    maps_has "$pid" "$GLIBC_LIB"
    kill -TERM "$pid"
    st=0
    wait "$pid" || st=$?
    [ "$st" -eq 7 ]
    grep -qx got-term "$BATS_TEST_TMPDIR/sig.out"
    # an untrapped signal kills it like any program: status 128+15 seen by the parent
    "$RUN" sleep 30 &
    pid=$!
    for _ in $(seq 100); do [ "$(readlink "/proc/$pid/exe")" = "$(readlink -f "$(command -v sleep)")" ] && break; sleep 0.02; done
    [ "$(cat "/proc/$pid/comm")" = sleep ]
    kill -TERM "$pid"
    st=0
    wait "$pid" || st=$?
    [ "$st" -eq 143 ]
}

@test "options: --service, --socket-dir, --fifo, --log set the environment of the program" {
    dir=$(mktemp -d /tmp/plr.XXXXXX)
    unset ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_SOCKET_DIR
    "$RUN" --service checkout --socket-dir "$dir" --fifo="$dir/f" --log error \
        "$ROOT/build/tests/target_threads" 1 10 >"$BATS_TEST_TMPDIR/target.out" 2>&1 &
    TARGET_PID=$!
    wait_attachable "$TARGET_PID"
    inspect_json "$TARGET_PID" --no-threads
    [ "$(jget 'j["storage"]["service_name"]')" = checkout ]
    [[ "$(jget 'j["storage"]["socket_path"]')" == "$dir"/proflink-"$TARGET_PID"-*.sock ]]
    tr '\0' '\n' <"/proc/$TARGET_PID/environ" | grep -qx "PROFLINK_FIFO=$dir/f"
    tr '\0' '\n' <"/proc/$TARGET_PID/environ" | grep -qx "PROFLINK_LOG=error"
    stop_target
    rm -rf "$dir"
}

@test "--disable: the library is loaded but publishes nothing" {
    "$RUN" --disable "$ROOT/build/tests/target_threads" 1 10 >"$BATS_TEST_TMPDIR/target.out" 2>&1 &
    TARGET_PID=$!
    wait_for_line "$BATS_TEST_TMPDIR/target.out" '^ready'
    maps_has "$TARGET_PID" "$GLIBC_LIB"
    run "$INSPECT" --no-threads "$TARGET_PID"
    [ "$status" -eq 1 ]
    [ -z "$(ls -A "$SOCKDIR")" ]
}

@test "usage: -h, unknown options, missing and unknown commands" {
    run "$RUN" -h
    [ "$status" -eq 0 ]
    [[ "$output" == usage:* ]]
    run "$RUN" --help
    [ "$status" -eq 0 ]
    run "$RUN" --bogus ls
    [ "$status" -eq 2 ]
    [[ "$output" == *"unknown option --bogus"* ]]
    run "$RUN" --service
    [ "$status" -eq 2 ]
    run "$RUN"
    [ "$status" -eq 2 ]
    run -127 "$RUN" no-such-command-proflink
    [[ "$output" == *"no-such-command-proflink: command not found"* ]]
}

@test "no library installed for the program: it runs without proflink, and the warning says why" {
    if grep -q proflink /etc/ld.so.preload 2>/dev/null; then
        skip "a host-wide proflink is in /etc/ld.so.preload"
    fi
    mkdir -p "$BATS_TEST_TMPDIR/alone/bin"
    cp "$RUN" "$BATS_TEST_TMPDIR/alone/bin/" # no build/ or lib/ beside it, not installed
    run --separate-stderr "$BATS_TEST_TMPDIR/alone/bin/proflink-run" sh -c 'echo ran'
    [ "$status" -eq 0 ]
    [ "$output" = ran ]
    # shellcheck disable=SC2154 # stderr: set by run --separate-stderr
    [[ "$stderr" == "proflink-run: warning: $(command -v sh) is a glibc program, and the glibc library (elastic-jvmti-linux-proflink-$ARCH.so) is not installed; running it without proflink" ]]
}

@test "runs with busybox sh and applets only (as in an Alpine image)" {
    bb=$(command -v busybox) || skip "busybox is not installed"
    bin=$BATS_TEST_TMPDIR/bb
    mkdir "$bin"
    for a in sh od dd tr readlink dirname uname env cat; do ln -s "$bb" "$bin/$a"; done
    run env PATH="$bin" "$bb" sh "$RUN" --print-lib "$ROOT/build/tests/target_threads"
    [ "$status" -eq 0 ]
    [ "$output" = "$GLIBC_LIB" ]
}

@test "runs with busybox sh and applets only: a musl program gets the musl library" {
    need_musl
    bb=$(command -v busybox) || skip "busybox is not installed"
    bin=$BATS_TEST_TMPDIR/bb
    mkdir "$bin"
    for a in sh od dd tr readlink dirname uname env cat; do ln -s "$bb" "$bin/$a"; done
    run env PATH="$bin" LD_PRELOAD= "$bb" sh "$RUN" "$FIX/showenv_musl"
    [ "$status" -eq 0 ]
    [ "$output" = "LD_PRELOAD=$MUSL_LIB" ]
}

@test "children of the other libc inherit LD_PRELOAD and run unchanged: musl under a glibc service and back" {
    need_musl
    # a glibc shell started through proflink-run gets the glibc library and passes LD_PRELOAD on
    # shellcheck disable=SC2016 # expanded by the inner shell
    run --separate-stderr "$RUN" --socket-dir "$SOCKDIR" -- /bin/sh -c \
        'SHOWENV_STATUS=5 "$1" a b; echo "musl child status $?"' sh "$FIX/showenv_musl"
    echo "status $status; stdout: $output; stderr: $stderr"
    [ "$status" -eq 0 ]
    [ "$output" = "$(printf 'arg a\narg b\nLD_PRELOAD=%s\nmusl child status 5' "$GLIBC_LIB")" ]
    [ "$(grep -c 'proflink:' <<<"$stderr")" = 1 ] # the musl child's: inactive there
    # and a musl program that starts a glibc child with the musl library inherited
    run --separate-stderr "$RUN" --socket-dir "$SOCKDIR" -- "$ROOT/build/tests/musl/target_threads" 1 0
    [ "$status" -eq 0 ]
    run --separate-stderr env LD_PRELOAD="$MUSL_LIB" SHOWENV_STATUS=6 "$FIX/showenv_glibc" x
    [ "$status" -eq 6 ]
    [ "$output" = "$(printf 'arg x\nLD_PRELOAD=%s' "$MUSL_LIB")" ]
    [ "$(grep -c 'proflink:' <<<"$stderr")" = 1 ]
}

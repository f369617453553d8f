#!/usr/bin/env bats
# Two copies of proflink in one process (a host-wide one in /etc/ld.so.preload and another from
# LD_PRELOAD or proflink-run, two installs): the first one loaded serves the process, the other
# stays inactive with one warning, proflink-inspect follows the serving copy as the profiler does
# and names the fix, and proflink-run uses a host-wide copy rather than adding its own.
# modules: preload/start/copies.c preload/leaves/version.c
load helpers
load ns_etc
bats_require_minimum_version 1.5.0

setup() {
    setup_sockdir
    PIDS=()
    COPY=$BATS_TEST_TMPDIR/other/elastic-jvmti-linux-proflink-$ARCH.so
    mkdir -p "${COPY%/*}"
    cp "$LIB" "$COPY"
}
teardown() { stop_pids "${PIDS[@]}"; rm -rf "$SOCKDIR"; }

# distinct proflink files mapped by PID
mapped_copies() { grep -o '/[^ ]*/elastic-jvmti-linux-proflink-[^ ]*\.so' "/proc/$1/maps" | sort -u; }

@test "two copies in LD_PRELOAD: the first serves alone, the second warns once; inspect follows the first and gives the fix" {
    local first second py
    # the interpreter itself: a version manager's shim would be one more process under proflink
    py=$(python3 -c 'import os; print(os.path.realpath("/proc/self/exe"))')
    for order in "$COPY $LIB" "$LIB $COPY"; do
        read -r first second <<<"$order"
        rm -f "$SOCKDIR"/*
        LD_PRELOAD="$order" "$py" -c 'import threading, time; t = threading.Thread(target=time.sleep, args=(60,)); t.start(); time.sleep(60)' \
            2>"$BATS_TEST_TMPDIR/err" 3>&- &
        PIDS+=("$!")
        wait_attachable "$!"
        [ "$(mapped_copies "$!" | wc -l)" = 2 ]
        # one socket, one OTel process context: the second copy published nothing
        [ "$(find "$SOCKDIR" -name 'proflink-*' | wc -l)" = 1 ]
        [ "$(grep -c OTEL_CTX "/proc/$!/maps")" = 1 ]
        cat "$BATS_TEST_TMPDIR/err"
        [ "$(wc -l <"$BATS_TEST_TMPDIR/err")" = 1 ]
        grep -qF "proflink: another copy of proflink, $first, was loaded first and serves this process; this copy, $second, stays inactive" "$BATS_TEST_TMPDIR/err"
        # with its threads: their records are read through the serving copy's TLS offset (once
        # the second thread has run far enough to install its record: it exists before that)
        inspect_threads "$!"
        echo "$output"
        [ "$status" -eq 0 ]
        grep -q "^WARN  mapping  $first " <<<"$output"
        grep -qF "fix: 2 copies of proflink are loaded: $first serves this process, $second published nothing" <<<"$output"
        grep -q '^PASS  threads' <<<"$output"
        stop_pids "${PIDS[@]}"
        PIDS=()
    done
}

@test "proflink-run with a host-wide copy in /etc/ld.so.preload gives the program that copy only" {
    ns_etc_setup
    [ ! -f "$BATS_FILE_TMPDIR/skip" ] || skip "$(cut -d: -f2- "$BATS_FILE_TMPDIR/skip")"
    export COPY ROOT
    # shellcheck disable=SC2016 # expanded in the namespace
    NS_TMP=$BATS_FILE_TMPDIR unshare -m --propagation private "$BATS_FILE_TMPDIR/ns_etc.sh" \
        sh -c 'printf "%s\n" "$COPY" >/etc/ld.so.preload
        "$ROOT/scripts/proflink-run" --print-lib sleep >"$0.lib"
        exec "$ROOT/scripts/proflink-run" -- sleep 60' "$BATS_TEST_TMPDIR/run" \
        2>"$BATS_TEST_TMPDIR/err" 3>&- &
    PIDS+=("$!")
    # unshare, the shell and proflink-run all exec: the same process ends up running sleep
    local pid=$!
    for _ in $(seq 100); do
        [ "$(readlink "/proc/$pid/exe")" = "$(readlink -f "$(command -v sleep)")" ] && break
        sleep 0.05
    done
    wait_attachable "$pid"
    [ "$(cat "$BATS_TEST_TMPDIR/run.lib")" = "$COPY" ]
    [ "$(mapped_copies "$pid")" = "$COPY" ]
    [ ! -s "$BATS_TEST_TMPDIR/err" ]
    run "$INSPECT" --no-threads "$pid"
    grep -q "^PASS  mapping  $COPY " <<<"$output"
}

@test "proflink-run: a host-wide entry whose file is missing is not used, with the reason" {
    ns_etc_setup
    [ ! -f "$BATS_FILE_TMPDIR/skip" ] || skip "$(cut -d: -f2- "$BATS_FILE_TMPDIR/skip")"
    export ROOT MISSING=$BATS_TEST_TMPDIR/gone/elastic-jvmti-linux-proflink-$ARCH.so
    # shellcheck disable=SC2016 # expanded in the namespace
    run ns_etc sh -c 'printf "%s\n" "$MISSING" >/etc/ld.so.preload
        "$ROOT/scripts/proflink-run" --print-lib sleep 2>&1'
    echo "$output"
    [[ "$output" == *"warning: /etc/ld.so.preload lists $MISSING, which does not exist"* ]]
    [ "${lines[-1]}" = "$LIB" ]
}

#!/usr/bin/env bats
# proflink-inspect gives every failed check a "fix:" line naming the real cause, each cause
# produced for real: a renamed copy of the library, a static program, proflink disabled or not
# selected by the environment, a removed socket, proflink not loaded at all.
# shellcheck shell=bash
load helpers
bats_require_minimum_version 1.5.0

setup() {
    setup_sockdir
    PIDS=()
    # a program that waits for work (select) for 60 s: with PROFLINK_FIFO, proflink's threads
    # start at such a wait (a plain sleep never waits that way, and keeps them off)
    WAITER=$BATS_TEST_TMPDIR/waiter
    printf '#!/usr/bin/python3\nimport select\nselect.select([], [], [], 60)\n' >"$WAITER"
    chmod +x "$WAITER"
}

teardown() {
    stop_pids "${PIDS[@]}"
    rm -rf "$SOCKDIR"
}

# bg ENV... CMD: starts CMD (through env) in the background, sets PID once it runs CMD's image
bg() {
    env "$@" >/dev/null 2>"$BATS_TEST_TMPDIR/bg.err" &
    PID=$!
    PIDS+=("$PID")
    local _
    for _ in $(seq 100); do
        [ "$(readlink "/proc/$PID/exe")" != "$(readlink -f "$(command -v env)")" ] && return 0
        sleep 0.05
    done
    return 1
}

# fails CHECK FIX-TEXT: inspect reports CHECK failed and the fix line right after it says FIX-TEXT
fails() {
    local _
    for _ in $(seq 40); do # the library's constructor may still be running
        run "$INSPECT" --no-threads "$PID"
        grep -q "^FAIL  $1 " <<<"$output" && grep -qF -- "$2" <<<"$output" && break
        sleep 0.05
    done
    echo "$output"
    [ "$status" -eq 1 ]
    grep -A1 "^FAIL  $1 " <<<"$output" | grep -qF -- "      fix: $2"
    # every FAIL line has its fix line right after it
    [ "$(grep -c '^FAIL' <<<"$output")" -eq "$(grep -A1 '^FAIL' <<<"$output" | grep -c '^      fix: ')" ]
}

@test "fix: a renamed copy of the library is named, with the name the profiler wants" {
    cp "$LIB" "$BATS_TEST_TMPDIR/libmine.so"
    bg LD_PRELOAD="$BATS_TEST_TMPDIR/libmine.so" sleep 60
    fails mapping "proflink is loaded as $BATS_TEST_TMPDIR/libmine.so, a file name the profiler ignores"
}

@test "fix: a statically linked program" {
    local sleeper=$ROOT/build/tests/fixtures/sleeper_static # built by make where libc.a is
    [ -x "$sleeper" ] || skip "no static sleeper (needs Debian's libc.a, libc6-dev)"
    bg LD_PRELOAD="$LIB" "$sleeper"
    fails mapping "the program is statically linked, so LD_PRELOAD cannot load proflink"
}

@test "fix: proflink not loaded at all" {
    bg sleep 60
    fails mapping "proflink is not loaded; start the program with LD_PRELOAD="
}

@test "fix: disabled by ENABLED=false in the environment" {
    bg LD_PRELOAD="$LIB" ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED=false sleep 60
    fails storage "disabled by ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED=false in its environment"
}

@test "fix: not selected by PROFLINK_INCLUDE" {
    bg LD_PRELOAD="$LIB" PROFLINK_INCLUDE='*/python*' sleep 60
    fails storage "not selected: /usr/bin/sleep is not matched by PROFLINK_INCLUDE=*/python* (its environment)"
}

@test "fix: the socket file was removed" {
    bg LD_PRELOAD="$LIB" sleep 60
    wait_attachable "$PID"
    rm -f "$SOCKDIR"/*
    fails socket "the socket must exist and be writable by the target's user"
}

@test "fix: the socket file is not writable by the target's user" {
    chmod 1777 "$SOCKDIR" # the target runs as nobody
    copy_for_all "$SOCKDIR" "$LIB"
    bg LD_PRELOAD="$COPY" setpriv --reuid 65534 --regid 65534 --clear-groups sleep 60
    wait_attachable "$PID"
    [ "$(stat -c %u "$SOCKDIR"/proflink-"$PID"-*.sock)" = 65534 ]
    chown 0:0 "$SOCKDIR"/proflink-"$PID"-*.sock # mode 0600: only root may write now
    fails socket "the socket must exist and be writable by the target's user"
    grep -q "^FAIL  socket .*not writable by the target's euid 65534" <<<"$output"
}

@test "fix: proflink loaded by a late dlopen (its TLS is not static)" {
    # proflink itself asks for static TLS (a late dlopen then gets it or fails), so a library
    # built like it without that flag stands in (the inspect suite's fixture); with no static TLS
    # surplus its TLS lands in dynamic TLS for sure
    env FAKE_SOCKET="$BATS_TEST_TMPDIR/fake.sock" FAKE_READY="$BATS_TEST_TMPDIR/ready" \
        GLIBC_TUNABLES=glibc.rtld.optional_static_tls=0 \
        "$ROOT/build/tests/fixtures/late_dlopen_host" \
        "$ROOT/build/tests/fixtures/fakes/good/elastic-jvmti-linux-fake.so" 0 &
    PID=$!
    PIDS+=("$PID")
    for _ in $(seq 100); do [ -e "$BATS_TEST_TMPDIR/ready" ] && break; sleep 0.05; done
    fails tls "proflink's thread-local storage is not static (loaded late by dlopen?)"
}

@test "a service name at the 128-byte limit is flagged as possibly cut" {
    bg LD_PRELOAD="$LIB" OTEL_SERVICE_NAME="$(printf 'n%.0s' $(seq 200))" sleep 60
    wait_attachable "$PID"
    run "$INSPECT" --no-threads "$PID"
    grep -q '^PASS  storage .*note: service-name is 128 bytes, the limit: it was probably cut' <<<"$output"
}

@test "fix: the library logs at info why it is inactive and what it cut" {
    long=$(printf 'n%.0s' $(seq 200))
    bg LD_PRELOAD="$LIB" PROFLINK_LOG=info OTEL_SERVICE_NAME="$long" sleep 60
    wait_attachable "$PID"
    grep -q 'service name is 200 bytes; cut to 128' "$BATS_TEST_TMPDIR/bg.err"
    run "$INSPECT" --no-threads "$PID"
    grep -q "service-name \"$(printf 'n%.0s' $(seq 128))\"" <<<"$output"
    bg LD_PRELOAD="$LIB" PROFLINK_LOG=info ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED=false sleep 60
    for _ in $(seq 40); do grep -q inactive "$BATS_TEST_TMPDIR/bg.err" && break; sleep 0.05; done
    grep -q 'proflink: .*inactive: ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED is false' "$BATS_TEST_TMPDIR/bg.err"
}

@test "--all: one line per process mapping proflink, attachable or its first failure" {
    bg LD_PRELOAD="$LIB" OTEL_SERVICE_NAME=all-ok sleep 60
    ok=$PID
    wait_attachable "$ok"
    bg LD_PRELOAD="$LIB" ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED=false sleep 60
    off=$PID
    bg sleep 60
    plain=$PID
    bg LD_PRELOAD="$LIB" sleep 60
    wait_attachable "$PID"
    rm -f "$SOCKDIR"/proflink-"$PID"-*.sock
    broken=$PID
    run "$INSPECT" --all
    echo "$output"
    [ "$status" -eq 1 ] # the one without its socket is not attachable
    grep -qE "^$ok +/usr/bin/sleep +all-ok +attachable$" <<<"$output"
    # disabled on purpose: excluded, not a failure
    grep -qE "^$off +/usr/bin/sleep +- +excluded: disabled by ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED=false in its environment" <<<"$output"
    grep -qE "^$broken +/usr/bin/sleep +unknown_service:sleep +FAIL: " <<<"$output"
    grep -qE '^[0-9]+ process(es)? map proflink \([0-9]+ not attachable, [0-9]+ excluded on purpose\); the profiler has 128 process slots' <<<"$output"
    run ! grep -qE "^$plain " <<<"$output"
}

@test "--all: more processes than the profiler's 128 slots is reported" {
    # 130 small preloaded sleepers, bounded and killed by the teardown
    for _ in $(seq 130); do
        LD_PRELOAD=$LIB sleep 60 &
        PIDS+=("$!")
    done
    for p in "${PIDS[@]}"; do
        for _ in $(seq 100); do grep -q elastic-jvmti-linux "/proc/$p/maps" 2>/dev/null && break; sleep 0.05; done
    done
    run "$INSPECT" --all
    [ "$status" -eq 1 ]
    [ "$(grep -cE '^[0-9]+ +/usr/bin/sleep ' <<<"$output")" -ge 130 ]
    grep -q 'the profiler has 128 process slots: more processes than slots, some will not be profiled' <<<"$output"
}

@test "the socket queue length of the target's own network namespace: WARN and fix when low" {
    # a network namespace of its own (unshare -n), with a queue length the host does not have;
    # a FIFO, so that proflink's threads read the socket (without them the queue is not the limit);
    # they start at the program's first wait for work (select here)
    mkfifo -m 600 "$BATS_TEST_TMPDIR/fifo"
    unshare -n sh -c 'sysctl -qw net.unix.max_dgram_qlen=37 && exec "$@"' sh \
        env LD_PRELOAD="$LIB" PROFLINK_FIFO="$BATS_TEST_TMPDIR/fifo" "$WAITER" &
    PID=$!
    PIDS+=("$PID")
    wait_attachable "$PID"
    for _ in $(seq 100); do grep -qx proflink-intake /proc/"$PID"/task/*/comm 2>/dev/null && break; sleep 0.05; done
    run "$INSPECT" "$PID"
    [ "$status" = 0 ]
    grep -q "^WARN  qlen     net.unix.max_dgram_qlen is 37 in the target's network namespace" <<<"$output"
    # the value advised is the one the Debian package installs
    grep -A1 '^WARN  qlen' <<<"$output" | grep -q "fix: raise it in that namespace, e.g. nsenter -t $PID -n sysctl -w net.unix.max_dgram_qlen=$(sed -n 's/^net\.unix\.max_dgram_qlen = //p' "$ROOT/packaging/deb/sysctl.conf"), "
    "$INSPECT" --json "$PID" >"$BATS_TEST_TMPDIR/inspect.json" || true
    [ "$(jget "j['dgram_qlen']")" = 37 ]
    # raised in the namespace: an INFO line, no fix
    nsenter -t "$PID" -n sysctl -qw net.unix.max_dgram_qlen=1000
    run "$INSPECT" "$PID"
    grep -q "^INFO  qlen     net.unix.max_dgram_qlen 1000 in the target's network namespace" <<<"$output"
    refute grep -q '^WARN  qlen' <<<"$output"
}

@test "--all: a process that /etc/proflink/proflink.conf excludes is listed as excluded, not FAIL" {
    # the configuration file exists only in the target's own mount namespace
    conf=$BATS_TEST_TMPDIR/etc-proflink
    mkdir -p "$conf"
    printf '# test\nPROFLINK_EXCLUDE = /usr/bin/sleep\n' >"$conf/proflink.conf"
    chmod 0644 "$conf/proflink.conf"
    chmod 0755 "$conf"
    mkdir -p /etc/proflink 2>/dev/null || skip "no /etc/proflink mount point"
    # shellcheck disable=SC2016 # expanded by the inner shell
    unshare -m sh -c 'mount --bind "$1" /etc/proflink && shift && exec env "$@"' sh "$conf" \
        LD_PRELOAD="$LIB" sleep 60 &
    PID=$!
    PIDS+=("$PID")
    for _ in $(seq 100); do grep -q elastic-jvmti-linux "/proc/$PID/maps" 2>/dev/null && break; sleep 0.05; done
    grep -q elastic-jvmti-linux "/proc/$PID/maps" || skip "unshare -m is not permitted here"
    run "$INSPECT" --all
    echo "$output"
    grep -qE "^$PID +/usr/bin/sleep +- +excluded: not selected: /usr/bin/sleep is matched by PROFLINK_EXCLUDE=/usr/bin/sleep \(/etc/proflink/proflink.conf\)" <<<"$output"
    refute grep -qE "^$PID .*FAIL" <<<"$output"
    fails storage "not selected: /usr/bin/sleep is matched by PROFLINK_EXCLUDE=/usr/bin/sleep (/etc/proflink/proflink.conf)"
}

@test "fix: the glibc build in a musl program says so, with the musl build and proflink-run" {
    libc_independent # the glibc library and a musl program, whatever the variant
    local prog=$ROOT/build/tests/musl/api_demo_service
    [ -x "$prog" ] || skip "no musl build of the test programs (musl-tools)"
    bg LD_PRELOAD="$ROOT/build/elastic-jvmti-linux-proflink-$ARCH.so" "$prog" -s 30 -t 1
    fails storage "this is a musl program (/lib/ld-musl-$ARCH.so.1 is its loader) but the glibc build of proflink is loaded"
    grep -q "preload the musl build (build/musl/elastic-jvmti-linux-proflink-musl-ARCH.so" <<<"$output"
    grep -q "or start the program with proflink-run, which picks it" <<<"$output"
}

@test "fix: no writable socket directory (a read-only /tmp) is named as the cause" {
    # /tmp read-only in the target's own mount namespace, as in a container with a read-only root
    unshare -m sh -c 'mount -t tmpfs -o ro tmpfs /tmp && exec env "$@"' sh LD_PRELOAD="$LIB" sleep 60 \
        2>"$BATS_TEST_TMPDIR/bg.err" &
    PID=$!
    PIDS+=("$PID")
    for _ in $(seq 100); do grep -q elastic-jvmti-linux "/proc/$PID/maps" 2>/dev/null && break; sleep 0.05; done
    grep -q elastic-jvmti-linux "/proc/$PID/maps" || skip "unshare -m is not permitted here"
    fails storage "proflink found no directory for its socket: "
    grep -q "fix: .*/tmp is on a read-only file system (in the process's mount namespace)" <<<"$output"
    grep -q "Give it a writable one: ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_SOCKET_DIR=DIR" <<<"$output"
}

@test "qlen: not root and another network namespace: the check says it was skipped and why" {
    [ "$(id -u)" = 0 ] || skip "needs root (to start a target in a network namespace of its own)"
    chmod 1777 "$SOCKDIR" # the target runs as nobody
    copy_for_all "$SOCKDIR" "$LIB"
    local lib=$COPY
    copy_for_all "$SOCKDIR" "$INSPECT"
    unshare -n setpriv --reuid 65534 --regid 65534 --clear-groups env LD_PRELOAD="$lib" sleep 60 &
    PID=$!
    PIDS+=("$PID")
    wait_attachable "$PID"
    run setpriv --reuid=65534 --regid=65534 --clear-groups "$COPY" --no-threads "$PID"
    echo "$output"
    grep -q "^SKIP  qlen     net.unix.max_dgram_qlen not checked: joining its network namespace (setns) needs root" <<<"$output"
    # in the inspector's own namespace no privilege is needed: the value is read
    chmod 1777 "$SOCKDIR"
    setpriv --reuid 65534 --regid 65534 --clear-groups env LD_PRELOAD="$lib" sleep 60 &
    PIDS+=("$!")
    wait_attachable "$!"
    run setpriv --reuid=65534 --regid=65534 --clear-groups "$COPY" --no-threads "$!"
    grep -qE "^(INFO|WARN)  qlen     net.unix.max_dgram_qlen (is )?[0-9]+ in the target's network namespace" <<<"$output"
}

@test "reader: says when nothing in the process reads its socket, and when proflink's threads do" {
    bg LD_PRELOAD="$LIB" sleep 60
    wait_attachable "$PID"
    run "$INSPECT" --no-threads "$PID"
    grep -q "^INFO  reader   nothing in the process reads its profiler socket: proflink's intake and reader threads are not running" <<<"$output"
    # then the socket's queue length is not what loses messages: no WARN about it
    refute grep -q '^WARN  qlen' <<<"$output"
    grep -A1 '^INFO  reader' <<<"$output" | grep -q 'fix: if the service should get them, set PROFLINK_FIFO=PATH'
    "$INSPECT" --json --no-threads "$PID" >"$BATS_TEST_TMPDIR/inspect.json" || true
    [ "$(jget "j['socket_reader']")" = false ]
    mkfifo -m 600 "$BATS_TEST_TMPDIR/fifo"
    # with a FIFO the threads start at the program's first wait for work (select here)
    bg LD_PRELOAD="$LIB" PROFLINK_FIFO="$BATS_TEST_TMPDIR/fifo" "$WAITER"
    wait_attachable "$PID"
    for _ in $(seq 100); do grep -qx proflink-intake /proc/"$PID"/task/*/comm 2>/dev/null && break; sleep 0.05; done
    run "$INSPECT" --no-threads "$PID"
    grep -q "^INFO  reader   proflink's intake thread receives the profiler's messages" <<<"$output"
    "$INSPECT" --json --no-threads "$PID" >"$BATS_TEST_TMPDIR/inspect.json" || true
    [ "$(jget "j['socket_reader']")" = true ]
}

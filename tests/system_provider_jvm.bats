#!/usr/bin/env bats
# A JVM whose agent brings its own apmint library, beside a C service, under host-wide proflink
# (/etc/ld.so.preload in a private mount namespace). The agent is a stand-in
# (tests/provider/jni_agent.c + other_provider.c, loaded with System.load as the Elastic Java
# agent loads elastic-jvmti-linux-*.so): each process is attachable by the profiler's rules with
# its own owner, the JVM's storage is the agent's, and a message sent to the socket proflink
# created at the JVM's start (where a profiler that attached first sends) reaches the agent.
# Without the agent the same JVM is proflink's.
# modules: preload/messages/provider_relay.c preload/start/provider.c
load helpers
load ns_etc
bats_require_minimum_version 1.5.0

setup_file() {
    local d=$BATS_FILE_TMPDIR javac_path java_home
    ns_etc_setup
    if ! command -v javac >/dev/null || ! command -v java >/dev/null; then
        echo "skip: no JDK (javac, java) on this machine" >"$d/skip"
        return 0
    fi
    javac_path=$(readlink -f "$(command -v javac)")
    java_home=${javac_path%/bin/javac}
    gcc -O1 -g -Wall -Werror -fPIC -shared -ftls-model=global-dynamic -mtls-dialect=gnu2 \
        -I"$java_home/include" -I"$java_home/include/linux" \
        -o "$d/elastic-jvmti-linux-fakeagent.so" "$ROOT/tests/provider/jni_agent.c" "$ROOT/tests/provider/other_provider.c"
    javac -d "$d/classes" "$ROOT/tests/provider/FakeAgentService.java"
}

setup() {
    [ ! -f "$BATS_FILE_TMPDIR/skip" ] || skip "$(cut -d: -f2- "$BATS_FILE_TMPDIR/skip")"
    [ "$VARIANT" = glibc ] || skip "host-wide preload is glibc's"
    setup_sockdir
    PIDS=()
}

teardown() {
    local p
    for p in "$BATS_TEST_TMPDIR"/*.pid; do
        [ -f "$p" ] && PIDS+=("$(cat "$p")")
    done
    stop_pids "${PIDS[@]}"
    rm -rf "$SOCKDIR"
}

# host_wide NAME CMD...: CMD in the background under /etc/ld.so.preload = $LIB (a private mount
# namespace); its pid (the namespace's helpers exec) in NAME.pid, output in NAME.out/.err
host_wide() {
    local name=$1
    shift
    # shellcheck disable=SC2016 # expanded in the namespace
    NS_TMP=$BATS_FILE_TMPDIR LIB=$LIB unshare -m --propagation private "$BATS_FILE_TMPDIR/ns_etc.sh" \
        sh -c 'printf "%s\n" "$LIB" >/etc/ld.so.preload && exec "$@"' sh "$@" \
        >"$BATS_TEST_TMPDIR/$name.out" 2>"$BATS_TEST_TMPDIR/$name.err" 3>&- &
    echo "$!" >"$BATS_TEST_TMPDIR/$name.pid"
}

@test "under host-wide proflink a JVM with its agent's library and a C service: each attachable with its own owner; messages reach the agent" {
    host_wide jvm env PROFLINK_LOG=info java -cp "$BATS_FILE_TMPDIR/classes" FakeAgentService \
        "$BATS_FILE_TMPDIR/elastic-jvmti-linux-fakeagent.so" "$SOCKDIR/agent.sock"
    host_wide c sleep 120
    wait_for_line "$BATS_TEST_TMPDIR/jvm.out" '^ready '
    local jvm c
    jvm=$(sed -n 's/^ready \([0-9]*\) .*/\1/p' "$BATS_TEST_TMPDIR/jvm.out")
    c=$(cat "$BATS_TEST_TMPDIR/c.pid")
    grep -q elastic-jvmti-linux-proflink "/proc/$jvm/maps"
    # the JVM: the storage is the agent's (its service, its socket), through proflink's mapping
    wait_attachable "$jvm"
    run "$INSPECT" --no-threads "$jvm"
    echo "$output"
    [ "$status" -eq 0 ]
    grep -q "^PASS  storage .*service-name \"fake-agent\".*socket \"$SOCKDIR/agent.sock\"" <<<"$output"
    grep -q "another provider of the format is loaded: $BATS_FILE_TMPDIR/elastic-jvmti-linux-fakeagent.so" <<<"$output"
    # a profiler that attached at the JVM's first sample learnt proflink's socket: relayed
    local sock
    sock=$(compgen -G "$SOCKDIR/proflink-$jvm-*.sock" | head -1)
    [ -n "$sock" ]
    "$ROOT/build/tests/send_datagrams" "$jvm" "$sock" corr 0af7651916cd43dd8448eb211c80319c b7ad6b7169203331 60b420bb3851d9d47acb933dbe70399b 1
    wait_for_line "$BATS_TEST_TMPDIR/jvm.out" '^agent got 46 bytes'
    [ "$(grep -c 'published its own apmint process storage' "$BATS_TEST_TMPDIR/jvm.err")" = 1 ]
    # the C service beside it: proflink's own storage and socket
    wait_attachable "$c"
    run "$INSPECT" --no-threads "$c"
    [ "$status" -eq 0 ]
    grep -q "^PASS  storage .*service-name \"unknown_service:sleep\".*socket \"$SOCKDIR/proflink-$c-" <<<"$output"
}

@test "under host-wide proflink the same JVM without the agent is proflink's" {
    host_wide jvm java -cp "$BATS_FILE_TMPDIR/classes" FakeAgentService
    wait_for_line "$BATS_TEST_TMPDIR/jvm.out" '^ready '
    local jvm
    jvm=$(sed -n 's/^ready \([0-9]*\) .*/\1/p' "$BATS_TEST_TMPDIR/jvm.out")
    wait_attachable "$jvm"
    # the JVM may start a thread at any time (compiler threads are added on demand): one that
    # exists but has not run yet has no record
    inspect_threads "$jvm"
    echo "$output"
    [ "$status" -eq 0 ]
    grep -q "^PASS  storage .*service-name \"unknown_service:java\".*socket \"$SOCKDIR/proflink-$jvm-" <<<"$output"
    grep -q '^PASS  threads' <<<"$output"
    refute grep -q 'apmint process storage' "$BATS_TEST_TMPDIR/jvm.err"
}

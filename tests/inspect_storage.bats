#!/usr/bin/env bats
# proflink-inspect's storage and socket checks: stand-in agents configured wrong (storage not
# published, names too long, socket missing, of the wrong kind, unbound, too long a path, not
# writable by the target's user), and the escaping of what the target publishes.
# Shared helpers (ins_*, the stand-in agents): tests/inspect_helpers.bash.
# shellcheck shell=bash
load inspect_helpers

@test "strings the target publishes are escaped: JSON stays valid and round-trips" {
    need_fakes
    ins_fake good FAKE_SERVICE=$'q"b\\s\tt\nn\x01c-\xc3\xa9-\xff' FAKE_ENV=$'\xe2\x82'
    ins_json "$INS_PID" --no-threads
    [ "$INS_STATUS" -eq 0 ]
    [ "$(jget 'j["storage"]["service_name"] == "q\"b\\s\tt\nn\x01c-\u00e9-\ufffd"')" = true ]
    [ "$(jget 'j["storage"]["service_environment"] == "\ufffd\ufffd"')" = true ]
    run "$INSPECT" --no-threads "$INS_PID"
    [[ "$output" == *'service-name "q\"b\\s\x09t\x0an\x01c-'* ]]
}

@test "storage pointer still NULL: storage FAIL, socket SKIP" {
    need_fakes
    ins_fake good FAKE_NO_PUBLISH=1
    ins_json "$INS_PID" --no-threads
    [ "$INS_STATUS" -eq 1 ]
    [[ "$(ins_check storage)" == "fail "*"is NULL"* ]]
    [[ "$(ins_check socket)" == skip* ]]
    [ "$(jget 'j["storage"]')" = null ]
}

@test "service name of 129 bytes: storage FAIL; 128 bytes: attachable" {
    need_fakes
    ins_fake good FAKE_SERVICE="$(printf 'n%.0s' $(seq 129))"
    ins_json "$INS_PID" --no-threads
    [ "$INS_STATUS" -eq 1 ]
    [[ "$(ins_check storage)" == "fail service-name is 129 bytes"* ]]
    teardown
    setup
    ins_fake good FAKE_SERVICE="$(printf 'n%.0s' $(seq 128))"
    ins_json "$INS_PID" --no-threads
    [ "$INS_STATUS" -eq 0 ]
    [ "$(jget 'len(j["storage"]["service_name"])')" = 128 ]
}

@test "socket file missing, a regular file, a stream socket, or nobody bound: socket FAIL" {
    need_fakes
    local kind expect
    for kind in none file stream unbound; do
        case $kind in
        none) expect="No such file or directory" ;;
        file) expect="is not a socket" ;;
        stream) expect="is not a datagram socket" ;;
        unbound) expect="nobody is bound to it" ;;
        esac
        ins_fake good FAKE_SOCKET_KIND=$kind
        ins_json "$INS_PID" --no-threads
        [ "$INS_STATUS" -eq 1 ]
        [[ "$(ins_check socket)" == "fail "*"$expect"* ]]
        [ "$(jget 'j["attachable"]')" = false ]
        teardown
        setup
    done
}

@test "socket path: '..' that survives cleaning FAILs, '..' that cleaning removes passes" {
    need_fakes
    ins_fake good FAKE_SOCKET_KIND=none FAKE_SOCKET=../x.sock
    ins_json "$INS_PID" --no-threads
    [[ "$(ins_check socket)" == "fail "*"escapes the root"* ]]
    teardown
    setup
    mkdir "$INS_DIR/sub"
    ins_fake good FAKE_SOCKET="$INS_DIR/sub/../fake.sock"
    ins_json "$INS_PID" --no-threads
    [ "$INS_STATUS" -eq 0 ]
    [ "$(jget 'j["socket"]["path"]')" = "/proc/$INS_PID/root$INS_DIR/fake.sock" ]
}

@test "/proc/PID/root + socket path longer than sun_path: socket FAIL, with the length" {
    need_fakes
    # the target binds it (<= 107 bytes), but the profiler's /proc/PID/root prefix overflows
    local dir
    dir=$INS_DIR/$(printf 'd%.0s' $(seq 75))
    mkdir "$dir"
    ins_fake good FAKE_SOCKET="$dir/s.sock"
    ins_json "$INS_PID" --no-threads
    [ "$INS_STATUS" -eq 1 ]
    local len=$((${#INS_PID} + 11 + ${#dir} + 7))
    [[ "$(ins_check socket)" == "fail "*"is $len bytes, more than sun_path holds (107)"* ]]
    [ "$(jget 'j["socket"]["path_len"]')" = "$len" ]
}

@test "socket mode bits are checked against the target's effective uid and gid" {
    need_fakes
    need_root
    chmod 1777 "$INS_DIR"
    # the bats temporary directory is private to root: give nobody its own copy of the agent
    mkdir -m 755 "$INS_DIR/lib"
    cp "$FAKES/good/elastic-jvmti-linux-fake.so" "$INS_DIR/lib/"
    chmod 755 "$INS_DIR/lib/elastic-jvmti-linux-fake.so"
    local mode want
    for mode in 0400 0600 0460 0402; do
        case $mode in
        0400) want="fail" ;;
        0600) want="pass owner" ;;
        0460) want="pass group" ;;
        0402) want="pass others" ;;
        esac
        setpriv --reuid=65534 --regid=65534 --clear-groups env FAKE_SOCKET="$INS_DIR/s$mode.sock" \
            FAKE_SOCKET_MODE=$mode FAKE_READY="$INS_DIR/ready$mode" \
            LD_PRELOAD="$INS_DIR/lib/elastic-jvmti-linux-fake.so" sleep 60 3>&- &
        INS_PID=$!
        ins_wait_file "$INS_DIR/ready$mode"
        ins_json "$INS_PID" --no-threads
        [ "$(jget 'j["socket"]["target_euid"]')" = 65534 ]
        if [ "$want" = fail ]; then
            [ "$INS_STATUS" -eq 1 ]
            [[ "$(ins_check socket)" == "fail "*"not writable by the target's euid 65534"* ]]
        else
            [ "$INS_STATUS" -eq 0 ]
            [ "pass $(jget 'j["socket"]["access"]')" = "$want" ]
        fi
        kill "$INS_PID"
        wait "$INS_PID" 2>/dev/null || true
        INS_PID=
    done
}

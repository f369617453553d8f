#!/usr/bin/env bats
# proflink-inspect's command line, and the processes it cannot inspect or must reject at once:
# usage errors, a pid that does not exist or may not be read, a process without the library.
# Shared helpers (ins_*, the stand-in agents): tests/inspect_helpers.bash.
# shellcheck shell=bash
load inspect_helpers

@test "--help explains the checks and exits 0" {
    run "$INSPECT" --help
    [ "$status" -eq 0 ]
    [[ "$output" == *"usage: proflink-inspect [--json] [--no-threads | --stop] [--children] PID..."* ]]
    [[ "$output" == *"--pidof NAME"* ]]
    [[ "$output" == *"--no-threads"* ]]
}

@test "usage errors exit 2" {
    run "$INSPECT"
    [ "$status" -eq 2 ]
    [[ "$output" == *usage:* ]]
    [[ "$output" == *"no process given: name one or more PIDs, or --pidof NAME"* ]]
    run "$INSPECT" --pidof "no-such-program-$$"
    [ "$status" -eq 2 ]
    [[ "$output" == *"no process named no-such-program-$$"* ]]
    run "$INSPECT" not-a-pid
    [ "$status" -eq 2 ]
    [[ "$output" == *"not a process id: not-a-pid"* ]]
    run "$INSPECT" --bogus 1
    [ "$status" -eq 2 ]
    run "$INSPECT" 1 not-a-pid
    [ "$status" -eq 2 ]
    [[ "$output" == *"not a process id: not-a-pid"* ]]
    run "$INSPECT" -- -5
    [ "$status" -eq 2 ]
}

@test "a pid that does not exist: exit 2, 'no such process', JSON error object" {
    local pid=$(($(cat /proc/sys/kernel/pid_max) + 1)) # above pid_max: never a live pid
    run "$INSPECT" "$pid"
    [ "$status" -eq 2 ]
    [[ "$output" == *"no such process: $pid"* ]]
    ins_json "$pid"
    [ "$INS_STATUS" -eq 2 ]
    [ "$(jget 'j["pid"]')" = "$pid" ]
    [[ "$(jget 'j["error"]')" == *"no such process"* ]]
}

@test "permission denied is reported as such, exit 2" {
    need_root
    ins_plain sleep 60
    run setpriv --reuid=65534 --regid=65534 --clear-groups "$INSPECT" "$INS_PID"
    [ "$status" -eq 2 ]
    [[ "$output" == *"permission denied"* ]]
}

@test "a process without the library: mapping FAIL, the rest SKIP, exit 1" {
    ins_plain sleep 60
    run "$INSPECT" "$INS_PID"
    [ "$status" -eq 1 ]
    [[ "$output" == *"FAIL  mapping"* ]]
    [[ "$output" == *"SKIP  elf"* ]]
    [[ "$output" == *"NOT attachable"* ]]
    ins_json "$INS_PID"
    [ "$INS_STATUS" -eq 1 ]
    [ "$(jget 'j["attachable"]')" = false ]
    [ "$(jget '[c["name"] for c in j["checks"]]')" = \
        '["mapping", "elf", "tls", "storage", "socket", "threads", "otel"]' ]
    [ "$(jget 'j["checks"][0]["ok"]')" = false ]
    [ "$(jget '[c["status"] for c in j["checks"][1:6]]')" = \
        '["skip", "skip", "skip", "skip", "skip"]' ]
    [ "$(jget 'j["library"]')" = null ]
    [ "$(jget 'j["storage"]')" = null ]
    [ "$(jget 'j["threads"]')" = null ]
    [ "$(jget 'j["otel_process_context"]["found"]')" = false ]
    [ "$(jget 'j["comm"]')" = sleep ]
}

@test "several pids: each process reported whole, a count, the worst status; --json an array" {
    ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_SOCKET_DIR=$INS_DIR LD_PRELOAD=$REAL_LIB sleep 60 &
    local with=$!
    sleep 60 &
    local without=$!
    wait_attachable "$with"
    run "$INSPECT" --no-threads "$with" "$without"
    echo "$output"
    [ "$status" -eq 1 ]
    [ "$(grep -c '^proflink-inspect: pid ' <<<"$output")" -eq 2 ]
    [ "$(grep -c '^result: ' <<<"$output")" -eq 2 ]
    grep -q '^proflink-inspect: 2 processes: 1 attachable, 1 not attachable, 0 could not be inspected$' <<<"$output"
    "$INSPECT" --json --no-threads "$without" "$with" >"$BATS_TEST_TMPDIR/inspect.json" || true
    kill "$with" "$without"
    [ "$(jget '[p["pid"] for p in j["processes"]]')" = "[$(printf '%s\n' "$with" "$without" | sort -n | paste -sd, | sed 's/,/, /')]" ]
    [ "$(jget 'sorted(p["attachable"] for p in j["processes"])')" = '[false, true]' ]
}

@test "--pidof NAME and --children: a pre-fork parent and its workers, each reported" {
    local name=plw$$ # a name no other process of the machine has
    cp "$(command -v sleep)" "$INS_DIR/$name"
    ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_SOCKET_DIR=$INS_DIR LD_PRELOAD=$REAL_LIB \
        bash -c '"$1" 60 & "$1" 60 & wait' sh "$INS_DIR/$name" &
    INS_PID=$!
    for _ in $(seq 100); do [ "$(pgrep -c -P "$INS_PID")" = 2 ] && break; sleep 0.05; done
    mapfile -t workers < <(pgrep -P "$INS_PID")
    [ "${#workers[@]}" -eq 2 ]
    for w in "${workers[@]}"; do wait_attachable "$w"; done
    run "$INSPECT" --no-threads --pidof "$name"
    echo "$output"
    [ "$status" -eq 0 ]
    grep -q "^proflink-inspect: 2 processes: 2 attachable, 0 not attachable" <<<"$output"
    for w in "${workers[@]}"; do grep -q "^proflink-inspect: pid $w ($name)" <<<"$output"; done
    run "$INSPECT" --no-threads --children "$INS_PID"
    echo "$output"
    kill "${workers[@]}"
    [ "$status" -eq 0 ]
    grep -q "^proflink-inspect: 3 processes: 3 attachable" <<<"$output"
    grep -q "^proflink-inspect: pid $INS_PID (bash)" <<<"$output"
}

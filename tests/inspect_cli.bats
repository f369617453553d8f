#!/usr/bin/env bats
# proflink-inspect's command line, and the processes it cannot inspect or must reject at once:
# usage errors, a pid that does not exist or may not be read, a process without the library.
# Shared helpers (ins_*, the stand-in agents): tests/inspect_helpers.bash.
# shellcheck shell=bash
load inspect_helpers

@test "--help explains the checks and exits 0" {
    run "$INSPECT" --help
    [ "$status" -eq 0 ]
    [[ "$output" == *"usage: proflink-inspect [--json] [--no-threads | --stop] PID"* ]]
    [[ "$output" == *"--no-threads"* ]]
}

@test "usage errors exit 2" {
    run "$INSPECT"
    [ "$status" -eq 2 ]
    [[ "$output" == *usage:* ]]
    run "$INSPECT" not-a-pid
    [ "$status" -eq 2 ]
    [[ "$output" == *"not a process id: not-a-pid"* ]]
    run "$INSPECT" --bogus 1
    [ "$status" -eq 2 ]
    run "$INSPECT" 1 2
    [ "$status" -eq 2 ]
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

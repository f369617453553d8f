#!/usr/bin/env bats
# variants: glibc musl
# The preload core as the apmint profiler sees it from outside: every check goes through
# proflink-inspect, which reads /proc/PID/maps, the ELF, /proc/PID/mem and thread pointers.
# modules: preload/start/start.c preload/start/runtime.c preload/config/config.c
# modules: preload/publish/process_storage.c preload/publish/socket.c
# modules: preload/context/thread_records.c hooks/pthread_create.c preload/api/context_api.c
# modules: preload/leaves/ids.c preload/start/atfork.c preload/start/fork_sequence.c
# modules: preload/publish/socket_cleanup.c preload/leaves/random.c
load helpers

TP_TRACE=0af7651916cd43dd8448eb211c80319c
TP_SPAN=b7ad6b7169203331
TP="00-$TP_TRACE-$TP_SPAN-01"

setup() { setup_sockdir; }

# The OTel thread record must say what the apmint one says, on every thread (issue: one preload
# serves old and new readers): same ids and flags, transaction id as key 0; when idle, the
# record stays in place (the pointer is set once) with valid = 0, and it is 2-byte aligned.
records_agree() {
    "$PY" - "$BATS_TEST_TMPDIR/inspect.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
bad = []
for t in j["threads"]:
    a, o = t["apm"], t["otel"]
    if a is None:
        ok = o is None
    elif not a["trace_present"]:
        ok = o is not None and o["valid"] == 0 and int(o["address"], 16) % 2 == 0
    else:
        ok = (o is not None and o["valid"] == 1 and o["trace_id"] == a["trace_id"]
              and o["span_id"] == a["span_id"] and o["trace_flags"] == a["trace_flags"]
              and o["attributes"].get("local_root_span_id") == a["transaction_id"]
              and int(o["address"], 16) % 2 == 0)
    if not ok:
        bad.append(t)
if bad:
    print("records disagree:", json.dumps(bad), file=sys.stderr)
    sys.exit(1)
PY
}
teardown() {
    stop_target
    if [ -n "${NS_RUNNER:-}" ]; then stop_pids "$NS_RUNNER"; fi
    rm -rf "$SOCKDIR"
}

@test "an unmodified multi-threaded program is attachable, with storage and a record per thread" {
    start_target "$HELPERS/target_threads" 4 10
    wait_for_line "$BATS_TEST_TMPDIR/target.out" '^ready'
    inspect_json "$TARGET_PID"
    [ "$(jget 'j["attachable"]')" = true ]
    [ "$(jget 'j["storage"]["minor"]')" = 1 ]
    [ "$(jget 'j["storage"]["service_name"]')" = unknown_service:target_threads ]
    [ "$(jget 'j["storage"]["service_environment"]')" = "" ]
    path=$(jget 'j["storage"]["socket_path"]')
    [[ "$path" == "$SOCKDIR"/proflink-"$TARGET_PID"-*.sock ]]
    [ "${#path}" -le 85 ]
    [ "$(stat -c '%a %u %F' "$path")" = "600 $(id -u) socket" ]
    # main thread + 4 workers, each with a valid record and no trace
    [ "$(jget 'sum(1 for t in j["threads"] if t["apm"] and t["apm"]["valid"] == 1 and t["apm"]["trace_present"] == 0)')" -ge 5 ]
    [ "$(jget 'sum(1 for t in j["threads"] if t["comm"].startswith("worker-") and t["apm"])')" = 4 ]
}

@test "python3 and bash started under the library are attachable" {
    [ "$VARIANT" = glibc ] || skip "python3 and bash are glibc programs"
    start_target /usr/bin/python3 -c 'import time; time.sleep(10)'
    inspect_json "$TARGET_PID"
    [ "$(jget 'j["attachable"]')" = true ]
    [[ "$(jget 'j["storage"]["service_name"]')" == unknown_service:python3* ]]
    stop_target
    # shellcheck disable=SC2209 # "batch" is the service name
    OTEL_SERVICE_NAME=batch start_target /bin/bash -c 'sleep 10; true'
    inspect_json "$TARGET_PID"
    [ "$(jget 'j["storage"]["service_name"]')" = batch ]
}

@test "service name and environment come from OTel, then Elastic variables" {
    OTEL_RESOURCE_ATTRIBUTES='service.name=from-attrs,deployment.environment.name=prod%2Ceu' \
        start_target "$HELPERS/target_threads" 1 10
    inspect_json "$TARGET_PID" --no-threads
    [ "$(jget 'j["storage"]["service_name"]')" = from-attrs ]
    [ "$(jget 'j["storage"]["service_environment"]')" = prod,eu ]
    stop_target
    OTEL_SERVICE_NAME=otel-name ELASTIC_APM_SERVICE_NAME=elastic-name ELASTIC_APM_ENVIRONMENT=staging \
        start_target "$HELPERS/target_threads" 1 10
    inspect_json "$TARGET_PID" --no-threads
    [ "$(jget 'j["storage"]["service_name"]')" = otel-name ]
    [ "$(jget 'j["storage"]["service_environment"]')" = staging ]
    stop_target
    ELASTIC_APM_SERVICE_NAME=elastic-name start_target "$HELPERS/target_threads" 1 10
    inspect_json "$TARGET_PID" --no-threads
    [ "$(jget 'j["storage"]["service_name"]')" = elastic-name ]
}

@test "a service name over 128 bytes is cut on a UTF-8 boundary, and the profiler still attaches" {
    long=$(printf 'é%.0s' $(seq 100)) # 200 bytes of 2-byte characters
    OTEL_SERVICE_NAME="x$long" start_target "$HELPERS/target_threads" 1 10
    inspect_json "$TARGET_PID" --no-threads
    [ "$(jget 'j["attachable"]')" = true ]
    name=$(jget 'j["storage"]["service_name"]')
    [ "$(printf %s "$name" | wc -c)" = 127 ] # "x" + 63 whole "é"; the 64th would pass 128
    printf %s "$name" | iconv -f UTF-8 -t UTF-8 >/dev/null
}

@test "TRACEPARENT: the main thread and every thread it creates carry that trace" {
    TRACEPARENT=$TP start_target "$HELPERS/target_threads" 3 10
    wait_for_line "$BATS_TEST_TMPDIR/target.out" '^ready'
    inspect_json "$TARGET_PID"
    # every thread of the program; proflink's own threads have no record, by design
    n=$(jget 'len([t for t in j["threads"] if t["comm"] not in ("proflink-reader", "proflink-intake")])')
    [ "$n" = 4 ]
    # (with no consumer of profiler messages proflink has no thread at all; if it has, they
    # never carry a record)
    [ "$(jget 'sum(1 for t in j["threads"] if t["comm"] in ("proflink-reader", "proflink-intake") and t["apm"])')" = 0 ]
    [ "$(jget "sum(1 for t in j['threads'] if t['apm'] and t['apm']['trace_present'] == 1 and t['apm']['trace_id'] == '$TP_TRACE' and t['apm']['span_id'] == '$TP_SPAN' and t['apm']['transaction_id'] == '$TP_SPAN' and t['apm']['trace_flags'] == 1)")" = "$n" ]
    records_agree
}

@test "a malformed TRACEPARENT warns once and gives no context; output and status unchanged" {
    TRACEPARENT=00-nothex-zz-01 start_target "$HELPERS/target_threads" 1 1
    wait "$TARGET_PID"; rc=$?; TARGET_PID=
    [ "$rc" = 0 ]
    [ "$(grep -c 'proflink: TRACEPARENT' "$BATS_TEST_TMPDIR/target.err")" = 1 ]
    grep -q '^done$' "$BATS_TEST_TMPDIR/target.out"
}

@test "inheritance: with PROFLINK_INHERIT=1 a new thread starts with its creator's context, by default none" {
    PROFLINK_INHERIT=1 start_target "$HELPERS/api_switch" "$TP" 1111111111111111 3 noset
    wait_for_line "$BATS_TEST_TMPDIR/target.out" '^ready'
    grep -q "^get 1 $TP_TRACE 1111111111111111 01" "$BATS_TEST_TMPDIR/target.out"
    inspect_json "$TARGET_PID"
    # the second thread never called the API: its context is the one inherited at creation
    [ "$(jget "sum(1 for t in j['threads'] if t['apm'] and t['apm']['trace_present'] == 1 and t['apm']['trace_id'] == '$TP_TRACE' and t['apm']['transaction_id'] == '1111111111111111')")" = 2 ]
    records_agree
    stop_target
    start_target "$HELPERS/api_switch" "$TP" 1111111111111111 3 noset
    wait_for_line "$BATS_TEST_TMPDIR/target.out" '^ready'
    inspect_json "$TARGET_PID"
    [ "$(jget "sum(1 for t in j['threads'] if t['apm'] and t['apm']['trace_present'] == 1)")" = 1 ]
    [ "$(jget "sum(1 for t in j['threads'] if t['apm'] and t['apm']['trace_present'] == 0)")" = 1 ]
    records_agree
}

@test "TRACEPARENT is process-wide: with PROFLINK_INHERIT=0 new threads still start in it" {
    PROFLINK_INHERIT=0 TRACEPARENT=$TP start_target "$HELPERS/target_threads" 2 10
    wait_for_line "$BATS_TEST_TMPDIR/target.out" '^ready'
    inspect_json "$TARGET_PID"
    [ "$(jget "sum(1 for t in j['threads'] if t['apm'] and t['apm']['trace_present'] == 1 and t['apm']['trace_id'] == '$TP_TRACE')")" = 3 ]
}

@test "a thread's context is its own: clearing the main thread's leaves the other thread's" {
    start_target "$HELPERS/api_switch" "$TP" "" 3
    wait_for_line "$BATS_TEST_TMPDIR/target.out" '^cleared'
    inspect_json "$TARGET_PID"
    [ "$(jget "[t['apm']['trace_present'] for t in j['threads'] if t['tid'] == $TARGET_PID][0]")" = 0 ]
    [ "$(jget "[t['apm']['trace_present'] for t in j['threads'] if t['tid'] != $TARGET_PID and t['apm']][0]")" = 1 ]
    records_agree
}

@test "clear: the record stays valid with no trace present" {
    start_target "$HELPERS/api_switch" "$TP" "" 1
    wait_for_line "$BATS_TEST_TMPDIR/target.out" '^cleared'
    inspect_json "$TARGET_PID"
    [ "$(jget "[[t['apm']['valid'], t['apm']['trace_present']] for t in j['threads'] if t['tid'] == $TARGET_PID][0]")" = "[1, 0]" ]
}

@test "fork: the child has its own socket and storage, the parent's stay valid" {
    TRACEPARENT="$TP" start_target "$HELPERS/target_fork" 10
    wait_for_line "$BATS_TEST_TMPDIR/target.out" '^child'
    child=$(sed -n 's/^child //p' "$BATS_TEST_TMPDIR/target.out")
    inspect_json "$TARGET_PID"
    parent_path=$(jget 'j["storage"]["socket_path"]')
    [ "$(jget 'j["attachable"]')" = true ]
    wait_attachable "$child"
    inspect_json "$child"
    [ "$(jget 'j["attachable"]')" = true ]
    child_path=$(jget 'j["storage"]["socket_path"]')
    [ "$child_path" != "$parent_path" ]
    [[ "$child_path" == "$SOCKDIR"/proflink-"$child"-*.sock ]]
    [ -S "$parent_path" ]
    [ -S "$child_path" ]
    # the child's thread got a record too
    [ "$(jget 'sum(1 for t in j["threads"] if t["apm"])')" = 2 ]
    records_agree
}

@test "exit removes the socket file; a killed process's file is removed by the next one" {
    LD_PRELOAD=$LIB "$HELPERS/target_threads" 1 0.2 >/dev/null
    [ -z "$(ls "$SOCKDIR")" ]
    start_target "$HELPERS/target_threads" 1 10
    path=$(ls "$SOCKDIR"/proflink-*.sock)
    kill -9 "$TARGET_PID"; wait "$TARGET_PID" || true; TARGET_PID=
    [ -S "$path" ]
    start_target "$HELPERS/target_threads" 1 10
    [ ! -e "$path" ]
    [ "$(find "$SOCKDIR" -mindepth 1 -maxdepth 1 | wc -l)" = 1 ]
}

@test "stale cleanup never touches a live socket, another uid's file or a foreign name" {
    start_target "$HELPERS/target_threads" 1 10
    live=$(ls "$SOCKDIR"/proflink-*.sock)
    first=$TARGET_PID
    true &
    dead=$!
    wait "$dead" # a pid that no process has any more
    # sockets nobody is bound to any more (python binds, then exits without unlinking)
    bind_and_leave() { "$PY" -c 'import socket,sys; socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).bind(sys.argv[1])' "$1"; }
    stale=$SOCKDIR/proflink-$dead-0000abcd.sock            # ours: removed (the control)
    other_uid=$SOCKDIR/proflink-$dead-0000beef.sock        # another uid's: kept
    foreign1=$SOCKDIR/proflink-$dead-0000abcd.sock.old     # names that are not ours: kept
    foreign2=$SOCKDIR/proflink-$dead-xyz.sock
    foreign3=$SOCKDIR/proflink-$dead-000000001.sock
    for f in "$stale" "$other_uid" "$foreign1" "$foreign2" "$foreign3"; do bind_and_leave "$f"; done
    chown 65534:65534 "$other_uid"
    touch "$SOCKDIR/proflink-$dead-00000000.sock" # our name and a dead pid, but not a socket
    LD_PRELOAD=$LIB "$HELPERS/target_threads" 1 0.2 >/dev/null
    [ -S "$live" ]
    [ ! -e "$stale" ]
    [ -S "$other_uid" ]
    [ -S "$foreign1" ]
    [ -S "$foreign2" ]
    [ -S "$foreign3" ]
    [ -f "$SOCKDIR/proflink-$dead-00000000.sock" ]
    kill "$first"
}

# A container sharing the socket directory with the host (a mounted volume): its processes' pids
# mean nothing here, and one may look dead. Only "nobody is bound to it any more" tells a stale
# file from a live one. The process in the other pid namespace is given a pid that no process
# has here; a stale file next to it (the control) shows that a sweep has run.
@test "stale cleanup keeps the live socket of a process in another pid namespace" {
    if ! unshare -p -f --mount-proc true 2>/dev/null; then
        skip "cannot create a pid namespace here (unshare -p needs root or CAP_SYS_ADMIN)"
    fi
    local ns_pid=$(($(cat /proc/sys/kernel/pid_max) - 100))
    while kill -0 "$ns_pid" 2>/dev/null; do ns_pid=$((ns_pid - 1)); done
    # --kill-child: the namespace (its pid 1, so all of it) ends with unshare
    # shellcheck disable=SC2016 # expanded by the inner shell
    NS_PID=$ns_pid LIB=$LIB TARGET=$HELPERS/target_threads unshare -p -f --kill-child --mount-proc sh -c '
        echo $((NS_PID - 1)) >/proc/sys/kernel/ns_last_pid
        LD_PRELOAD=$LIB "$TARGET" 1 30 &
        wait' >"$BATS_TEST_TMPDIR/ns.out" 2>&1 &
    NS_RUNNER=$!
    wait_for_line "$BATS_TEST_TMPDIR/ns.out" '^ready'
    local live
    live=$(ls "$SOCKDIR"/proflink-"$ns_pid"-*.sock)
    [ -S "$live" ]
    # no process has that pid here: only the bound socket says the file is live
    refute kill -0 "$ns_pid" 2>/dev/null
    true &
    local dead=$!
    wait "$dead"
    local control=$SOCKDIR/proflink-$dead-0000abcd.sock
    "$PY" -c 'import socket,sys; socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).bind(sys.argv[1])' "$control"
    [ -S "$control" ]
    start_target "$HELPERS/target_threads" 1 20
    for _ in $(seq 200); do
        if [ ! -e "$control" ]; then break; fi
        sleep 0.05
    done
    [ ! -e "$control" ] # a sweep ran
    [ -S "$live" ]      # and left the live socket of the other namespace
}

@test "ENABLED=false: no socket, no storage, no records, API calls are no-ops" {
    ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED=false \
        LD_PRELOAD=$LIB "$HELPERS/api_switch" "$TP" "" 3 >"$BATS_TEST_TMPDIR/out" &
    TARGET_PID=$!
    wait_for_line "$BATS_TEST_TMPDIR/out" '^ready'
    [ -z "$(ls "$SOCKDIR")" ]
    run "$INSPECT" --json "$TARGET_PID"
    [ "$status" -ne 0 ]
    echo "$output" >"$BATS_TEST_TMPDIR/inspect.json"
    [ "$(jget 'j["attachable"]')" = false ]
    [ "$(jget 'sum(1 for t in j.get("threads") or [] if t["apm"])')" = 0 ]
    grep -q '^get -1' "$BATS_TEST_TMPDIR/out" # proflink_get_trace reports "disabled"
}

@test "an excluded program creates nothing" {
    PROFLINK_EXCLUDE='*/target_*' LD_PRELOAD=$LIB "$HELPERS/target_threads" 1 0.3 >/dev/null
    [ -z "$(ls "$SOCKDIR")" ]
    PROFLINK_INCLUDE='*/nothing-like-this' LD_PRELOAD=$LIB "$HELPERS/target_threads" 1 0.3 >/dev/null
    [ -z "$(ls "$SOCKDIR")" ]
    PROFLINK_INCLUDE='*/target_threads' start_target "$HELPERS/target_threads" 1 5
    [ -n "$(ls "$SOCKDIR")" ]
}

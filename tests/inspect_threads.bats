#!/usr/bin/env bats
# proflink-inspect's threads and otel checks: each thread's apmint and OTel records and the
# OTel process context, read without stopping the target, from a stand-in agent built right and
# from the real library.
# Shared helpers (ins_*, the stand-in agents): tests/inspect_helpers.bash.
# shellcheck shell=bash
load inspect_helpers

@test "fake agent built right: attachable, storage, socket, thread records, OTel context" {
    need_fakes
    ins_fake good FAKE_OTEL_CTX=1 FAKE_SERVICE=svc-a FAKE_ENV=staging
    run "$INSPECT" "$INS_PID"
    [ "$status" -eq 0 ]
    [[ "$output" == *"result: attachable"* ]]
    ins_json "$INS_PID"
    [ "$INS_STATUS" -eq 0 ]
    [ "$(jget 'j["attachable"]')" = true ]
    [ "$(jget '[c["status"] for c in j["checks"]]')" = \
        '["pass", "pass", "pass", "pass", "pass", "pass", "pass"]' ]
    [ "$(jget 'j["library"]["path"]')" = "$FAKES/good/elastic-jvmti-linux-fake.so" ]
    [ "$(jget 'j["storage"]["minor"]')" = 1 ]
    [ "$(jget 'j["storage"]["service_name"]')" = svc-a ]
    [ "$(jget 'j["storage"]["service_environment"]')" = staging ]
    [ "$(jget 'j["storage"]["socket_path"]')" = "$INS_DIR/fake.sock" ]
    [ "$(jget 'j["socket"]["path"]')" = "/proc/$INS_PID/root$INS_DIR/fake.sock" ]
    [ "$(jget 'j["socket"]["connect"]')" = ok ]
    # static TLS: below the thread pointer on x86_64, above it on aarch64
    if [ "$(uname -m)" = x86_64 ]; then
        [ "$(jget 'j["tls_offset"] < 0 and j["otel_tls_offset"] < 0')" = true ]
    else
        [ "$(jget 'j["tls_offset"] > 0 and j["otel_tls_offset"] > 0')" = true ]
    fi
    [ "$(jget 'len(j["threads"])')" = 1 ]
    [ "$(jget 'j["threads"][0]["tid"]')" = "$INS_PID" ]
    [ "$(jget 'j["threads"][0]["comm"]')" = sleep ]
    [ "$(jget 'j["threads"][0]["apm"]["valid"], j["threads"][0]["apm"]["trace_present"], j["threads"][0]["apm"]["trace_flags"]')" = "(1, 1, 1)" ]
    [ "$(jget 'j["threads"][0]["apm"]["trace_id"]')" = 0102030405060708090a0b0c0d0e0f10 ]
    [ "$(jget 'j["threads"][0]["apm"]["span_id"]')" = 1112131415161718 ]
    [ "$(jget 'j["threads"][0]["apm"]["transaction_id"]')" = 2122232425262728 ]
    [ "$(jget 'j["threads"][0]["otel"]["trace_id"]')" = 0102030405060708090a0b0c0d0e0f10 ]
    [ "$(jget 'j["threads"][0]["otel"]["attributes"]')" = '{"local_root_span_id": "2122232425262728"}' ]
    [ "$(jget 'j["otel_process_context"]["found"], j["otel_process_context"]["valid"]')" = "(True, True)" ]
    [ "$(jget 'j["otel_process_context"]["version"]')" = 2 ]
    [ "$(jget 'j["otel_process_context"]["published_at_ns"]')" = 12345 ]
    [ "$(jget 'j["otel_process_context"]["resource"]')" = '{"service.name": "fake-service"}' ]
    [ "$(jget 'j["otel_process_context"]["attributes"]["threadlocal.attribute_key_map"]')" = \
        '["local_root_span_id", "method"]' ]
}

@test "threads: each is listed, a NULL TLS pointer gives null records, none is left stopped" {
    need_fakes
    env FAKE_SOCKET="$INS_DIR/fake.sock" HOST_READY="$INS_DIR/ready" \
        LD_PRELOAD="$FAKES/good/elastic-jvmti-linux-fake.so" "$HOST" - 3 3>&- &
    INS_PID=$!
    ins_wait_file "$INS_DIR/ready"
    ins_json "$INS_PID"
    [ "$INS_STATUS" -eq 0 ]
    [ "$(jget 'len(j["threads"])')" = 4 ]
    [ "$(jget '[t["tid"] for t in j["threads"]] == sorted(t["tid"] for t in j["threads"])')" = true ]
    # the constructor ran on the main thread only; the others never set their pointers
    [ "$(jget 'j["threads"][0]["apm"]["valid"]')" = 1 ]
    [ "$(jget '[t["apm"] for t in j["threads"][1:]]')" = '[null, null, null]' ]
    [ "$(jget '[t["otel"] for t in j["threads"][1:]]')" = '[null, null, null]' ]
    [ "$(jget 'all(t["thread_pointer"].startswith("0x") and "error" not in t for t in j["threads"])')" = true ]
    every_line <(grep -h '^State:' /proc/"$INS_PID"/task/*/status) . 'S \(sleeping\)'
    # a stopped process stays stopped, and runs again on SIGCONT
    kill -STOP "$INS_PID"
    wait_states "$INS_PID" 'T (stopped)'
    ins_json "$INS_PID"
    [ "$INS_STATUS" -eq 0 ]
    [ "$(jget 'j["threads"][0]["apm"]["valid"]')" = 1 ]
    every_line <(grep -h '^State:' /proc/"$INS_PID"/task/*/status) . 'T \(stopped\)'
    kill -CONT "$INS_PID"
    wait_states "$INS_PID" 'S (sleeping)'
    every_line <(grep -h '^State:' /proc/"$INS_PID"/task/*/status) . 'S \(sleeping\)'
}

@test "--no-threads: no ptrace, threads SKIP and null" {
    need_fakes
    ins_fake good
    ins_json "$INS_PID" --no-threads
    [ "$INS_STATUS" -eq 0 ]
    [[ "$(ins_check threads)" == "skip "*"--no-threads"* ]]
    [ "$(jget 'j["threads"]')" = null ]
}

@test "real library under sleep: attachable, unknown_service:sleep, socket in /tmp" {
    [ -f "$REAL_LIB" ] || skip "library not built"
    env -u ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_SOCKET_DIR -u TMPDIR \
        -u OTEL_SERVICE_NAME -u ELASTIC_APM_SERVICE_NAME -u OTEL_RESOURCE_ATTRIBUTES \
        LD_PRELOAD="$REAL_LIB" sleep 5 3>&- &
    INS_PID=$!
    wait_attachable "$INS_PID"
    run "$INSPECT" "$INS_PID"
    [ "$status" -eq 0 ]
    [[ "$output" == *"result: attachable"* ]]
    ins_json "$INS_PID"
    [ "$INS_STATUS" -eq 0 ]
    [ "$(jget 'j["storage"]["service_name"]')" = unknown_service:sleep ]
    [[ "$(jget 'j["storage"]["socket_path"]')" == /tmp/*.sock ]]
    [ "$(jget 'j["socket"]["connect"]')" = ok ]
    [ "$(jget 'j["library"]["path"]')" = "$REAL_LIB" ]
    [ "$(jget 'j["threads"][0]["apm"]["minor"], j["threads"][0]["apm"]["valid"]')" = "(1, 1)" ]
}

@test "real library with TRACEPARENT: both thread records and the OTel process context" {
    [ -f "$REAL_LIB" ] || skip "library not built"
    TRACEPARENT=00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01 OTEL_SERVICE_NAME=tp-svc \
        LD_PRELOAD="$REAL_LIB" sleep 5 3>&- &
    INS_PID=$!
    wait_attachable "$INS_PID"
    ins_json "$INS_PID"
    [ "$INS_STATUS" -eq 0 ]
    [ "$(jget 'j["threads"][0]["apm"]["trace_present"]')" = 1 ]
    [ "$(jget 'j["threads"][0]["apm"]["trace_id"]')" = 0af7651916cd43dd8448eb211c80319c ]
    [ "$(jget 'j["threads"][0]["apm"]["transaction_id"]')" = b7ad6b7169203331 ]
    [ "$(jget 'j["otel_tls_offset"] is not None')" = true ]
    [ "$(jget 'j["threads"][0]["otel"]["trace_id"]')" = 0af7651916cd43dd8448eb211c80319c ]
    [ "$(jget 'j["threads"][0]["otel"]["span_id"]')" = b7ad6b7169203331 ]
    [ "$(jget 'j["otel_process_context"]["found"], j["otel_process_context"]["valid"]')" = "(True, True)" ]
    [ "$(jget 'j["otel_process_context"]["resource"]["service.name"]')" = tp-svc ]
}

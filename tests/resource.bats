#!/usr/bin/env bats
# variants: glibc musl
# shellcheck shell=bash
# proflink_set_resource: the tracer's resource is republished in the OpenTelemetry process
# context (read by the independent reader tests/otel_ctx_reader.py, as a profiler would) and,
# when the service name or environment changes, in the Elastic process storage (read with
# proflink-inspect; the replaced block is read through /proc/PID/mem to show it was not freed).
# modules: preload/api/resource_api.c preload/start/tracer_resource.c
# modules: preload/publish/otel_payload.c preload/config/resource_attrs.c
# modules: preload/publish/process_storage.c
load message_helpers

READER=$ROOT/tests/otel_ctx_reader.py

setup() { setup_sockdir; }
teardown() { msg_teardown; }

ask() {
    local before
    before=$(lines "$2")
    cmd "$1"
    wait_lines "$2" $((before + 1))
}

# otel_read — the independent reader's view of the process context, read by oget EXPR (json_get
# with the context bound to `c`); otel KEY — a resource attribute ("-" when absent); otel_all
# KEY… — several, "|"-separated; otel_top FIELD — a top-level field (address, published_at_ns).
otel_read() {
    "$PY" "$READER" "$TARGET_PID" >"$BATS_TEST_TMPDIR/otel.json"
    json_eval_start
}
oget() { json_get "$BATS_TEST_TMPDIR/otel.json" c "$1"; }
otel() { oget "c['resource'].get('$1', '-')"; }
otel_all() {
    local k keys=
    for k; do keys+="'$k', "; done
    oget "'|'.join(c['resource'].get(k, '-') for k in [$keys])"
}
otel_top() { oget "c['$1']"; }

storage() { inspect_json "$TARGET_PID"; jget "j['storage']['$1']"; }

# block_at ADDR — decodes an Elastic process storage block at ADDR in the target's memory.
block_at() {
    "$PY" - "$TARGET_PID" "$1" <<'PY'
import struct, sys
pid, addr = int(sys.argv[1]), int(sys.argv[2], 16)
with open(f"/proc/{pid}/mem", "rb") as m:  # field by field: the block may end a page
    m.seek(addr)
    minor, = struct.unpack("<H", m.read(2))
    fields = []
    for _ in range(3):
        n, = struct.unpack("<I", m.read(4))
        fields.append(m.read(n).decode())
print(minor, *fields)
PY
}

@test "the tracer's resource replaces proflink's defaults in the OTel process context, with the update protocol" {
    OTEL_RESOURCE_ATTRIBUTES=team=core,region=eu start_msg_target
    otel_read
    ts0=$(otel_top published_at_ns)
    addr0=$(otel_top address)
    [ "$(otel_all telemetry.sdk.language team)" = 'cpp|core' ]
    own_id=$(otel service.instance.id)
    ask "resource service.name=checkout,service.instance.id=abc%2C123,telemetry.sdk.language=nodejs,telemetry.sdk.name=opentelemetry,telemetry.sdk.version=2.0.0,region=us,host.arch=amd64" '^resource '
    grep -qx 'resource rc=0' "$OUT"
    otel_read
    # the instance id percent-decoded; the tracer's region replaces the environment's, whose
    # other attributes (team) stay
    [ "$(otel_all service.name service.instance.id telemetry.sdk.language telemetry.sdk.name \
        telemetry.sdk.version region team host.arch)" = \
        'checkout|abc,123|nodejs|opentelemetry|2.0.0|us|core|amd64' ]
    # the same mapping, republished with a strictly greater timestamp (the update protocol)
    [ "$(otel_top address)" = "$addr0" ]
    [ "$(otel_top published_at_ns)" -gt "$ts0" ]
    [ "$own_id" != 'abc,123' ]
    [ "$(oget 'len(c["duplicate_keys"])')" = 0 ]
}

@test "OTEL_RESOURCE_ATTRIBUTES may set service.instance.id; without it a random one is used" {
    OTEL_RESOURCE_ATTRIBUTES=service.instance.id=from-env-1 start_msg_target
    otel_read
    [ "$(otel service.instance.id)" = from-env-1 ]
    stop_msg_target
    start_msg_target
    otel_read
    [[ "$(otel service.instance.id)" =~ ^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$ ]]
}

@test "a new service name or environment republishes the Elastic process storage; the old block stays readable" {
    OTEL_SERVICE_NAME=before start_msg_target
    [ "$(storage service_name)" = before ]
    old=$(storage address)
    sock=$(storage socket_path)
    # only SDK attributes: the storage does not change
    ask "resource telemetry.sdk.language=nodejs" '^resource '
    [ "$(storage address)" = "$old" ]
    ask "resource service.name=after,deployment.environment.name=prod" '^resource '
    grep -qx 'resource rc=0' <(grep '^resource ' "$OUT" | tail -1)
    [ "$(storage service_name)" = after ]
    [ "$(storage service_environment)" = prod ]
    [ "$(storage socket_path)" = "$sock" ]
    new=$(storage address)
    [ "$new" != "$old" ]
    # never freed: a profiler that read the old pointer an instant before still reads a whole block
    [ "$(block_at "$old")" = "1 before  $sock" ]
    [ "$(block_at "$new")" = "1 after prod $sock" ]
    # the OTel context agrees
    otel_read
    [ "$(otel service.name)" = after ]
    [ "$(otel deployment.environment.name)" = prod ]
}

@test "set_resource: a malformed string or NULL is refused and changes nothing; disabled returns -1" {
    start_msg_target
    otel_read
    ts0=$(otel_top published_at_ns)
    ask "resource service.name=x,broken" '^resource '
    ask "resource service.name=%zz" '^resource '
    ask "resource -" '^resource '
    [ "$(grep -c '^resource rc=-1$' "$OUT")" = 3 ]
    otel_read
    [ "$(otel_top published_at_ns)" = "$ts0" ]
    [ "$(otel service.name)" = unknown_service:api_message_target ]
    stop_msg_target
    start_msg_target ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED=false
    ask "resource service.name=x" '^resource '
    grep -qx 'resource rc=-1' "$OUT"
}

@test "a fork child keeps the tracer's resource (its own context, the tracer's instance id kept)" {
    start_msg_target
    ask "resource service.name=forked-svc,service.instance.id=tracer-id" '^resource '
    ask "fork 60" '^forked '
    child=$(sed -n 's/^forked child=//p' "$OUT")
    wait_attachable "$child"
    "$PY" "$READER" "$child" >"$BATS_TEST_TMPDIR/otel.json"
    [ "$(otel service.name)" = forked-svc ]
    [ "$(otel service.instance.id)" = tracer-id ]
    "$INSPECT" --json "$child" >"$BATS_TEST_TMPDIR/inspect.json"
    [ "$(jget "j['storage']['service_name']")" = forked-svc ]
    kill "$child"
}

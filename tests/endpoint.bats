#!/usr/bin/env bats
# The endpoint names of requests (preload/http/endpoint.c): OpenTelemetry's method names and path
# templates that keep ids and query strings out (tests/helpers/unit_endpoint.c).
# modules: preload/http/endpoint.c
load helpers

@test "unit: endpoint methods and path templates (ids, UUIDs, queries, absolute form, cut, printable)" {
    libc_independent
    run "$ROOT/build/tests/unit_endpoint"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *" random targets, 0 failures" ]]
}

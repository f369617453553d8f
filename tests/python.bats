#!/usr/bin/env bats
# shellcheck shell=bash
# The Python integration (integrations/python, proflink-otel) with the real OpenTelemetry Python
# SDK from PyPI: the pytest suite of tests/python, one bats test per pytest test function (all of
# its parameters) so that tests/run.sh counts them. pytest runs in build/pyenv, the virtualenv of
# integrations/python/venv.sh (exact versions of integrations/python/requirements-test.txt).
load helpers

VENV=$ROOT/build/pyenv

setup() {
    if ! [ -x "$VENV/bin/python" ] ||
        ! "$VENV/bin/python" -c 'import pytest, opentelemetry.sdk, flask, aiohttp, proflink_otel'; then
        skip "the virtualenv build/pyenv is missing or incomplete: run integrations/python/venv.sh (make check and .ci/run do; it needs PyPI)"
    fi
}

# pyt FILE::TEST — that pytest test (every parameter of it); its report is bats' diagnostics.
pyt() {
    PYTHONDONTWRITEBYTECODE=1 "$VENV/bin/python" -m pytest -q -p no:cacheprovider \
        "$ROOT/tests/python/$1" 3>&-
}

@test "python: each request's ids on its thread from outside (Flask threads, aiohttp and uvicorn task steps, task factory); profiler ids on exported roots only" {
    pyt test_services.py::test_requests_published_on_their_thread_and_ids_on_exported_roots
}

@test "python: proflink-agent's samples of interleaved requests (zlib vs SHA-256 work) never land on the other request" {
    pyt test_services.py::test_sampled_stacks_belong_to_the_request_whose_step_they_ran_in
}

@test "python: thread-pool work (asyncio.to_thread, submit(ctx.run)) publishes the context it runs in, nothing after" {
    pyt test_services.py::test_thread_pool_work_publishes_the_context_it_runs_in
}

@test "python: without the library the same spans minus the attribute" {
    pyt test_services.py::test_without_the_library_the_same_spans_minus_the_attribute
}

@test "python: the SDK's resource is the OTel process context's (service.instance.id, telemetry.sdk.*)" {
    pyt test_services.py::test_the_sdk_resource_is_the_otel_process_context
}

@test "python: the docs/api.md recipe: the examples under proflink-run, sampled by proflink-agent, export the agent's ids" {
    pyt test_examples.py::test_readme_recipe_agent_ids_on_exported_roots
}

@test "python: the examples behave the same with and without the library" {
    pyt test_examples.py::test_example_the_same_without_the_library
}

@test "python: a pure-Python wheel whose opentelemetry_context entry point the SDK loads" {
    pyt test_package.py::test_a_pure_python_wheel_whose_entry_point_the_sdk_loads
}

@test "python: transparent without the library or when it is disabled" {
    pyt test_package.py::test_transparent_without_the_library_or_when_disabled
}

@test "python: every pytest test function is run by a test of this file" {
    run "$VENV/bin/python" -m pytest -q --collect-only -p no:cacheprovider "$ROOT/tests/python"
    [ "$status" -eq 0 ]
    local fn missing=()
    for fn in $(echo "$output" | sed -n 's/^tests\/python\/\([^[]*\).*/\1/p' | sort -u); do
        grep -qF "pyt $fn" "$BATS_TEST_FILENAME" || missing+=("$fn")
    done
    echo "not run: ${missing[*]}"
    [ ${#missing[@]} -eq 0 ]
}
